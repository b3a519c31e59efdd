/* The per-element updates of gates 1 and 2's statistics, written once for
 * the CPU (harness/evidence.c) and the GPU (harness/stats_cuda.cu): the
 * element's error, rounding and ulp at its condition scale, the skip rule,
 * the raw sums of the bias tests, the magnitude sums and maxima and the
 * histogram bins. Both paths run these functions in the same order over
 * the same partition (rows, stripes of row blocks, blocks: the shape's
 * alone), so their raw sums are the same bits; adm_h_stats_finish turns
 * them into the verdict's numbers. Every operation rounds once: the C code
 * is built with -ffp-contract=off, the CUDA code with -fmad=false. */
#ifndef ADM_STAT_ELEM_H
#define ADM_STAT_ELEM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "adm_core.h"
#include "adm_harness.h"

#ifdef __CUDACC__
#define ADM_SE_FN static inline __host__ __device__
#define ADM_SE_RESTRICT __restrict__
#else
#define ADM_SE_FN static inline
#define ADM_SE_RESTRICT restrict
#endif

/* The raw sums of a group of elements (a row, a channel, the output), in
 * output units: count, sum of o, of |o|, of o^2, of (o u)^2, then for each
 * series (d = c - r, e_r, e_c) and kind (weight w = 1, sign(o), o u^2) the
 * sums of w x and (w x)^2, then the group tests in ulps' sums of d
 * (RAW_UW: u d, (u d)^2, sign(o) u d, (sign(o) u d)^2; GATES.md, gate 2:
 * each group's lean of a constant number of ulps, every element's term of
 * the same spread; the gain's weight o u^2 is in ulps already, so its
 * group test in ulps rescales the sums above). u is the element's inverse ulp at its
 * condition scale (gate 1's): the gain is the weighted least-squares slope
 * of the error on o with weights 1 / ulp^2, since a rounding error's
 * spread follows the element's ulp (bf16 errors grow with |o|). Unweighted,
 * the few outlier-channel elements that dominate sum o^2 decide the slope
 * and its noise (a robust standard error 2.3-2.6x the homoscedastic one
 * on RMSNorm, issue 16); weighted, every element counts in proportion to
 * its precision, and the slope estimated is the same gain. */
enum { RAW_N, RAW_O, RAW_AO, RAW_O2, RAW_OU2, RAW_SER, RAW_UW = RAW_SER + 3 * 2 * ADM_BIAS_KINDS, RAW_NS = RAW_UW + 4 };
enum { SER_D, SER_R, SER_C };

/* Per block of ADM_SE_RB rows: the magnitude sums, maxima and the count of
 * non-trivial elements (MG_*), and the histograms (HIST_BLOCK counts:
 * linear and by octave, reference then candidate). */
enum { MG_ER2, MG_EC2, MG_Q2, MG_UR2, MG_UC2, MG_UQ2, MG_EC4, MG_ER4, MG_Q4, MG_ECR, MG_ECQ, MG_UC4, MG_UR4, MG_UQ4,
       MG_UCR, MG_UCQ, MG_WD1, MG_WD2, MG_WR1, MG_WR2, MG_SD1, MG_SD2, MG_SR1, MG_SR2, MG_ULP, MG_MAXR, MG_MAXC,
       MG_MAXQ, MG_UMAXR, MG_UMAXC, MG_UMAXQ, MG_NONTRIV, MG_NS };
#define HIST_BLOCK (2 * ADM_HIST_BINS + 2 * ADM_HIST_LOG_BINS)
#define ADM_SE_RB 64

/* The channel sums are kept per stripe of row blocks (a partition of the
 * rows that depends on the shape alone, never on the thread count or the
 * device) and merged in stripe order; the stripes' partial sums take at
 * most this much memory beside the per-row sums. Stripe st holds blocks
 * [st nb / ns, (st + 1) nb / ns). */
#define CHAN_STRIPE_BYTES ((double)(64 << 20))
#define CHAN_STRIPES_MAX 64

ADM_SE_FN int64_t adm_se_stripes(int64_t N, int64_t nb)
{
    int64_t ns = (int64_t)(CHAN_STRIPE_BYTES / (8.0 * RAW_NS * (double)(N > 0 ? N : 1)));
    if (ns > CHAN_STRIPES_MAX) ns = CHAN_STRIPES_MAX;
    if (ns > nb) ns = nb;
    if (ns < 1) ns = 1;
    return ns;
}

ADM_SE_FN uint64_t adm_se_bits(double x)
{
#ifdef __CUDA_ARCH__
    return (uint64_t)__double_as_longlong(x);
#else
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
#endif
}

ADM_SE_FN double adm_se_from_bits(uint64_t u)
{
#ifdef __CUDA_ARCH__
    return __longlong_as_double((long long)u);
#else
    double d;
    memcpy(&d, &u, 8);
    return d;
#endif
}

/* fmax of two numbers neither of which is NaN, inline (libm's fmax is a
 * call; here both are finite magnitudes) */
ADM_SE_FN double adm_se_max2(double a, double b) { return a > b ? a : b; }

/* An output format's binades (core/format.c's table: man_bits, emin, emax,
 * max finite, smallest subnormal), for the element's rounding and ulp. */
typedef struct adm_se_fmt { int man, emin, emax; double maxf, minsub; } adm_se_fmt;

ADM_SE_FN adm_se_fmt adm_se_fmt_of(adm_dtype dt)
{
    adm_se_fmt f;
    switch (dt) {
    case ADM_BF16: f.man = 7; f.emin = -126; f.emax = 127; f.maxf = 0x1.fep127; f.minsub = 0x1p-133; break;
    case ADM_FP16: f.man = 10; f.emin = -14; f.emax = 15; f.maxf = 65504.0; f.minsub = 0x1p-24; break;
    case ADM_FP32: f.man = 23; f.emin = -126; f.emax = 127; f.maxf = 0x1.fffffep127; f.minsub = 0x1p-149; break;
    case ADM_E4M3: f.man = 3; f.emin = -6; f.emax = 8; f.maxf = 448.0; f.minsub = 0x1p-9; break;
    case ADM_E5M2: f.man = 2; f.emin = -14; f.emax = 15; f.maxf = 57344.0; f.minsub = 0x1p-16; break;
    case ADM_E2M1: f.man = 1; f.emin = 0; f.emax = 2; f.maxf = 6.0; f.minsub = 0.5; break;
    case ADM_FP64:
    default: f.man = 52; f.emin = -1022; f.emax = 1023; f.maxf = 0x1.fffffffffffffp1023; f.minsub = 0x1p-1074; break;
    }
    return f;
}

/* Finite x rounded to nearest even in the format, saturating at its max
 * finite: adm_format_round(dt, x, ADM_RNE, ADM_CVT_SATFINITE) for finite x
 * (tests/check_harness.c compares them). bf16 and fp16 in their normal
 * range by bit arithmetic on the double (the rounding increment carries
 * into the exponent as IEEE requires); elsewhere x is scaled by a power of
 * two (exact) into units of the binade's quantum and rounded there. */
ADM_SE_FN double adm_se_round(adm_dtype dt, double x)
{
    adm_se_fmt f;
    double a = fabs(x), q, n, fl, frac, r;
    int e2, man = dt == ADM_BF16 ? 7 : dt == ADM_FP16 ? 10 : -1;
    double lo = dt == ADM_BF16 ? 0x1p-126 : 0x1p-14, hi = dt == ADM_BF16 ? 0x1p127 : 32768.0;
    if (man > 0 && a >= lo && a < hi) {
        uint64_t b = adm_se_bits(x);
        int sh = 52 - man;
        b += ((1ull << (sh - 1)) - 1) + ((b >> sh) & 1);
        b &= ~((1ull << sh) - 1);
        return adm_se_from_bits(b);
    }
    if (dt == ADM_FP64) return x;
    f = adm_se_fmt_of(dt);
    (void)frexp(a, &e2);
    e2 -= 1;
    if (e2 < f.emin) e2 = f.emin; /* gradual underflow: a fixed quantum */
    q = ldexp(1.0, e2 - f.man);
    n = a / q;
    fl = floor(n);
    frac = n - fl;
    r = (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) != 0.0)) ? fl + 1 : fl;
    r *= q;
    if (r > f.maxf) r = f.maxf;
    return x < 0 || (x == 0 && signbit(x)) ? -r : r;
}

/* dt's ulp at x: adm_format_ulp (2^(max(floor(log2|x|), emin) - man),
 * the top binade's beyond it, the smallest subnormal at 0, NaN for a
 * non-finite x); bf16 and fp16 in their normal range from the exponent
 * bits. */
ADM_SE_FN double adm_se_ulp(adm_dtype dt, double x)
{
    adm_se_fmt f;
    int e2, man = dt == ADM_BF16 ? 7 : dt == ADM_FP16 ? 10 : -1;
    double lo = dt == ADM_BF16 ? 0x1p-126 : 0x1p-14, hi = dt == ADM_BF16 ? 0x1p127 : 32768.0;
    if (man > 0 && fabs(x) >= lo && fabs(x) < hi)
        return adm_se_from_bits(((adm_se_bits(x) >> 52 & 0x7ff) - (uint64_t)man) << 52);
    if (!isfinite(x)) return NAN;
    f = adm_se_fmt_of(dt);
    if (x == 0) return f.minsub;
    (void)frexp(fabs(x), &e2);
    e2 -= 1;
    if (e2 < f.emin) e2 = f.emin;
    if (e2 > f.emax) e2 = f.emax;
    return ldexp(1.0, e2 - f.man);
}

/* One element's inputs to every statistic: the errors of the reference and
 * the candidate, the oracle's rounding into the output format, all in
 * output units, u the inverse ulp at the condition scale and the three
 * in ulps. */
typedef struct adm_se_elem { double er, ec, q, u, eu, cu, qu; } adm_se_elem;

/* 0: the element is skipped (the oracle, the reference or the candidate
 * not finite). The ulp is taken at the element's condition scale
 * max(|o|, cond) (GATES.md, gate 1); a non-finite scale (an overflowed sum
 * of |terms|) falls back to |o|. Without a scale (has_cnd 0: an op with no
 * sound one, a user oracle) at max(|o|, min(floor_, colrms) / 4), floor_
 * and colrms the RMS of the finite oracle values over the element's row
 * and its channel. */
ADM_SE_FN int adm_se_measure(adm_dtype fmt, double oi, double r, double c, int has_cnd, double cnd_i, double floor_,
                             double colrms_j, adm_se_elem *e)
{
    if (!isfinite(oi) || !isfinite(r) || !isfinite(c)) return 0;
    e->er = r - oi;
    e->ec = c - oi;
    e->q = adm_se_round(fmt, oi) - oi;
    if (has_cnd)
        e->u = 1.0 / adm_se_ulp(fmt, isfinite(cnd_i) ? adm_se_max2(fabs(oi), cnd_i) : fabs(oi));
    else
        e->u = 1.0 / adm_se_ulp(fmt, adm_se_max2(fabs(oi), fmin(floor_, colrms_j) / 4)); /* a power of two */
    e->eu = e->er * e->u;
    e->cu = e->ec * e->u;
    e->qu = e->q * e->u;
    return 1;
}

/* Trivial: every term the element is computed from is zero. */
ADM_SE_FN double adm_se_nontrivial(int has_cnd, double oi, double cnd_i)
{
    return has_cnd ? (cnd_i != 0) : (oi != 0);
}

/* A block's magnitude sums, maxima and count (MG_*): the fourth-order
 * sums of gate 1's paired standard error; the mean's and the sign's sums
 * in ulps (gate 2: d = c - r in ulps, the reference's error in ulps, and
 * the sum of the ulps). Each number is its own chain of additions (or
 * maxima): each row's in channel order from zero, then the block's rows'
 * in row order (adm_se_mag_fold), so a row's chain runs with its row sums
 * (on the GPU one warp a row, every element measured once for both)
 * rather than one chain through the block's 64 N elements. Their addends
 * are written once, in ADM_SE_MAG_EACH: the CPU adds them in place
 * (adm_se_mag_add), the GPU stores them (adm_se_mag_terms) and adds each
 * number in its own lane (adm_se_mag_acc), the same operations in the
 * same order, the same bits. */
typedef struct adm_se_mag { double v[MG_NS]; } adm_se_mag;

/* X(k, addend) for each sum, M(k, operand) for each maximum, from e (the
 * element), du = d u and sg = sign(o) (ADM_SE_MAG_LOCALS), nontriv. */
#define ADM_SE_MAG_LOCALS(e, oi, d) double du = (d) * (e)->u, sg = (oi) > 0 ? 1.0 : ((oi) < 0 ? -1.0 : 0.0)
#define ADM_SE_MAG_EACH(X, M, e, nontriv)                         \
    X(MG_EC4, ((e)->ec * (e)->ec) * ((e)->ec * (e)->ec))          \
    X(MG_ER4, ((e)->er * (e)->er) * ((e)->er * (e)->er))          \
    X(MG_Q4, ((e)->q * (e)->q) * ((e)->q * (e)->q))               \
    X(MG_ECR, ((e)->ec * (e)->ec) * ((e)->er * (e)->er))          \
    X(MG_ECQ, ((e)->ec * (e)->ec) * ((e)->q * (e)->q))            \
    X(MG_UC4, ((e)->cu * (e)->cu) * ((e)->cu * (e)->cu))          \
    X(MG_UR4, ((e)->eu * (e)->eu) * ((e)->eu * (e)->eu))          \
    X(MG_UQ4, ((e)->qu * (e)->qu) * ((e)->qu * (e)->qu))          \
    X(MG_UCR, ((e)->cu * (e)->cu) * ((e)->eu * (e)->eu))          \
    X(MG_UCQ, ((e)->cu * (e)->cu) * ((e)->qu * (e)->qu))          \
    X(MG_WD1, du)                                                 \
    X(MG_WD2, du * du)                                            \
    X(MG_WR1, (e)->eu)                                            \
    X(MG_WR2, (e)->eu * (e)->eu)                                  \
    X(MG_SD1, sg * du)                                            \
    X(MG_SD2, du * du * (sg != 0))                                \
    X(MG_SR1, sg * (e)->eu)                                       \
    X(MG_SR2, (e)->eu * (e)->eu * (sg != 0))                      \
    X(MG_ULP, 1.0 / (e)->u)                                       \
    X(MG_ER2, (e)->er * (e)->er)                                  \
    X(MG_EC2, (e)->ec * (e)->ec)                                  \
    X(MG_Q2, (e)->q * (e)->q)                                     \
    X(MG_UR2, (e)->eu * (e)->eu)                                  \
    X(MG_UC2, (e)->cu * (e)->cu)                                  \
    X(MG_UQ2, (e)->qu * (e)->qu)                                  \
    M(MG_MAXR, fabs((e)->er))                                     \
    M(MG_MAXC, fabs((e)->ec))                                     \
    M(MG_MAXQ, fabs((e)->q))                                      \
    M(MG_UMAXR, fabs((e)->eu))                                    \
    M(MG_UMAXC, fabs((e)->cu))                                    \
    M(MG_UMAXQ, fabs((e)->qu))                                    \
    X(MG_NONTRIV, (nontriv))

/* 1: MG_MAX*, a maximum of magnitudes (order-free) rather than a sum */
ADM_SE_FN int adm_se_mag_is_max(int k) { return k >= MG_MAXR && k <= MG_UMAXQ; }

/* oi: the oracle's value; d: c - r, as raw_add2 takes it */
ADM_SE_FN void adm_se_mag_add(adm_se_mag *m, const adm_se_elem *e, double oi, double d, double nontriv)
{
    ADM_SE_MAG_LOCALS(e, oi, d);
#define ADM_SE_X_(k, x) m->v[k] += (x);
#define ADM_SE_M_(k, x) m->v[k] = adm_se_max2(m->v[k], (x));
    ADM_SE_MAG_EACH(ADM_SE_X_, ADM_SE_M_, e, nontriv)
#undef ADM_SE_X_
#undef ADM_SE_M_
}

/* The element's addend to every number (the maximum's operand for a
 * MG_MAX*), in MG_* order. */
ADM_SE_FN void adm_se_mag_terms(const adm_se_elem *e, double oi, double d, double nontriv, double *ADM_SE_RESTRICT t)
{
    ADM_SE_MAG_LOCALS(e, oi, d);
#define ADM_SE_X_(k, x) t[k] = (x);
    ADM_SE_MAG_EACH(ADM_SE_X_, ADM_SE_X_, e, nontriv)
#undef ADM_SE_X_
}

/* Number k after one more element's term t (adm_se_mag_add's operation
 * for k): both results are computed (each one rounding) and one kept, so
 * a lane whose k is not a constant does not branch. */
ADM_SE_FN double adm_se_mag_acc(int k, double m, double t)
{
    double s = m + t, x = adm_se_max2(m, t);
    return adm_se_mag_is_max(k) ? x : s;
}

/* A row's numbers r into its block's b, in row order (b zeroed before
 * the block's first row): adm_se_mag_acc number by number, the GPU's
 * fold of its per-row numbers. */
ADM_SE_FN void adm_se_mag_fold(adm_se_mag *b, const adm_se_mag *r)
{
    for (int k = 0; k < MG_NS; k++) b->v[k] = adm_se_mag_acc(k, b->v[k], r->v[k]);
}

ADM_SE_FN void adm_se_mag_store(const adm_se_mag *m, double *M)
{
    memcpy(M, m->v, sizeof m->v);
}

ADM_SE_FN int adm_se_hist_bin(double ulps)
{
    double w = 2 * ADM_HIST_RANGE / (ADM_HIST_BINS - 2);
    if (!(ulps >= -ADM_HIST_RANGE)) return 0;
    if (ulps >= ADM_HIST_RANGE) return ADM_HIST_BINS - 1;
    return 1 + (int)((ulps + ADM_HIST_RANGE) / w); /* >= 0: truncation is floor */
}

/* The octave of |ulps| (adm_harness.h, ADM_HIST_LOG_*): frexp gives
 * |ulps| = m 2^e with m in [0.5, 1), so floor(log2 |ulps|) = e - 1, exact. */
ADM_SE_FN int adm_se_hist_log_bin(double ulps)
{
    int e, k;
    double a = fabs(ulps);
    if (!(a >= ldexp(1.0, ADM_HIST_LOG_MIN))) return ADM_HIST_LOG_ZERO;
    frexp(a, &e);
    k = e - 1 - ADM_HIST_LOG_MIN + 1;
    if (k > ADM_HIST_LOG_OCTAVES + 1) k = ADM_HIST_LOG_OCTAVES + 1;
    return ulps < 0 ? ADM_HIST_LOG_ZERO - k : ADM_HIST_LOG_ZERO + k;
}

/* The element's four slots in its block's histograms. */
ADM_SE_FN void adm_se_hist_slots(const adm_se_elem *e, int slot[4])
{
    slot[0] = adm_se_hist_bin(e->eu);
    slot[1] = ADM_HIST_BINS + adm_se_hist_bin(e->cu);
    slot[2] = 2 * ADM_HIST_BINS + adm_se_hist_log_bin(e->eu);
    slot[3] = 2 * ADM_HIST_BINS + ADM_HIST_LOG_BINS + adm_se_hist_log_bin(e->cu);
}

/* A group's raw sums' addends for one element, written once: X(k,
 * addend) for each in RAW_* order, from o, u, d, er, ec and the locals of
 * ADM_SE_RAW_LOCALS. raw_add2 adds them in place on the CPU (and in the
 * GPU's channel sums), adm_se_raw_terms stores them for the GPU's row
 * sums (one lane a sum): the same operations, the same bits. */
#define ADM_SE_RAW_LOCALS(o, u)                                                          \
    double sg = (o) > 0 ? 1.0 : ((o) < 0 ? -1.0 : 0.0), wg = (o) * (u) * (u);            \
    double o2 = (o) * (o), ou2 = ((o) * (u)) * ((o) * (u)), ao = fabs(o)
/* w_k x_s and its square: the mean's weight 1 (1.0 * x is x), the sign's, the gain's */
#define ADM_SE_RAW_TERM_(X, s, k, z)                                      \
    X(RAW_SER + ((s) * ADM_BIAS_KINDS + (k)) * 2, (z))                    \
    X(RAW_SER + ((s) * ADM_BIAS_KINDS + (k)) * 2 + 1, (z) * (z))
#define ADM_SE_RAW_EACH(X, d, er, ec)                                     \
    X(RAW_N, 1.0)                                                         \
    X(RAW_O, o)                                                           \
    X(RAW_AO, ao)                                                         \
    X(RAW_O2, o2)                                                         \
    X(RAW_OU2, ou2)                                                       \
    ADM_SE_RAW_TERM_(X, SER_D, ADM_BIAS_MEAN, 1.0 * (d))                  \
    ADM_SE_RAW_TERM_(X, SER_D, ADM_BIAS_SIGN, sg * (d))                   \
    ADM_SE_RAW_TERM_(X, SER_D, ADM_BIAS_GAIN, wg * (d))                   \
    ADM_SE_RAW_TERM_(X, SER_R, ADM_BIAS_MEAN, 1.0 * (er))                 \
    ADM_SE_RAW_TERM_(X, SER_R, ADM_BIAS_SIGN, sg * (er))                  \
    ADM_SE_RAW_TERM_(X, SER_R, ADM_BIAS_GAIN, wg * (er))                  \
    ADM_SE_RAW_TERM_(X, SER_C, ADM_BIAS_MEAN, 1.0 * (ec))                 \
    ADM_SE_RAW_TERM_(X, SER_C, ADM_BIAS_SIGN, sg * (ec))                  \
    ADM_SE_RAW_TERM_(X, SER_C, ADM_BIAS_GAIN, wg * (ec))                 \
    X(RAW_UW, 1.0 * ((d) * (u)))                                          \
    X(RAW_UW + 1, ((d) * (u)) * ((d) * (u)))                              \
    X(RAW_UW + 2, sg * ((d) * (u)))                                       \
    X(RAW_UW + 3, (sg * ((d) * (u))) * (sg * ((d) * (u))))

/* Adds one element to two groups at once (its row and its channel), each
 * term computed once. A path that fills one group alone passes a scratch
 * array it never reads as the other (the compiler drops its stores). */
ADM_SE_FN void raw_add2(double *ADM_SE_RESTRICT g, double *ADM_SE_RESTRICT h, double o, double u, double d, double er,
                        double ec)
{
    ADM_SE_RAW_LOCALS(o, u);
#define ADM_SE_X_(k, x)     \
    {                       \
        double x_ = (x);    \
        g[k] += x_;         \
        h[k] += x_;         \
    }
    ADM_SE_RAW_EACH(ADM_SE_X_, d, er, ec)
#undef ADM_SE_X_
}

/* The element's addend to each raw sum, in RAW_* order. */
ADM_SE_FN void adm_se_raw_terms(double o, double u, double d, double er, double ec, double *ADM_SE_RESTRICT t)
{
    ADM_SE_RAW_LOCALS(o, u);
#define ADM_SE_X_(k, x) t[k] = (x);
    ADM_SE_RAW_EACH(ADM_SE_X_, d, er, ec)
#undef ADM_SE_X_
}

/* The resolve scale's sums (adm_judge_resolve_scale): per block of
 * ADM_SE_SCALE_BLK elements, in element order, the squared errors of the
 * reference and the count of elements where it and the oracle are
 * finite; the blocks are added in order on the host, so the CPU and the
 * GPU (harness/stats_cuda.cu) give the same bits (the scale decides which
 * elements the oracle refines). The scale was the larger of the RMS of
 * these errors and of the oracle's own rounding to the reference's
 * format; the second never decided it, so it went: the reference's value
 * r is in its format, so |r - o| >= |RNE(o) - o| (RNE saturating: the
 * nearest finite value), fl(x - o) and its square are monotone in |x - o|,
 * and a sum of termwise larger non-negative terms in the same order
 * rounds to at least the other sum (fl(a + b) is monotone in a and b):
 * the first sum is never the smaller, to the bit. */
#define ADM_SE_SCALE_BLK 4096

ADM_SE_FN void adm_se_scale_add(double o, double r, double *ADM_SE_RESTRICT acc)
{
    if (!isfinite(o) || !isfinite(r)) return;
    acc[0] += (r - o) * (r - o);
    acc[1] += 1;
}

/* Gate 5's reader on one element, for the quantize and threshold readers
 * (harness/gates.c on the host, harness/stats_cuda.cu on the device):
 * threshold: x > t; quantize: x / scale encoded into fmt (RNE,
 * saturating), as adm_format_encode's bits would compare: the key is the
 * rounded magnitude's bits and the sign, equal exactly where the encodings
 * are (a NaN encodes as its sign and the format's NaN, or, in a format
 * without NaN, fails and reads as +0's bits 0; an infinite quotient
 * saturates to the largest finite). */
typedef struct adm_se_reader {
    int kind; /* ADM_READER_QUANTIZE or ADM_READER_THRESHOLD */
    int fmt, has_nan;
    double threshold, scale, maxf;
} adm_se_reader;

ADM_SE_FN uint64_t adm_se_decide(const adm_se_reader *rd, double x)
{
    uint64_t s;
    double v;
    if (rd->kind == ADM_READER_THRESHOLD) return x > rd->threshold;
    x = x / rd->scale;
    s = signbit(x) ? 1 : 0;
    if (isnan(x)) return rd->has_nan ? (~(uint64_t)1) | s : 0;
    v = isinf(x) ? rd->maxf : adm_se_round((adm_dtype)rd->fmt, x);
    return (adm_se_bits(fabs(v)) << 1) | s;
}

/* One element's part of gate 5: cnt[0] ties (the oracle within half an
 * ulp of the reference's format of a boundary), cnt[1] decisions, cnt[2]
 * and cnt[3] the reference's and the candidate's flips against the
 * oracle's decision; nothing where the oracle is not finite. */
ADM_SE_FN void adm_se_flip(const adm_se_reader *rd, adm_dtype ref_dt, double o, double r, double c, int64_t *cnt)
{
    double dist;
    uint64_t dO;
    int near;
    if (!isfinite(o)) return;
    dist = adm_se_ulp(ref_dt, o) / 2;
    near = rd->kind == ADM_READER_THRESHOLD ? fabs(o - rd->threshold) <= dist
                                            : adm_se_decide(rd, o - dist) != adm_se_decide(rd, o + dist);
    if (near) {
        cnt[0]++;
        return;
    }
    dO = adm_se_decide(rd, o);
    cnt[1]++;
    cnt[2] += adm_se_decide(rd, r) != dO;
    cnt[3] += adm_se_decide(rd, c) != dO;
}

#endif
