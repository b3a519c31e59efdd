/* GEMM-family emulations: eager reference paths and fused kernels. */
#include "adm_candidates.h"
#include "adm_fpenv.h"

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

ADM_FPENV_BODY
static adm_status emu_gemm_body(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias,
                                const adm_gemm_emu *e, adm_tensor *out)
{
    int64_t K = x->shape[x->ndim - 1], N = w->shape[0], M = K ? adm_tensor_numel(x) / K : 0;
    int64_t oshape[ADM_MAX_DIMS];
    float *xf = NULL, *wf = NULL, qscale = 1;
    adm_status st;
    int splits = e->splitk > 0 ? e->splitk : 1;
    if (w->ndim != 2 || w->shape[1] != K) return ADM_FAIL(ADM_ERR_SHAPE, "emulated GEMM: w must be [N, %lld]", (long long)K);
    memcpy(oshape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    oshape[x->ndim - 1] = N;
    ADM_TRY(adm_tensor_alloc(out, e->out, x->ndim, oshape));
    xf = malloc(sizeof *xf * (size_t)(M * K + 1));
    wf = malloc(sizeof *wf * (size_t)(N * K + 1));
    if (!xf || !wf) { st = ADM_FAIL(ADM_ERR_NOMEM, "emulated GEMM: out of memory"); goto fail; }
    for (int64_t i = 0; i < M * K; i++) xf[i] = (float)adm_tensor_get(x, i);
    for (int64_t i = 0; i < N * K; i++) wf[i] = (float)adm_tensor_get(w, i);
    if (e->operand != ADM_DTYPE_INVALID) {
        /* per-tensor scaled quantization of x, as an fp8 GEMM feeds it */
        float amax = 0;
        for (int64_t i = 0; i < M * K; i++) amax = fmaxf(amax, fabsf(xf[i]));
        qscale = amax > 0 ? amax / (float)adm_format_get(e->operand)->max_finite : 1.0f;
        for (int64_t i = 0; i < M * K; i++) xf[i] = round_to(e->operand, ADM_RNE, xf[i] / qscale) * qscale;
    }
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            const float *a = xf + i * K, *b = wf + j * K;
            float acc = 0, bv = bias ? (float)adm_tensor_get(bias, j) : 0.0f, v;
            int64_t chunk = (K + splits - 1) / splits;
            for (int s = 0; s < splits; s++) {
                float part = 0;
                int64_t k0 = s * chunk, k1 = k0 + chunk < K ? k0 + chunk : K;
                if (e->kblock > 0) {
                    /* products of fp32-or-narrower values are exact in fp64,
                     * and so is a block's sum of bf16 products unless their
                     * exponents span more than ~2^30;
                     * the fp64 sum then rounds to fp32 once per block (fp64
                     * carries 29 bits beyond fp32: a double rounding needs
                     * the fp64 sum on an fp32 midpoint, probability 2^-29) */
                    for (int64_t kb = k0; kb < k1; kb += e->kblock) {
                        int64_t kend = kb + e->kblock < k1 ? kb + e->kblock : k1;
                        double blk = 0;
                        for (int64_t k = kb; k < kend; k++) blk += (double)a[k] * (double)b[k];
                        part = (float)((double)part + blk);
                    }
                } else {
                    for (int64_t k = k0; k < k1; k++) {
                        part += a[k] * b[k];
                        if (e->accumulator == ADM_BF16) part = round_to(ADM_BF16, ADM_RNE, part);
                    }
                }
                if (e->partial_round) part = round_to(e->out, ADM_RNE, part);
                acc = s == 0 ? part : acc + part;
                if (e->accumulator == ADM_BF16) acc = round_to(ADM_BF16, ADM_RNE, acc);
            }
            if (e->bias_in_accumulator) {
                v = acc + bv;
            } else {
                v = round_to(e->out, ADM_RNE, acc);
                if (bias) v = v + bv;
            }
            if (e->gelu != ADM_GELU_NONE) {
                if (!e->gelu_fused) v = round_to(e->out, ADM_RNE, v);
                v = gelu_f32(v, e->gelu);
            }
            if (e->nudge_ulps != 0) v = (float)(v + e->nudge_ulps * adm_format_ulp(e->out, v));
            {
                uint64_t bits;
                adm_format_encode(e->out, v, e->out_round, 0, &bits);
                adm_tensor_set_bits(out, i * N + j, bits);
            }
        }
    }
    free(xf);
    free(wf);
    return ADM_OK;
fail:
    free(xf);
    free(wf);
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
