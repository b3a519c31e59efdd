/* The scalar functions of the catalog with their error bounds, for the
 * CPU (C) and the GPU (CUDA) alike: one definition, one derivation.
 *
 * Each returns f(x) evaluated in fp64 and, in *err, a bound on
 * |value - f(x)| for the exact real f at the double x, every step of it
 * rounded upward (adm_add_up ...). The values round to nearest; the bounds
 * assume the libm accuracy stated below (ADM_LIBM_*_ULP). Compile without
 * contraction (-ffp-contract=off, nvcc -fmad=false) so that each value
 * operation rounds once, as derived. */
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
/* The smallest subnormal: it bounds the error of a rounding below the
 * normal range (half of it, rounded up). */
#define ADM_TINY 0x1p-1074

/* ---------------------------------------------------------------- directed rounding
 *
 * Every bound is computed with these: each returns a double >= the exact
 * result of its operation on its (double) operands (the _dn ones <=), so
 * every step of every bound is an upper bound by construction. On the GPU
 * the instructions round upward themselves (__dadd_ru ...). On the CPU
 * the round-to-nearest result r is moved one ulp away (r's error is at
 * most half an ulp, so the exact result lies strictly inside the ulp on
 * either side of r; 0 moves to 2^-1074, inf stays): no rounding mode is
 * switched, so the values around them keep round-to-nearest, libm is
 * never called in another mode, and OpenMP threads need no setup. The
 * operands of _up are >= 0. */
#ifndef __CUDA_ARCH__
#include <stdint.h>
#include <string.h>
#endif

ADM_HD double adm_nextup(double r)
{
#ifdef __CUDA_ARCH__
    /* by the bits, as nextafter(r, INFINITY): C++'s constexpr host nextafter
     * is what device code would otherwise call (nvcc warning 20013) */
    if (!(r < INFINITY)) return r;
    if (r == 0) return 0x1p-1074;
    return __longlong_as_double(__double_as_longlong(r) + (r > 0 ? 1 : -1));
#else
    /* by the bits and without a branch, so that loops of bounds vectorise:
     * +0 and -0 -> 2^-1074 (bits 1), NaN and +Inf unchanged, r > 0 one
     * step up the bits, r < 0 (-Inf too: -DBL_MAX) one step down; the
     * same result as nextafter(r, INFINITY) for every double */
    uint64_t b;
    memcpy(&b, &r, 8);
    b = r == 0 ? 1u : r < INFINITY ? (r > 0 ? b + 1u : b - 1u) : b;
    memcpy(&r, &b, 8);
    return r;
#endif
}

ADM_HD double adm_nextdn(double r)
{
#ifdef __CUDA_ARCH__
    if (r != r || r == -INFINITY || r == INFINITY) return r;
    if (r == 0) return -0x1p-1074;
    return __longlong_as_double(__double_as_longlong(r) + (r > 0 ? -1 : 1));
#else
    /* by the bits, no branch: +0 and -0 -> -2^-1074, NaN and both
     * infinities unchanged, r > 0 one step down, r < 0 one step up the
     * bits (towards -Inf) */
    uint64_t b;
    memcpy(&b, &r, 8);
    b = r == 0 ? 0x8000000000000001u : fabs(r) < INFINITY ? (r > 0 ? b - 1u : b + 1u) : b;
    memcpy(&r, &b, 8);
    return r;
#endif
}

/* adm_nextup where r is +0, positive, +Inf or NaN (not -0, not
 * negative): the same result, by one compare and an integer add (the bits
 * + 1 below +Inf: +0 -> 2^-1074), where adm_nextup's three compares and
 * selects are most of a vectorised bound's work. */
ADM_HD double adm_nextup_nn(double r)
{
#ifdef __CUDA_ARCH__
    return adm_nextup(r);
#else
    uint64_t b;
    memcpy(&b, &r, 8);
    b = r < INFINITY ? b + 1u : b;
    memcpy(&r, &b, 8);
    return r;
#endif
}

/* The directed operations with a flag nn: 1 where the caller knows the
 * rounded result is +0, positive, +Inf or NaN (operands of add and mul
 * +0, positive, +Inf or NaN, never -0; a quotient's numerator so and its
 * denominator positive), so that adm_nextup_nn gives adm_nextup's result;
 * 0 anywhere else. nn changes no bit, only the cost; a constant where it
 * is used, so that each case compiles to its own code. On the GPU the
 * instructions round upward themselves and nn means nothing. */
#ifdef __CUDA_ARCH__
ADM_HD double adm_add_up_(double a, double b, int nn) { (void)nn; return __dadd_ru(a, b); }
ADM_HD double adm_mul_up_(double a, double b, int nn) { (void)nn; return __dmul_ru(a, b); }
ADM_HD double adm_div_up_(double a, double b, int nn) { (void)nn; return __ddiv_ru(a, b); }
ADM_HD double adm_sqrt_up(double a) { return __dsqrt_ru(a); }
ADM_HD double adm_sub_dn(double a, double b) { return __dsub_rd(a, b); }
ADM_HD double adm_sqrt_dn(double a) { return __dsqrt_rd(a); }
#else
ADM_HD double adm_add_up_(double a, double b, int nn) { return nn ? adm_nextup_nn(a + b) : adm_nextup(a + b); }
ADM_HD double adm_mul_up_(double a, double b, int nn) { return nn ? adm_nextup_nn(a * b) : adm_nextup(a * b); }
ADM_HD double adm_div_up_(double a, double b, int nn) { return nn ? adm_nextup_nn(a / b) : adm_nextup(a / b); }
ADM_HD double adm_sqrt_up(double a) { return adm_nextup(sqrt(a)); }
ADM_HD double adm_sub_dn(double a, double b) { return adm_nextdn(a - b); }
ADM_HD double adm_sqrt_dn(double a) { return a > 0 ? adm_nextdn(sqrt(a)) : 0.0; }
#endif
ADM_HD double adm_add_up(double a, double b) { return adm_add_up_(a, b, 0); }
ADM_HD double adm_mul_up(double a, double b) { return adm_mul_up_(a, b, 0); }
ADM_HD double adm_div_up(double a, double b) { return adm_div_up_(a, b, 0); }

/* gamma_n = n u / (1 - n u) rounded up: n u is exact (n < 2^53). */
ADM_HD double adm_gamma_up(double n) { return n <= 0 ? 0.0 : adm_div_up(n * ADM_FN_U, adm_sub_dn(1.0, n * ADM_FN_U)); }

/* The error of one round-to-nearest operation with result v: at most
 * u |v| in the normal range, half of 2^-1074 below it (ADM_TINY). */
ADM_HD double adm_rn_err_(double v, int nn) { return adm_add_up_(adm_mul_up_(ADM_FN_U, fabs(v), nn), ADM_TINY, nn); }
ADM_HD double adm_rn_err(double v) { return adm_rn_err_(v, 0); }

/* e^a - 1 <= a (1 + a) for 0 <= a <= 1 (the series' tail sum a^k/k! for
 * k >= 2 is at most a^2 (e - 2)); beyond 1, no finite bound is needed. */
ADM_HD double adm_expm1_up_(double a, int nn)
{
    return a <= 1.0 ? adm_mul_up_(a, adm_add_up_(1.0, a, nn), nn) : INFINITY;
}
ADM_HD double adm_expm1_up(double a) { return adm_expm1_up_(a, 0); }

/* What the libm assumption gives for r = f(x) computed by the library
 * with N ulps: |r - f(x)| <= N (2u f + 2^-1074) and f <= (r + N 2^-1074)
 * / (1 - 2 N u): returns that bound and, in *f_up, the bound on f. */
ADM_HD double adm_libm_err_(double r, double n_ulp, double *f_up, int nn)
{
    double tiny = adm_mul_up_(n_ulp, 0x1p-1074, nn);
    double f = adm_div_up_(adm_add_up_(fabs(r), tiny, nn), adm_sub_dn(1.0, 2.0 * n_ulp * ADM_FN_U), nn);
    *f_up = f;
    return adm_add_up_(adm_mul_up_(2.0 * n_ulp * ADM_FN_U, f, nn), tiny, nn);
}
ADM_HD double adm_libm_err(double r, double n_ulp, double *f_up) { return adm_libm_err_(r, n_ulp, f_up, 0); }

/* The quotient y = RN(x / d) against x / D, D the exact denominator
 * with |d - D| <= dd < d: |y - x/D| <= u|y| + 2^-1075 + |x/d| dd / (d - dd),
 * |x/d| <= |y| (1 + 2u) + 2^-1074. */
ADM_HD double adm_quot_err_(double y, double d, double dd, int nn)
{
    /* nn: the caller knows dd >= +0 and d - dd > 0 */
    double xd = adm_add_up_(adm_mul_up_(fabs(y), 1.0 + 4.0 * ADM_FN_U, nn), 0x1p-1074, nn);
    return adm_add_up_(adm_rn_err_(y, nn), adm_div_up_(adm_mul_up_(xd, dd, nn), adm_sub_dn(d, dd), nn), nn);
}
ADM_HD double adm_quot_err(double y, double d, double dd) { return adm_quot_err_(y, d, dd, 0); }

/* gelu_tanh(x) = 0.5 x (1 + tanh(z)), z = C (x + A x^3), C = sqrt(2/pi),
 * A = 0.044715, evaluated as x / (1 + exp(-2z)) (the same function; no
 * cancellation for negative x, where 1 + tanh(z) would cancel).
 *   w = -2 z: x*x, *x, *A, x + (.) (same signs: relative u on top of its
 *      larger term's), *C, and the representations of A and C: seven
 *      factors (1 + u): |w^ - w| <= gamma_7 |w^| / (1 - gamma_7) =: a.
 *   e = exp(w^) by libm: |e - exp(w^)| <= N (2u exp(w^) + 2^-1074), and
 *      |exp(w^) - exp(w)| <= exp(w^) (e^a - 1) (adm_libm_err, adm_expm1_up);
 *      a <= 1.2e-12 wherever exp neither overflows nor underflows.
 *   d = 1 + e (positive terms): + u d; y = x / d: adm_quot_err.
 *   Where exp saturates (e = 0: y = x / 1 = x exactly, and |gelu - x| <=
 *   |x| e^w < |x| 2^-1000; e = inf: y = -0, |y| < |x| 2^-1000): |x| 2^-1000
 *   (+ u|y| for the latter). */
ADM_HD double adm_fn_gelu_tanh_w(double x)
{
    const double A = 0.044715, C = 0.79788456080286535588;
    double t = x * x;
    t = t * x;
    t = A * t;
    return -2.0 * (C * (x + t));
}

/* gelu_tanh(x) and its bound from w = adm_fn_gelu_tanh_w(x) and e =
 * ADM_EXP(w), split so that a loop can call exp between the two halves
 * and vectorise both: every case is computed and the right one selected
 * (no branch), with the bits of the derivation above in each. */
/* nn (adm_add_up_): 1 gives the same bits, cheaper (the GEMM's vectorised
 * epilogue); every operand of the bound is >= +0 (|w|, e = exp(w), 1 + e,
 * |y|, |x|, the constants), and where gen is selected (x, w and e finite,
 * e > 0) so is its quotient's denominator d - dd: 1 + e >= 1 against dd <=
 * 6e-13 e + 2u (1 + e) (|w| <= 746 there, so a < 6e-13). */
ADM_HD double adm_fn_gelu_tanh_fin_(double x, double w, double e, double *err, int nn)
{
    double y = x / (1.0 + e), a, fu, de, dd, gen, sat;
    a = adm_gamma_up(7.0);
    a = adm_div_up_(adm_mul_up_(a, fabs(w), nn), adm_sub_dn(1.0, a), nn);
    de = adm_libm_err_(e, ADM_LIBM_EXP_ULP, &fu, nn);
    de = adm_add_up_(de, adm_mul_up_(fu, adm_expm1_up_(a, nn), nn), nn);
    dd = adm_add_up_(de, adm_mul_up_(ADM_FN_U, 1.0 + e, nn), nn);
    gen = adm_quot_err_(y, 1.0 + e, dd, nn);
    sat = adm_mul_up_(fabs(x), 0x1p-1000, nn);
    /* x NaN or Inf: 0; e = 0: y = x / 1 = x exactly, |gelu(x) - x| = |x|
     * e^w / (1 + e^w); e = Inf (or w not finite): |y| < |x| 2^-1000 */
    *err = isnan(x) || isinf(x) ? 0.0
           : e == 0             ? sat
           : isinf(e) || !isfinite(w) ? adm_add_up_(adm_rn_err_(y, nn), sat, nn)
                                      : gen;
    return isnan(x) ? x : isinf(x) ? (x > 0 ? x : -0.0) : y;
}

ADM_HD double adm_fn_gelu_tanh_fin(double x, double w, double e, double *err)
{
    return adm_fn_gelu_tanh_fin_(x, w, e, err, 0);
}

ADM_HD double adm_fn_gelu_tanh(double x, double *err)
{
    double w = adm_fn_gelu_tanh_w(x);
    return adm_fn_gelu_tanh_fin(x, w, ADM_EXP(w), err);
}

/* A bound on |gelu'| over [v - b, v + b], for propagating an input error
 * b through either GELU: gelu'(s) = Phi(s) + s phi(s) (erf), and for s >=
 * 10 both forms' derivatives are within 2^-60 of 1 (s phi(s) < 1e-21; the
 * tanh form's x sigma'(2z) 2z' < e^-80); elsewhere sup |gelu'| < 1.13. */
ADM_HD double adm_fn_gelu_slope(double v, double b) { return v - b >= 10.0 ? 1.0 + 0x1p-40 : 1.15; }

/* gelu_erf(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(t), t = -x / sqrt 2
 * (erfc: no cancellation for negative x).
 *   t^ = t (1 + theta), |theta| <= gamma_2 (R = RN(1/sqrt 2), the product).
 *   |erfc(t^) - erfc(t)| <= erfc(t^) (e^(|t - t^| L) - 1), L bounding
 *      |d ln erfc/ds| on the segment: s > 0: 2 e^-s^2 / (sqrt(pi) erfc s)
 *      < s + sqrt(s^2 + 2) <= 2s + 1.5 (erfc s > 2 e^-s^2 / (sqrt(pi) (s +
 *      sqrt(s^2+2)))), s <= 0: 2/sqrt(pi) < 1.13; so L = 2|t^|(1 + 2 gamma_2)
 *      + 1.5 and |t - t^| <= gamma_2 |t^| / (1 - gamma_2).
 *   e = erfc(t^) by libm: N = ADM_LIBM_ERFC_ULP ulps.
 *   y = (0.5 x) e: 0.5 x exact (but below 2^-1021: 2^-1075), one rounding.
 *   t^ > 26.5: erfc underflows; |y| <= |x| 2^-1000 more. */
ADM_HD double adm_fn_gelu_erf(double x, double *err)
{
    const double R = 0.70710678118654752440;
    double t, e, y, L, a, fu, de, g2;
    if (isnan(x)) { *err = 0; return x; }
    if (isinf(x)) { *err = 0; return x > 0 ? x : -0.0; }
    t = -x * R;
    e = ADM_ERFC(t);
    y = 0.5 * x * e;
    if (t > 26.5) {
        *err = adm_add_up(adm_add_up(adm_rn_err(y), fabs(y)), adm_mul_up(fabs(x), 0x1p-1000));
        return y;
    }
    g2 = adm_gamma_up(2.0);
    L = t > 0 ? adm_add_up(adm_mul_up(2.0 * fabs(t), adm_add_up(1.0, 2.0 * g2)), 1.5) : 1.13;
    a = adm_mul_up(adm_div_up(adm_mul_up(g2, fabs(t)), adm_sub_dn(1.0, g2)), L);
    de = adm_libm_err(e, ADM_LIBM_ERFC_ULP, &fu);
    de = adm_add_up(de, adm_mul_up(fu, adm_expm1_up(a)));
    /* |0.5 x| de + the product's rounding + 0.5x's below the normal range */
    *err = adm_add_up(adm_add_up(adm_mul_up(0.5 * fabs(x), de), adm_rn_err(y)), ADM_TINY);
    return y;
}

/* silu(x) = x / (1 + exp(-x)): exp's argument is exact (a negation);
 * e by libm (adm_libm_err), d = 1 + e (+ u d), y = x / d (adm_quot_err);
 * where exp overflows (x < -709: y = -0) |y| <= |x| e^x < |x| 2^-1000. */
ADM_HD double adm_fn_silu(double x, double *err)
{
    double e, y, fu, dd;
    if (isnan(x)) { *err = 0; return x; }
    if (isinf(x)) { *err = 0; return x > 0 ? x : -0.0; }
    e = ADM_EXP(-x);
    y = x / (1.0 + e);
    if (isinf(e)) {
        *err = adm_add_up(adm_rn_err(y), adm_mul_up(fabs(x), 0x1p-1000));
        return y;
    }
    dd = adm_add_up(adm_libm_err(e, ADM_LIBM_EXP_ULP, &fu), adm_mul_up(ADM_FN_U, 1.0 + e));
    *err = adm_quot_err(y, 1.0 + e, dd);
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

/* The condition scale of f(z) from z's: max(|f(z)|, |f'(z)| cond_z), the
 * first-order error scale of f applied to a z whose error scales with
 * cond_z; |f(z)| where the derivative is not finite (f at +-Inf). */
ADM_HD double adm_fn_cond_chain(double fz, double dfdz, double cond_z)
{
    double c = fabs(dfdz) * cond_z;
    return isfinite(c) && c > fabs(fz) ? c : fabs(fz);
}

#endif
