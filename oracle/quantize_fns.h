/* Quantize-dequantize's arithmetic, for the CPU (C) and the GPU (CUDA)
 * alike: one definition, so that both give the same bits (the scheme and
 * its exactness argument: oracle/quantize.c).
 *
 * Every rounding is of an exact real quotient a / b into a target format
 * (e4m3, e2m1 or fp32), done exactly: the fp64 quotient finds the two
 * neighbours in the target format, and their midpoint m is compared with
 * the dividend as m * b, a product of at most 5 + 28 significant bits,
 * exact in fp64. The neighbours come from the format's parameters alone
 * (precision p, least normal exponent emin, largest finite value): below
 * the largest finite value the format's numbers in the binade
 * [2^e, 2^(e+1)) (e >= emin; e = emin holds the subnormals too) are the
 * multiples of q = 2^(e - p + 1), so floor(|a/b| / q) q and the next
 * multiple bracket the quotient (a division by a power of two and a floor:
 * exact). check_oracle (Quantize) compares this with the formats' own
 * rounding (core/format.c) on every bf16 and fp16 dividend. */
#ifndef ADM_QUANTIZE_FNS_H
#define ADM_QUANTIZE_FNS_H

#include "scalar_fns.h"

enum { ADM_QF_E4M3 = 0, ADM_QF_E2M1 = 1, ADM_QF_FP32 = 2 };

/* round(a / b) into the format, to nearest even, saturating at its
 * largest finite value; NaN for a NaN quotient. b > 0 finite, and a and b
 * with few enough significant bits that m * b is exact (see above). */
ADM_HD double adm_qf_div_round(int fmt, double a, double b)
{
    const int p = fmt == ADM_QF_E4M3 ? 4 : fmt == ADM_QF_E2M1 ? 2 : 24;
    const int emin = fmt == ADM_QF_E4M3 ? -6 : fmt == ADM_QF_E2M1 ? 0 : -126;
    const double top = fmt == ADM_QF_E4M3 ? 448.0 : fmt == ADM_QF_E2M1 ? 6.0 : 0x1.fffffep127;
    double qd = a / b, mag, q, k, lo, hi, m;
    int e;
    if (isnan(qd)) return qd;
    if (fabs(qd) >= top) return copysign(top, qd);
    mag = fabs(qd);
    if (mag == 0) return qd;
    (void)frexp(mag, &e); /* mag in [2^(e-1), 2^e) */
    e = e - 1 < emin ? emin : e - 1;
    q = ldexp(1.0, e - p + 1);
    k = floor(mag / q);
    if (k * q == mag) return qd; /* representable: the exact quotient is within half an fp64 ulp of it */
    /* the neighbours lo < qd < hi, and whether lo's significand is even */
    if (qd > 0) {
        lo = k * q;
        hi = (k + 1) * q;
    } else {
        lo = -((k + 1) * q);
        hi = -(k * q);
        k = k + 1;
    }
    m = (lo + hi) / 2;
    if (a > m * b) return hi;
    if (a < m * b) return lo;
    return fmod(k, 2.0) != 0 ? hi : lo;
}

/* q(x / scale) scale, the value a quantizer stores and dequantizes; 0 x
 * (a signed zero, or NaN for NaN and Inf) for a zero scale. */
ADM_HD double adm_qf_qdq(int fmt, double x, double scale)
{
    if (scale == 0) return 0.0 * x;
    return adm_qf_div_round(fmt, x, scale) * scale;
}

/* One step of an absolute maximum as torch.amax takes it: a NaN anywhere
 * makes it NaN. */
ADM_HD double adm_qf_amax(double acc, double x)
{
    return isnan(acc) || isnan(x) ? NAN : fmax(acc, fabs(x));
}

#endif
