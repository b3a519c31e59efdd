/* Norm emulations: rmsnorm (eager, fused fp32 statistics, bf16 statistics;
 * optional SiLU), layernorm with modulate (eager, affine folded),
 * groupnorm + SiLU (eager, fused two-pass). bf16 storage, fp32 arithmetic;
 * each rounds where its kernel rounds. */
#include "adm_candidates.h"
#include "adm_fpenv.h"
#include "emu_internal.h"
#include "norm_emu.h"

#include <math.h>
#include <stdlib.h>

static float bf(float v) { return adm_bf16_to_f32(adm_bf16_from_f32(v)); }
static float silu(float v) { return v / (1.0f + expf(-v)); }
/* 1/sqrt in fp32, correctly rounded (the kernels' rsqrt is within 2 ulps;
 * the emulation picks the correctly rounded one) */
static float rsqrt_f32(float v) { return (float)(1.0 / sqrt((double)v)); }

static void put(adm_tensor *out, int64_t i, float v)
{
    uint64_t b;
    adm_format_encode(out->dtype, v, ADM_RNE, 0, &b);
    adm_tensor_set_bits(out, i, b);
}

/* fp32 sum of squares of n values: sequential, or blocked by 32 lanes and
 * a tree across them (a warp reduction), or through bf16 after each add. */
static float sumsq(const float *x, int64_t n, int how)
{
    if (how == NORM_STATS_BLOCKED) {
        float lane[32] = {0};
        for (int64_t k = 0; k < n; k++) lane[k % 32] += x[k] * x[k];
        for (int w = 16; w > 0; w >>= 1)
            for (int l = 0; l < w; l++) lane[l] += lane[l + w];
        return lane[0];
    }
    {
        float s = 0;
        for (int64_t k = 0; k < n; k++) {
            s += x[k] * x[k];
            if (how == NORM_STATS_BF16) s = bf(s);
        }
        return s;
    }
}

ADM_FPENV_BODY
static adm_status emu_rmsnorm_body(const adm_op_params *p, const adm_tensor *const *in, int how, int fused_out,
                                   int silu_after,
                                   adm_tensor *out)
{
    const adm_tensor *x = in[0], *w = in[1];
    int64_t C = x->shape[x->ndim - 1], R = C ? adm_tensor_numel(x) / C : 0;
    int oom = 0;
    ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, x->shape));
    /* rows in parallel, each in its own order */
#pragma omp parallel
    {
        float *row = malloc(sizeof *row * (size_t)(C + 1));
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
        if (!row) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t r = 0; r < R; r++) {
            float ms, rs;
            if (!row) continue;
            adm_emu_load_f32(x, r * C, C, row);
            ms = sumsq(row, C, how) / (float)C;
            rs = rsqrt_f32(ms + (float)p->eps);
            for (int64_t k = 0; k < C; k++) {
                float v = row[k] * rs, wk = w ? (float)adm_tensor_get(w, k) : 1.0f;
                if (fused_out) v = v * wk;
                else v = bf(bf(v) * wk);       /* diffusers: .to(dtype) * weight */
                if (silu_after) v = fused_out ? silu(v) : silu(bf(v));
                put(out, r * C + k, v);
            }
        }
        adm_fpenv_leave(&fe);
        free(row);
    }
    if (oom) {
        adm_tensor_free(out);
        return ADM_FAIL(ADM_ERR_NOMEM, "rmsnorm emulation: out of memory");
    }
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_rmsnorm(const adm_op_params *p, const adm_tensor *const *in, int how, int fused_out, int silu_after,
                           adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_rmsnorm_body(p, in, how, fused_out, silu_after, out);
    adm_fpenv_leave(&fe);
    return rv;
}

/* The norm statistic mean(x^2) over the last axis, fp32 out: the sum of
 * squares as the rmsnorm emulations compute it (how), divided by C in fp32. */
ADM_FPENV_BODY
static adm_status emu_mean_sq_body(const adm_op_params *p, const adm_tensor *const *in, int how, adm_tensor *out)
{
    const adm_tensor *x = in[0];
    int64_t C = x->ndim ? x->shape[x->ndim - 1] : 1, R = C ? adm_tensor_numel(x) / C : 0;
    int oom = 0;
    if (x->ndim < 1 || (p->axis != -1 && p->axis != x->ndim - 1))
        return ADM_FAIL(ADM_ERR_UNSUPPORTED, "norm statistic emulation: only the last axis (axis %d given)", p->axis);
    ADM_TRY(adm_tensor_alloc(out, ADM_FP32, x->ndim - 1, x->shape));
#pragma omp parallel
    {
        float *row = malloc(sizeof *row * (size_t)(C + 1));
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
        if (!row) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t r = 0; r < R; r++) {
            if (!row) continue;
            adm_emu_load_f32(x, r * C, C, row);
            adm_tensor_set_bits(out, r, adm_f32_bits(sumsq(row, C, how) / (float)C));
        }
        adm_fpenv_leave(&fe);
        free(row);
    }
    if (oom) {
        adm_tensor_free(out);
        return ADM_FAIL(ADM_ERR_NOMEM, "mean_sq emulation: out of memory");
    }
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_mean_sq(const adm_op_params *p, const adm_tensor *const *in, int how, adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_mean_sq_body(p, in, how, out);
    adm_fpenv_leave(&fe);
    return rv;
}

ADM_FPENV_BODY
static adm_status emu_layernorm_body(const adm_op_params *p, const adm_tensor *const *in, int folded, adm_tensor *out)
{
    const adm_tensor *x = in[0], *w = in[1], *b = in[2];
    adm_tensor sh, sc;
    int64_t C = x->shape[x->ndim - 1], R = C ? adm_tensor_numel(x) / C : 0;
    int oom = 0;
    if (p->modulate) {
        ADM_TRY(adm_tensor_broadcast(in[3], x->ndim, x->shape, &sh));
        ADM_TRY(adm_tensor_broadcast(in[4], x->ndim, x->shape, &sc));
    }
    ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, x->shape));
#pragma omp parallel
    {
        float *row = malloc(sizeof *row * (size_t)(C + 1));
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
        if (!row) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t r = 0; r < R; r++) {
            float mu = 0, var = 0, rs;
            if (!row) continue;
            adm_emu_load_f32(x, r * C, C, row);
            for (int64_t k = 0; k < C; k++) mu += row[k];
            mu /= (float)C;
            for (int64_t k = 0; k < C; k++) var += (row[k] - mu) * (row[k] - mu);
            rs = rsqrt_f32(var / (float)C + (float)p->eps);
            for (int64_t k = 0; k < C; k++) {
                int64_t i = r * C + k;
                float wk = w ? (float)adm_tensor_get(w, k) : 1.0f, bk = b ? (float)adm_tensor_get(b, k) : 0.0f, v;
                float s1 = p->modulate ? 1.0f + (float)adm_tensor_get(&sc, i) : 1.0f, t = p->modulate ? (float)adm_tensor_get(&sh, i) : 0.0f;
                if (folded) {
                    /* one fp32 expression: x a + c, a = rstd w (1 + scale),
                     * c = (b - mu rstd w)(1 + scale) + shift */
                    float a = rs * wk * s1, cc = (bk - mu * rs * wk) * s1 + t;
                    v = row[k] * a + cc;
                } else {
                    v = bf((row[k] - mu) * rs * wk + bk);            /* F.layer_norm */
                    if (p->modulate) v = bf(bf(v * bf(s1)) + t);     /* x * (1 + scale) + shift, eager */
                }
                put(out, i, v);
            }
        }
        adm_fpenv_leave(&fe);
        free(row);
    }
    if (oom) {
        adm_tensor_free(out);
        return ADM_FAIL(ADM_ERR_NOMEM, "layernorm emulation: out of memory");
    }
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_layernorm(const adm_op_params *p, const adm_tensor *const *in, int folded, adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_layernorm_body(p, in, folded, out);
    adm_fpenv_leave(&fe);
    return rv;
}

ADM_FPENV_BODY
static adm_status emu_groupnorm_body(const adm_op_params *p, const adm_tensor *const *in, int fused, adm_tensor *out)
{
    const adm_tensor *x = in[0], *w = in[1], *b = in[2];
    int cl = p->channels_last;
    int64_t B = x->shape[0], C = cl ? x->shape[2] : x->shape[1], L = cl ? x->shape[1] : x->shape[2], G = p->groups;
    int64_t cpg = C / G, n = cpg * L;
    int oom = 0;
    ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, x->shape));
    /* the (batch, group) sets in parallel, each in its own order */
#pragma omp parallel
    {
        float *v = malloc(sizeof *v * (size_t)(n + 1));
        int64_t *off = malloc(sizeof *off * (size_t)(n + 1)), *ch = malloc(sizeof *ch * (size_t)(n + 1));
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
        if (!v || !off || !ch) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t bg = 0; bg < B * G; bg++) {
            int64_t bb = bg / G, g = bg % G;
            float mu = 0, var = 0, rs;
            if (!v || !off || !ch) continue;
            for (int64_t k = 0; k < n; k++) {
                int64_t c = g * cpg + (cl ? k % cpg : k / L), l = cl ? k / cpg : k % L;
                off[k] = cl ? (bb * L + l) * C + c : (bb * C + c) * L + l;
                ch[k] = c;
                v[k] = (float)adm_tensor_get(x, off[k]);
                mu += v[k];
            }
            mu /= (float)n;
            for (int64_t k = 0; k < n; k++) var += (v[k] - mu) * (v[k] - mu); /* two-pass */
            rs = rsqrt_f32(var / (float)n + (float)p->eps);
            for (int64_t k = 0; k < n; k++) {
                float wk = w ? (float)adm_tensor_get(w, ch[k]) : 1.0f, bk = b ? (float)adm_tensor_get(b, ch[k]) : 0.0f, y;
                if (fused) {
                    /* affine folded per (batch, channel): scale = rstd w, shift = b - mu scale */
                    float s = rs * wk, t = bk - mu * s;
                    y = v[k] * s + t;
                    if (p->silu) y = silu(y);
                } else {
                    y = bf((v[k] - mu) * rs * wk + bk);
                    if (p->silu) y = silu(y);
                }
                put(out, off[k], y);
            }
        }
        adm_fpenv_leave(&fe);
        free(v);
        free(off);
        free(ch);
    }
    if (oom) {
        adm_tensor_free(out);
        return ADM_FAIL(ADM_ERR_NOMEM, "groupnorm emulation: out of memory");
    }
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_groupnorm(const adm_op_params *p, const adm_tensor *const *in, int fused, adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_groupnorm_body(p, in, fused, out);
    adm_fpenv_leave(&fe);
    return rv;
}
