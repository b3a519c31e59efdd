/* matmul, linear, linear+gelu: fp64 GEMM through OpenBLAS DGEMM with the
 * accumulation bound in Cauchy-Schwarz form.
 *
 * Every product x_ik w_jk of fp32-or-narrower operands is exact in fp64
 * (24 + 24 <= 53 significant bits), so DGEMM's only errors are its K - 1
 * additions (in any order, with or without FMA; sums of doubles are exact
 * below the normal range):
 *     |S^ - S| <= gamma_(K-1) sum_k |x_ik w_jk| <= gamma_(K-1) ||x_i||_2 ||w_j||_2.
 * The norms cost O((M + N) K), so the bound adds almost nothing to the
 * GEMM; each is accumulated with upward rounding (squares and sums), so
 * it is >= the exact norm by construction. The bias adds one rounding
 * (u |v^|, the sum of two doubles); GELU adds its own bound at v^ plus its
 * Lipschitz constant on the interval (adm_fn_gelu_slope) times v's bound. Every
 * step of the bound rounds upward (scalar_fns.h).
 *
 * The condition scale (adm_oracle_result.cond) is sum_k |x_ik w_jk| + |b_j|,
 * through GELU max(|gelu(v)|, |gelu'(v)| that), which needs only a few
 * bits (harness/GATES.md): where x and w are bf16 and the CPU has
 * AVX512-BF16, a GEMM of bf16 |x|, |w| with exact products and fp32 sums
 * (bf16_cond_tile, about an eighth of the DGEMM's time, its packing
 * a twenty-fifth, by perf samples of bench_oracle), else an fp32
 * SGEMM on |x| and |w| (abs_scaled_rows); both have the same error bound.
 *
 * Memory beyond the inputs and the result: x in fp64 (M K doubles) and
 * the scale's operand (M K bf16 or floats), per thread a tile of w of at
 * most 12 MiB in fp64 (at most 128 MiB over all threads) with its scale
 * operand (a quarter or half of that) and COND_ROWS x tile floats, so
 * FLUX.1's MLP (4096 x 3072 by 12288 x 3072) on 2 threads needs about
 * 160 MiB extra (190 on the SGEMM path). */
#include "oracle_internal.h"
#include "adm_fpenv.h"
#include "adm_mem.h"

#include <cblas.h>
#include <stdlib.h>

/* Vectorise the loop that follows: GCC at -O2 leaves most loops scalar
 * unless told (OpenMP's simd pragma, honoured under -fopenmp); clang
 * vectorises them by itself and warns (-Wpass-failed) where a pragma asks
 * for what it cannot do. */
#if defined(__GNUC__) && !defined(__clang__)
#define ADM_SIMD_STR(x) #x
#define ADM_SIMD _Pragma("omp simd")
#define ADM_SIMD_MAX_OR(m, o) _Pragma(ADM_SIMD_STR(omp simd reduction(max : m) reduction(| : o)))
#else
#define ADM_SIMD
#define ADM_SIMD_MAX_OR(m, o)
#endif

#define TILE_BYTES ((int64_t)12 << 20) /* per thread: see adm_o_eval_gemm */

#define NORM_ROWS 8 /* rows whose norm chains run side by side (latency-bound alone) */

/* ||row||_2 of each of n rows of length K, rounded so as to be >= exact:
 * s = add_up(s, mul_up(p, p)) in k order, then sqrt_up, the bits of
 * the one-row chain (squares and sums are never -0: adm_nextup_nn, no
 * branch, so that the chains of NORM_ROWS rows run side by side: in the
 * AVX-512 clone as one vector, the rows' values gathered). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void row_norms(const double *rows, int64_t n, int64_t K, double *out)
{
    int64_t r0 = 0;
    for (; r0 + NORM_ROWS <= n; r0 += NORM_ROWS) {
        const double *p = rows + r0 * K;
        double s[NORM_ROWS] = {0};
        for (int64_t k = 0; k < K; k++)
            ADM_SIMD
            for (int r = 0; r < NORM_ROWS; r++)
                s[r] = adm_nextup_nn(s[r] + adm_nextup_nn(p[r * K + k] * p[r * K + k]));
        for (int r = 0; r < NORM_ROWS; r++) out[r0 + r] = adm_sqrt_up(s[r]);
    }
    for (; r0 < n; r0++) {
        const double *p = rows + r0 * K;
        double s = 0;
        for (int64_t k = 0; k < K; k++) s = adm_nextup_nn(s + adm_nextup_nn(p[k] * p[k]));
        out[r0] = adm_sqrt_up(s);
    }
}

/* bf16 to fp64, exactly, vectorised where the CPU allows (the baseline
 * build is SSE2 and -O2, which leaves this loop scalar). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void bf16_to_f64(const uint16_t *h, int64_t n, double *out)
{
    ADM_SIMD
    for (int64_t i = 0; i < n; i++) out[i] = (double)adm_bf16_to_f32(h[i]);
}

/* Rows r0..r1-1 of t as [R, K] in fp64 (adm_o_rows) and their norms. */
static void rows_and_norms(const adm_tensor *t, int64_t K, int64_t r0, int64_t r1, double *out, double *nrm)
{
    if (t->dtype == ADM_BF16 && adm_tensor_is_contiguous(t))
        bf16_to_f64((const uint16_t *)t->data + t->offset + r0 * K, (r1 - r0) * K, out);
    else
        adm_o_rows(t, K, r0, r1, out);
    row_norms(out, r1 - r0, K, nrm);
}

/* ldexp(x, e) without the libm call where 2^e is a normal double: x 2^e
 * is then one correctly rounded multiplication, the value ldexp returns. */
static inline double pow2_scale(double x, int e)
{
    if (e >= -1022 && e <= 1023) return x * adm_f64_from_bits((uint64_t)(e + 1023) << 52);
    return ldexp(x, e);
}

/* |row| of each of n rows in fp32, scaled by a power of two 2^-ex[r] that
 * puts the row's largest finite magnitude in [1, 2): an fp32 GEMM of two
 * such operands has terms below 4 and sums below 4K (no overflow whatever
 * the inputs' range) and loses to underflow only terms 2^-126 below the
 * largest. Its positive terms accumulate with relative error at most
 * gamma_K of fp32 (under 1e-3 for K < 16000): the scale it feeds picks a
 * binade, so that is ample. Non-finite values stay non-finite. */
static void abs_scaled_rows(const double *rows, int64_t n, int64_t K, float *out, int *ex)
{
    for (int64_t r = 0; r < n; r++) {
        const double *p = rows + r * K;
        double m = 0;
        int e = 1;
        for (int64_t k = 0; k < K; k++)
            if (isfinite(p[k]) && fabs(p[k]) > m) m = fabs(p[k]);
        if (m > 0) frexp(m, &e);
        ex[r] = e - 1;
        for (int64_t k = 0; k < K; k++) out[r * K + k] = (float)pow2_scale(fabs(p[k]), -ex[r]);
    }
}

#define COND_ROWS 256 /* rows of x per fp32 GEMM of the condition scale: a tile of COND_ROWS x NT floats */
#define XB_ROWS 64    /* rows of x prepared together (a multiple of 8, BF_MR) */

#if defined(__x86_64__) && defined(__GNUC__) && (defined(__clang__) || __GNUC__ >= 10)
#include <immintrin.h>
#define ADM_BF16_COND 1
#define BF_MR 8  /* rows of x per micro-tile (a multiple of 8 divides COND_ROWS) */
#define BF_NR 48 /* rows of w per micro-tile: 3 vectors of 16 fp32 sums */

/* The scaled |row| of each of n rows as bf16 pairs (k = 2p in the low
 * half, 2p + 1 in the high half, a zero past K), row r's pair p at
 * (r / blk) kp blk + p blk + r % blk: the layout the micro-kernel loads,
 * blk rows of one pair side by side. The values are abs_scaled_rows'
 * (|v| 2^-ex[r], ex[r] putting the row's largest finite magnitude in
 * [1, 2)), cut from the fp64 bits of bf16 inputs, which drops nothing,
 * except that a result below bf16's normal range becomes 0, as
 * AVX512-BF16 treats it anyway; NaN stays NaN, Inf stays Inf. Integer
 * operations only, so that the compiler vectorises both loops. The
 * caller zeroes out[] for the padding rows. */
static inline uint32_t bf16_scaled(const double *p, int64_t k, int64_t K, int64_t sh)
{
    const uint64_t inf = 0x7ff0000000000000u, mag = 0x7fffffffffffffffu;
    uint64_t u = k < K ? adm_f64_bits(p[k]) & mag : 0;
    int64_t e = (int64_t)(u >> 52) - sh;
    return u > inf ? 0x7fc0u
           : u == inf ? 0x7f80u
           : e >= 1 && u >= ((uint64_t)1 << 52) ? (uint32_t)(e << 7) | (uint32_t)(u >> 45 & 0x7f)
                                                : 0u;
}

/* The same from the bf16 bits (a row without subnormals): e = the bf16
 * exponent field minus the row's exponent (at most 127 for a finite u,
 * which is at most the row's largest). */
static inline uint16_t bf16_scaled_h(uint16_t h, int ex)
{
    uint32_t u = h & 0x7fffu;
    int32_t e = (int32_t)(u >> 7) - ex;
    return (uint16_t)(u > 0x7f80u ? 0x7fc0u : u == 0x7f80u ? 0x7f80u : u >= 0x80u && e >= 1 ? (uint32_t)e << 7 | (u & 0x7f) : 0u);
}

/* h: NULL, or the same rows' bf16 bits (contiguous, row stride K), read
 * instead of the fp64 copy (a quarter of the bytes) in the rows without
 * subnormals. Called only where the CPU has AVX512-BF16 (bf16_cond_usable),
 * hence compiled for AVX512BW: the scans and the scaling of the bf16 rows
 * run 32 values a vector (ADM_SIMD: -O2 alone leaves them
 * scalar); what is left scalar is one store per pair into the packed
 * layout. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void
abs_scaled_pairs(const double *rows, const uint16_t *h, int64_t n, int64_t K, int64_t kp, int64_t blk, uint32_t *out,
                 int *ex, unsigned char *use_h)
{
    const uint64_t inf = 0x7ff0000000000000u, mag = 0x7fffffffffffffffu;
    for (int64_t r = 0; r < n; r++) {
        const double *p = rows + r * K;
        uint64_t m = 0;
        use_h[r] = 0;
        if (h) {
            const uint16_t *q = h + r * K;
            uint16_t mh = 0, sub = 0;
            ADM_SIMD_MAX_OR(mh, sub)
            for (int64_t k = 0; k < K; k++) {
                uint16_t u = q[k] & 0x7fffu;
                mh = u < 0x7f80u && u > mh ? u : mh;
                sub |= (uint16_t)(u - 1u) < 0x7fu; /* a nonzero subnormal */
            }
            if (!sub) {
                use_h[r] = 1;
                ex[r] = mh >= 0x80u ? (int)(mh >> 7) - 127 : 0;
                continue;
            }
        }
        for (int64_t k = 0; k < K; k++) {
            uint64_t u = adm_f64_bits(p[k]) & mag;
            m = u < inf && u > m ? u : m;
        }
        /* the exponent of the largest magnitude; a row of zeros (or only
         * subnormals, far below bf16's range) keeps 0 */
        ex[r] = m >= ((uint64_t)1 << 52) ? (int)(m >> 52) - 1023 : 0;
    }
    /* 32 pairs of a block's rows at a time: the reads run along rows, the
     * stores stay within 32 x blk words (at most 6 KiB, in L1) */
    for (int64_t r0 = 0; r0 < n; r0 += blk) {
        int64_t nb = n - r0 < blk ? n - r0 : blk;
        uint32_t *o = out + r0 / blk * kp * blk;
        for (int64_t q0 = 0; q0 < kp; q0 += 32) {
            int64_t q1 = kp - q0 < 32 ? kp : q0 + 32;
            for (int64_t r = 0; r < nb; r++) {
                const double *p = rows + (r0 + r) * K;
                int e = ex[r0 + r];
                int64_t sh = 1023 + (int64_t)e - 127; /* fp64's exponent field minus bf16's, scaled */
                if (use_h[r0 + r]) {
                    /* the chunk's values, then its pairs (k = 2q low, 2q + 1 high: a little-endian word) */
                    const uint16_t *hr = h + (r0 + r) * K + 2 * q0;
                    uint16_t t[64];
                    int64_t nk = (K < 2 * q1 ? K : 2 * q1) - 2 * q0;
                    ADM_SIMD
                    for (int64_t k = 0; k < nk; k++) t[k] = bf16_scaled_h(hr[k], e);
                    if (nk < 2 * (q1 - q0)) t[nk] = 0; /* past an odd K */
                    for (int64_t q = q0; q < q1; q++) memcpy(&o[q * blk + r], t + 2 * (q - q0), sizeof *o);
                } else {
                    for (int64_t q = q0; q < q1; q++)
                        o[q * blk + r] = bf16_scaled(p, 2 * q, K, sh) | bf16_scaled(p, 2 * q + 1, K, sh) << 16;
                }
            }
        }
    }
}

/* c[r][j] (BF_MR x BF_NR, row stride BF_NR) = (resume ? c[r][j] : 0) + the sum over the kp pairs of
 * a's row r times b's row j, each pair's two exact products added to the
 * fp32 sum one at a time, rounded to nearest (VDPBF16PS): with positive
 * terms the sum is within gamma_K of fp32 of the exact one, as an SGEMM's. */
__attribute__((target("avx512f,avx512bf16"))) static void bf16_micro(const uint32_t *a, const uint32_t *b,
                                                                     int64_t kp, float *c, int resume)
{
    __m512 acc[BF_MR][3]; /* 24 of the 32 registers: the loops are unrolled so that they stay there */
#pragma GCC unroll 8
    for (int r = 0; r < BF_MR; r++)
#pragma GCC unroll 3
        for (int q = 0; q < 3; q++) acc[r][q] = resume ? _mm512_loadu_ps(c + r * BF_NR + 16 * q) : _mm512_setzero_ps();
    for (int64_t p = 0; p < kp; p++) {
        const uint32_t *bp = b + p * BF_NR, *ap = a + p * BF_MR;
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp), b1 = (__m512bh)_mm512_loadu_si512(bp + 16),
                 b2 = (__m512bh)_mm512_loadu_si512(bp + 32);
#pragma GCC unroll 8
        for (int r = 0; r < BF_MR; r++) {
            __m512bh ar = (__m512bh)_mm512_set1_epi32((int)ap[r]);
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
            acc[r][2] = _mm512_dpbf16_ps(acc[r][2], ar, b2);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < BF_MR; r++)
#pragma GCC unroll 3
        for (int q = 0; q < 3; q++) _mm512_storeu_ps(c + r * BF_NR + 16 * q, acc[r][q]);
}

#define BF_KP 128 /* pairs of k per pass: a 24 KiB slice of w's panel stays in L1 across the row blocks */

/* ct (mb x nt, row stride nt) = the scaled |x| rows i0 .. i0 + mb (i0 a
 * multiple of BF_MR, mb at most COND_ROWS) of xa against the nt packed
 * rows of wa. Each sum runs over k in order whatever the blocking (a
 * pass resumes from the sums the last one left in cp), so the bits do
 * not depend on BF_KP. cp: COND_ROWS x BF_NR floats. */
static void bf16_cond_tile(const uint32_t *xa, const uint32_t *wa, int64_t kp, int64_t i0, int64_t mb, int64_t nt,
                           float *ct, float *cp)
{
    for (int64_t j0 = 0; j0 < nt; j0 += BF_NR) {
        int64_t nc = nt - j0 < BF_NR ? nt - j0 : BF_NR;
        const uint32_t *wp = wa + j0 / BF_NR * kp * BF_NR;
        for (int64_t k0 = 0; k0 < kp; k0 += BF_KP) {
            int64_t kb = kp - k0 < BF_KP ? kp - k0 : BF_KP;
            for (int64_t r0 = 0; r0 < mb; r0 += BF_MR)
                bf16_micro(xa + (i0 + r0) / BF_MR * kp * BF_MR + k0 * BF_MR, wp + k0 * BF_NR, kb, cp + r0 * BF_NR,
                           k0 > 0);
        }
        for (int64_t r = 0; r < mb; r++) memcpy(ct + r * nt + j0, cp + r * BF_NR, sizeof *ct * (size_t)nc);
    }
}

static int bf16_cond_usable(const adm_tensor *x, const adm_tensor *w)
{
    __builtin_cpu_init();
    return x->dtype == ADM_BF16 && w->dtype == ADM_BF16 && __builtin_cpu_supports("avx512bf16");
}
#else
static int bf16_cond_usable(const adm_tensor *x, const adm_tensor *w)
{
    (void)x;
    (void)w;
    return 0;
}
#endif

/* The epilogue of one row of a tile: value + bias, the bound (the
 * Cauchy-Schwarz term, the bias's rounding, GELU's) and the condition
 * scale, for the nt outputs of row i from column n0 of the tile on; ctr:
 * the row's scale sums (ct), xr: the row's exponent and norm. One element
 * at a time, as derived in the comment at the top; what epi_row_simd
 * falls back to. */
typedef struct epi_row {
    double *val, *bnd, *cond;  /* the row's first output: val + i N + n0 ... (cond NULL: none) */
    const float *ct;           /* the scale's sums for these outputs */
    const double *nw, *bd;     /* the tile's norms of w and its part of the bias (NULL: none) */
    const int *ew;             /* the tile's exponents of w */
    double gknx;               /* mul_up(gamma_(K-1), ||x_i||) */
    int exi, gelu;             /* x_i's exponent; 0 none, 1 tanh, 2 erf */
    int64_t nt, K;
} epi_row;

static void epi_row_scalar(const epi_row *r)
{
    for (int64_t j = 0; j < r->nt; j++) {
        double v = r->K > 0 ? r->val[j] : 0.0, b = adm_mul_up(r->gknx, r->nw[j]), e, cz = 0;
        if (r->cond && r->K > 0) cz = pow2_scale((double)r->ct[j], r->exi + r->ew[j]);
        if (r->bd) {
            v += r->bd[j];
            b = adm_add_up(b, adm_mul_up(ADM_U, fabs(v)));
            cz += fabs(r->bd[j]);
        }
        if (r->gelu) {
            /* scalar_fns.h's, inlined here (adm_o_gelu_* wrap the same) */
            double g = r->gelu == 1 ? adm_fn_gelu_tanh(v, &e) : adm_fn_gelu_erf(v, &e);
            b = adm_add_up(e, adm_mul_up(adm_fn_gelu_slope(v, b), b));
            if (r->cond)
                cz = adm_fn_cond_chain(g, r->gelu == 1 ? adm_o_gelu_tanh_d_from(v, g) : adm_fn_gelu_erf_d(v), cz);
            v = g;
        }
        r->val[j] = v;
        r->bnd[j] = b;
        if (r->cond) r->cond[j] = cz;
    }
}

#define EPI_J 128 /* outputs per pass of epi_row_simd: its scratch (5 KiB) stays in L1 */

/* epi_row_scalar's operations, in its order on the same operands, so the
 * same bits (each operation rounds once, vector or not), where the
 * scale's exponents ex_i + ew_j are all within the normal range (the
 * caller checks; pow2_scale's multiplication then) and GELU is none or
 * tanh: the branch-free directed rounding (scalar_fns.h) and GELU split
 * around its exp (adm_fn_gelu_tanh_w, _fin) let the compiler vectorise
 * both halves; exp runs between them, one call an element, as before.
 * Every rounded-up step here has operands >= +0 (the norms, |v|, the
 * slope, GELU's bound), so it takes scalar_fns.h's nn form: the same
 * bits as epi_row_scalar's, a third of the compares. The
 * flags are constants where epi_row_simd calls this, so that each case
 * gets its own loops. */
static inline __attribute__((always_inline)) void epi_body(const epi_row *r, const int bias, const int cond,
                                                           const int gelu)
{
    double *val = r->val, *bnd = r->bnd, *cnd = r->cond, gknx = r->gknx;
    const float *ct = r->ct;
    const double *nw = r->nw, *bd = r->bd;
    const int *ew = r->ew;
    int exi = r->exi;
    for (int64_t j0 = 0; j0 < r->nt; j0 += EPI_J) {
        int64_t n = r->nt - j0 < EPI_J ? r->nt - j0 : EPI_J;
        double vs[EPI_J], bs[EPI_J], cs[EPI_J], ws[EPI_J], es[EPI_J];
        ADM_SIMD
        for (int64_t j = 0; j < n; j++) {
            double v = val[j0 + j], b = adm_mul_up_(gknx, nw[j0 + j], 1), cz = 0;
            if (cond) cz = (double)ct[j0 + j] * adm_f64_from_bits((uint64_t)(exi + ew[j0 + j] + 1023) << 52);
            if (bias) {
                v += bd[j0 + j];
                b = adm_add_up_(b, adm_mul_up_(ADM_U, fabs(v), 1), 1);
                cz += fabs(bd[j0 + j]);
            }
            if (gelu) {
                vs[j] = v;
                bs[j] = b;
                cs[j] = cz;
                ws[j] = adm_fn_gelu_tanh_w(v);
            } else {
                val[j0 + j] = v;
                bnd[j0 + j] = b;
                if (cond) cnd[j0 + j] = cz;
            }
        }
        if (!gelu) continue;
        for (int64_t j = 0; j < n; j++) es[j] = ADM_EXP(ws[j]);
        ADM_SIMD
        for (int64_t j = 0; j < n; j++) {
            double e, v = vs[j], b = bs[j], g = adm_fn_gelu_tanh_fin_(v, ws[j], es[j], &e, 1);
            val[j0 + j] = g;
            bnd[j0 + j] = adm_add_up_(e, adm_mul_up_(adm_fn_gelu_slope(v, b), b, 1), 1);
            if (cond) cnd[j0 + j] = adm_fn_cond_chain(g, adm_o_gelu_tanh_d_from(v, g), cs[j]);
        }
    }
}

/* flatten: the scalar functions inlined into the loops (GCC's -O2 would
 * keep adm_fn_gelu_tanh_fin a call, which stops the vectoriser) */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default"), flatten))
#elif defined(__GNUC__)
__attribute__((flatten))
#endif
static void epi_row_simd(const epi_row *r)
{
    int bias = r->bd != NULL, cond = r->cond != NULL, gelu = r->gelu == 1;
    if (bias && cond && gelu) epi_body(r, 1, 1, 1);
    else if (bias && cond) epi_body(r, 1, 1, 0);
    else if (bias && gelu) epi_body(r, 1, 0, 1);
    else if (bias) epi_body(r, 1, 0, 0);
    else if (cond && gelu) epi_body(r, 0, 1, 1);
    else if (cond) epi_body(r, 0, 1, 0);
    else if (gelu) epi_body(r, 0, 0, 1);
    else epi_body(r, 0, 0, 0);
}

adm_status adm_o_eval_gemm(const adm_o_ctx *c, double *val, double *bnd)
{
    adm_op_id id = adm_op_id_of(c->op);
    const adm_tensor *x = c->in[0], *w = c->in[1], *bias = id == OP_MATMUL ? NULL : c->in[2];
    adm_tensor wt; /* w as [N, K] */
    int64_t K = x->shape[x->ndim - 1], M, N, NT, tile_bytes;
    double *xd = NULL, *nx = NULL, *bd = NULL, gk;
    float *xa = NULL;
    uint32_t *xb = NULL; /* the bf16 path's scaled |x| (abs_scaled_pairs) */
    int *ex = NULL;
    int prev_threads, oom = 0, bf, wcont;
    int64_t kp = (K + 1) / 2, m8;
    adm_status st = ADM_OK;

    ADM_TRY(adm_o_need_narrow(x, adm_op_name(c->op), adm_op_input_name(c->op, 0)));
    ADM_TRY(adm_o_need_narrow(w, adm_op_name(c->op), adm_op_input_name(c->op, 1)));
    if (id == OP_MATMUL) ADM_TRY(adm_tensor_transpose(w, 0, 1, &wt));
    else wt = *w;
    N = wt.shape[0];
    M = N > 0 ? c->numel / N : 0;
    if (M == 0 || N == 0) return ADM_OK;
    gk = adm_gamma_up((double)(K - 1));
    /* One thread per tile of w: each converts its rows, runs a
     * single-threaded DGEMM and the epilogue while the tile is in cache.
     * One threading system only: OpenBLAS's own workers would spin
     * against the epilogue's. 12 MiB per thread (at most 128 MiB in
     * all): measured on FLUX.1's shapes (bench_oracle), 64 MiB tiles cost
     * a quarter more CPU time, mostly first-touch page faults on the
     * tiles, while 6 to 24 MiB cost the same within the noise, OpenBLAS
     * repacking x once per tile. */
    tile_bytes = TILE_BYTES < ((int64_t)128 << 20) / c->threads ? TILE_BYTES : ((int64_t)128 << 20) / c->threads;
    NT = K > 0 ? tile_bytes / (8 * K) : N;
    if (NT < 1) NT = 1;
    {
        /* equal tiles, a multiple of the thread count, for balance */
        int64_t tiles = (N + NT - 1) / NT;
        tiles = (tiles + c->threads - 1) / c->threads * c->threads;
        NT = (N + tiles - 1) / tiles;
        if (NT < 1) NT = 1;
    }
    xd = malloc(sizeof *xd * (size_t)(M * K + 1));
    adm_mem_huge(xd, sizeof *xd * (size_t)(M * K + 1));
    nx = malloc(sizeof *nx * (size_t)(M + 1));
    bd = malloc(sizeof *bd * (size_t)(N + 1));
    bf = c->cond && K > 0 && bf16_cond_usable(x, &wt);
    wcont = adm_tensor_is_contiguous(&wt);
    (void)wcont; /* read by the bf16 path only */
    m8 = (M + 7) / 8 * 8;
    if (c->cond) {
        if (bf) xb = calloc((size_t)(m8 * kp), sizeof *xb);
        else xa = malloc(sizeof *xa * (size_t)(M * K + 1));
        adm_mem_huge(xb, xb ? sizeof *xb * (size_t)(m8 * kp) : 0);
        adm_mem_huge(xa, xa ? sizeof *xa * (size_t)(M * K + 1) : 0);
        ex = malloc(sizeof *ex * (size_t)(M + 1));
    }
    if (!xd || !nx || !bd || (c->cond && (!(xa || xb) || !ex))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: cannot allocate the fp64 operands", adm_op_name(c->op));
        goto done;
    }
    {
        /* x's rows in blocks of XB_ROWS (a multiple of BF_MR): fp64, norms
         * and the scale's operand, each block while it is in cache */
        unsigned char *uh = bf ? malloc((size_t)M + 1) : NULL;
        const uint16_t *xh = bf && adm_tensor_is_contiguous(x) ? (const uint16_t *)x->data + x->offset : NULL;
        if (bf && !uh) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: cannot allocate the fp64 operands", adm_op_name(c->op));
            goto done;
        }
#pragma omp parallel num_threads(c->threads)
        {
            adm_fpenv fe;
            adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
            for (int64_t r0 = 0; r0 < M; r0 += XB_ROWS) {
                int64_t r1 = M - r0 < XB_ROWS ? M : r0 + XB_ROWS;
                rows_and_norms(x, K, r0, r1, xd + r0 * K, nx + r0);
#ifdef ADM_BF16_COND
                if (bf)
                    abs_scaled_pairs(xd + r0 * K, xh ? xh + r0 * K : NULL, r1 - r0, K, kp, BF_MR,
                                     xb + r0 / BF_MR * kp * BF_MR, ex + r0, uh + r0);
#endif
                if (c->cond && !bf) abs_scaled_rows(xd + r0 * K, r1 - r0, K, xa + r0 * K, ex + r0);
            }
            adm_fpenv_leave(&fe);
        }
        free(uh);
    }
    for (int64_t j = 0; j < N; j++) bd[j] = bias ? adm_tensor_get(bias, j) : 0.0;
    prev_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
#pragma omp parallel num_threads(c->threads)
    {
        double *wd = malloc(sizeof *wd * (size_t)(NT * K + 1)), *nw = malloc(sizeof *nw * (size_t)(NT + 1));
        int64_t np = (NT + 47) / 48; /* panels of 48 rows of w for the bf16 path */
        float *wa = c->cond && !bf ? malloc(sizeof *wa * (size_t)(NT * K + 1)) : NULL;
        uint32_t *wb = bf ? malloc(sizeof *wb * (size_t)(np * 48 * kp)) : NULL;
        float *ct = c->cond ? malloc(sizeof *ct * (size_t)(COND_ROWS * NT + 1)) : NULL;
        float *cp = bf ? malloc(sizeof *cp * COND_ROWS * 48) : NULL;
        int *ew = c->cond ? malloc(sizeof *ew * (size_t)(NT + 1)) : NULL;
        unsigned char *uw = bf ? malloc((size_t)NT + 1) : NULL;
        int ok = wd && nw && (!c->cond || ((wa || (wb && cp && uw)) && ct && ew)), ewlo, ewhi;
        int gelu = id != OP_LINEAR_GELU ? 0 : c->p->gelu_tanh ? 1 : 2;
        /* tens of MiB each, first touched here: 2 MiB faults, not 4 KiB ones */
        adm_mem_huge(wd, sizeof *wd * (size_t)(NT * K + 1));
        adm_mem_huge(wa, wa ? sizeof *wa * (size_t)(NT * K + 1) : 0);
        adm_mem_huge(wb, wb ? sizeof *wb * (size_t)(np * 48 * kp) : 0);
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
        if (!ok) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t n0 = 0; n0 < N; n0 += NT) {
            int64_t nt = N - n0 < NT ? N - n0 : NT;
            if (!ok) continue;
            rows_and_norms(&wt, K, n0, n0 + nt, wd, nw);
#ifdef ADM_BF16_COND
            if (bf) {
                memset(wb + (nt - 1) / BF_NR * kp * BF_NR, 0, sizeof *wb * (size_t)(kp * BF_NR)); /* padding rows */
                abs_scaled_pairs(wd, wcont ? (const uint16_t *)wt.data + wt.offset + n0 * K : NULL, nt, K, kp,
                                 BF_NR, wb, ew, uw);
            }
#endif
            if (c->cond && !bf) abs_scaled_rows(wd, nt, K, wa, ew);
            ewlo = ewhi = 0; /* the tile's range of exponents (epi_row_simd's condition) */
            for (int64_t j = 0; c->cond && K > 0 && j < nt; j++) {
                ewlo = ew[j] < ewlo || j == 0 ? ew[j] : ewlo;
                ewhi = ew[j] > ewhi || j == 0 ? ew[j] : ewhi;
            }
            if (K > 0)
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)nt, (int)K, 1.0, xd, (int)K, wd,
                            (int)K, 0.0, val + n0, (int)N);
            for (int64_t i0 = 0; i0 < M; i0 += COND_ROWS) {
                int64_t mb = M - i0 < COND_ROWS ? M - i0 : COND_ROWS;
#ifdef ADM_BF16_COND
                if (bf) bf16_cond_tile(xb, wb, kp, i0, mb, nt, ct, cp);
#endif
                if (c->cond && K > 0 && !bf)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mb, (int)nt, (int)K, 1.0f, xa + i0 * K,
                                (int)K, wa, (int)K, 0.0f, ct, (int)nt);
                for (int64_t i = i0; i < i0 + mb; i++) {
                    epi_row er = {val + i * N + n0, bnd + i * N + n0, c->cond ? c->cond + i * N + n0 : NULL,
                                  ct ? ct + (i - i0) * nt : NULL, nw, bias ? bd + n0 : NULL, ew,
                                  adm_mul_up(gk, nx[i]), c->cond ? ex[i] : 0, gelu, nt, K};
                    /* the vectorised epilogue where its conditions hold (see epi_body) */
                    if (K > 0 && gelu != 2 && (!c->cond || (ex[i] + ewlo >= -1022 && ex[i] + ewhi <= 1023)))
                        epi_row_simd(&er);
                    else
                        epi_row_scalar(&er);
                }
            }
        }
        adm_fpenv_leave(&fe);
        free(wd);
        free(nw);
        free(wa);
        free(wb);
        free(cp);
        free(uw);
        free(ct);
        free(ew);
    }
    openblas_set_num_threads(prev_threads);
    if (oom) st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: cannot allocate a tile of w", adm_op_name(c->op));
done:
    free(xd);
    free(nx);
    free(bd);
    free(xa);
    free(xb);
    free(ex);
    return st;
}

/* For the elements where the Cauchy-Schwarz form is too blunt: the value
 * recomputed in k order (its bound holds for any order) and the sharper
 * bound gamma_(K-1) sum_k |x_ik w_jk|, in O(K). */
adm_status adm_o_gemm_tighten(const adm_o_ctx *c, int64_t index, double *value, double *bound)
{
    adm_op_id id = adm_op_id_of(c->op);
    const adm_tensor *x = c->in[0], *w = c->in[1];
    adm_tensor wt;
    int64_t K = x->shape[x->ndim - 1], N, i, j;
    double s = 0, v = 0, b, gk = adm_gamma_up((double)(K - 1));
    if (id == OP_MATMUL) ADM_TRY(adm_tensor_transpose(w, 0, 1, &wt));
    else wt = *w;
    N = wt.shape[0];
    i = index / N;
    j = index % N;
    for (int64_t k = 0; k < K; k++) {
        double p = adm_tensor_get(x, i * K + k) * adm_tensor_get(&wt, j * K + k);
        s = adm_add_up(s, fabs(p)); /* >= the exact sum of |p| */
        v += p;
    }
    b = adm_mul_up(gk, s);
    if (id != OP_MATMUL && c->in[2]) {
        v += adm_tensor_get(c->in[2], j);
        b = adm_add_up(b, adm_mul_up(ADM_U, fabs(v)));
    }
    if (id == OP_LINEAR_GELU) {
        double e, g = c->p->gelu_tanh ? adm_o_gelu_tanh(v, &e) : adm_o_gelu_erf(v, &e);
        b = adm_add_up(e, adm_mul_up(adm_fn_gelu_slope(v, b), b));
        v = g;
    }
    *value = v;
    *bound = b;
    return ADM_OK;
}
