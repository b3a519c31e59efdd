/* Gated residual and linear attention emulations. */
#include "adm_candidates.h"
#include "adm_fpenv.h"
#include "norm_emu.h"

#include <math.h>
#include <stdlib.h>

static float bf(float v) { return adm_bf16_to_f32(adm_bf16_from_f32(v)); }

/* x + g y. Reference: one fp32 expression, one rounding (addcmul);
 * early: g y rounded to the output format first (the fused kernel of
 * Helios / LingBot Video rounds one step earlier). */
ADM_FPENV_BODY
static adm_status emu_gated_residual_body(const adm_op_params *p, const adm_tensor *const *in, int early,
                                          adm_tensor *out)
{
    const adm_tensor *x = in[0], *y = in[2];
    adm_tensor g;
    int64_t n = adm_tensor_numel(x);
    (void)p;
    ADM_TRY(adm_tensor_broadcast(in[1], x->ndim, x->shape, &g));
    ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, x->shape));
#pragma omp parallel
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            float gy = (float)adm_tensor_get(&g, i) * (float)adm_tensor_get(y, i), v;
            uint64_t b;
            if (early) gy = (float)adm_format_round(x->dtype, gy, ADM_RNE, 0);
            v = (float)adm_tensor_get(x, i) + gy;
            adm_format_encode(x->dtype, v, ADM_RNE, 0, &b);
            adm_tensor_set_bits(out, i, b);
        }
        adm_fpenv_leave(&fe);
    }
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_gated_residual(const adm_op_params *p, const adm_tensor *const *in, int early, adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_gated_residual_body(p, in, early, out);
    adm_fpenv_leave(&fe);
    return rv;
}

/* Linear attention with the ReLU feature map, per head: KV = phi(k)^T v,
 * ks = sum phi(k) in fp32, out = phi(q) KV / (phi(q) ks + eps), fp32 out.
 * bf16_state: KV and ks rounded to bf16 before the second GEMM (SANA-Video
 * feeding bf16 where the reference promotes to fp32). */
ADM_FPENV_BODY
static adm_status emu_linear_attention_body(const adm_op_params *p, const adm_tensor *const *in, int bf16_state,
                                            adm_tensor *out)
{
    const adm_tensor *q = in[0], *k = in[1], *v = in[2];
    int r = q->ndim;
    int64_t S = q->shape[r - 2], D = q->shape[r - 1], T = k->shape[r - 2], E = v->shape[r - 1];
    int64_t H = (S > 0 && D > 0) ? adm_tensor_numel(q) / (S * D) : 1, os[ADM_MAX_DIMS];
    float *kv = malloc(sizeof *kv * (size_t)(D * E + D + 1)), *ks;
    if (!kv) return ADM_FAIL(ADM_ERR_NOMEM, "linear attention emulation: out of memory");
    ks = kv + D * E;
    memcpy(os, q->shape, sizeof(int64_t) * (size_t)r);
    os[r - 1] = E;
    if (adm_tensor_alloc(out, ADM_FP32, r, os) != ADM_OK) { free(kv); return adm_error_code(); }
    for (int64_t h = 0; h < H; h++) {
        /* KV's rows d in parallel, each summed over j in order; then the
         * queries in parallel */
#pragma omp parallel
        {
            adm_fpenv fe;
            adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
            for (int64_t d = 0; d < D; d++) {
                float *kvd = kv + d * E;
                ks[d] = 0;
                for (int64_t e = 0; e < E; e++) kvd[e] = 0;
                for (int64_t j = 0; j < T; j++) {
                    float f = fmaxf((float)adm_tensor_get(k, (h * T + j) * D + d), 0.0f);
                    ks[d] += f;
                    for (int64_t e = 0; e < E; e++) kvd[e] += f * (float)adm_tensor_get(v, (h * T + j) * E + e);
                }
                if (bf16_state) {
                    for (int64_t e = 0; e < E; e++) kvd[e] = bf(kvd[e]);
                    ks[d] = bf(ks[d]);
                }
            }
#pragma omp for schedule(static)
            for (int64_t i = 0; i < S; i++) {
                float den = 0;
                for (int64_t d = 0; d < D; d++) den += fmaxf((float)adm_tensor_get(q, (h * S + i) * D + d), 0.0f) * ks[d];
                den += (float)p->eps;
                for (int64_t e = 0; e < E; e++) {
                    float num = 0;
                    for (int64_t d = 0; d < D; d++)
                        num += fmaxf((float)adm_tensor_get(q, (h * S + i) * D + d), 0.0f) * kv[d * E + e];
                    adm_tensor_set_bits(out, (h * S + i) * E + e, adm_f32_bits(num / den));
                }
            }
            adm_fpenv_leave(&fe);
        }
    }
    free(kv);
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_linear_attention(const adm_op_params *p, const adm_tensor *const *in, int bf16_state,
                                    adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_linear_attention_body(p, in, bf16_state, out);
    adm_fpenv_leave(&fe);
    return rv;
}

/* NVFP4 quantize-dequantize as torchao's nvfp4_quantize with a per-tensor
 * scale computes it (adm_candidates.h); every operation in fp32. */
ADM_FPENV_BODY
static adm_status emu_nvfp4_qdq_body(const adm_tensor *x, adm_tensor *out)
{
    int64_t n = adm_tensor_numel(x), N = x->ndim ? x->shape[x->ndim - 1] : 1;
    float amax = 0, g;
    if (N % 16 != 0)
        return ADM_FAIL(ADM_ERR_SHAPE, "NVFP4 emulation: the last dimension (%lld) must be a multiple of the block "
                        "of 16", (long long)N);
    for (int64_t i = 0; i < n; i++) {
        float v = fabsf((float)adm_tensor_get(x, i));
        if (isnan(v) || isnan(amax)) amax = NAN; /* torch.amax propagates NaN */
        else if (v > amax) amax = v;
    }
    g = amax / 2688.0f; /* per_tensor_amax_to_scale: amax / (448 * 6) */
    ADM_TRY(adm_tensor_alloc(out, ADM_FP32, x->ndim, x->shape));
#pragma omp parallel
    {
    adm_fpenv fe;
    adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
    for (int64_t b0 = 0; b0 < n; b0 += 16) {
        float bamax = 0, sb, t, xs[16];
        for (int64_t j = 0; j < 16; j++) {
            xs[j] = (float)adm_tensor_get(x, b0 + j);
            if (isnan(xs[j]) || isnan(bamax)) bamax = NAN;
            else if (fabsf(xs[j]) > bamax) bamax = fabsf(xs[j]);
        }
        if (g == 0) {
            for (int64_t j = 0; j < 16; j++) adm_tensor_set_bits(out, b0 + j, adm_f32_bits(0.0f * xs[j]));
            continue;
        }
        sb = (bamax / 6.0f) / g;                          /* block_scale / per_tensor_scale */
        sb = isnan(sb) ? sb : fminf(fmaxf(sb, 0x1p-6f), 448.0f); /* clamp(E4M3_EPS, F8E4M3_MAX) */
        sb = (float)adm_format_round(ADM_E4M3, sb, ADM_RNE, ADM_CVT_SATFINITE);
        t = g * sb;                                       /* total_scale */
        for (int64_t j = 0; j < 16; j++) {
            float q = xs[j] / t;
            if (!isnan(q)) /* e2m1 has no NaN: a NaN stays NaN in fp32 */
                q = (float)adm_format_round(ADM_E2M1, fminf(fmaxf(q, -6.0f), 6.0f), ADM_RNE, ADM_CVT_SATFINITE);
            adm_tensor_set_bits(out, b0 + j, adm_f32_bits(q * t));
        }
    }
    adm_fpenv_leave(&fe);
    }
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_nvfp4_qdq(const adm_tensor *x, adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_nvfp4_qdq_body(x, out);
    adm_fpenv_leave(&fe);
    return rv;
}
