/* The scalar functions of the catalog with their error bounds, for the
 * CPU (C) and the GPU (CUDA) alike: one definition, one derivation.
 *
 * Each returns f(x) evaluated in fp64 and, in *err, a bound on
 * |value - f(x)| for the exact real f at the double x. The bounds assume
 * exp within ADM_LIBM_EXP_U ulps and erfc within ADM_LIBM_ERFC_U ulps:
 * glibc documents at most 1 and 5 on x86_64, CUDA's math library 1 and 4;
 * tests measure them against MPFR over every bf16 and fp16 input and
 * random doubles. Compile without contraction (-ffp-contract=off,
 * nvcc -fmad=false) so that each operation rounds once, as derived. */
#ifndef ADM_SCALAR_FNS_H
#define ADM_SCALAR_FNS_H

#include <math.h>

#ifdef __CUDACC__
#define ADM_HD __host__ __device__ static inline
#else
#define ADM_HD static inline
#endif

/* The math library behind the fp64 values. The test copy of the oracle
 * (ADM_ORACLE_TEST_HOOKS: tests/CMakeLists.txt, never libadmit) routes it
 * through a hook that can return the worst result the assumption allows. */
#if defined(ADM_ORACLE_TEST_HOOKS) && !defined(__CUDACC__)
double adm_o_test_libm(int fn, double x, double r);
#define ADM_EXP(x) adm_o_test_libm(0, (x), exp(x))
#define ADM_ERFC(x) adm_o_test_libm(1, (x), erfc(x))
#else
#define ADM_EXP(x) exp(x)
#define ADM_ERFC(x) erfc(x)
#endif

#define ADM_FN_U 0x1p-53
/* The libm assumption, the one thing the fp64 bounds do not prove: exp
 * within ADM_LIBM_EXP_ULP ulps and erfc within ADM_LIBM_ERFC_ULP ulps of
 * the exact value, an ulp being 2^(e-52) for a result in [2^e, 2^(e+1))
 * and 2^-1074 below the normal range (glibc's definition), so
 *     |r - f(x)| <= N (2u |f(x)| + 2^-1074).
 * glibc (x86_64 libm-test-ulps, the maxima its test suite has found) lists
 * exp 1 and erfc 5; CUDA's programming guide documents exp 1 and erfc 4.
 * tests/check_oracle.c (case Libm) checks them against MPFR on hard-to-round
 * inputs and dense samples of the ranges used; results say which bounds
 * rest on it (adm_oracle_result.assumption). */
#define ADM_LIBM_EXP_ULP 1
#define ADM_LIBM_ERFC_ULP 5
#define ADM_LIBM_EXP_U 4.0
#define ADM_LIBM_ERFC_U 16.0
#define ADM_TINY 0x1p-1068

ADM_HD double adm_fn_up(double b) { return b * (1.0 + 0x1p-50); }

/* gelu_tanh(x) = 0.5 x (1 + tanh(z)), z = C (x + A x^3), C = sqrt(2/pi),
 * A = 0.044715, evaluated as x / (1 + exp(-2z)) (the same function; no
 * cancellation for negative x, where 1 + tanh(z) would cancel).
 *   z: x*x, *x, *A, x + (.) (same signs: no cancellation), *C, and the
 *      representation errors of A and C: |z^ - z| <= gamma_7 |z|.
 *   exp(w^), w = -2z: exp(w^) = exp(w) exp(w theta), so the relative error
 *      is <= |w| gamma_7 (1 + 1e-9) plus the library's ADM_LIBM_EXP_U u.
 *   1 + e (positive terms) and x / d: one rounding each; 1 + e^ keeps
 *      the relative error of e^ (e/(1+e) <= 1).
 * => |y^ - y| <= ((7.01 |w| + ADM_LIBM_EXP_U + 3) u) |y^| + ADM_TINY,
 * and where exp saturates (|w| > 708: y^ = x or 0) |y^ - y| <= |x| 2^-1000. */
ADM_HD double adm_fn_gelu_tanh(double x, double *err)
{
    const double A = 0.044715, C = 0.79788456080286535588;
    double t, z, w, e, y;
    if (isnan(x)) { *err = 0; return x; }
    if (isinf(x)) { *err = 0; return x > 0 ? x : -0.0; }
    t = x * x;
    t = t * x;
    t = A * t;
    z = C * (x + t);
    w = -2.0 * z;
    e = ADM_EXP(w);
    y = x / (1.0 + e);
    if (e == 0 || isinf(e)) {
        *err = adm_fn_up(ADM_FN_U * fabs(y) + fabs(x) * 0x1p-1000 + ADM_TINY);
        return y;
    }
    *err = adm_fn_up((7.01 * fabs(w) + ADM_LIBM_EXP_U + 3.0) * ADM_FN_U * fabs(y) + ADM_TINY);
    return y;
}

/* gelu_erf(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(t), t = -x / sqrt 2
 * (erfc: no cancellation for negative x).
 *   t^ = t (1 + theta), |theta| <= gamma_2 (the constant, the product).
 *   erfc(t^) = erfc(t) (1 + |t| gamma_2 L(t)), L(t) bounding |d ln erfc/dt|:
 *      t > 0: 2 e^-t^2 / (sqrt(pi) erfc t) < t + sqrt(t^2 + 2) <= 2t + 1.5
 *      (erfc t > 2 e^-t^2 / (sqrt(pi) (t + sqrt(t^2+2)))), t <= 0: 2/sqrt(pi) < 1.13;
 *      plus the library's ADM_LIBM_ERFC_U u.
 *   * 0.5 exact (but for subnormal x: ADM_TINY), * x one rounding.
 * => |y^ - y| <= ((2.01 |t| L(t) + ADM_LIBM_ERFC_U + 2) u) |y^| + ADM_TINY,
 * and where erfc underflows (t > 26.5) |y| <= |x| 2^-1000 more. */
ADM_HD double adm_fn_gelu_erf(double x, double *err)
{
    const double R = 0.70710678118654752440;
    double t, e, y, L;
    if (isnan(x)) { *err = 0; return x; }
    if (isinf(x)) { *err = 0; return x > 0 ? x : -0.0; }
    t = -x * R;
    e = ADM_ERFC(t);
    y = 0.5 * x * e;
    L = t > 0 ? 2.0 * t + 1.5 : 1.13;
    *err = adm_fn_up((2.01 * fabs(t) * L + ADM_LIBM_ERFC_U + 2.0) * ADM_FN_U * fabs(y) + ADM_TINY +
                     (t > 26.5 ? fabs(x) * 0x1p-1000 : 0.0));
    return y;
}

/* silu(x) = x / (1 + exp(-x)): exp's argument is exact (a negation), so
 * |y^ - y| <= ((ADM_LIBM_EXP_U + 3) u) |y^| + ADM_TINY, plus |x| 2^-1000
 * where exp overflows (x < -709, y^ = 0, |y| <= |x| e^x). */
ADM_HD double adm_fn_silu(double x, double *err)
{
    double e, y;
    if (isnan(x)) { *err = 0; return x; }
    if (isinf(x)) { *err = 0; return x > 0 ? x : -0.0; }
    e = ADM_EXP(-x);
    y = x / (1.0 + e);
    *err = adm_fn_up((ADM_LIBM_EXP_U + 3.0) * ADM_FN_U * fabs(y) + ADM_TINY + (isinf(e) ? fabs(x) * 0x1p-1000 : 0.0));
    return y;
}

/* Derivatives, for the condition scale (adm_oracle_result.cond), which
 * needs a few bits only: plain fp64, no bound, but no cancellation that
 * would flush a tail to zero (gelu_tanh(x) = x sigma(2z), so its
 * derivative is sigma(2z) + x sigma(2z) sigma(-2z) 2C (1 + 3A x^2); silu's
 * sigma(x) + x sigma(x) sigma(-x); gelu_erf's Phi(x) + x phi(x) cancels
 * only near its true zero). NaN where the formula meets inf * 0 (huge
 * |x|): the caller falls back to |f|. */
ADM_HD double adm_fn_gelu_tanh_d(double x)
{
    const double A = 0.044715, C = 0.79788456080286535588;
    double z = C * (x + A * x * x * x), s = 1.0 / (1.0 + exp(-2.0 * z)), sm = 1.0 / (1.0 + exp(2.0 * z));
    return s + x * s * sm * 2.0 * C * (1.0 + 3.0 * A * x * x);
}

ADM_HD double adm_fn_gelu_erf_d(double x)
{
    return 0.5 * erfc(-x * 0.70710678118654752440) + x * exp(-0.5 * x * x) * 0.39894228040143267794;
}

ADM_HD double adm_fn_silu_d(double x)
{
    double s = 1.0 / (1.0 + exp(-x)), sm = 1.0 / (1.0 + exp(x));
    return s + x * s * sm;
}

#endif
