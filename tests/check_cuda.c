/* admit on the GPU. Formats: the device's own conversion instructions
 * against the CPU formats, bit for bit (every fp32 input for bf16 and fp16,
 * RNE and RTZ; for fp8 and fp4, every combination of the top 19 bits with
 * eight low-bit patterns: ties, near-ties, random). Kernels and Oracle:
 * the real cuBLASLt kernels through the harness, the GPU oracle against
 * the CPU's. Libm and Twins: the CUDA twins of the emulations
 * (candidates/cuda_twins.h) give their emulations' bits, on the bundled
 * captures and on generated shapes (odd sizes, NaN and Inf, strided
 * views), and the port of glibc's expf, tanhf, erff and expm1f they
 * compute with gives this host's libm's bits on every fp32 input, on the
 * host and on the device. Exits 77 (skipped) where no GPU is usable,
 * after case Module, which needs none: the CUDA code is a module loaded on
 * first GPU use (core/adm_cuda_module.h), never before, each of whose
 * parts is found by name and refused from another build. CK_RUN_CASE picks
 * one case; ci/gpu-test runs them on a GPU machine. */
#include "adm_core.h"
#include "adm_cuda.h"
#include "adm_capture.h"
#include "adm_oracle.h"
#include "adm_candidates.h"
#include "adm_harness.h"
#include "adm_libm.h"
#include "harness_internal.h"
#include "adm_cuda_module.h"
#include "oracle_internal.h"
#include "oracle_cuda.h"
#include "stats_cuda.h"
#include "candidates_cuda.h"
#include "toy_cuda.h"

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>

#define SKIP 77

static uint16_t cpu_convert(adm_dtype dt, adm_round mode, unsigned flags, float f, int *skip)
{
    uint64_t b = 0;
    *skip = 0;
    if (dt == ADM_BF16) return mode == ADM_RNE ? adm_bf16_from_f32(f) : adm_bf16_from_f32_rtz(f);
    if (dt == ADM_FP16) return mode == ADM_RNE ? adm_fp16_from_f32(f) : adm_fp16_from_f32_rtz(f);
    if (adm_format_encode(dt, f, mode, flags, &b) != ADM_OK) *skip = 1; /* fp4 has no NaN */
    return (uint16_t)b;
}

static int same(adm_dtype dt, uint16_t a, uint16_t b)
{
    if (adm_format_isnan(dt, a) || adm_format_isnan(dt, b)) return adm_format_isnan(dt, a) && adm_format_isnan(dt, b);
    return a == b;
}

typedef struct variant { adm_dtype dt; adm_round mode; unsigned flags; } variant;

static const variant full_sweep[] = {
    {ADM_BF16, ADM_RNE, 0}, {ADM_BF16, ADM_RTZ, 0}, {ADM_FP16, ADM_RNE, 0}, {ADM_FP16, ADM_RTZ, 0}};
static const variant sampled[] = {
    {ADM_E4M3, ADM_RNE, 0}, {ADM_E4M3, ADM_RNE, ADM_CVT_SATFINITE}, {ADM_E5M2, ADM_RNE, 0},
    {ADM_E5M2, ADM_RNE, ADM_CVT_SATFINITE}, {ADM_E2M1, ADM_RNE, ADM_CVT_SATFINITE}};

START_TEST(test_full_sweep)
{
    const variant *v = &full_sweep[_i];
    size_t chunk = (size_t)1 << 28;
    uint16_t *out = malloc(chunk * sizeof *out);
    uint64_t bad = 0;
    ck_assert_ptr_nonnull(out);
    for (uint64_t first = 0; first < (1ull << 32); first += chunk) {
        ck_assert_msg(adm_cuda_convert_f32_range(v->dt, v->mode, v->flags, (uint32_t)first, out, chunk) == ADM_OK,
                      "%s", adm_error_message());
        for (size_t i = 0; i < chunk; i++) {
            int skip;
            uint32_t x = (uint32_t)(first + i);
            uint16_t c = cpu_convert(v->dt, v->mode, v->flags, adm_f32_from_bits(x), &skip);
            if (!same(v->dt, c, out[i]) && bad++ < 8)
                fprintf(stderr, "%s mode %d: fp32 0x%08x -> cpu 0x%04x, gpu 0x%04x\n", adm_dtype_name(v->dt),
                        (int)v->mode, x, c, out[i]);
        }
    }
    free(out);
    printf("%s mode %d: 2^32 inputs, %llu mismatches\n", adm_dtype_name(v->dt), (int)v->mode,
           (unsigned long long)bad);
    ck_assert_msg(bad == 0, "%llu mismatches", (unsigned long long)bad);
}
END_TEST

START_TEST(test_sampled)
{
    const variant *v = &sampled[_i];
    static const uint32_t lows[8] = {0, 1, 0x7ff, 0x800, 0x801, 0xfff, 0x1000, 0x1fff};
    size_t n = (size_t)1 << 22;
    float *in = malloc(n * sizeof *in);
    uint16_t *out = malloc(n * sizeof *out);
    uint64_t bad = 0, nan_cases = 0;
    uint32_t seed = 1;
    ck_assert(in && out);
    for (size_t i = 0; i < n; i++) {
        uint32_t low = lows[i & 7];
        if ((i & 7) == 7) { seed = seed * 1664525u + 1013904223u; low = seed & 0x1fff; }
        in[i] = adm_f32_from_bits((uint32_t)((i >> 3) << 13) | low);
    }
    ck_assert_msg(adm_cuda_convert_f32(v->dt, v->mode, v->flags, in, out, n) == ADM_OK, "%s", adm_error_message());
    for (size_t i = 0; i < n; i++) {
        int skip;
        uint16_t c = cpu_convert(v->dt, v->mode, v->flags, in[i], &skip);
        if (skip) {
            if (nan_cases++ == 0)
                printf("%s: NaN input 0x%08x -> gpu 0x%02x (the format has no NaN)\n", adm_dtype_name(v->dt),
                       adm_f32_bits(in[i]), out[i]);
            continue;
        }
        if (!same(v->dt, c, out[i]) && bad++ < 8)
            fprintf(stderr, "%s flags %u: fp32 0x%08x (%a) -> cpu 0x%02x, gpu 0x%02x\n", adm_dtype_name(v->dt),
                    v->flags, adm_f32_bits(in[i]), in[i], c, out[i]);
    }
    printf("%s flags %u: %zu inputs, %llu mismatches\n", adm_dtype_name(v->dt), v->flags, n,
           (unsigned long long)bad);
    free(in);
    free(out);
    ck_assert_msg(bad == 0, "%llu mismatches", (unsigned long long)bad);
}
END_TEST

/* The oracle on the CPU and on the GPU, on the same inputs, into rc and rg
 * (the caller frees them): the GPU's must have run there, the CPU's not. */
static void eval_cpu_gpu(const adm_op *op, const adm_op_params *p, const adm_tensor *const *in,
                         adm_oracle_result *rc, adm_oracle_result *rg)
{
    adm_oracle_config cfg;
    adm_oracle *cpu, *gpu;
    adm_oracle_config_default(&cfg);
    ck_assert_int_eq(adm_oracle_create(&cfg, &cpu), ADM_OK);
    cfg.use_gpu = 1;
    ck_assert_int_eq(adm_oracle_create(&cfg, &gpu), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(cpu, op, p, in, rc), ADM_OK);
    ck_assert_msg(adm_oracle_eval(gpu, op, p, in, rg) == ADM_OK, "%s", adm_error_message());
    ck_assert(!rc->on_gpu && rg->on_gpu);
    adm_oracle_free(cpu);
    adm_oracle_free(gpu);
}

/* The GPU oracle (cuBLAS DGEMM, CUDA epilogue) agrees with the CPU oracle
 * within the two bounds, element by element, on DiT-like activations
 * (bf16) and on fp32 inputs (the condition scale's TF32 path). */
START_TEST(test_oracle_agrees)
{
    static const char *params[3] = {"{\"approximate\":\"tanh\"}", "{\"approximate\":\"none\"}",
                                    "{\"approximate\":\"tanh\"}"};
    /* the condition scales' relative difference (oracle/oracle_cuda.cu,
     * harness/GATES.md): gamma_K of fp32 on the CPU (u = 2^-24), gamma_K
     * with u = 2^-23 on the tensor cores, and on the TF32 path 2^-9 (two
     * operands read to 10 bits); K = 1024 here */
    const double gam_cpu = 1024 * 0x1p-24 / (1 - 1024 * 0x1p-24), gam_gpu = 1024 * 0x1p-23 / (1 - 1024 * 0x1p-23);
    const double cond_tol = gam_cpu + gam_gpu + (_i == 2 ? 0x1p-9 : 0);
    const adm_op *op = adm_op_find("linear+gelu");
    adm_op_params p;
    adm_synth_config sc;
    adm_tensor x, w, b;
    int64_t ws[2] = {768, 1024}, bs[1] = {768}, bad = 0, bad_cond = 0;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &b};
    adm_oracle_result rc, rg;
    double worst = 0, worst_cond = 0;
    adm_synth_config_default(&sc);
    sc.tokens = 256;
    sc.channels = 1024;
    if (_i == 2) {
        int64_t xs[2] = {256, 1024};
        ck_assert_int_eq(adm_synth_gaussian(5, 1.0, ADM_FP32, 2, xs, &x), ADM_OK);
    } else {
        ck_assert_int_eq(adm_synth_activations(&sc, &x), ADM_OK);
    }
    ck_assert_int_eq(adm_synth_gaussian(3, 1.0 / 32, _i == 2 ? ADM_FP32 : ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(4, 0.02, ADM_BF16, 1, bs, &b), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(op, params[_i], &p), ADM_OK);
    eval_cpu_gpu(op, &p, in, &rc, &rg);
    ck_assert(rc.has_cond && rg.has_cond);
    for (int64_t i = 0; i < adm_tensor_numel(&rc.value); i++) {
        double vc = ((double *)rc.value.data)[i], vg = ((double *)rg.value.data)[i];
        double bc = ((double *)rc.bound.data)[i], bg = ((double *)rg.bound.data)[i];
        double cc = ((double *)rc.cond.data)[i], cg = ((double *)rg.cond.data)[i];
        if (fabs(vc - vg) > bc + bg) bad++;
        if (bc + bg > 0) worst = fmax(worst, fabs(vc - vg) / (bc + bg));
        if (!(fabs(cc - cg) <= cond_tol * cg)) bad_cond++;
        if (cg > 0) worst_cond = fmax(worst_cond, fabs(cc - cg) / cg);
    }
    printf("oracle %s: GPU against CPU, %lld elements, max bound cpu %.3g gpu %.3g, worst |diff|/(bounds) %.3g, "
           "%lld outside; condition scale worst relative difference %.3g, %lld beyond %.3g\n", params[_i],
           (long long)adm_tensor_numel(&rc.value), rc.max_bound, rg.max_bound, worst, (long long)bad, worst_cond,
           (long long)bad_cond, cond_tol);
    ck_assert_int_eq(bad, 0);
    ck_assert_int_eq(bad_cond, 0);
    adm_oracle_result_free(&rc);
    adm_oracle_result_free(&rg);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
}
END_TEST

/* The GPU's reductions, norms and attentions (oracle/line_fns.h, a thread
 * a line) against the CPU's: the same code and order of operations, so
 * where no libm call enters (sums, mean of squares, rmsnorm, layernorm,
 * linear attention) value and condition scale are the same bits, NaN
 * included, and the bounds (and a scale summed upward) a few ulps apart; where exp enters (softmax,
 * SiLU, attention) the values agree within the two bounds. */
static const struct line_case {
    const char *op, *params;
    int nin, libm;
    int cond_up; /* the condition scale is summed upward (linear attention's phi(q) A): a few ulps apart, as bounds */
    int ndim[5];
    int64_t shape[5][3];
    adm_dtype dt[5];
} line_cases[] = {
    {"row_sum", "{\"axis\":1}", 1, 0, 0, {2}, {{96, 3000}}, {ADM_FP32}},
    {"row_sum", "{\"axis\":0}", 1, 0, 0, {3}, {{7, 33, 40}}, {ADM_BF16}},
    {"mean_sq", "{}", 1, 0, 0, {2}, {{128, 1024}}, {ADM_BF16}},
    {"softmax", "{}", 1, 1, 0, {2}, {{64, 333}}, {ADM_FP32}},
    {"softmax", "{\"axis\":0}", 1, 1, 0, {2}, {{50, 64}}, {ADM_BF16}},
    {"rmsnorm", "{\"eps\":1e-6}", 2, 0, 0, {2, 1}, {{128, 1152}, {1152}}, {ADM_BF16, ADM_BF16}},
    {"rmsnorm", "{\"silu\":true}", 2, 1, 0, {2, 1}, {{64, 512}, {512}}, {ADM_BF16, ADM_BF16}},
    {"layernorm", "{}", 3, 0, 0, {2, 1, 1}, {{64, 1152}, {1152}, {1152}}, {ADM_BF16, ADM_BF16, ADM_BF16}},
    {"layernorm", "{\"modulate\":true,\"eps\":1e-6}", 5, 0, 0, {2, 0, 0, 2, 2},
     {{64, 1152}, {0}, {0}, {1, 1152}, {64, 1152}}, {ADM_BF16, 0, 0, ADM_BF16, ADM_FP32}},
    {"groupnorm", "{\"groups\":4,\"silu\":true}", 3, 1, 0, {3, 1, 1}, {{2, 64, 256}, {64}, {64}},
     {ADM_BF16, ADM_BF16, ADM_BF16}},
    {"groupnorm", "{\"groups\":8,\"channels_last\":true}", 1, 0, 0, {3}, {{2, 256, 64}}, {ADM_FP32}},
    {"attention", "{}", 3, 1, 0, {3, 3, 3}, {{2, 200, 64}, {2, 333, 64}, {2, 333, 64}}, {ADM_BF16, ADM_BF16, ADM_BF16}},
    {"attention", "{\"causal\":true}", 3, 1, 0, {3, 3, 3}, {{3, 256, 128}, {3, 256, 128}, {3, 256, 128}},
     {ADM_BF16, ADM_BF16, ADM_BF16}},
    {"linear_attention", "{}", 3, 0, 1, {3, 3, 3}, {{2, 300, 32}, {2, 500, 32}, {2, 500, 48}},
     {ADM_BF16, ADM_BF16, ADM_FP32}},
};
#define N_LINE_CASES ((int)(sizeof line_cases / sizeof line_cases[0]))

START_TEST(test_oracle_lines)
{
    const struct line_case *lc = &line_cases[_i];
    const adm_op *op = adm_op_find(lc->op);
    adm_op_params p;
    adm_tensor t[5];
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {NULL};
    adm_oracle_result rc, rg;
    int64_t n, bad = 0, differ = 0, vdiffer = 0;
    double worst = 0;
    ck_assert_ptr_nonnull(op);
    for (int i = 0; i < lc->nin; i++) {
        if (!lc->ndim[i]) continue;
        ck_assert_int_eq(adm_synth_gaussian(40 + (uint64_t)i, i == 4 ? 0.1 : 1.0, lc->dt[i], lc->ndim[i],
                                            lc->shape[i], &t[i]), ADM_OK);
        in[i] = &t[i];
    }
    /* a NaN and an Inf in the first line of the first cases: propagated alike */
    if (_i == 0) {
        adm_tensor_set_bits(&t[0], 5, 0x7fc00000u);
        adm_tensor_set_bits(&t[0], 3000 + 7, 0x7f800000u);
    }
    ck_assert_int_eq(adm_op_params_parse(op, lc->params, &p), ADM_OK);
    eval_cpu_gpu(op, &p, in, &rc, &rg);
    ck_assert(rc.has_cond && rg.has_cond);
    n = adm_tensor_numel(&rc.value);
    for (int64_t i = 0; i < n; i++) {
        double vc = ((double *)rc.value.data)[i], vg = ((double *)rg.value.data)[i];
        double bc = ((double *)rc.bound.data)[i], bg = ((double *)rg.bound.data)[i];
        double cc = ((double *)rc.cond.data)[i], cg = ((double *)rg.cond.data)[i];
        /* the bounds round upward by instruction on the GPU (__dadd_ru),
         * one ulp past round-to-nearest on the CPU (scalar_fns.h): both
         * upper bounds, apart by a few ulps; a NaN's payload is the
         * processor's own */
        int vsame = !memcmp(&vc, &vg, 8) || (isnan(vc) && isnan(vg));
        int same = vsame && (!memcmp(&cc, &cg, 8) || (isnan(cc) && isnan(cg)) ||
                             (lc->cond_up && fabs(cc - cg) <= 1e-12 * fmax(fabs(cc), fabs(cg))));
        int bsame = bc == bg || fabs(bc - bg) <= 1e-12 * fmax(bc, bg) || (isnan(bc) && isnan(bg));
        differ += !same;
        vdiffer += !vsame;
        if (!lc->libm) {
            bad += !same || !bsame;
            continue;
        }
        if (isnan(vc) || isnan(vg) || isinf(vc) || isinf(vg)) {
            bad += !(vc == vg || (isnan(vc) && isnan(vg)));
            continue;
        }
        if (fabs(vc - vg) > bc + bg) bad++;
        if (bc + bg > 0) worst = fmax(worst, fabs(vc - vg) / (bc + bg));
    }
    printf("oracle %s %s on the GPU: %lld elements, %lld values (%lld values or scales) not the CPU's bits (%s), "
           "worst |diff|/(bounds) %.3g, %lld failing\n", lc->op, lc->params, (long long)n, (long long)vdiffer,
           (long long)differ, lc->libm ? "libm: allowed within the bounds" : "none allowed", worst, (long long)bad);
    ck_assert_int_eq(bad, 0);
    adm_oracle_result_free(&rc);
    adm_oracle_result_free(&rg);
    for (int i = 0; i < lc->nin; i++)
        if (lc->ndim[i]) adm_tensor_free(&t[i]);
}
END_TEST

/* quantize's oracle on the GPU (oracle/quantize_cuda.cu, quantize_fns.h's
 * arithmetic): exact, so the CPU's values bit for bit and bounds of 0, on
 * each scheme over a bf16 and an fp32 tensor whose rows span 2^-30 to
 * 2^20 (subnormal scales, saturation, e2m1's tiny blocks), a zero row, and
 * a NaN in one row (per row: that row NaN; per tensor and nvfp4: all). */
START_TEST(test_oracle_quantize)
{
    static const char *schemes[3] = {"fp8_e4m3_tensor", "fp8_e4m3_row", "nvfp4"};
    const adm_op *op = adm_op_find("quantize");
    int64_t shape[2] = {512, 1024}, n = 512 * 1024;
    for (int dti = 0; dti < 2; dti++) {
        adm_dtype dt = dti ? ADM_FP32 : ADM_BF16;
        for (int nan = 0; nan < 2; nan++) {
            adm_tensor x;
            const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x};
            ck_assert_int_eq(adm_synth_gaussian(77 + (uint64_t)dti, 1.0, dt, 2, shape, &x), ADM_OK);
            for (int64_t i = 0; i < n; i++) {
                int64_t r = i / 1024;
                uint64_t b;
                double v = r == 7 ? 0.0 : ldexp(adm_tensor_get(&x, i), (int)(r % 51) - 30);
                adm_format_encode(dt, v, ADM_RNE, 0, &b);
                adm_tensor_set_bits(&x, i, b);
            }
            if (nan) adm_tensor_set_bits(&x, 300 * 1024 + 17, dti ? 0x7fc00000u : 0x7fc0u);
            for (int sc = 0; sc < 3; sc++) {
                adm_op_params p;
                adm_oracle_result rc, rg;
                char params[64];
                int64_t differ = 0, nans = 0, nonzero_bound = 0;
                snprintf(params, sizeof params, "{\"scheme\":\"%s\"}", schemes[sc]);
                ck_assert_int_eq(adm_op_params_parse(op, params, &p), ADM_OK);
                eval_cpu_gpu(op, &p, in, &rc, &rg);
                for (int64_t i = 0; i < n; i++) {
                    double vc = ((double *)rc.value.data)[i], vg = ((double *)rg.value.data)[i];
                    differ += memcmp(&vc, &vg, 8) && !(isnan(vc) && isnan(vg));
                    nans += isnan(vg);
                    nonzero_bound += ((double *)rg.bound.data)[i] != 0;
                }
                printf("oracle quantize %s on %s%s on the GPU: %lld of %lld values not the CPU's bits, %lld NaN\n",
                       schemes[sc], adm_dtype_name(dt), nan ? " with a NaN" : "", (long long)differ, (long long)n,
                       (long long)nans);
                ck_assert_int_eq(differ, 0);
                ck_assert_int_eq(nonzero_bound, 0);
                ck_assert_int_eq(nans, !nan ? 0 : sc == 1 ? 1024 : n);
                adm_oracle_result_free(&rc);
                adm_oracle_result_free(&rg);
            }
            adm_tensor_free(&x);
        }
    }
}
END_TEST

/* The GPU's elementwise oracle agrees with the CPU's within the bounds, on
 * every bf16 input (gelu, silu) and DiT-like pairs (swiglu, gated residual). */
START_TEST(test_oracle_elementwise)
{
    static const char *ops[6][2] = {{"gelu", "{\"approximate\":\"tanh\"}"}, {"gelu", "{}"}, {"silu", "{}"},
                                    {"swiglu", "{}"}, {"gated_residual", "{}"}, {"scale", "{\"factor\":0.3}"}};
    const adm_op *op = adm_op_find(ops[_i][0]);
    adm_op_params p;
    adm_tensor x, y, g;
    int64_t shape[2] = {256, 256}, gs[2] = {256, 1}, bad = 0;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, NULL, NULL};
    adm_oracle_result rc, rg;
    double worst = 0;
    ck_assert_int_eq(adm_tensor_alloc(&x, ADM_BF16, 2, shape), ADM_OK);
    for (int64_t i = 0; i < 65536; i++) adm_tensor_set_bits(&x, i, (uint64_t)i); /* every bf16 pattern */
    ck_assert_int_eq(adm_synth_gaussian(7, 1.0, ADM_BF16, 2, shape, &y), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(8, 0.3, ADM_BF16, 2, gs, &g), ADM_OK);
    if (!strcmp(ops[_i][0], "swiglu")) in[1] = &y;
    if (!strcmp(ops[_i][0], "gated_residual")) { in[1] = &g; in[2] = &y; }
    ck_assert_int_eq(adm_op_params_parse(op, ops[_i][1], &p), ADM_OK);
    eval_cpu_gpu(op, &p, in, &rc, &rg);
    for (int64_t i = 0; i < 65536; i++) {
        double vc = ((double *)rc.value.data)[i], vg = ((double *)rg.value.data)[i];
        double bc = ((double *)rc.bound.data)[i], bg = ((double *)rg.bound.data)[i];
        double cc = ((double *)rc.cond.data)[i], cg = ((double *)rg.cond.data)[i];
        if (isnan(vc) || isnan(vg)) { bad += isnan(vc) != isnan(vg); continue; }
        /* the condition scale: the same formula on both (|value|, |x| + |g y|) */
        if (!(fabs(cc - cg) <= 1e-12 * cg) && !(isinf(cc) && cc == cg)) bad++;
        if (isinf(vc) || isinf(vg)) { bad += vc != vg; continue; }
        if (fabs(vc - vg) > bc + bg) bad++;
        if (bc + bg > 0) worst = fmax(worst, fabs(vc - vg) / (bc + bg));
    }
    printf("oracle %s %s: GPU against CPU over every bf16 input, worst |diff|/(bounds) %.3g, %lld outside\n",
           ops[_i][0], ops[_i][1], worst, (long long)bad);
    ck_assert_int_eq(bad, 0);
    adm_oracle_result_free(&rc);
    adm_oracle_result_free(&rg);
    adm_tensor_free(&x);
    adm_tensor_free(&y);
    adm_tensor_free(&g);
}
END_TEST

/* Oracle, operand views: the GPU oracle's operands go up as stored and
 * are widened on the device (oracle/widen.h) for bf16, fp16 and fp32,
 * dense or strided; a view whose storage spans more than twice its
 * elements is widened on the host. Against the CPU oracle within the two
 * bounds, NaN and Inf in the same places: (0) matmul on fp16, a a slice
 * with gaps and an offset, b transposed on the device, fp16 subnormals, a
 * NaN and an Inf; (1) linear on bf16, x a transposed view; (2) linear on
 * fp16 x read every third column (the host's widening) and fp32 w. */
static void views_fill(adm_tensor *t, uint64_t seed, double sigma)
{
    for (int64_t i = 0; i < t->capacity; i++) {
        uint64_t bits;
        double v;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v = sigma * ((double)(seed >> 11) * 0x1p-53 - 0.5);
        if (i % 97 == 5) v *= 0x1p-20; /* fp16's subnormals */
        ck_assert_int_eq(adm_format_encode(t->dtype, v, ADM_RNE, 0, &bits), ADM_OK);
        adm_tensor_set_bits(t, i, bits);
    }
}

START_TEST(test_oracle_views)
{
    const adm_op *op = adm_op_find(_i == 0 ? "matmul" : "linear");
    adm_op_params p;
    adm_tensor sa, sb, a, b;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&a, &b, NULL};
    adm_oracle_config cfg;
    adm_oracle *cpu, *gpu;
    adm_oracle_result rc, rg;
    int64_t bad = 0, n;
    double worst = 0;
    if (_i == 0) {
        int64_t ss[2] = {203, 310}, bs[2] = {300, 170};
        ck_assert_int_eq(adm_tensor_alloc(&sa, ADM_FP16, 2, ss), ADM_OK);
        ck_assert_int_eq(adm_tensor_alloc(&sb, ADM_FP16, 2, bs), ADM_OK);
        views_fill(&sa, 21, 4.0);
        views_fill(&sb, 22, 0.5);
        a = sa;
        a.owned = 0;
        a.shape[0] = 200;
        a.shape[1] = 300;
        a.offset = 2 * 310 + 3;
        adm_tensor_set_bits(&sa, a.offset + 5 * 310 + 7, 0x7e00u); /* NaN at a[5, 7] */
        adm_tensor_set_bits(&sb, 3 * 170 + 9, 0x7c00u);           /* +Inf at b[3, 9] */
        b = sb;
        b.owned = 0;
    } else if (_i == 1) {
        int64_t xs[2] = {256, 150}, ws[2] = {100, 256};
        ck_assert_int_eq(adm_synth_gaussian(23, 1.0, ADM_BF16, 2, xs, &sa), ADM_OK);
        ck_assert_int_eq(adm_synth_gaussian(24, 1.0 / 16, ADM_BF16, 2, ws, &sb), ADM_OK);
        ck_assert_int_eq(adm_tensor_transpose(&sa, 0, 1, &a), ADM_OK);
        b = sb;
        b.owned = 0;
    } else {
        int64_t xs[2] = {128, 600}, ws[2] = {64, 200};
        ck_assert_int_eq(adm_tensor_alloc(&sa, ADM_FP16, 2, xs), ADM_OK);
        views_fill(&sa, 25, 2.0);
        ck_assert_int_eq(adm_synth_gaussian(26, 1.0 / 16, ADM_FP32, 2, ws, &sb), ADM_OK);
        a = sa;
        a.owned = 0;
        a.shape[1] = 200;
        a.stride[1] = 3;
        b = sb;
        b.owned = 0;
    }
    ck_assert_int_eq(adm_op_params_parse(op, "{}", &p), ADM_OK);
    adm_oracle_config_default(&cfg);
    ck_assert_int_eq(adm_oracle_create(&cfg, &cpu), ADM_OK);
    cfg.use_gpu = 1;
    ck_assert_int_eq(adm_oracle_create(&cfg, &gpu), ADM_OK);
    ck_assert_msg(adm_oracle_eval(cpu, op, &p, in, &rc) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(adm_oracle_eval(gpu, op, &p, in, &rg) == ADM_OK, "%s", adm_error_message());
    ck_assert(!rc.on_gpu && rg.on_gpu);
    n = adm_tensor_numel(&rc.value);
    for (int64_t i = 0; i < n; i++) {
        double vc = ((double *)rc.value.data)[i], vg = ((double *)rg.value.data)[i];
        double bc = ((double *)rc.bound.data)[i], bg = ((double *)rg.bound.data)[i];
        if (isnan(vc) || isnan(vg)) { bad += isnan(vc) != isnan(vg); continue; }
        if (isinf(vc) || isinf(vg)) { bad += vc != vg; continue; }
        if (fabs(vc - vg) > bc + bg) bad++;
        if (bc + bg > 0) worst = fmax(worst, fabs(vc - vg) / (bc + bg));
    }
    printf("oracle views %d (%s): GPU against CPU, %lld elements, worst |diff|/(bounds) %.3g, %lld outside\n", _i,
           adm_op_name(op), (long long)n, worst, (long long)bad);
    ck_assert_int_eq(bad, 0);
    if (_i == 0) ck_assert(isnan(((double *)rg.value.data)[5 * 170]) && isinf(((double *)rg.value.data)[9]));
    adm_oracle_result_free(&rc);
    adm_oracle_result_free(&rg);
    adm_oracle_free(cpu);
    adm_oracle_free(gpu);
    adm_tensor_free(&sa);
    adm_tensor_free(&sb);
}
END_TEST

/* The real kernels through the harness: the cuBLASLt GELU_BIAS epilogue
 * against the eager cuBLASLt path (the seed's 0.66x), and the eager GPU
 * path against its CPU emulation. */
START_TEST(test_kernels)
{
    static const char *pairs[3][2] = {{"cublas_eager", "cublaslt_gelu_bias"}, {"cublas_eager", "cublaslt_bias"},
                                      {"eager", "cublas_eager"}};
    const adm_op *op = adm_op_find("linear+gelu");
    adm_op_params p;
    adm_synth_config sc;
    adm_tensor x, w, b;
    int64_t ws[2] = {768, 1024}, bs[1] = {768};
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &b};
    adm_run_result rr;
    adm_synth_config_default(&sc);
    sc.tokens = 256;
    sc.channels = 1024;
    ck_assert_int_eq(adm_synth_activations(&sc, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(3, 1.0 / 32, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(4, 0.02, ADM_BF16, 1, bs, &b), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(op, "{\"approximate\":\"tanh\"}", &p), ADM_OK);
    ck_assert_msg(adm_harness_run(op, &p, in, adm_impl_find("linear+gelu", pairs[_i][0]),
                                  adm_impl_find("linear+gelu", pairs[_i][1]), NULL, NULL, &rr) == ADM_OK,
                  "%s", adm_error_message());
    printf("%s against %s: %s, rms %.3gx, max %.3gx, ulp %.3gx\n", pairs[_i][1], pairs[_i][0],
           adm_tier_name(rr.verdict.tier), rr.verdict.rms_ratio, rr.verdict.max_ratio, rr.verdict.ulp_ratio);
    for (int g = 1; g < ADM_GATE_COUNT; g++)
        if (!rr.verdict.gate[g].passed) printf("    %s: %s\n", adm_gate_name(g), rr.verdict.gate[g].reason);
    ck_assert(rr.verdict.tier <= ADM_TIER_LOSSLESS);
    if (_i == 0) ck_assert(rr.verdict.rms_ratio < 1.0);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
}
END_TEST

/* ---------------------------------------------------------------- libm port */

/* The port of glibc's float functions the twins compute with
 * (candidates/adm_libm.h), on every fp32 input: on the host against this
 * host's libm (the emulations' transcendentals), and on the device
 * against the host. A difference here explains a twin's mismatch. */
START_TEST(test_libm)
{
    static const char *names[4] = {"expf", "tanhf", "erff", "expm1f"};
    const int fn = _i, variant = adm_lm_host_variant();
    const size_t chunk = (size_t)1 << 28;
    uint32_t *dev = malloc(chunk * sizeof *dev);
    unsigned long long host_bad = 0, dev_bad = 0;
    uint32_t host_first = 0, dev_first = 0;
    ck_assert_ptr_nonnull(dev);
    if (fn == 0)
        printf("libm: this host's expf is %s\n", variant == ADM_LM_FMA ? "glibc's FMA build"
                                                 : variant == ADM_LM_SSE2 ? "glibc's SSE2 build"
                                                                          : "neither of glibc 2.36's builds");
    ck_assert_msg(variant >= 0, "this host's libm expf is neither of glibc 2.36's x86-64 builds: the twins' "
                  "GELU and SiLU cannot give the emulations' bits here (see the twins' mismatches)");
    for (uint64_t first = 0; first < (1ull << 32); first += chunk) {
        unsigned long long hb = 0, db = 0;
        uint32_t hf = 0xffffffffu, df = 0xffffffffu;
        ck_assert_msg(adm_cuda_libm_f32_range(fn, (uint32_t)first, dev, chunk) == ADM_OK, "%s", adm_error_message());
#pragma omp parallel for schedule(static, 1 << 16) reduction(+ : hb, db) reduction(min : hf, df)
        for (int64_t i = 0; i < (int64_t)chunk; i++) {
            uint32_t u = (uint32_t)(first + (uint64_t)i);
            volatile float x = adm_lm_float(u);
            float lib, port;
            switch (fn) {
            case 0: lib = expf(x); port = adm_lm_expf(x, variant); break;
            case 1: lib = tanhf(x); port = adm_lm_tanhf(x); break;
            case 2: lib = erff(x); port = adm_lm_erff(x, variant); break;
            default: lib = expm1f(x); port = adm_lm_expm1f(x); break;
            }
            if (adm_lm_bits(lib) != adm_lm_bits(port) && !(lib != lib && port != port)) {
                hb++;
                if (u < hf) hf = u;
            }
            if (dev[i] != adm_lm_bits(port) && !(port != port && isnan(adm_lm_float(dev[i])))) {
                db++;
                if (u < df) df = u;
            }
        }
        if (hb && !host_bad) host_first = hf;
        if (db && !dev_bad) dev_first = df;
        host_bad += hb;
        dev_bad += db;
    }
    free(dev);
    printf("libm %-6s all 2^32 inputs: the port differs from this host's libm on %llu, the device's from the "
           "host's on %llu\n", names[fn], host_bad, dev_bad);
    if (host_bad) {
        volatile float x = adm_lm_float(host_first);
        printf("    first: x = %a (0x%08x) libm 0x%08x\n", (double)x, host_first,
               adm_lm_bits(fn == 0 ? expf(x) : fn == 1 ? tanhf(x) : fn == 2 ? erff(x) : expm1f(x)));
    }
    if (dev_bad) printf("    first device difference at x = 0x%08x\n", dev_first);
    fflush(stdout);
    ck_assert_msg(host_bad == 0 && dev_bad == 0, "%s: %llu host, %llu device differences", names[fn], host_bad,
                  dev_bad);
}
END_TEST

/* ---------------------------------------------------------------- the CUDA twins */

/* Each twin against the emulation it twins: same status, shape and dtype,
 * and every element's bits (a NaN for a NaN: x86 and the GPU give a NaN
 * different signs and payloads). */
typedef struct twin_pair { const char *op, *emu, *twin; } twin_pair;
static const twin_pair twin_pairs[] = {
    {"linear", "eager", "cuda_eager"},
    {"linear", "bias_epilogue", "cuda_bias_epilogue"},
    {"linear", "splitk_fp32", "cuda_splitk_fp32"},
    {"linear", "splitk_bf16", "cuda_splitk_bf16"},
    {"linear", "added_qkv_fused", "cuda_added_qkv_fused"},
    {"linear", "nvfp4_input", "cuda_nvfp4_input"},
    {"linear+gelu", "eager", "cuda_eager"},
    {"linear+gelu", "fused_epilogue", "cuda_fused_epilogue"},
    {"gated_residual", "eager", "cuda_eager"},
    {"gated_residual", "early_round", "cuda_early_round"},
    {"rmsnorm", "eager", "cuda_eager"},
    {"rmsnorm", "fused_fp32", "cuda_fused_fp32"},
    {"rmsnorm", "bf16_stats", "cuda_bf16_stats"},
    {"layernorm", "eager", "cuda_eager"},
    {"layernorm", "fused_affine_folded", "cuda_fused_affine_folded"},
    {"linear_attention", "eager_fp32", "cuda_eager_fp32"},
    {"linear_attention", "bf16_gemm", "cuda_bf16_gemm"},
    {"groupnorm", "eager", "cuda_eager"},
    {"groupnorm", "fused_twopass", "cuda_fused_twopass"},
};
#define N_TWINS ((int)(sizeof twin_pairs / sizeof twin_pairs[0]))

typedef struct twin_tally {
    int cases, refused;                 /* compared; refused alike by both */
    long long elements, nans, mismatches;
    char first_bad[160];                /* the first case with a mismatch */
} twin_tally;

static void index_str(const adm_tensor *t, int64_t i, char *buf, size_t n)
{
    int64_t idx[ADM_MAX_DIMS];
    size_t used = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? i % t->shape[d] : 0;
        i = t->shape[d] ? i / t->shape[d] : 0;
    }
    buf[0] = '\0';
    for (int d = 0; d < t->ndim && used + 24 < n; d++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", d ? ", " : "[", (long long)idx[d]);
    if (used + 2 < n) snprintf(buf + used, n - used, "]");
}

static void twin_compare(const twin_pair *tp, const char *what, const char *params, const adm_tensor *const *in,
                         twin_tally *t)
{
    const adm_op *op = adm_op_find(tp->op);
    const adm_impl *emu = adm_impl_find(tp->op, tp->emu), *tw = adm_impl_find(tp->op, tp->twin);
    adm_op_params p;
    adm_tensor ye, yt;
    adm_status se, st;
    char emsg[600];
    int64_t n, bad = 0;
    int hex = 0;
    ck_assert_msg(emu && tw, "%s: %s or %s is not registered", tp->op, tp->emu, tp->twin);
    ck_assert_msg(adm_op_params_parse(op, params, &p) == ADM_OK, "%s params %s: %s", tp->op, params,
                  adm_error_message());
    se = emu->run(emu, &p, in, &ye);
    snprintf(emsg, sizeof emsg, "%s", se == ADM_OK ? "" : adm_error_message());
    adm_error_clear();
    st = tw->run(tw, &p, in, &yt);
    if (se != ADM_OK || st != ADM_OK) {
        ck_assert_msg(se == st, "TWIN %s/%s against %s on %s %s: the emulation returns %s (%s), the twin %s (%s)",
                      tp->op, tp->twin, tp->emu, what, params, adm_status_name(se), emsg, adm_status_name(st),
                      st == ADM_OK ? "" : adm_error_message());
        printf("  refused alike: %s/%s and %s on %s %s: %s\n", tp->op, tp->twin, tp->emu, what, params, emsg);
        adm_error_clear();
        t->refused++;
        return;
    }
    ck_assert_msg(ye.dtype == yt.dtype && ye.ndim == yt.ndim &&
                  !memcmp(ye.shape, yt.shape, sizeof(int64_t) * (size_t)ye.ndim),
                  "TWIN %s/%s on %s: output %s %dD, the emulation's %s %dD", tp->op, tp->twin, what,
                  adm_dtype_name(yt.dtype), yt.ndim, adm_dtype_name(ye.dtype), ye.ndim);
    hex = adm_format_get(ye.dtype)->bits / 4;
    n = adm_tensor_numel(&ye);
    for (int64_t i = 0; i < n; i++) {
        uint64_t a = adm_tensor_bits(&ye, i), b = adm_tensor_bits(&yt, i);
        int na = adm_format_isnan(ye.dtype, a), nb = adm_format_isnan(ye.dtype, b);
        if (na && nb) { t->nans++; continue; }
        if (a == b) continue;
        if (bad++ < 4) {
            char ix[96];
            index_str(&ye, i, ix, sizeof ix);
            printf("  MISMATCH %s/%s against %s on %s %s: element %lld %s: emulation 0x%0*llx (%.9g), twin "
                   "0x%0*llx (%.9g)\n", tp->op, tp->twin, tp->emu, what, params, (long long)i, ix, hex,
                   (unsigned long long)a, adm_format_decode(ye.dtype, a), hex, (unsigned long long)b,
                   adm_format_decode(ye.dtype, b));
        }
    }
    if (bad && !t->mismatches) snprintf(t->first_bad, sizeof t->first_bad, "%s %s", what, params);
    t->cases++;
    t->elements += n;
    t->mismatches += bad;
    adm_tensor_free(&ye);
    adm_tensor_free(&yt);
}

static const char *source_dir(void)
{
    const char *s = getenv("ADM_SOURCE_DIR");
    return s && *s ? s : ADM_SOURCE_DIR;
}

/* Every bundled capture of the pair's op: its inputs, and each special
 * case's (its own inputs, the capture's for the rest). */
static void twin_bundled(const twin_pair *tp, twin_tally *t)
{
    char dir[1024], path[2048];
    struct dirent **names = NULL;
    int nn;
    snprintf(dir, sizeof dir, "%s/captures/data", source_dir());
    nn = scandir(dir, &names, NULL, alphasort);
    ck_assert_msg(nn > 0, "no bundled captures in %s (set ADM_SOURCE_DIR to the checkout)", dir);
    for (int f = 0; f < nn; f++) {
        adm_capture *cap = NULL;
        const adm_op *op = adm_op_find(tp->op);
        const adm_tensor *in[ADM_OP_MAX_INPUTS];
        size_t len = strlen(names[f]->d_name);
        if (len < 4 || strcmp(names[f]->d_name + len - 3, ".h5")) { free(names[f]); continue; }
        snprintf(path, sizeof path, "%s/%s", dir, names[f]->d_name);
        ck_assert_msg(adm_capture_read(path, &cap) == ADM_OK, "%s", adm_error_message());
        if (!strcmp(adm_capture_op(cap), tp->op)) {
            memset(in, 0, sizeof in);
            for (int i = 0; i < adm_op_input_count(op); i++)
                in[i] = adm_capture_find_input(cap, adm_op_input_name(op, i));
            twin_compare(tp, names[f]->d_name, adm_capture_params(cap), in, t);
            for (int s = 0; s < adm_capture_special_count(cap); s++) {
                const adm_tensor *sin[ADM_OP_MAX_INPUTS];
                char what[300];
                memcpy(sin, in, sizeof sin);
                for (int j = 0; j < adm_capture_special_input_count(cap, s); j++) {
                    adm_named_tensor nt = adm_capture_special_input(cap, s, j);
                    int k = adm_op_input_index(op, nt.name);
                    if (k >= 0) sin[k] = nt.tensor;
                }
                snprintf(what, sizeof what, "%s special %s", names[f]->d_name, adm_capture_special_name(cap, s));
                twin_compare(tp, what, adm_capture_params(cap), sin, t);
            }
        }
        adm_capture_free(cap);
        free(names[f]);
    }
    free(names);
}

/* Generated inputs: owned tensors and the views of them a case hands in. */
typedef struct gen_bag { adm_tensor own[16], view[ADM_OP_MAX_INPUTS]; int n; } gen_bag;

static adm_tensor *bag_new(gen_bag *b)
{
    ck_assert_int_lt(b->n, 16);
    return &b->own[b->n++];
}

static void bag_free(gen_bag *b)
{
    for (int i = 0; i < b->n; i++) adm_tensor_free(&b->own[i]);
    b->n = 0;
}

enum { G_PLAIN = 0, G_NANINF = 1, G_STRIDED = 2, G_NOOPT = 4, G_WIDE = 8 };

/* x's values in transposed storage (the last two dims swapped), or every
 * other element of rows twice as long */
static const adm_tensor *restrided(gen_bag *b, const adm_tensor *x, int k, int slot)
{
    int r = x->ndim;
    if (k == 0 && r >= 2) {
        adm_tensor t, *st = bag_new(b);
        ck_assert_int_eq(adm_tensor_transpose(x, r - 2, r - 1, &t), ADM_OK);
        ck_assert_int_eq(adm_tensor_contiguous(&t, st), ADM_OK);
        ck_assert_int_eq(adm_tensor_transpose(st, r - 2, r - 1, &b->view[slot]), ADM_OK);
    } else {
        int64_t shape[ADM_MAX_DIMS], n = adm_tensor_numel(x);
        adm_tensor *st = bag_new(b);
        memcpy(shape, x->shape, sizeof(int64_t) * (size_t)r);
        shape[r - 1] *= 2;
        ck_assert_int_eq(adm_tensor_alloc(st, x->dtype, r, shape), ADM_OK);
        ck_assert_int_eq(adm_tensor_slice(st, r - 1, 0, shape[r - 1], 2, &b->view[slot]), ADM_OK);
        for (int64_t i = 0; i < n; i++) adm_tensor_set_bits(&b->view[slot], i, adm_tensor_bits(x, i));
    }
    return &b->view[slot];
}

/* NaN in row 1 (all of it), +Inf at [2, 0], -Inf last */
static void poke_special(adm_tensor *x)
{
    const adm_format_info *f = adm_format_get(x->dtype);
    int64_t n = adm_tensor_numel(x), last = x->shape[x->ndim - 1], rows = last ? n / last : 0;
    if (rows > 1)
        for (int64_t j = 0; j < last; j++) adm_tensor_set_bits(x, last + j, f->nan_bits);
    if (rows > 2) adm_tensor_set_bits(x, 2 * last, f->inf_bits);
    if (n > 0) adm_tensor_set_bits(x, n - 1, f->inf_bits | (1ull << (f->bits - 1)));
}

typedef struct gen_case {
    const char *params;
    adm_dtype dt;
    int flags;
    int ndim[ADM_OP_MAX_INPUTS];           /* 0: absent */
    int64_t shape[ADM_OP_MAX_INPUTS][4];
} gen_case;

#define BF ADM_BF16
#define F32 ADM_FP32
#define F16 ADM_FP16
/* linear, linear+gelu (params: {} or the GELU's approximation, both):
 * K odd, below the 4 splits, across tiles and split edges, a multiple of
 * 16 (NVFP4's blocks; the others the NVFP4 twin and its emulation refuse
 * alike); 3-D x; an empty x */
static const gen_case gen_linear[] = {
    {NULL, BF, G_PLAIN, {2, 2, 1}, {{37, 71}, {53, 71}, {53}}},
    {NULL, BF, G_NANINF, {2, 2, 1}, {{37, 71}, {53, 71}, {53}}},
    {NULL, BF, G_STRIDED, {2, 2, 1}, {{37, 71}, {53, 71}, {53}}},
    {NULL, BF, G_WIDE, {2, 2, 1}, {{37, 71}, {53, 71}, {53}}},
    {NULL, BF, G_NOOPT, {2, 2, 0}, {{37, 71}, {53, 71}}},
    {NULL, BF, G_PLAIN, {2, 2, 1}, {{5, 3}, {7, 3}, {7}}},
    {NULL, BF, G_PLAIN, {2, 2, 1}, {{19, 200}, {33, 200}, {33}}},
    {NULL, BF, G_PLAIN, {3, 2, 1}, {{2, 19, 64}, {40, 64}, {40}}},
    {NULL, F32, G_WIDE, {2, 2, 1}, {{21, 96}, {35, 96}, {35}}},
    {NULL, F16, G_PLAIN, {2, 2, 1}, {{21, 96}, {35, 96}, {35}}},
    {NULL, F16, G_NANINF, {2, 2, 1}, {{21, 96}, {35, 96}, {35}}},
    {NULL, F32, G_NANINF, {2, 2, 1}, {{21, 96}, {35, 96}, {35}}},
    {NULL, F32, G_STRIDED, {2, 2, 1}, {{21, 96}, {35, 96}, {35}}},
    {NULL, BF, G_PLAIN, {2, 2, 1}, {{0, 48}, {35, 48}, {35}}},
    {NULL, BF, G_NANINF, {2, 2, 1}, {{17, 80}, {24, 80}, {24}}},
    {NULL, BF, G_WIDE | G_STRIDED, {2, 2, 1}, {{33, 208}, {29, 208}, {29}}},
};
static const gen_case gen_gated_residual[] = {
    {"{}", BF, G_PLAIN, {2, 2, 2}, {{29, 67}, {29, 1}, {29, 67}}},
    {"{}", BF, G_NANINF, {2, 2, 2}, {{29, 67}, {29, 1}, {29, 67}}},
    {"{}", BF, G_STRIDED, {2, 2, 2}, {{29, 67}, {29, 67}, {29, 67}}},
    {"{}", BF, G_WIDE, {2, 1, 2}, {{29, 67}, {67}, {29, 67}}},
    {"{}", F32, G_WIDE, {2, 2, 2}, {{29, 67}, {29, 1}, {29, 67}}},
    {"{}", F16, G_PLAIN, {2, 2, 2}, {{29, 67}, {29, 1}, {29, 67}}},
    {"{}", F16, G_NANINF, {2, 2, 2}, {{29, 67}, {29, 67}, {29, 67}}},
    {"{}", F32, G_NANINF, {2, 2, 2}, {{29, 67}, {29, 67}, {29, 67}}},
};
static const gen_case gen_rmsnorm[] = {
    {"{\"eps\":1e-6}", BF, G_PLAIN, {2, 1}, {{23, 131}, {131}}},
    {"{\"eps\":1e-6,\"silu\":true}", BF, G_WIDE, {2, 1}, {{23, 131}, {131}}},
    {"{\"eps\":1e-6,\"silu\":true}", BF, G_NANINF, {2, 1}, {{23, 131}, {131}}},
    {"{\"eps\":1e-5}", BF, G_STRIDED, {2, 1}, {{23, 131}, {131}}},
    {"{\"eps\":1e-6}", BF, G_NOOPT, {2, 0}, {{9, 7}}},
    {"{\"eps\":1e-6,\"silu\":true}", BF, G_PLAIN, {3, 1}, {{2, 3, 1000}, {1000}}},
    {"{\"eps\":1e-6}", F32, G_WIDE, {2, 1}, {{11, 96}, {96}}},
    {"{\"eps\":1e-6,\"silu\":true}", F16, G_PLAIN, {2, 1}, {{11, 96}, {96}}},
    {"{\"eps\":1e-6}", F16, G_NANINF, {2, 1}, {{11, 96}, {96}}},
    {"{\"eps\":1e-6,\"silu\":true}", F32, G_NANINF, {2, 1}, {{11, 96}, {96}}},
};
static const gen_case gen_layernorm[] = {
    {"{\"eps\":1e-5}", BF, G_PLAIN, {2, 1, 1}, {{17, 95}, {95}, {95}}},
    {"{\"eps\":1e-6,\"modulate\":true}", BF, G_PLAIN, {2, 1, 1, 2, 2}, {{17, 95}, {95}, {95}, {1, 95}, {1, 95}}},
    {"{\"eps\":1e-6,\"modulate\":true}", BF, G_NANINF, {2, 1, 1, 2, 2}, {{17, 95}, {95}, {95}, {17, 95}, {17, 95}}},
    {"{\"eps\":1e-6,\"modulate\":true}", BF, G_STRIDED, {2, 1, 1, 2, 2},
     {{17, 95}, {95}, {95}, {17, 95}, {1, 95}}},
    {"{\"eps\":1e-5}", BF, G_NOOPT | G_WIDE, {2, 0, 0}, {{17, 95}}},
    {"{\"eps\":1e-6,\"modulate\":true}", BF, G_WIDE, {3, 1, 1, 3, 3},
     {{2, 3, 600}, {600}, {600}, {2, 1, 600}, {2, 1, 600}}},
    {"{\"eps\":1e-6,\"modulate\":true}", F32, G_PLAIN, {2, 1, 1, 2, 2}, {{9, 64}, {64}, {64}, {1, 64}, {1, 64}}},
    {"{\"eps\":1e-5}", F16, G_PLAIN, {2, 1, 1}, {{9, 64}, {64}, {64}}},
};
static const gen_case gen_groupnorm[] = {
    {"{\"groups\":4}", BF, G_PLAIN, {3, 1, 1}, {{2, 48, 37}, {48}, {48}}},
    {"{\"groups\":6,\"silu\":true}", BF, G_WIDE, {3, 1, 1}, {{2, 48, 37}, {48}, {48}}},
    {"{\"groups\":4,\"silu\":true,\"channels_last\":true}", BF, G_PLAIN, {3, 1, 1}, {{2, 37, 48}, {48}, {48}}},
    {"{\"groups\":4,\"silu\":true,\"channels_last\":true}", BF, G_NANINF, {3, 1, 1}, {{2, 37, 48}, {48}, {48}}},
    {"{\"groups\":4,\"silu\":true}", BF, G_STRIDED, {3, 1, 1}, {{2, 48, 37}, {48}, {48}}},
    {"{\"groups\":2,\"eps\":1e-6}", BF, G_NOOPT, {3, 0, 0}, {{1, 64, 100}}},
    {"{\"groups\":8,\"silu\":true,\"eps\":1e-6}", F32, G_WIDE, {3, 1, 1}, {{1, 32, 41}, {32}, {32}}},
    {"{\"groups\":8,\"silu\":true}", F16, G_PLAIN, {3, 1, 1}, {{1, 32, 41}, {32}, {32}}},
};
static const gen_case gen_linear_attention[] = {
    {"{}", BF, G_PLAIN, {4, 4, 4}, {{2, 3, 19, 16}, {2, 3, 23, 16}, {2, 3, 23, 12}}},
    {"{\"eps\":1e-5}", BF, G_NANINF, {4, 4, 4}, {{2, 3, 19, 16}, {2, 3, 23, 16}, {2, 3, 23, 12}}},
    {"{}", BF, G_STRIDED, {2, 2, 2}, {{33, 8}, {41, 8}, {41, 5}}},
    {"{}", BF, G_WIDE, {3, 3, 3}, {{4, 64, 32}, {4, 70, 32}, {4, 70, 32}}},
    {"{}", F32, G_PLAIN, {2, 2, 2}, {{33, 8}, {41, 8}, {41, 5}}},
};

/* the scale of each generated input of an op (x, then the rest) */
static double gen_sigma(const char *op, int i, int64_t k)
{
    if (i == 0) return 1.0;
    if (!strncmp(op, "linear", 6) && strcmp(op, "linear_attention")) return i == 1 ? 4.0 / sqrt((double)(k ? k : 1)) : 0.5;
    return 0.5;
}

static void twin_generated(const twin_pair *tp, twin_tally *t)
{
    const gen_case *cases;
    int ncases, lg = !strcmp(tp->op, "linear+gelu");
    const adm_op *op = adm_op_find(tp->op);
    if (!strcmp(tp->op, "linear") || lg) { cases = gen_linear; ncases = (int)(sizeof gen_linear / sizeof *cases); }
    else if (!strcmp(tp->op, "gated_residual")) { cases = gen_gated_residual; ncases = (int)(sizeof gen_gated_residual / sizeof *cases); }
    else if (!strcmp(tp->op, "rmsnorm")) { cases = gen_rmsnorm; ncases = (int)(sizeof gen_rmsnorm / sizeof *cases); }
    else if (!strcmp(tp->op, "layernorm")) { cases = gen_layernorm; ncases = (int)(sizeof gen_layernorm / sizeof *cases); }
    else if (!strcmp(tp->op, "groupnorm")) { cases = gen_groupnorm; ncases = (int)(sizeof gen_groupnorm / sizeof *cases); }
    else { cases = gen_linear_attention; ncases = (int)(sizeof gen_linear_attention / sizeof *cases); }
    for (int c = 0; c < ncases; c++)
        for (int approx = 0; approx < (lg ? 2 : 1); approx++) {
            const gen_case *g = &cases[c];
            gen_bag b;
            const adm_tensor *in[ADM_OP_MAX_INPUTS];
            char params[160], what[200], shapes[120] = "";
            int64_t k = g->shape[0][g->ndim[0] - 1];
            memset(&b, 0, sizeof b);
            memset(in, 0, sizeof in);
            if (!strcmp(tp->op, "linear")) snprintf(params, sizeof params, "{}");
            else if (lg) snprintf(params, sizeof params, "{\"approximate\":\"%s\"}", approx ? "none" : "tanh");
            else snprintf(params, sizeof params, "%s", g->params);
            for (int i = 0; i < adm_op_input_count(op); i++) {
                adm_tensor *x;
                double sigma = gen_sigma(tp->op, i, k) * ((g->flags & G_WIDE) && i == 0 ? 8.0 : 1.0);
                size_t used = strlen(shapes);
                if (!g->ndim[i]) continue;
                x = bag_new(&b);
                ck_assert_int_eq(adm_synth_gaussian(1000 + 17 * (uint64_t)c + (uint64_t)i, sigma,
                                                     i == 0 || !strcmp(tp->op, "linear_attention") ? g->dt : ADM_BF16,
                                                     g->ndim[i], g->shape[i], x), ADM_OK);
                if (i == 0 && (g->flags & G_NANINF)) poke_special(x);
                if (i == 1 && (g->flags & G_NANINF) && adm_tensor_numel(x) > 4)
                    adm_tensor_set_bits(x, 4, adm_format_get(x->dtype)->inf_bits);
                in[i] = x;
                if ((g->flags & G_STRIDED) && i <= 1 && x->ndim >= 1) in[i] = restrided(&b, x, i, i);
                if (i < 3 && used + 30 < sizeof shapes)
                    adm_shape_str(x->ndim, x->shape, shapes + used, sizeof shapes - used);
            }
            snprintf(what, sizeof what, "generated %s x%s%s%s%s%s", adm_dtype_name(g->dt), shapes,
                         g->flags & G_NANINF ? " NaN/Inf" : "", g->flags & G_STRIDED ? " strided" : "",
                         g->flags & G_WIDE ? " wide" : "", g->flags & G_NOOPT ? " no-optional" : "");
            twin_compare(tp, what, params, in, t);
            bag_free(&b);
        }
}

START_TEST(test_twins)
{
    const twin_pair *tp = &twin_pairs[_i];
    const char *only = getenv("ADM_TWIN"); /* "op/twin": that one alone */
    char name[96];
    twin_tally t;
    snprintf(name, sizeof name, "%s/%s", tp->op, tp->twin);
    if (only && *only && strcmp(only, name)) return;
    memset(&t, 0, sizeof t);
    twin_bundled(tp, &t);
    twin_generated(tp, &t);
    printf("twin %-16s %-24s = %-20s %2d cases (%d refused alike), %8lld elements (%lld NaN on both): %s%lld "
           "mismatches%s%s\n", tp->op, tp->twin, tp->emu, t.cases, t.refused, t.elements, t.nans,
           t.mismatches ? "FAIL " : "", t.mismatches, t.mismatches ? ", first on " : "",
           t.mismatches ? t.first_bad : "");
    fflush(stdout);
    ck_assert_msg(t.mismatches == 0, "%s/%s: %lld elements differ from %s's", tp->op, tp->twin, t.mismatches,
                  tp->emu);
    ck_assert_int_gt(t.cases, 5);
}
END_TEST

/* 1 when a mapping of this process names a file whose path contains s. */
static int mapped(const char *s)
{
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, s) != NULL;
    fclose(f);
    return found;
}

/* Nothing of CUDA is mapped before the first GPU call. Then, built with
 * CUDA: the module and the CUDA runtime are (device or not), unless
 * ADM_CUDA_MODULE names a module that cannot be loaded, when the call says
 * so by name; built without: nothing, and the call says that. */
/* NVIDIA's driver library can be loaded: a GPU machine (or a driver
 * without a GPU). */
static int driver_present(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (h) dlclose(h);
    return h != NULL;
}

/* Stats: gates 1 and 2's raw sums (harness/stat_elem.h) on the GPU are
 * the CPU's bits, every one (memcmp; the channel sums after both add
 * their stripes): bf16, fp16, fp32 and fp64 outputs (and a candidate in
 * another format than the reference), with and without a condition
 * scale, NaN, Inf and zero elements, magnitudes in the formats' subnormal
 * and saturating ranges, a 1-row and a 1-column output, rows not a
 * multiple of the block (64) and channels not of the warp (32), so that
 * a block's last chunk of elements is partial and chunks straddle rows,
 * stripes of more than one block of rows, and outputs of 34 MB (uploaded
 * in pinned pieces of 4 MiB by 4 threads, two pieces each in turn, the
 * last partial). */
typedef struct stats_shape { int64_t R, N; adm_dtype ref_dt, cand_dt; int cond; } stats_shape;
static const stats_shape stats_shapes[] = {
    {200, 67, ADM_BF16, ADM_BF16, 1}, {200, 67, ADM_BF16, ADM_BF16, 0}, {130, 300, ADM_FP16, ADM_FP16, 1},
    {130, 300, ADM_FP16, ADM_FP16, 0}, {70, 129, ADM_FP32, ADM_FP32, 1}, {70, 129, ADM_FP32, ADM_FP32, 0},
    {1, 513, ADM_BF16, ADM_FP32, 1},   {257, 1, ADM_FP16, ADM_BF16, 0}, {4200, 8, ADM_BF16, ADM_BF16, 1},
    {99, 45, ADM_FP64, ADM_FP64, 1},   {99, 45, ADM_FP64, ADM_FP64, 0}, {131, 77, ADM_BF16, ADM_FP64, 1},
    {65, 33, ADM_FP32, ADM_FP16, 0},   {2100, 4100, ADM_FP32, ADM_FP32, 1},
};

static uint64_t stats_rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static double stats_unit(uint64_t *s) { return (double)stats_rng(s) * 0x1p-53; }

START_TEST(test_stats)
{
    const stats_shape *sh = &stats_shapes[_i];
    int64_t R = sh->R, N = sh->N, n = R * N, shape[2] = {R, N};
    adm_tensor o, bnd, cnd, ref, cand;
    adm_h_stats_raw cpu, gpu;
    adm_h_stats_dev *dev = NULL;
    adm_judge_input in;
    adm_h_reader rd, cd;
    uint64_t seed = 0x5eed0000u + (uint64_t)_i;
    ck_assert_int_eq(adm_tensor_alloc(&o, ADM_FP64, 2, shape), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&bnd, ADM_FP64, 2, shape), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&cnd, ADM_FP64, 2, shape), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&ref, sh->ref_dt, 2, shape), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&cand, sh->cand_dt, 2, shape), ADM_OK);
    for (int64_t i = 0; i < n; i++) {
        double *ov = o.data, *cv = cnd.data, x, r, c;
        uint64_t bits, k = stats_rng(&seed) % 64;
        /* magnitudes over the formats' ranges: mostly ordinary, some tiny
         * (fp16's and bf16's subnormals), some near fp16's top */
        double mag = k < 3 ? ldexp(1.0, -20 - (int)(stats_rng(&seed) % 120)) : k < 5 ? 60000 + 10000 * stats_unit(&seed)
                                                                             : ldexp(1.0, (int)(stats_rng(&seed) % 12) - 6);
        x = (stats_unit(&seed) - 0.5) * 2 * mag;
        if (k == 5) x = 0;
        r = x * (1 + 0x1p-9 * (stats_unit(&seed) - 0.5));
        c = x * (1 + 0x1p-8 * (stats_unit(&seed) - 0.4)); /* a lean */
        if (k == 6) r = NAN;
        if (k == 7) c = INFINITY;
        if (k == 8 && sh->cond) x = NAN; /* a non-finite oracle value (the scale-less RMS skips it too) */
        ov[i] = x;
        cv[i] = k == 9 ? INFINITY : k == 10 ? 0.0 : fabs(x) * (1 + 4 * stats_unit(&seed));
        ck_assert_int_eq(adm_format_encode(sh->ref_dt, r, ADM_RNE, 0, &bits), ADM_OK);
        adm_tensor_set_bits(&ref, i, bits);
        ck_assert_int_eq(adm_format_encode(sh->cand_dt, c, ADM_RNE, 0, &bits), ADM_OK);
        adm_tensor_set_bits(&cand, i, bits);
    }
    memset(&in, 0, sizeof in);
    in.oracle = &o;
    in.bound = &bnd;
    in.cond = sh->cond ? &cnd : NULL;
    in.ref = &ref;
    in.cand = &cand;
    rd = adm_h_reader_of(&ref);
    cd = adm_h_reader_of(&cand);
    ck_assert_int_eq(adm_h_stats_alloc(&cpu, R, N), ADM_OK);
    ck_assert_int_eq(adm_h_stats_alloc(&gpu, R, N), ADM_OK);
    ck_assert_int_eq(adm_h_measure_raw(&in, &rd, &cd, &cpu), ADM_OK);
    ck_assert_msg(adm_h_stats_dev_open(&o, in.cond, &ref, &dev) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(adm_h_stats_dev_serves(dev, &in), "the GPU does not take this output");
    ck_assert_msg(adm_h_stats_dev_raw(dev, &in, &gpu) == ADM_OK, "%s", adm_error_message());
    printf("stats %lldx%lld %s/%s %s: %lld stripes, %lld blocks, %.0f elements judged\n", (long long)R,
           (long long)N, adm_dtype_name(sh->ref_dt), adm_dtype_name(sh->cand_dt), sh->cond ? "scale" : "no scale",
           (long long)cpu.ns, (long long)cpu.nb, cpu.mg[MG_NONTRIV]);
    ck_assert_int_eq(gpu.ns, cpu.ns);
    /* the device adds the stripes (in stripe order); the CPU's the same way */
    ck_assert(gpu.merged && !cpu.merged);
    adm_h_stats_merge(&cpu);
    ck_assert_msg(!memcmp(cpu.rows, gpu.rows, sizeof(double) * (size_t)(R * RAW_NS)), "row sums differ");
    ck_assert_msg(!memcmp(cpu.chans, gpu.chans, sizeof(double) * (size_t)(N * RAW_NS)), "channel sums differ");
    ck_assert_msg(!memcmp(cpu.mg, gpu.mg, sizeof(double) * (size_t)(cpu.nb * MG_NS)), "block magnitudes differ");
    ck_assert_msg(!memcmp(cpu.ph, gpu.ph, sizeof(int64_t) * (size_t)(cpu.nb * HIST_BLOCK)), "histograms differ");
    /* the sums are not all zero: the comparison compared something */
    ck_assert(cpu.rows[RAW_N] > 0 || cpu.rows[RAW_NS + RAW_N] > 0 || R == 1);
    adm_h_stats_dev_free(dev);
    adm_h_stats_free(&cpu);
    adm_h_stats_free(&gpu);
    adm_tensor_free(&o);
    adm_tensor_free(&bnd);
    adm_tensor_free(&cnd);
    adm_tensor_free(&ref);
    adm_tensor_free(&cand);
}
END_TEST

/* Stats, scans: gates 3 and 7's scans on the GPU (the first element whose
 * kind differs from the reference's, the first whose bits do, NaN
 * payloads aside) are the host's (adm_h_first_kind_diff,
 * adm_h_bits_identical), and the judge's verdict from them is the one it
 * reaches scanning on the host: for each format, an identical candidate,
 * one with two NaNs of different payloads (equal), a changed bit at 5000,
 * a NaN where the reference is -Inf at 6000 and +Inf where it is finite
 * at 7000; and a candidate in another format (fp32, fp64 against fp32:
 * no bit scan). */
static const adm_dtype scan_formats[] = {ADM_BF16, ADM_FP16, ADM_FP32, ADM_FP64};

static uint64_t scan_qnan(adm_dtype dt, int payload)
{
    switch (dt) {
    case ADM_BF16: return 0x7fc0u + (uint64_t)payload;
    case ADM_FP16: return 0x7e00u + (uint64_t)payload;
    case ADM_FP32: return 0x7fc00000u + (uint64_t)payload;
    default: return 0x7ff8000000000000ull + (uint64_t)payload;
    }
}

static void scan_judge(const adm_judge_input *base, adm_h_stats_dev *dev, int64_t want_kind, int64_t want_bits)
{
    int64_t n = adm_tensor_numel(base->ref), where = -1;
    adm_h_reader rd = adm_h_reader_of(base->ref), cd = adm_h_reader_of(base->cand);
    adm_h_stats_raw gpu;
    adm_judge_input in = *base;
    adm_verdict vc, vg;
    int same = base->ref->dtype == base->cand->dtype ? adm_h_bits_identical(base->ref, base->cand, &where) : -1;
    ck_assert_int_eq(adm_h_stats_alloc(&gpu, base->ref->shape[0], base->ref->shape[1]), ADM_OK);
    ck_assert_msg(adm_h_stats_dev_serves(dev, &in), "the GPU does not take this output");
    ck_assert_msg(adm_h_stats_dev_raw(dev, &in, &gpu) == ADM_OK, "%s", adm_error_message());
    /* the host's scans say what the test built */
    ck_assert_int_eq(adm_h_first_kind_diff(&rd, &cd, n), want_kind);
    if (same >= 0) ck_assert_int_eq(same ? n : where, want_bits);
    ck_assert_msg(gpu.first_kind == want_kind, "first kind difference: the GPU's %lld, expected %lld",
                  (long long)gpu.first_kind, (long long)want_kind);
    ck_assert_msg(gpu.first_bits == (same >= 0 ? want_bits : -1), "first bit difference: the GPU's %lld, expected %lld",
                  (long long)gpu.first_bits, (long long)(same >= 0 ? want_bits : -1));
    adm_h_stats_free(&gpu);
    /* the verdicts, host scans against the GPU's */
    in.stats_dev = NULL;
    ck_assert_msg(adm_judge(&in, NULL, &vc) == ADM_OK, "%s", adm_error_message());
    in.stats_dev = dev;
    ck_assert_msg(adm_judge(&in, NULL, &vg) == ADM_OK, "%s", adm_error_message());
    ck_assert_int_eq(vg.tier, vc.tier);
    for (int g = 1; g < ADM_GATE_COUNT; g++) {
        ck_assert_int_eq(vg.gate[g].passed, vc.gate[g].passed);
        ck_assert_int_eq(vg.gate[g].applicable, vc.gate[g].applicable);
        ck_assert_str_eq(vg.gate[g].reason, vc.gate[g].reason);
    }
    ck_assert_int_eq(vg.gate[ADM_GATE_SPECIAL].passed, want_kind == n);
    ck_assert_int_eq(vg.gate[ADM_GATE_EXACT].passed, same >= 0 && want_bits == n);
}

/* Stats, flips: gate 5's counts on the GPU (harness/stat_elem.h
 * adm_se_flip, the quantize scale from the device's max |o|) are the
 * host's, for threshold and quantize readers into fp8, fp4, bf16 and fp16,
 * over bf16 and fp32 references with NaN, +-Inf, +-0 and values near the
 * readers' boundaries, through the judge and directly. */
static const char *flip_readers[] = {"threshold:0.25", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "bf16", "fp16"};

START_TEST(test_stats_flip)
{
    int64_t R = 70, N = 129, n = R * N, shape[2] = {R, N}, direct[4];
    /* a bf16 reference is near every boundary of a bf16 or fp16 reader: all ties */
    adm_dtype rdt = _i == 1 || _i >= 3 ? ADM_FP32 : ADM_BF16;
    adm_tensor o, bnd, ref, cand;
    adm_reader rd;
    adm_judge_input in;
    adm_verdict vc, vg;
    adm_h_stats_dev *dev = NULL;
    uint64_t seed = 0xf11b0000u + (uint64_t)_i;
    double *r = malloc(sizeof(double) * (size_t)n), *c = malloc(sizeof(double) * (size_t)n);
    ck_assert(r && c);
    ck_assert_int_eq(adm_reader_parse(flip_readers[_i], &rd), ADM_OK);
    rd.declared = 1;
    ck_assert_int_eq(adm_tensor_alloc(&o, ADM_FP64, 2, shape), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&bnd, ADM_FP64, 2, shape), ADM_OK);
    for (int64_t i = 0; i < n; i++) {
        double *ov = o.data, x = (stats_unit(&seed) - 0.5) * ldexp(1.0, (int)(stats_rng(&seed) % 8) - 4);
        uint64_t k = stats_rng(&seed) % 64;
        if (k < 6) x = 0.25 + (stats_unit(&seed) - 0.5) * 0x1p-9; /* near the threshold */
        if (k == 6) x = -0.0;
        ov[i] = k == 7 ? NAN : k == 8 ? INFINITY : x;
        r[i] = x * (1 + 0x1p-8 * (stats_unit(&seed) - 0.5));
        c[i] = x * (1 + 0x1p-6 * (stats_unit(&seed) - 0.3));
        if (k == 9) r[i] = NAN;
        if (k == 10) c[i] = -INFINITY;
        if (k == 11) c[i] = INFINITY;
        if (k == 12) r[i] = -0.0;
    }
    ((double *)o.data)[5] = 3.5; /* the largest |o|: the quantize scale */
    ck_assert_int_eq(adm_tensor_from_f64(&ref, rdt, 2, shape, r, ADM_RNE, 0), ADM_OK);
    ck_assert_int_eq(adm_tensor_from_f64(&cand, rdt, 2, shape, c, ADM_RNE, 0), ADM_OK);
    memset(&in, 0, sizeof in);
    in.oracle = &o;
    in.bound = &bnd;
    in.ref = &ref;
    in.cand = &cand;
    in.reader = &rd;
    in.n_views = -1;
    ck_assert_msg(adm_judge(&in, NULL, &vc) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(adm_h_stats_dev_open(&o, NULL, &ref, &dev) == ADM_OK, "%s", adm_error_message());
    in.stats_dev = dev;
    ck_assert_msg(adm_judge(&in, NULL, &vg) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(adm_h_stats_dev_flip(dev, &in, &rd, direct) == ADM_OK, "the flips did not run on the device");
    printf("flips %s over %s: host ties %lld decisions %lld flips %lld/%lld; device %lld %lld %lld/%lld\n",
           flip_readers[_i], adm_dtype_name(rdt), (long long)vc.ties, (long long)vc.decisions, (long long)vc.flips_r,
           (long long)vc.flips_c, (long long)direct[0], (long long)direct[1], (long long)direct[2],
           (long long)direct[3]);
    ck_assert_int_eq(direct[0], vc.ties);
    ck_assert_int_eq(direct[1], vc.decisions);
    ck_assert_int_eq(direct[2], vc.flips_r);
    ck_assert_int_eq(direct[3], vc.flips_c);
    ck_assert_int_eq(vg.ties, vc.ties);
    ck_assert_int_eq(vg.decisions, vc.decisions);
    ck_assert_int_eq(vg.flips_r, vc.flips_r);
    ck_assert_int_eq(vg.flips_c, vc.flips_c);
    ck_assert_int_eq(vg.gate[ADM_GATE_FLIP].passed, vc.gate[ADM_GATE_FLIP].passed);
    /* the counts counted something */
    ck_assert(vc.decisions > 0 && vc.ties > 0 && vc.flips_c > 0);
    adm_h_stats_dev_free(dev);
    adm_tensor_free(&o);
    adm_tensor_free(&bnd);
    adm_tensor_free(&ref);
    adm_tensor_free(&cand);
    free(r);
    free(c);
}
END_TEST

START_TEST(test_stats_scan)
{
    adm_dtype dt = scan_formats[_i];
    int64_t R = 300, N = 77, n = R * N, shape[2] = {R, N};
    adm_tensor o, bnd, ref, cand, c32;
    adm_dtype other = dt == ADM_FP32 ? ADM_FP64 : ADM_FP32;
    adm_h_stats_dev *dev = NULL;
    adm_judge_input in;
    uint64_t bits;
    ck_assert_int_eq(adm_tensor_alloc(&o, ADM_FP64, 2, shape), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&bnd, ADM_FP64, 2, shape), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&ref, dt, 2, shape), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&cand, dt, 2, shape), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&c32, other, 2, shape), ADM_OK);
    for (int64_t i = 0; i < n; i++) {
        double x = sin(0.37 * (double)i) * 3;
        ((double *)o.data)[i] = x;
        ck_assert_int_eq(adm_format_encode(dt, x * (1 + 0x1p-10), ADM_RNE, 0, &bits), ADM_OK);
        adm_tensor_set_bits(&ref, i, bits);
    }
    /* the reference's own specials: a NaN at 100, -Inf at 6000 */
    adm_tensor_set_bits(&ref, 100, scan_qnan(dt, 0));
    ck_assert_int_eq(adm_format_encode(dt, -INFINITY, ADM_RNE, 0, &bits), ADM_OK);
    adm_tensor_set_bits(&ref, 6000, bits);
    memcpy(cand.data, ref.data, (size_t)n * (size_t)adm_format_get(dt)->storage_bytes);
    memset(&in, 0, sizeof in);
    in.oracle = &o;
    in.bound = &bnd;
    in.ref = &ref;
    in.cand = &cand;
    in.n_views = -1;
    ck_assert_msg(adm_h_stats_dev_open(&o, NULL, &ref, &dev) == ADM_OK, "%s", adm_error_message());
    scan_judge(&in, dev, n, n);
    /* another NaN payload at 100: still the same */
    adm_tensor_set_bits(&cand, 100, scan_qnan(dt, 1));
    scan_judge(&in, dev, n, n);
    /* one bit at 5000 */
    adm_tensor_set_bits(&cand, 5000, adm_tensor_bits(&ref, 5000) ^ 1);
    scan_judge(&in, dev, n, 5000);
    /* a NaN where the reference is -Inf (6000), +Inf where it is finite (7000) */
    adm_tensor_set_bits(&cand, 6000, scan_qnan(dt, 0));
    ck_assert_int_eq(adm_format_encode(dt, INFINITY, ADM_RNE, 0, &bits), ADM_OK);
    adm_tensor_set_bits(&cand, 7000, bits);
    scan_judge(&in, dev, 6000, 5000);
    /* a candidate in another format: the kinds compared, no bit scan */
    for (int64_t i = 0; i < n; i++) {
        ck_assert_int_eq(adm_format_encode(other, adm_tensor_get(&cand, i), ADM_RNE, 0, &bits), ADM_OK);
        adm_tensor_set_bits(&c32, i, bits);
    }
    in.cand = &c32;
    scan_judge(&in, dev, 6000, -1);
    adm_h_stats_dev_free(dev);
    adm_tensor_free(&o);
    adm_tensor_free(&bnd);
    adm_tensor_free(&ref);
    adm_tensor_free(&cand);
    adm_tensor_free(&c32);
}
END_TEST

/* Stats, resident: after a GPU evaluation the statistics borrow the
 * oracle's own device copies of its values and condition scale
 * (oracle/oracle_cuda.cu, adm_o_cuda_kept_take) instead of uploading them,
 * and their raw sums are still the CPU's bits (memcmp) from the host's
 * arrays; whatever ends the copy's standing ends the borrowing, the sums
 * staying the CPU's: a refinement that rewrites host values, a second
 * evaluation (its result borrowed in turn), freeing the result; and a
 * session that borrowed keeps its copy past a later evaluation. */
static void resident_sums(const adm_tensor *o, const adm_tensor *cond, const adm_tensor *ref, const adm_tensor *cand,
                          int want_borrowed, adm_h_stats_dev *keep_open, adm_h_stats_dev **opened)
{
    int64_t R = o->shape[0], N = o->shape[1];
    adm_h_stats_raw cpu, gpu;
    adm_h_stats_dev *dev = keep_open;
    adm_judge_input in;
    adm_h_reader rd = adm_h_reader_of(ref), cd = adm_h_reader_of(cand);
    memset(&in, 0, sizeof in);
    in.oracle = o;
    in.bound = o;
    in.cond = cond;
    in.ref = ref;
    in.cand = cand;
    ck_assert_int_eq(adm_h_stats_alloc(&cpu, R, N), ADM_OK);
    ck_assert_int_eq(adm_h_stats_alloc(&gpu, R, N), ADM_OK);
    ck_assert_int_eq(adm_h_measure_raw(&in, &rd, &cd, &cpu), ADM_OK);
    if (!dev) ck_assert_msg(adm_h_stats_dev_open(o, cond, ref, &dev) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(adm_h_stats_dev_borrowed(dev) == want_borrowed, "borrowed %d, expected %d",
                  adm_h_stats_dev_borrowed(dev), want_borrowed);
    ck_assert_msg(adm_h_stats_dev_raw(dev, &in, &gpu) == ADM_OK, "%s", adm_error_message());
    adm_h_stats_merge(&cpu);
    ck_assert_msg(!memcmp(cpu.rows, gpu.rows, sizeof(double) * (size_t)(R * RAW_NS)), "row sums differ");
    ck_assert_msg(!memcmp(cpu.chans, gpu.chans, sizeof(double) * (size_t)(N * RAW_NS)), "channel sums differ");
    ck_assert_msg(!memcmp(cpu.mg, gpu.mg, sizeof(double) * (size_t)(cpu.nb * MG_NS)), "block magnitudes differ");
    ck_assert_msg(!memcmp(cpu.ph, gpu.ph, sizeof(int64_t) * (size_t)(cpu.nb * HIST_BLOCK)), "histograms differ");
    ck_assert(cpu.rows[RAW_N] > 0);
    if (opened) *opened = dev;
    else adm_h_stats_dev_free(dev);
    adm_h_stats_free(&cpu);
    adm_h_stats_free(&gpu);
}

/* The reference and a leaning candidate from an oracle's values. */
static void resident_outputs(const adm_tensor *o, adm_tensor *ref, adm_tensor *cand)
{
    int64_t n = adm_tensor_numel(o);
    double *r = malloc(sizeof(double) * (size_t)n), *c = malloc(sizeof(double) * (size_t)n);
    ck_assert(r && c);
    for (int64_t i = 0; i < n; i++) {
        double v = ((const double *)o->data)[i];
        r[i] = v * (1 + 0x1p-9 * (double)((i * 7919) % 17 - 8) / 8);
        c[i] = v * (1 + 0x1p-8 * (double)((i * 104729) % 13 - 5) / 6);
    }
    ck_assert_int_eq(adm_tensor_from_f64(ref, ADM_BF16, o->ndim, o->shape, r, ADM_RNE, 0), ADM_OK);
    ck_assert_int_eq(adm_tensor_from_f64(cand, ADM_BF16, o->ndim, o->shape, c, ADM_RNE, 0), ADM_OK);
    free(r);
    free(c);
}

START_TEST(test_stats_resident)
{
    const adm_op *op = adm_op_find("linear");
    adm_op_params p;
    adm_tensor x, w, b, ref, cand, ref2, cand2;
    int64_t xs[2] = {300, 256}, ws[2] = {200, 256}, bs[1] = {200};
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &b};
    adm_oracle_config cfg;
    adm_oracle *o;
    adm_oracle_result r, r2, r3;
    adm_h_stats_dev *held = NULL;
    ck_assert_int_eq(adm_synth_gaussian(11, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(12, 1.0 / 16, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(13, 0.02, ADM_BF16, 1, bs, &b), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(op, "{}", &p), ADM_OK);
    adm_oracle_config_default(&cfg);
    cfg.use_gpu = 1;
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &r) == ADM_OK, "%s", adm_error_message());
    ck_assert(r.on_gpu && r.has_cond);
    resident_outputs(&r.value, &ref, &cand);
    /* borrowed, with and without the condition scale */
    resident_sums(&r.value, &r.cond, &ref, &cand, 1, NULL, NULL);
    resident_sums(&r.value, NULL, &ref, &cand, 1, NULL, NULL);
    /* a refinement at a scale that re-bounds elements rewrites host values */
    ck_assert_msg(adm_oracle_refine(o, op, &p, in, &r, r.max_bound / cfg.sharpness / 2) == ADM_OK, "%s",
                  adm_error_message());
    resident_sums(&r.value, &r.cond, &ref, &cand, 0, NULL, NULL);
    /* a second evaluation: its result is the one held; r is uploaded */
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &r2) == ADM_OK, "%s", adm_error_message());
    resident_outputs(&r2.value, &ref2, &cand2);
    resident_sums(&r.value, &r.cond, &ref, &cand, 0, NULL, NULL);
    resident_sums(&r2.value, &r2.cond, &ref2, &cand2, 1, NULL, &held);
    /* a third evaluation replaces it; the open session keeps its copy */
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &r3) == ADM_OK, "%s", adm_error_message());
    resident_sums(&r2.value, &r2.cond, &ref2, &cand2, 1, held, NULL);
    resident_sums(&r3.value, &r3.cond, &ref2, &cand2, 1, NULL, NULL);
    /* r3 freed: nothing stands for its arrays any more */
    {
        adm_tensor v = r3.value, c = r3.cond;
        /* the host arrays outlive the result here only to ask for them */
        r3.value.owned = r3.cond.owned = 0;
        adm_oracle_result_free(&r3);
        resident_sums(&v, &c, &ref2, &cand2, 0, NULL, NULL);
        adm_tensor_free(&v);
        adm_tensor_free(&c);
    }
    adm_oracle_result_free(&r);
    adm_oracle_result_free(&r2);
    adm_oracle_free(o);
    adm_tensor_free(&ref);
    adm_tensor_free(&cand);
    adm_tensor_free(&ref2);
    adm_tensor_free(&cand2);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
}
END_TEST

static int same_bits(const adm_tensor *a, const adm_tensor *b)
{
    int64_t n = adm_tensor_numel(a);
    return n == adm_tensor_numel(b) && !memcmp(a->data, b->data, sizeof(double) * (size_t)n);
}

static int same_result(const adm_oracle_result *a, const adm_oracle_result *b)
{
    return same_bits(&a->value, &b->value) && same_bits(&a->bound, &b->bound) && a->has_cond == b->has_cond &&
           (!a->has_cond || same_bits(&a->cond, &b->cond)) && !memcmp(&a->max_bound, &b->max_bound, 8);
}

/* The oracle's result kept on the device (adm_oracle_config.keep_on_device):
 * the same bits as the one brought back, once fetched, by refinement or by
 * a later evaluation; refinement's max bound scanned there; the resolve
 * scale summed there equal to the host's (references of every device
 * format, with NaN and Inf); and the judge refuses to read its host
 * arrays while they are stale. _i: 0 linear+gelu (bf16), 1 gelu (fp32). */
START_TEST(test_oracle_on_device)
{
    const adm_op *op = adm_op_find(_i == 0 ? "linear+gelu" : "gelu");
    static const adm_dtype fmts[4] = {ADM_BF16, ADM_FP16, ADM_FP32, ADM_FP64};
    adm_op_params p;
    adm_tensor x, w, b, ref, cand;
    int64_t xs[2] = {300, 256}, ws[2] = {200, 256}, bs[1] = {200};
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &b};
    adm_oracle_config cfg;
    adm_oracle *o;
    adm_oracle_result rp, rr, rp2, rr2;
    adm_judge_input ji;
    adm_verdict v;
    double scale = 0;
    if (_i == 0) {
        ck_assert_int_eq(adm_synth_gaussian(21, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
        ck_assert_int_eq(adm_synth_gaussian(22, 1.0 / 16, ADM_BF16, 2, ws, &w), ADM_OK);
        ck_assert_int_eq(adm_synth_gaussian(23, 0.02, ADM_BF16, 1, bs, &b), ADM_OK);
    } else {
        ck_assert_int_eq(adm_synth_gaussian(24, 3.0, ADM_FP32, 2, xs, &x), ADM_OK);
        in[1] = in[2] = NULL;
    }
    ck_assert_int_eq(adm_op_params_parse(op, "{}", &p), ADM_OK);
    adm_oracle_config_default(&cfg);
    cfg.use_gpu = 1;
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &rp) == ADM_OK, "%s", adm_error_message());
    ck_assert(rp.on_gpu && !adm_oracle_result_on_device(&rp));
    adm_oracle_free(o);
    cfg.keep_on_device = 1;
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &rr) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(adm_oracle_result_on_device(&rr), "the result came back to the host");
    /* refinement's scan on the device: the host's max bound */
    ck_assert_msg(!memcmp(&rr.max_bound, &rp.max_bound, 8), "max bound %.17g on the device, %.17g on the host",
                  rr.max_bound, rp.max_bound);
    resident_outputs(&rp.value, &ref, &cand);
    memset(&ji, 0, sizeof ji);
    ji.oracle = &rr.value;
    ji.bound = &rr.bound;
    ji.cond = &rr.cond;
    ji.ref = &ref;
    ji.cand = &cand;
    ji.n_views = -1;
    ck_assert_int_eq(adm_judge(&ji, NULL, &v), ADM_ERR_INTERNAL);
    for (int f = 0; f < 4; f++) {
        int64_t n = adm_tensor_numel(&rp.value);
        double *r = malloc(sizeof(double) * (size_t)n), sh, sd = -1;
        adm_tensor rf;
        adm_h_stats_dev *dev = NULL;
        ck_assert(r != NULL);
        for (int64_t i = 0; i < n; i++) {
            double vv = ((const double *)rp.value.data)[i];
            r[i] = i % 97 == 5 ? NAN : i % 89 == 7 ? -INFINITY : vv * (1 + 0x1p-9 * (double)((i * 7919) % 17 - 8) / 8);
        }
        ck_assert_int_eq(adm_tensor_from_f64(&rf, fmts[f], 2, rp.value.shape, r, ADM_RNE, 0), ADM_OK);
        sh = adm_judge_resolve_scale(&rp.value, &rf);
        ck_assert_msg(adm_h_stats_dev_open(&rr.value, &rr.cond, &rf, &dev) == ADM_OK, "%s", adm_error_message());
        ck_assert_msg(adm_h_stats_dev_borrowed(dev), "the session did not borrow the resident result");
        ck_assert_msg(adm_h_stats_dev_resolve_scale(dev, &sd) == ADM_OK, "%s", adm_error_message());
        printf("oracle on the device %s, reference %s: resolve scale %.17g (host %.17g)\n", adm_op_name(op),
               adm_dtype_name(fmts[f]), sd, sh);
        ck_assert_msg(!memcmp(&sd, &sh, 8) && sh > 0, "resolve scale %.17g on the device, %.17g on the host", sd, sh);
        if (f == 0) scale = sh;
        adm_h_stats_dev_free(dev);
        adm_tensor_free(&rf);
        free(r);
    }
    ck_assert(adm_oracle_result_on_device(&rr));
    /* a refinement that re-bounds elements fetches, then does the host's work */
    ck_assert_msg(adm_oracle_refine(o, op, &p, in, &rr, rr.max_bound / cfg.sharpness / 2) == ADM_OK, "%s",
                  adm_error_message());
    ck_assert_msg(adm_oracle_refine(o, op, &p, in, &rp, rp.max_bound / cfg.sharpness / 2) == ADM_OK, "%s",
                  adm_error_message());
    ck_assert(!adm_oracle_result_on_device(&rr));
    ck_assert_msg(same_result(&rr, &rp), "refined on the host after the device's scan: not the plain result's bits");
    /* one that needs nothing stays on the device */
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &rr2) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(adm_oracle_refine(o, op, &p, in, &rr2, scale) == ADM_OK, "%s", adm_error_message());
    ck_assert(adm_oracle_result_on_device(&rr2));
    ck_assert_msg(adm_oracle_result_fetch(&rr2) == ADM_OK, "%s", adm_error_message());
    ck_assert(!adm_oracle_result_on_device(&rr2));
    adm_oracle_free(o);
    cfg.keep_on_device = 0;
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &rp2) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(same_result(&rr2, &rp2), "fetched: not the plain result's bits");
    adm_oracle_result_free(&rr2);
    /* a later evaluation fills a resident result's host arrays before it takes the device */
    adm_oracle_free(o);
    cfg.keep_on_device = 1;
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &rr2) == ADM_OK, "%s", adm_error_message());
    ck_assert(adm_oracle_result_on_device(&rr2));
    adm_oracle_result_free(&rp2);
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &rp2) == ADM_OK, "%s", adm_error_message());
    ck_assert(!adm_oracle_result_on_device(&rr2) && adm_oracle_result_on_device(&rp2));
    ck_assert_msg(adm_oracle_result_fetch(&rp2) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(same_result(&rr2, &rp2), "filled by a later evaluation: not the plain result's bits");
    adm_oracle_result_free(&rr2);
    adm_oracle_result_free(&rp2);
    adm_oracle_result_free(&rr);
    adm_oracle_result_free(&rp);
    adm_oracle_free(o);
    adm_tensor_free(&ref);
    adm_tensor_free(&cand);
    adm_tensor_free(&x);
    if (_i == 0) {
        adm_tensor_free(&w);
        adm_tensor_free(&b);
    }
}
END_TEST

/* The parts of a loaded module (check_cuda_ModuleParts: ADM_CUDA_MODULE
 * names this build's module, which loads without a GPU): each found by
 * its name with its host side's ABI and size, and refused, saying which
 * part and which versions, where the ABI or the size differs, where the
 * part refuses the host table, or where there is no such part. */
static void part_refused(const char *name, uint32_t abi, size_t size, const adm_cuda_part_head *host,
                         const char *says)
{
    const adm_cuda_part_head *p = (const adm_cuda_part_head *)1;
    char quoted[64];
    ck_assert_int_eq(adm_cuda_module_part(name, abi, size, host, &p), ADM_ERR_NO_DEVICE);
    ck_assert_ptr_null(p);
    snprintf(quoted, sizeof quoted, "\"%s\"", name);
    ck_assert_msg(strstr(adm_error_message(), quoted) && strstr(adm_error_message(), says) &&
                      strstr(adm_error_message(), getenv("ADM_CUDA_MODULE")),
                  "part %s (ABI %u, %zu bytes): '%s' does not name the part, the module and '%s'", name, abi, size,
                  adm_error_message(), says);
}

static void check_parts(void)
{
    static const struct {
        const char *name;
        uint32_t abi;
        size_t size;
    } parts[] = {
        {ADM_CUDA_CORE_PART, ADM_CUDA_CORE_ABI, sizeof(adm_cuda_core_part)},
        {ADM_O_CUDA_PART, ADM_O_CUDA_ABI, sizeof(adm_o_cuda_part)},
        {ADM_STATS_CUDA_PART, ADM_STATS_CUDA_ABI, sizeof(adm_stats_cuda_part)},
        {ADM_CAND_CUDA_PART, ADM_CAND_CUDA_ABI, sizeof(adm_cand_cuda_part)},
        {ADM_TOY_CUDA_PART, ADM_TOY_CUDA_ABI, sizeof(adm_toy_cuda_part)},
    };
    /* a host table right but for its version, then but for its size */
    adm_o_cuda_host bad_o = {{ADM_O_CUDA_ABI + 1, sizeof(adm_o_cuda_host)}, sizeof(adm_o_ctx), sizeof(adm_op_params),
                             NULL, NULL, NULL, NULL, NULL};
    adm_cand_cuda_host cand = {{ADM_CAND_CUDA_ABI, sizeof(adm_cand_cuda_host)}, sizeof(adm_op_params) + 8};
    const adm_cuda_part_head *p;
    char says[96];
    size_t i;
    ck_assert(adm_cuda_module_loaded());
    /* refused hosts first: a part found is kept with the host it took */
    part_refused(ADM_O_CUDA_PART, ADM_O_CUDA_ABI, sizeof(adm_o_cuda_part), &bad_o.head, "refuses");
    bad_o.head.abi = ADM_O_CUDA_ABI;
    bad_o.head.size = sizeof(adm_o_cuda_host) + 8;
    part_refused(ADM_O_CUDA_PART, ADM_O_CUDA_ABI, sizeof(adm_o_cuda_part), &bad_o.head, "refuses");
    part_refused(ADM_O_CUDA_PART, ADM_O_CUDA_ABI, sizeof(adm_o_cuda_part), NULL, "refuses");
    part_refused(ADM_CAND_CUDA_PART, ADM_CAND_CUDA_ABI, sizeof(adm_cand_cuda_part), &cand.head, "refuses");
    cand.op_params_size = sizeof(adm_op_params);
    ck_assert_msg(adm_cuda_module_part(ADM_CAND_CUDA_PART, ADM_CAND_CUDA_ABI, sizeof(adm_cand_cuda_part), &cand.head,
                                       &p) == ADM_OK, "%s", adm_error_message());
    /* the oracle's part with the oracle's own host table */
    (void)adm_o_cuda_usable();
    adm_error_clear();
    part_refused("no_such_part", 1, 8, NULL, ADM_CUDA_PART_PREFIX "no_such_part");
    for (i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        p = NULL;
        ck_assert_msg(adm_cuda_module_part(parts[i].name, parts[i].abi, parts[i].size, NULL, &p) == ADM_OK,
                      "part %s: %s", parts[i].name, adm_error_message());
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq(p->abi, parts[i].abi);
        ck_assert_uint_eq(p->size, parts[i].size);
        snprintf(says, sizeof says, "this libadmit's ABI %u and %zu bytes", parts[i].abi + 1, parts[i].size);
        part_refused(parts[i].name, parts[i].abi + 1, parts[i].size, NULL, says);
        snprintf(says, sizeof says, "this libadmit's ABI %u and %zu bytes", parts[i].abi, parts[i].size + 8);
        part_refused(parts[i].name, parts[i].abi, parts[i].size + 8, NULL, says);
    }
}

START_TEST(test_module)
{
    const char *env = getenv("ADM_CUDA_MODULE");
    int count = -1;
    adm_status st;
#ifdef ADM_EXPECT_CUDA
    ck_assert_msg(adm_cuda_built(), "configured with CUDA, the library says it was built without");
#else
    ck_assert_msg(!adm_cuda_built(), "configured without CUDA, the library says it was built with");
#endif
    ck_assert_msg(!mapped("libadmit_cuda") && !mapped("libcudart") && !mapped("libcublas"),
                  "the CUDA libraries are mapped before any GPU call");
    st = adm_cuda_device_count(&count);
    if (st != ADM_OK) ck_assert_int_eq(st, ADM_ERR_NO_DEVICE);
    if (!adm_cuda_built()) {
        ck_assert_int_eq(st, ADM_ERR_NO_DEVICE);
        ck_assert_ptr_nonnull(strstr(adm_error_message(), "built without CUDA"));
        ck_assert(!mapped("libcudart"));
    } else if (env && *env && getenv("ADM_CHECK_PARTS")) {
        ck_assert_msg(mapped("libadmit_cuda"), "the CUDA module %s is not loaded: %s", env,
                      st == ADM_OK ? "" : adm_error_message());
        check_parts();
    } else if (env && *env) {
        ck_assert_int_eq(st, ADM_ERR_NO_DEVICE);
        ck_assert_msg(strstr(adm_error_message(), env) != NULL, "message '%s' does not name %s", adm_error_message(), env);
        ck_assert(!mapped("libcudart"));
        /* Asked again: the same answer, not a crash on a half-loaded module. */
        ck_assert_int_eq(adm_cuda_device_count(&count), ADM_ERR_NO_DEVICE);
    } else if (!driver_present()) {
        /* no NVIDIA driver: the module (the CUDA runtime, cuBLAS: some 220
         * MB) is never mapped for a question only the driver can answer */
        ck_assert_int_eq(st, ADM_ERR_NO_DEVICE);
        ck_assert_ptr_nonnull(strstr(adm_error_message(), "no GPU/driver found"));
        ck_assert(!mapped("libadmit_cuda") && !mapped("libcudart") && !mapped("libcublas"));
    } else {
        ck_assert_msg(mapped("libadmit_cuda.so") && mapped("libcudart"), "the CUDA module is not loaded: %s",
                      st == ADM_OK ? "" : adm_error_message());
        ck_assert(st == ADM_OK ? count >= 1 : count == 0);
    }
}
END_TEST

int main(void)
{
    int count = 0, failed;
    char name[256];
    int major, minor;
    Suite *s;
    TCase *tc;
    SRunner *sr;
    const char *only = getenv("CK_RUN_CASE");
    int module_failed = 0;
    if (!only || !strcmp(only, "Module")) {
        s = suite_create("cuda_module");
        tc = tcase_create("Module");
        tcase_add_test(tc, test_module);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_set_fork_status(sr, CK_NOFORK);
        srunner_run_all(sr, CK_NORMAL);
        module_failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        if (only) return module_failed ? EXIT_FAILURE : EXIT_SUCCESS;
    }
    if (adm_cuda_device_count(&count) != ADM_OK) {
        printf("check_cuda: skipped: %s\n", adm_error_message());
        return module_failed ? EXIT_FAILURE : SKIP;
    }
    adm_cuda_device_name(name, sizeof name, &major, &minor);
    printf("check_cuda: %s (sm_%d%d)\n", name, major, minor);
    s = suite_create("cuda");
    tc = tcase_create("Formats");
    tcase_set_timeout(tc, 1200);
    tcase_add_loop_test(tc, test_full_sweep, 0, (int)(sizeof full_sweep / sizeof full_sweep[0]));
    tcase_add_loop_test(tc, test_sampled, 0, (int)(sizeof sampled / sizeof sampled[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("Kernels");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_kernels, 0, 3);
    suite_add_tcase(s, tc);
    tc = tcase_create("Oracle");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_oracle_agrees, 0, 3);
    tcase_add_loop_test(tc, test_oracle_lines, 0, N_LINE_CASES);
    tcase_add_loop_test(tc, test_oracle_elementwise, 0, 6);
    tcase_add_loop_test(tc, test_oracle_views, 0, 3);
    tcase_add_test(tc, test_oracle_quantize);
    suite_add_tcase(s, tc);
    tc = tcase_create("Libm");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_libm, 0, 4);
    suite_add_tcase(s, tc);
    tc = tcase_create("Stats");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_stats, 0, (int)(sizeof stats_shapes / sizeof stats_shapes[0]));
    tcase_add_test(tc, test_stats_resident);
    tcase_add_loop_test(tc, test_oracle_on_device, 0, 2);
    tcase_add_loop_test(tc, test_stats_flip, 0, (int)(sizeof flip_readers / sizeof flip_readers[0]));
    tcase_add_loop_test(tc, test_stats_scan, 0, (int)(sizeof scan_formats / sizeof scan_formats[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("Twins");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_twins, 0, N_TWINS);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr) + module_failed;
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
