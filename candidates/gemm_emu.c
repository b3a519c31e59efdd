/* GEMM-family emulations: eager reference paths and fused kernels. */
#include "adm_candidates.h"
#include "adm_fpenv.h"
#include "emu_internal.h"

#include <math.h>
#include <stdlib.h>

void adm_gemm_emu_reference(adm_gemm_emu *e)
{
    memset(e, 0, sizeof *e);
    e->accumulator = ADM_FP32;
    e->splitk = 1;
    e->out = ADM_BF16;
    e->out_round = ADM_RNE;
    e->operand = ADM_DTYPE_INVALID;
}

/* PyTorch computes GELU of a bf16 tensor in fp32 ("opmath") and rounds:
 *   tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   erf:  0.5 x (1 + erf(x / sqrt(2)))  */
static float gelu_f32(float x, adm_gelu_kind k)
{
    if (k == ADM_GELU_TANH) {
        const float beta = 0.7978845608028654f, kappa = 0.044715f;
        float cube = x * x * x, inner = beta * (x + kappa * cube);
        return 0.5f * x * (1.0f + tanhf(inner));
    }
    if (k == ADM_GELU_ERF) return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    return x;
}

ADM_FPENV_BODY
static float emu_gelu_f32_body(float x, adm_gelu_kind k) { return gelu_f32(x, k); }

/* In the default floating-point environment (core/adm_fpenv.h). */
float adm_emu_gelu_f32(float x, adm_gelu_kind k)
{
    adm_fpenv fe;
    float rv;
    adm_fpenv_enter(&fe);
    rv = emu_gelu_f32_body(x, k);
    adm_fpenv_leave(&fe);
    return rv;
}

static float round_to(adm_dtype dt, adm_round mode, float v)
{
    if (dt == ADM_FP32) return v;
    if (dt == ADM_BF16) return adm_bf16_to_f32(mode == ADM_RTZ ? adm_bf16_from_f32_rtz(v) : adm_bf16_from_f32(v));
    if (dt == ADM_FP16) return adm_fp16_to_f32(mode == ADM_RTZ ? adm_fp16_from_f32_rtz(v) : adm_fp16_from_f32(v));
    return (float)adm_format_round(dt, v, mode, ADM_CVT_SATFINITE);
}

/* The GEMM runs in tiles of TR rows of x by TC rows of w (output
 * columns), vectorised over the tile's columns: each lane sums its own
 * element's products in k order (emu_internal.h), so every output has the
 * bits of the scalar loop (for k: part += a[k] * b[k]). Tiles are shared
 * among OpenMP threads; each packs its TC rows of w transposed ([k][c],
 * columns past N zero) and keeps them for TG rows of x. */
enum { TC = 64, TR = 4, TG = 64, TV = TC / 16 };

/* adm_bf16_to_f32(adm_bf16_from_f32(v)) lane by lane, in place (a
 * pointer: a 64-byte vector by value has no baseline ABI). */
static inline void bf16_round_v(adm_v16f *v)
{
    adm_v16u x, rn, nn, m;
    memcpy(&x, v, sizeof x);
    m = (adm_v16u)((x & 0x7fffffffu) > 0x7f800000u);
    rn = (x + 0x7fffu + ((x >> 16) & 1u)) & 0xffff0000u;
    nn = (x & 0xffff0000u) | 0x400000u;
    x = (nn & m) | (rn & ~m);
    memcpy(v, &x, sizeof x);
}

/* part[r][c] = sum over k in [k0, k1) of x[r][k] w[k][c] as the scalar
 * loops compute it: one fp32 add per product (rounded to bf16 after each
 * when bf16acc), or, kblock > 0, the products of each block of kblock
 * summed in fp64 and the block added to the fp32 partial with one
 * rounding. x: TR rows of ldx floats; wp: [K][TC]. */
ADM_EMU_CLONES
static void tile_sum(const float *const *x, const float *wp, int64_t k0, int64_t k1, int bf16acc, int kblock,
                     float *part)
{
    if (kblock > 0) {
        for (int r = 0; r < TR; r++) {
            adm_v16f p[TV];
            for (int v = 0; v < TV; v++) p[v] = (adm_v16f){0};
            for (int64_t kb = k0; kb < k1; kb += kblock) {
                int64_t kend = kb + kblock < k1 ? kb + kblock : k1;
                adm_v8d blk[2 * TV];
                for (int v = 0; v < 2 * TV; v++) blk[v] = (adm_v8d){0};
                for (int64_t k = kb; k < kend; k++) {
                    double a = (double)x[r][k];
                    const float *w = wp + k * TC;
                    for (int v = 0; v < 2 * TV; v++) {
                        typedef float v8f __attribute__((vector_size(32)));
                        v8f wv;
                        memcpy(&wv, w + 8 * v, sizeof wv);
                        blk[v] += a * __builtin_convertvector(wv, adm_v8d);
                    }
                }
                for (int v = 0; v < TV; v++) {
                    typedef float v8f __attribute__((vector_size(32)));
                    v8f lo, hi;
                    adm_v8d plo, phi;
                    memcpy(&lo, (const float *)&p[v], sizeof lo);
                    memcpy(&hi, (const float *)&p[v] + 8, sizeof hi);
                    plo = __builtin_convertvector(lo, adm_v8d) + blk[2 * v];
                    phi = __builtin_convertvector(hi, adm_v8d) + blk[2 * v + 1];
                    lo = __builtin_convertvector(plo, v8f);
                    hi = __builtin_convertvector(phi, v8f);
                    memcpy((float *)&p[v], &lo, sizeof lo);
                    memcpy((float *)&p[v] + 8, &hi, sizeof hi);
                }
            }
            memcpy(part + r * TC, p, sizeof p);
        }
        return;
    }
    {
        /* TR x TV accumulators in named variables, so that they live in
         * registers across the k loop */
        const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
        adm_v16f a00 = {0}, a01 = {0}, a02 = {0}, a03 = {0}, a10 = {0}, a11 = {0}, a12 = {0}, a13 = {0};
        adm_v16f a20 = {0}, a21 = {0}, a22 = {0}, a23 = {0}, a30 = {0}, a31 = {0}, a32 = {0}, a33 = {0};
#define ROW(r, b)                  \
    do {                           \
        a##r##0 += (b) * w0;       \
        a##r##1 += (b) * w1;       \
        a##r##2 += (b) * w2;       \
        a##r##3 += (b) * w3;       \
        if (bf16acc) {             \
            bf16_round_v(&a##r##0); \
            bf16_round_v(&a##r##1); \
            bf16_round_v(&a##r##2); \
            bf16_round_v(&a##r##3); \
        }                          \
    } while (0)
        for (int64_t k = k0; k < k1; k++) {
            const adm_v16f *w = (const adm_v16f *)(wp + k * TC);
            adm_v16f w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
            ROW(0, x0[k]);
            ROW(1, x1[k]);
            ROW(2, x2[k]);
            ROW(3, x3[k]);
        }
#undef ROW
        {
            adm_v16f all[TR][TV] = {{a00, a01, a02, a03}, {a10, a11, a12, a13}, {a20, a21, a22, a23},
                                    {a30, a31, a32, a33}};
            memcpy(part, all, sizeof all);
        }
    }
}

/* One output element from its (split-K reduced) fp32 sum: the epilogue of
 * the scalar loop, unchanged. */
static inline uint64_t epilogue(const adm_gemm_emu *e, float acc, int has_bias, float bv)
{
    float v;
    if (e->bias_in_accumulator) {
        v = acc + bv;
    } else {
        v = round_to(e->out, ADM_RNE, acc);
        if (has_bias) v = v + bv;
    }
    if (e->gelu != ADM_GELU_NONE) {
        if (!e->gelu_fused) v = round_to(e->out, ADM_RNE, v);
        v = gelu_f32(v, e->gelu);
    }
    if (e->nudge_ulps != 0) v = (float)(v + e->nudge_ulps * adm_format_ulp(e->out, v));
    return adm_emu_encode(e->out, e->out_round, v);
}

ADM_FPENV_BODY
static adm_status emu_gemm_body(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias,
                                const adm_gemm_emu *e, adm_tensor *out)
{
    int64_t K = x->shape[x->ndim - 1], N = w->shape[0], M = K ? adm_tensor_numel(x) / K : 0;
    int64_t oshape[ADM_MAX_DIMS], ncb, nrg;
    float *xf = NULL, *bv = NULL, qscale = 1, amax = 0;
    adm_status st;
    int splits = e->splitk > 0 ? e->splitk : 1, oom = 0;
    if (w->ndim != 2 || w->shape[1] != K) return ADM_FAIL(ADM_ERR_SHAPE, "emulated GEMM: w must be [N, %lld]", (long long)K);
    memcpy(oshape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    oshape[x->ndim - 1] = N;
    ADM_TRY(adm_tensor_alloc(out, e->out, x->ndim, oshape));
    if (M == 0 || N == 0) return ADM_OK;
    xf = adm_emu_falloc(M * K + 1);
    bv = adm_emu_falloc(N + 1);
    if (!xf || !bv) { st = ADM_FAIL(ADM_ERR_NOMEM, "emulated GEMM: out of memory"); goto fail; }
    for (int64_t j = 0; j < N; j++) bv[j] = bias ? (float)adm_tensor_get(bias, j) : 0.0f;
#pragma omp parallel
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < M; i++) adm_emu_load_f32(x, i * K, K, xf + i * K);
        adm_fpenv_leave(&fe);
    }
    if (e->operand != ADM_DTYPE_INVALID) {
        /* per-tensor scaled quantization of x, as an fp8 GEMM feeds it
         * (the max ignores NaN in any order) */
        for (int64_t i = 0; i < M * K; i++) amax = fmaxf(amax, fabsf(xf[i]));
        qscale = amax > 0 ? amax / (float)adm_format_get(e->operand)->max_finite : 1.0f;
#pragma omp parallel
        {
            adm_fpenv fe;
            adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
            for (int64_t i = 0; i < M * K; i++) xf[i] = round_to(e->operand, ADM_RNE, xf[i] / qscale) * qscale;
            adm_fpenv_leave(&fe);
        }
    }
    ncb = (N + TC - 1) / TC;
    nrg = (M + TG - 1) / TG;
#pragma omp parallel
    {
        float *wp = adm_emu_falloc(K * TC + 1), *part = adm_emu_falloc(TR * TC), *acc = adm_emu_falloc(TR * TC);
        adm_fpenv fe;
        int64_t packed = -1;
        adm_fpenv_enter(&fe);
        if (!wp || !part || !acc) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t t = 0; t < ncb * nrg; t++) {
            int64_t cb = t / nrg, rg = t % nrg, j0 = cb * TC, nc = N - j0 < TC ? N - j0 : TC;
            int64_t chunk = (K + splits - 1) / splits;
            if (!wp || !part || !acc) continue;
            if (packed != cb) {
                float *row = part; /* TR * TC >= 256 floats of scratch per pass */
                memset(wp, 0, sizeof *wp * (size_t)(K * TC));
                for (int64_t c = 0; c < nc; c++)
                    for (int64_t k0 = 0; k0 < K; k0 += TR * TC) {
                        int64_t n = K - k0 < TR * TC ? K - k0 : TR * TC;
                        adm_emu_load_f32(w, (j0 + c) * K + k0, n, row);
                        for (int64_t k = 0; k < n; k++) wp[(k0 + k) * TC + c] = row[k];
                    }
                packed = cb;
            }
            for (int64_t i0 = rg * TG; i0 < M && i0 < (rg + 1) * TG; i0 += TR) {
                int64_t nr = M - i0 < TR ? M - i0 : TR;
                const float *xr[TR];
                for (int r = 0; r < TR; r++) xr[r] = xf + (i0 + (r < nr ? r : nr - 1)) * K;
                for (int s = 0; s < splits; s++) {
                    int64_t k0 = s * chunk, k1 = k0 + chunk < K ? k0 + chunk : K;
                    tile_sum(xr, wp, k0, k1, e->accumulator == ADM_BF16, e->kblock, part);
                    for (int64_t q = 0; q < TR * TC; q++) {
                        float pv = part[q];
                        if (e->partial_round) pv = round_to(e->out, ADM_RNE, pv);
                        acc[q] = s == 0 ? pv : acc[q] + pv;
                        if (e->accumulator == ADM_BF16) acc[q] = round_to(ADM_BF16, ADM_RNE, acc[q]);
                    }
                }
                for (int64_t r = 0; r < nr; r++)
                    for (int64_t c = 0; c < nc; c++)
                        adm_emu_store_bits(out, (i0 + r) * N + j0 + c,
                                           epilogue(e, acc[r * TC + c], bias != NULL, bv[j0 + c]));
            }
        }
        adm_fpenv_leave(&fe);
        free(wp);
        free(part);
        free(acc);
    }
    free(xf);
    free(bv);
    if (oom) {
        adm_tensor_free(out);
        return ADM_FAIL(ADM_ERR_NOMEM, "emulated GEMM: out of memory for a tile of w");
    }
    return ADM_OK;
fail:
    free(xf);
    free(bv);
    adm_tensor_free(out);
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_gemm(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias,
                        const adm_gemm_emu *e, adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_gemm_body(x, w, bias, e, out);
    adm_fpenv_leave(&fe);
    return rv;
}
