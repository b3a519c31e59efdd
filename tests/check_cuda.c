/* core on the GPU: the device's own conversion instructions against the
 * CPU formats, bit for bit. Every fp32 input for bf16 and fp16 (RNE and
 * RTZ); for fp8 and fp4, every combination of the top 19 bits with eight
 * low-bit patterns (ties, near-ties, random). Exits 77 (skipped) where no
 * GPU is usable, after case Module, which needs none: the CUDA code is a
 * module loaded on first GPU use (core/adm_cuda_module.h), never before. */
#include "adm_core.h"
#include "adm_cuda.h"
#include "adm_capture.h"
#include "adm_oracle.h"
#include "adm_candidates.h"
#include "adm_harness.h"

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The GPU oracle (cuBLAS DGEMM, CUDA epilogue) agrees with the CPU oracle
 * within the two bounds, element by element, on DiT-like activations. */
START_TEST(test_oracle_agrees)
{
    static const char *params[2] = {"{\"approximate\":\"tanh\"}", "{\"approximate\":\"none\"}"};
    const adm_op *op = adm_op_find("linear+gelu");
    adm_op_params p;
    adm_synth_config sc;
    adm_tensor x, w, b;
    int64_t ws[2] = {768, 1024}, bs[1] = {768}, bad = 0, bad_cond = 0;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &b};
    adm_oracle_config cfg;
    adm_oracle *cpu, *gpu;
    adm_oracle_result rc, rg;
    double worst = 0, worst_cond = 0;
    adm_synth_config_default(&sc);
    sc.tokens = 256;
    sc.channels = 1024;
    ck_assert_int_eq(adm_synth_activations(&sc, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(3, 1.0 / 32, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(4, 0.02, ADM_BF16, 1, bs, &b), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(op, params[_i], &p), ADM_OK);
    adm_oracle_config_default(&cfg);
    ck_assert_int_eq(adm_oracle_create(&cfg, &cpu), ADM_OK);
    cfg.use_gpu = 1;
    ck_assert_int_eq(adm_oracle_create(&cfg, &gpu), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(cpu, op, &p, in, &rc), ADM_OK);
    ck_assert_msg(adm_oracle_eval(gpu, op, &p, in, &rg) == ADM_OK, "%s", adm_error_message());
    ck_assert(!rc.on_gpu && rg.on_gpu);
    ck_assert(rc.has_cond && rg.has_cond);
    for (int64_t i = 0; i < adm_tensor_numel(&rc.value); i++) {
        double vc = ((double *)rc.value.data)[i], vg = ((double *)rg.value.data)[i];
        double bc = ((double *)rc.bound.data)[i], bg = ((double *)rg.bound.data)[i];
        double cc = ((double *)rc.cond.data)[i], cg = ((double *)rg.cond.data)[i];
        if (fabs(vc - vg) > bc + bg) bad++;
        if (bc + bg > 0) worst = fmax(worst, fabs(vc - vg) / (bc + bg));
        /* the condition scale: fp32 GEMM of |x| |w| on the CPU, fp64 on the GPU */
        if (!(fabs(cc - cg) <= 1e-3 * cg)) bad_cond++;
        if (cg > 0) worst_cond = fmax(worst_cond, fabs(cc - cg) / cg);
    }
    printf("oracle %s: GPU against CPU, %lld elements, max bound cpu %.3g gpu %.3g, worst |diff|/(bounds) %.3g, "
           "%lld outside; condition scale worst relative difference %.3g, %lld beyond 1e-3\n", params[_i],
           (long long)adm_tensor_numel(&rc.value), rc.max_bound, rg.max_bound, worst, (long long)bad, worst_cond,
           (long long)bad_cond);
    ck_assert_int_eq(bad, 0);
    ck_assert_int_eq(bad_cond, 0);
    adm_oracle_result_free(&rc);
    adm_oracle_result_free(&rg);
    adm_oracle_free(cpu);
    adm_oracle_free(gpu);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
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
    adm_oracle_config cfg;
    adm_oracle *cpu, *gpu;
    adm_oracle_result rc, rg;
    double worst = 0;
    ck_assert_int_eq(adm_tensor_alloc(&x, ADM_BF16, 2, shape), ADM_OK);
    for (int64_t i = 0; i < 65536; i++) adm_tensor_set_bits(&x, i, (uint64_t)i); /* every bf16 pattern */
    ck_assert_int_eq(adm_synth_gaussian(7, 1.0, ADM_BF16, 2, shape, &y), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(8, 0.3, ADM_BF16, 2, gs, &g), ADM_OK);
    if (!strcmp(ops[_i][0], "swiglu")) in[1] = &y;
    if (!strcmp(ops[_i][0], "gated_residual")) { in[1] = &g; in[2] = &y; }
    ck_assert_int_eq(adm_op_params_parse(op, ops[_i][1], &p), ADM_OK);
    adm_oracle_config_default(&cfg);
    ck_assert_int_eq(adm_oracle_create(&cfg, &cpu), ADM_OK);
    cfg.use_gpu = 1;
    ck_assert_int_eq(adm_oracle_create(&cfg, &gpu), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(cpu, op, &p, in, &rc), ADM_OK);
    ck_assert_msg(adm_oracle_eval(gpu, op, &p, in, &rg) == ADM_OK, "%s", adm_error_message());
    ck_assert(rg.on_gpu);
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
    adm_oracle_free(cpu);
    adm_oracle_free(gpu);
    adm_tensor_free(&x);
    adm_tensor_free(&y);
    adm_tensor_free(&g);
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
    tcase_add_loop_test(tc, test_oracle_agrees, 0, 2);
    tcase_add_loop_test(tc, test_oracle_elementwise, 0, 6);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr) + module_failed;
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
