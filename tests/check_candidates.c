/* candidates: the emulations round where their kernels round, the
 * registry resolves names, the plugin loader refuses what it must, down
 * to each field of a kernel's struct as it comes from the plugin's
 * process. */
#include "adm_candidates.h"
#include "adm_capture.h"
#include "adm_harness.h"
#include "adm_oracle.h"
#include "plugin_sandbox.h"

#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static adm_tensor from(adm_dtype dt, int ndim, const int64_t *shape, const double *v)
{
    adm_tensor t;
    ck_assert_int_eq(adm_tensor_from_f64(&t, dt, ndim, shape, v, ADM_RNE, 0), ADM_OK);
    return t;
}

/* Where each GEMM variant rounds, on values chosen so that the roundings
 * show: x = [1, 2^-9, 2^-9], w = [1, 1, 1]: the exact sum 1 + 2^-8 is a
 * bf16 tie (rounds to 1); in bf16 accumulation each 2^-9 is lost. */
START_TEST(test_gemm_roundings)
{
    int64_t xs[2] = {1, 3}, ws[2] = {1, 3}, bs[1] = {1};
    double xv[3] = {1, 0x1p-9, 0x1p-9}, wv[3] = {1, 1, 1}, bv[1] = {0x1p-8};
    adm_tensor x = from(ADM_BF16, 2, xs, xv), w = from(ADM_BF16, 2, ws, wv), b = from(ADM_BF16, 1, bs, bv), y;
    adm_gemm_emu e;
    adm_gemm_emu_reference(&e);
    /* eager: fp32 sum 1 + 2^-8 -> bf16 ties to 1; + bias 2^-8 -> tie to 1 */
    ck_assert_int_eq(adm_emu_gemm(&x, &w, &b, &e, &y), ADM_OK);
    ck_assert(adm_tensor_get(&y, 0) == 1.0);
    adm_tensor_free(&y);
    /* bias in the accumulator: 1 + 2^-7 exactly representable */
    e.bias_in_accumulator = 1;
    ck_assert_int_eq(adm_emu_gemm(&x, &w, &b, &e, &y), ADM_OK);
    ck_assert(adm_tensor_get(&y, 0) == 1.0 + 0x1p-7);
    adm_tensor_free(&y);
    /* bf16 accumulation loses both 2^-9 */
    adm_gemm_emu_reference(&e);
    e.accumulator = ADM_BF16;
    e.bias_in_accumulator = 1;
    ck_assert_int_eq(adm_emu_gemm(&x, &w, &b, &e, &y), ADM_OK);
    ck_assert(adm_tensor_get(&y, 0) == 1.0); /* (1 + 2^-9 -> 1) + 2^-9 -> 1, + 2^-8 -> tie 1 */
    adm_tensor_free(&y);
    /* truncation */
    adm_gemm_emu_reference(&e);
    e.out_round = ADM_RTZ;
    e.bias_in_accumulator = 1; /* one rounding at the end: the truncating one */
    {
        double xv2[3] = {1, 0x1p-8 + 0x1p-9, 0};
        adm_tensor x2 = from(ADM_FP32, 2, xs, xv2);
        e.out = ADM_BF16;
        ck_assert_int_eq(adm_emu_gemm(&x2, &w, NULL, &e, &y), ADM_OK);
        ck_assert(adm_tensor_get(&y, 0) == 1.0); /* RNE would give 1 + 2^-7 */
        adm_tensor_free(&y);
        adm_tensor_free(&x2);
    }
    /* fused GELU epilogue rounds once: gelu(fp32) vs gelu(bf16(fp32)) */
    ck_assert(fabsf(adm_emu_gelu_f32(1.0f, ADM_GELU_TANH) - 0.8411920f) < 1e-6f);
    ck_assert(fabsf(adm_emu_gelu_f32(1.0f, ADM_GELU_ERF) - 0.8413447f) < 1e-6f);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
}
END_TEST

/* The registry's names: the reference of each op is the first
 * registered, names are unique per op, declarations are filled. */
START_TEST(test_registry_names)
{
    const adm_impl *im;
    ck_assert_int_gt(adm_impl_count(), 20);
    ck_assert_str_eq(adm_impl_reference("linear+gelu")->name, "eager");
    ck_assert_str_eq(adm_impl_reference("linear_attention")->name, "eager_fp32");
    ck_assert_ptr_null(adm_impl_reference("softmax"));
    ck_assert_ptr_nonnull(adm_impl_find("rmsnorm", "bf16_stats"));
    ck_assert_ptr_null(adm_impl_find("rmsnorm", "nope"));
    ck_assert_int_eq(adm_impl_resolve("linear", "nope", &im), ADM_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "registered: eager"));
    for (int i = 0; i < adm_impl_count(); i++) {
        const adm_impl *a = adm_impl_at(i);
        ck_assert_ptr_nonnull(adm_op_find(a->op));
        ck_assert(a->decl.accumulator != ADM_DTYPE_INVALID && a->decl.stable == 1);
        for (int j = 0; j < i; j++)
            ck_assert_msg(strcmp(adm_impl_at(j)->op, a->op) || strcmp(adm_impl_at(j)->name, a->name), "duplicate %s",
                          a->name);
    }
}
END_TEST

/* A bundled capture for each op of the registry: its inputs are what the
 * implementations run on (the statistic mean_sq reads the rmsnorm
 * capture's x). params NULL: the capture's own. */
static const struct { const char *op, *capture, *params; } op_captures[] = {
    {"linear+gelu", "flux_fc1_gelu_small.h5", NULL},
    {"linear", "flux_fc1_linear_small.h5", NULL},
    {"rmsnorm", "dit_rmsnorm.h5", NULL},
    {"mean_sq", "dit_rmsnorm.h5", "{}"},
    {"layernorm", "dit_adaln_layernorm.h5", NULL},
    {"groupnorm", "vae_groupnorm_silu.h5", NULL},
    {"gated_residual", "dit_gated_residual.h5", NULL},
    {"linear_attention", "sana_linear_attention.h5", NULL},
    {"attention", "dit_attention_causal.h5", NULL},
    {"row_sum", "row_sum_fp32.h5", NULL},
};
#define N_OP_CAPTURES ((int)(sizeof op_captures / sizeof op_captures[0]))

typedef struct op_input {
    adm_capture *cap;
    const adm_op *op;
    adm_op_params p;
    const adm_tensor *in[ADM_OP_MAX_INPUTS];
} op_input;

static void load_op_input(const char *opname, op_input *oi)
{
    char path[1024];
    int k = -1;
    for (int i = 0; i < N_OP_CAPTURES; i++)
        if (!strcmp(op_captures[i].op, opname)) k = i;
    ck_assert_msg(k >= 0, "op '%s' of the registry has no bundled capture in this test", opname);
    snprintf(path, sizeof path, "%s/captures/data/%s", ADM_SOURCE_DIR, op_captures[k].capture);
    ck_assert_msg(adm_capture_read(path, &oi->cap) == ADM_OK, "%s", adm_error_message());
    oi->op = adm_op_find(opname);
    ck_assert_msg(adm_op_params_parse(oi->op, op_captures[k].params ? op_captures[k].params : adm_capture_params(oi->cap),
                                      &oi->p) == ADM_OK, "%s", adm_error_message());
    memset(oi->in, 0, sizeof oi->in);
    for (int i = 0; i < adm_op_input_count(oi->op); i++)
        oi->in[i] = adm_capture_find_input(oi->cap, adm_op_input_name(oi->op, i));
}

/* Every registered implementation runs on a bundled capture of its op
 * and its output is checked: the catalog's output shape, the reference's
 * dtype, every element finite, and its RMS error against the oracle,
 * relative to the oracle's RMS, within a stated bound in units of the
 * output format's unit roundoff u (bf16 2^-8, fp32 2^-24) for its tier.
 * The CUDA ones refuse with ADM_ERR_NO_DEVICE here (no GPU). */
static const struct { const char *op, *name; adm_tier tier; double bound_u; } expect[] = {
    /* bf16 out, lossless: at most two roundings into bf16 (RMS u/sqrt(3)
     * each), the fp32 arithmetic far below: <= 1 u */
    {"linear+gelu", "eager", ADM_TIER_LOSSLESS, 1},
    {"linear+gelu", "fused_epilogue", ADM_TIER_LOSSLESS, 1},
    {"linear+gelu", "bias_epilogue", ADM_TIER_LOSSLESS, 1},
    {"linear+gelu", "splitk4", ADM_TIER_LOSSLESS, 1},
    {"linear+gelu", "cublas_eager", ADM_TIER_LOSSLESS, 1},
    {"linear+gelu", "cublaslt_bias", ADM_TIER_LOSSLESS, 1},
    {"linear+gelu", "cublaslt_gelu_bias", ADM_TIER_LOSSLESS, 1},
    {"linear", "eager", ADM_TIER_LOSSLESS, 1},
    {"linear", "bias_epilogue", ADM_TIER_LOSSLESS, 1},
    {"linear", "splitk_fp32", ADM_TIER_LOSSLESS, 1},
    {"linear", "added_qkv_fused", ADM_TIER_LOSSLESS, 1},
    {"rmsnorm", "eager", ADM_TIER_LOSSLESS, 1},
    {"rmsnorm", "fused_fp32", ADM_TIER_LOSSLESS, 1},
    {"layernorm", "eager", ADM_TIER_LOSSLESS, 1},
    {"layernorm", "fused_affine_folded", ADM_TIER_LOSSLESS, 1},
    {"groupnorm", "eager", ADM_TIER_LOSSLESS, 1},
    {"groupnorm", "fused_twopass", ADM_TIER_LOSSLESS, 1},
    {"gated_residual", "eager", ADM_TIER_LOSSLESS, 1},
    {"gated_residual", "early_round", ADM_TIER_LOSSLESS, 1},
    /* fp32 out, lossless: sums of 512 (mean_sq) and 128 (linear attention)
     * terms in fp32, RMS error a few sqrt(n) u */
    {"mean_sq", "eager", ADM_TIER_LOSSLESS, 64},
    {"linear_attention", "eager_fp32", ADM_TIER_LOSSLESS, 16},
    /* attention, bf16 out: one rounding, plus P rounded to bf16 (flash,
     * tiled: 2^-9 relative on each weight): <= 1 u; fp32 row sums of 512
     * terms in a tree: a few log(n) u */
    {"attention", "math", ADM_TIER_LOSSLESS, 1},
    {"attention", "flash", ADM_TIER_LOSSLESS, 1},
    {"attention", "tiled64", ADM_TIER_LOSSLESS, 1},
    {"row_sum", "pairwise", ADM_TIER_LOSSLESS, 64},
    {"row_sum", "warp", ADM_TIER_LOSSLESS, 64},
    /* high: what each changes costs this much and no more (a broken
     * kernel, a flipped sign or a lost scale, is 2/u = 512 u in bf16) */
    {"linear+gelu", "bf16_accum", ADM_TIER_HIGH, 32},
    {"linear+gelu", "fp8_operand", ADM_TIER_HIGH, 32},
    {"linear+gelu", "truncate", ADM_TIER_HIGH, 2},
    {"linear", "splitk_bf16", ADM_TIER_HIGH, 2},
    {"linear", "bf16_accum", ADM_TIER_HIGH, 32},
    {"linear", "fp8_operand", ADM_TIER_HIGH, 32},
    {"linear", "nvfp4_input", ADM_TIER_HIGH, 64},
    {"rmsnorm", "bf16_stats", ADM_TIER_HIGH, 64},
    {"mean_sq", "bf16_accum", ADM_TIER_HIGH, 0x1p23},           /* half the statistic */
    {"linear_attention", "bf16_gemm", ADM_TIER_HIGH, 0x1p16},    /* 2^-8 relative */
    {"attention", "math_bf16", ADM_TIER_HIGH, 8},                /* logits, weights in bf16 */
    /* the CUDA twins: their emulations' bounds (their bits, on a GPU) */
    {"linear", "cuda_eager", ADM_TIER_LOSSLESS, 1},
    {"linear", "cuda_bias_epilogue", ADM_TIER_LOSSLESS, 1},
    {"linear", "cuda_splitk_fp32", ADM_TIER_LOSSLESS, 1},
    {"linear", "cuda_splitk_bf16", ADM_TIER_HIGH, 2},
    {"linear", "cuda_added_qkv_fused", ADM_TIER_LOSSLESS, 1},
    {"linear", "cuda_nvfp4_input", ADM_TIER_HIGH, 64},
    {"linear+gelu", "cuda_eager", ADM_TIER_LOSSLESS, 1},
    {"linear+gelu", "cuda_fused_epilogue", ADM_TIER_LOSSLESS, 1},
    {"gated_residual", "cuda_eager", ADM_TIER_LOSSLESS, 1},
    {"gated_residual", "cuda_early_round", ADM_TIER_LOSSLESS, 1},
    {"rmsnorm", "cuda_eager", ADM_TIER_LOSSLESS, 1},
    {"rmsnorm", "cuda_fused_fp32", ADM_TIER_LOSSLESS, 1},
    {"rmsnorm", "cuda_bf16_stats", ADM_TIER_HIGH, 64},
    {"layernorm", "cuda_eager", ADM_TIER_LOSSLESS, 1},
    {"layernorm", "cuda_fused_affine_folded", ADM_TIER_LOSSLESS, 1},
    {"linear_attention", "cuda_eager_fp32", ADM_TIER_LOSSLESS, 16},
    {"linear_attention", "cuda_bf16_gemm", ADM_TIER_HIGH, 0x1p16},
    {"groupnorm", "cuda_eager", ADM_TIER_LOSSLESS, 1},
    {"groupnorm", "cuda_fused_twopass", ADM_TIER_LOSSLESS, 1},
    {"row_sum", "sequential", ADM_TIER_HIGH, 64},                /* error growing as n, not log n: 4x pairwise's */
    {"row_sum", "bf16_acc", ADM_TIER_HIGH, 0x1p20},              /* 512 bf16 roundings of the running sum */
};

START_TEST(test_registry_runs)
{
    int ran = 0, no_device = 0;
    for (int i = 0; i < adm_impl_count(); i++) {
        const adm_impl *im = adm_impl_at(i), *ref = adm_impl_reference(im->op);
        op_input oi;
        adm_oracle *o;
        adm_oracle_result orc;
        adm_tensor y, yr;
        adm_op_shapes sh;
        int ndim, e = -1;
        int64_t shape[ADM_MAX_DIMS], n, bad = 0;
        double e2 = 0, o2 = 0, rel, u;
        adm_status st;
        for (int k = 0; k < (int)(sizeof expect / sizeof expect[0]); k++)
            if (!strcmp(expect[k].op, im->op) && !strcmp(expect[k].name, im->name)) e = k;
        ck_assert_msg(e >= 0, "%s/%s: no stated bound in this test", im->op, im->name);
        load_op_input(im->op, &oi);
        st = im->run(im, &oi.p, oi.in, &y);
        if (st == ADM_ERR_NO_DEVICE && !strcmp(im->backend, "cuda")) {
            adm_error_clear();
            adm_capture_free(oi.cap);
            no_device++;
            continue;
        }
        ck_assert_msg(st == ADM_OK, "%s/%s: %s", im->op, im->name, adm_error_message());
        ck_assert_int_eq(ref->run(ref, &oi.p, oi.in, &yr), ADM_OK);
        memset(&sh, 0, sizeof sh);
        for (int k = 0; k < adm_op_input_count(oi.op); k++)
            if (oi.in[k]) {
                sh.present[k] = 1;
                sh.ndim[k] = oi.in[k]->ndim;
                memcpy(sh.shape[k], oi.in[k]->shape, sizeof(int64_t) * (size_t)oi.in[k]->ndim);
            }
        ck_assert_int_eq(adm_op_output_shape(oi.op, &oi.p, &sh, &ndim, shape), ADM_OK);
        ck_assert_msg(y.ndim == ndim && !memcmp(y.shape, shape, sizeof(int64_t) * (size_t)ndim), "%s/%s: shape",
                      im->op, im->name);
        ck_assert_msg(y.dtype == yr.dtype, "%s/%s: %s out, the reference %s", im->op, im->name, adm_dtype_name(y.dtype),
                      adm_dtype_name(yr.dtype));
        ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
        ck_assert_int_eq(adm_oracle_eval(o, oi.op, &oi.p, oi.in, &orc), ADM_OK);
        n = adm_tensor_numel(&y);
        ck_assert_int_ge(n, 64);
        for (int64_t k = 0; k < n; k++) {
            double c = adm_tensor_get(&y, k), ov = ((const double *)orc.value.data)[k];
            if (!isfinite(c)) { bad++; continue; }
            e2 += (c - ov) * (c - ov);
            o2 += ov * ov;
        }
        ck_assert_msg(bad == 0, "%s/%s: %lld non-finite outputs on finite inputs", im->op, im->name, (long long)bad);
        u = ldexp(1.0, -adm_format_get(y.dtype)->man_bits - 1);
        rel = sqrt(e2 / o2) / u;
        printf("%-16s %-20s %-8s rms error / rms = %9.3g u  (stated <= %g u)\n", im->op, im->name,
               adm_tier_name(expect[e].tier), rel, expect[e].bound_u);
        fflush(stdout);
        ck_assert_msg(rel <= expect[e].bound_u, "%s/%s: RMS error %g u, stated bound %g u", im->op, im->name, rel,
                      expect[e].bound_u);
        ran++;
        adm_oracle_result_free(&orc);
        adm_oracle_free(o);
        adm_tensor_free(&y);
        adm_tensor_free(&yr);
        adm_capture_free(oi.cap);
    }
    printf("registry: %d implementations run and checked, %d CUDA ones without a device\n", ran, no_device);
    ck_assert_int_eq(ran + no_device, adm_impl_count());
}
END_TEST

/* No table entry and no pair of registered implementations compares a
 * function with itself: every two implementations of one op, and the two
 * of every entry of each fusions/ table, have distinct run functions and
 * descriptions, and where both run here (CPU) give different outputs on
 * the capture or, where its bf16 output rounds every difference away
 * (an fp32 reassociation on a small capture often does), on the same
 * inputs with x widened to fp32, where the outputs keep fp32's bits. A
 * reference registered again as a candidate, under another name or
 * wrapped in another function, fails this. A CUDA kernel and its CPU
 * emulation are distinct by backend (the GPU proves their bit identity). */
static int outputs_identical(const adm_tensor *a, const adm_tensor *b)
{
    if (a->dtype != b->dtype || adm_tensor_numel(a) != adm_tensor_numel(b)) return 0;
    for (int64_t k = 0; k < adm_tensor_numel(a); k++)
        if (adm_tensor_bits(a, k) != adm_tensor_bits(b, k)) return 0;
    return 1;
}

static int same_outputs(const adm_impl *a, const adm_impl *b, const adm_op_params *p, const adm_tensor *const *in)
{
    adm_tensor ya, yb;
    int same;
    ck_assert_msg(a->run(a, p, in, &ya) == ADM_OK, "%s: %s", a->name, adm_error_message());
    ck_assert_msg(b->run(b, p, in, &yb) == ADM_OK, "%s: %s", b->name, adm_error_message());
    same = outputs_identical(&ya, &yb);
    adm_tensor_free(&ya);
    adm_tensor_free(&yb);
    return same;
}

static void assert_distinct(const char *where, const adm_impl *a, const adm_impl *b, const adm_op_params *p,
                            const adm_tensor *const *in, int *ran)
{
    ck_assert_msg(a != b, "%s: '%s' against itself", where, a->name);
    ck_assert_msg(a->run != b->run, "%s: '%s' and '%s' are the same function", where, a->name, b->name);
    ck_assert_msg(strcmp(a->what, b->what) != 0, "%s: '%s' and '%s' declare the same behaviour", where, a->name,
                  b->name);
    if (strcmp(a->backend, "cpu") || strcmp(b->backend, "cpu")) return;
    if (same_outputs(a, b, p, in)) {
        const adm_tensor *in32[ADM_OP_MAX_INPUTS];
        adm_tensor x32;
        double *v = malloc(sizeof *v * (size_t)adm_tensor_numel(in[0]));
        ck_assert_ptr_nonnull(v);
        adm_tensor_to_f64(in[0], v);
        ck_assert_int_eq(adm_tensor_from_f64(&x32, ADM_FP32, in[0]->ndim, in[0]->shape, v, ADM_RNE, 0), ADM_OK);
        free(v);
        memcpy(in32, in, sizeof in32);
        in32[0] = &x32;
        ck_assert_msg(!same_outputs(a, b, p, in32), "%s: '%s' and '%s' give the same bits on the capture and on "
                      "its fp32-widened twin", where, a->name, b->name);
        adm_tensor_free(&x32);
    }
    (*ran)++;
}

START_TEST(test_no_self_comparison)
{
    char dir[1024];
    DIR *d;
    struct dirent *de;
    int files = 0, entries = 0, pairs = 0, ran = 0;
    /* every pair of one op */
    for (int i = 0; i < adm_impl_count(); i++) {
        const adm_impl *a = adm_impl_at(i);
        op_input oi;
        int loaded = 0;
        for (int j = i + 1; j < adm_impl_count(); j++) {
            const adm_impl *b = adm_impl_at(j);
            char where[160];
            if (strcmp(a->op, b->op)) continue;
            if (!loaded) { load_op_input(a->op, &oi); loaded = 1; }
            snprintf(where, sizeof where, "registry %s", a->op);
            assert_distinct(where, a, b, &oi.p, oi.in, &ran);
            pairs++;
        }
        if (loaded) adm_capture_free(oi.cap);
    }
    /* every table entry */
    snprintf(dir, sizeof dir, "%s/fusions", ADM_SOURCE_DIR);
    ck_assert_ptr_nonnull(d = opendir(dir));
    while ((de = readdir(d))) {
        char path[1400];
        json_t *root, *fus;
        json_error_t jerr;
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 5, ".json")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        ck_assert_msg((root = json_load_file(path, 0, &jerr)) != NULL, "%s: %s", path, jerr.text);
        fus = json_object_get(root, "fusions");
        ck_assert(json_is_array(fus) && json_array_size(fus) > 0);
        for (size_t i = 0; i < json_array_size(fus); i++) {
            json_t *e = json_array_get(fus, i), *params = json_object_get(e, "params");
            const char *op = json_string_value(json_object_get(e, "op")),
                       *cap0 = json_string_value(json_array_get(json_object_get(e, "captures"), 0));
            const adm_impl *ref = NULL, *cand = NULL;
            char where[400], cpath[1600];
            adm_capture *cap;
            adm_op_params p;
            const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
            char *ptext = params ? json_dumps(params, JSON_COMPACT) : NULL;
            snprintf(where, sizeof where, "%s: %s", de->d_name, json_string_value(json_object_get(e, "name")));
            ck_assert_msg(op && cap0, "%s: no op or capture", where);
            ck_assert_msg(adm_impl_resolve(op, json_string_value(json_object_get(e, "reference")), &ref) == ADM_OK &&
                          adm_impl_resolve(op, json_string_value(json_object_get(e, "candidate")), &cand) == ADM_OK,
                          "%s: %s", where, adm_error_message());
            snprintf(cpath, sizeof cpath, "%s/%s", dir, cap0);
            ck_assert_msg(adm_capture_read(cpath, &cap) == ADM_OK, "%s: %s", where, adm_error_message());
            ck_assert_int_eq(adm_op_params_parse(adm_op_find(op), ptext ? ptext : adm_capture_params(cap), &p), ADM_OK);
            for (int k = 0; k < adm_op_input_count(adm_op_find(op)); k++)
                in[k] = adm_capture_find_input(cap, adm_op_input_name(adm_op_find(op), k));
            assert_distinct(where, ref, cand, &p, in, &ran);
            entries++;
            free(ptext);
            adm_capture_free(cap);
        }
        json_decref(root);
        files++;
    }
    closedir(d);
    printf("no self-comparison: %d registry pairs, %d table entries in %d files (%d compared by their outputs)\n",
           pairs, entries, files, ran);
    ck_assert_int_ge(files, 2);
    ck_assert_int_ge(entries, 15);
}
END_TEST

/* Non-contiguous inputs: every implementation reads its inputs through
 * their strides (a transposed copy gives the same bits). */
START_TEST(test_strided_inputs)
{
    int64_t xs[2] = {8, 32}, ws[2] = {6, 32}, bs[1] = {6};
    adm_tensor x, xt, xtt, w, b, y1, y2;
    const adm_op *op = adm_op_find("linear+gelu");
    adm_op_params p;
    const adm_tensor *in1[ADM_OP_MAX_INPUTS], *in2[ADM_OP_MAX_INPUTS];
    ck_assert_int_eq(adm_synth_gaussian(1, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(2, 0.2, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(3, 0.02, ADM_BF16, 1, bs, &b), ADM_OK);
    ck_assert_int_eq(adm_tensor_transpose(&x, 0, 1, &xt), ADM_OK);
    ck_assert_int_eq(adm_tensor_contiguous(&xt, &xtt), ADM_OK);
    ck_assert_int_eq(adm_tensor_transpose(&xtt, 0, 1, &xt), ADM_OK); /* x's values, transposed storage */
    ck_assert_int_eq(adm_op_params_parse(op, "{\"approximate\":\"tanh\"}", &p), ADM_OK);
    in1[0] = &x; in1[1] = &w; in1[2] = &b;
    in2[0] = &xt; in2[1] = &w; in2[2] = &b;
    for (int i = 0; i < adm_impl_count(); i++) {
        const adm_impl *im = adm_impl_at(i);
        adm_status st;
        if (strcmp(im->op, "linear+gelu")) continue;
        st = im->run(im, &p, in1, &y1);
        if (st == ADM_ERR_NO_DEVICE && !strcmp(im->backend, "cuda")) continue; /* no GPU here */
        ck_assert_msg(st == ADM_OK, "%s: %s", im->name, adm_error_message());
        ck_assert_int_eq(im->run(im, &p, in2, &y2), ADM_OK);
        for (int64_t k = 0; k < adm_tensor_numel(&y1); k++)
            ck_assert_msg(adm_tensor_bits(&y1, k) == adm_tensor_bits(&y2, k), "%s differs on a strided input", im->name);
        adm_tensor_free(&y1);
        adm_tensor_free(&y2);
    }
    adm_tensor_free(&x);
    adm_tensor_free(&xtt);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
}
END_TEST

/* Special: the plugin loader refuses a missing file and a library without
 * the entry point (libm has none), naming the file. */
START_TEST(test_plugin_refusals)
{
    const adm_impl *im;
    ck_assert_int_eq(adm_plugin_load("/nonexistent/admit.so", "k", &im), ADM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "/nonexistent/admit.so"));
    ck_assert_int_eq(adm_plugin_load("libm.so.6", "k", &im), ADM_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "adm_plugin_query"));
    ck_assert_ptr_null(im);
    adm_plugin_free(NULL);
}
END_TEST

/* Special: what a plugin's process sends of a kernel's struct is checked
 * field by field before admit uses it (the process may have been
 * subverted by the plugin): each corruption of a good descriptor is
 * refused with a message naming the field, and the good one is accepted. */
static int run_(const char *pj, const adm_plugin_tensor *in, int n, adm_plugin_tensor *out, char *e, size_t l)
{
    (void)pj, (void)in, (void)n, (void)out, (void)e, (void)l;
    return 0;
}

static void good_desc(adm_plugin_desc *d)
{
    static const adm_plugin_kernel k = {ADM_PLUGIN_ABI_VERSION, sizeof(adm_plugin_kernel), "k", "row_sum",
                                        ADM_PLUGIN_FP32, "fp32", NULL, "fp32", -1, 1, run_, "a row sum"};
    adm_plugin_describe(&k, d);
}

START_TEST(test_plugin_desc_checked)
{
    static const struct {
        const char *says;
        int corrupt;
    } cases[] = {
        {"its name arrived malformed", 0},        {"its op arrived malformed", 1},
        {"its operand arrived malformed", 2},     {"its description arrived malformed", 3},
        {"its op is longer than 63 bytes", 4},    {"its description holds control characters", 5},
        {"its name holds control characters", 6}, {"its op 'row_summ' is not in admit's catalog", 7},
        {"its output dtype 0 is not one", 8},     {"its output dtype 99 is not one", 9},
        {"declares intermediate 'fp31'", 10},     {"declares transcendental_ulps inf", 11},
        {"declares stable 2", 12},                {"has no run function", 13},
        {"ABI version 3; this admit understands versions 1 to 2", 14},
        {"declares a struct of 8 bytes, smaller than version 2's", 15},
        {"its struct was not read", 16},
    };
    adm_plugin_desc d;
    good_desc(&d);
    ck_assert_msg(adm_plugin_desc_check(&d, "p.so", "k") == ADM_OK, "%s", adm_error_message());
    ck_assert_int_eq(d.str_state[ADM_PD_OPERAND], ADM_PD_ABSENT);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        good_desc(&d);
        switch (cases[c].corrupt) {
        case 0: memset(d.name, 'a', sizeof d.name); break;                    /* no NUL */
        case 1: d.str_state[ADM_PD_OP] = 7; break;                           /* an unknown state */
        case 2: d.operand[0] = 'x'; break;                                   /* absent, yet holds text */
        case 3: d.str_state[ADM_PD_DESCRIPTION] = ADM_PD_ABSENT; break;      /* absent, yet holds text */
        case 4: d.str_state[ADM_PD_OP] = ADM_PD_TOO_LONG; break;
        case 5: d.description[3] = '\033'; break;
        case 6: d.name[0] = '\xff'; break;                                   /* not UTF-8 */
        case 7: snprintf(d.op, sizeof d.op, "row_summ"); break;
        case 8: d.output_dtype = 0; break;
        case 9: d.output_dtype = 99; break;
        case 10: snprintf(d.intermediate, sizeof d.intermediate, "fp31"); break;
        case 11: d.transcendental_ulps = INFINITY; break;
        case 12: d.stable = 2; break;
        case 13: d.has_run = 0; break;
        case 14: d.abi_version = 3; break;
        case 15: d.struct_size = 8; break;
        default: d.fields_read = 0; break;
        }
        ck_assert_msg(adm_plugin_desc_check(&d, "p.so", "k") != ADM_OK, "case %zu accepted", c);
        ck_assert_msg(strstr(adm_error_message(), cases[c].says) && strstr(adm_error_message(), "plugin p.so"),
                      "case %zu: '%s'", c, adm_error_message());
        adm_error_clear();
    }
}
END_TEST

/* The norms: eager rounds twice where the fused kernel rounds once, and
 * the bf16-statistics variant is far off on a long row. */
START_TEST(test_norm_roundings)
{
    int64_t xs[2] = {4, 1024}, wsz[1] = {1024};
    adm_tensor x, a, b, c, wt;
    const adm_op *op = adm_op_find("rmsnorm");
    adm_op_params p;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
    double da = 0, dc = 0;
    ck_assert_int_eq(adm_synth_gaussian(9, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(10, 0.5, ADM_BF16, 1, wsz, &wt), ADM_OK);
    in[0] = &x;
    in[1] = &wt; /* with a weight the eager path rounds twice */
    ck_assert_int_eq(adm_op_params_parse(op, "{}", &p), ADM_OK);
    ck_assert_int_eq(adm_impl_find("rmsnorm", "eager")->run(adm_impl_find("rmsnorm", "eager"), &p, in, &a), ADM_OK);
    ck_assert_int_eq(adm_impl_find("rmsnorm", "fused_fp32")->run(adm_impl_find("rmsnorm", "fused_fp32"), &p, in, &b), ADM_OK);
    ck_assert_int_eq(adm_impl_find("rmsnorm", "bf16_stats")->run(adm_impl_find("rmsnorm", "bf16_stats"), &p, in, &c), ADM_OK);
    for (int64_t i = 0; i < 4096; i++) {
        da = fmax(da, fabs(adm_tensor_get(&a, i) - adm_tensor_get(&b, i)) / adm_format_ulp(ADM_BF16, adm_tensor_get(&b, i)));
        dc = fmax(dc, fabs(adm_tensor_get(&c, i) - adm_tensor_get(&b, i)));
    }
    ck_assert_msg(da > 0 && da <= 2.0, "eager and fused %g ulps apart", da); /* a rounding or two apart */
    ck_assert(dc > 0.05);             /* the statistic is off */
    adm_tensor_free(&x);
    adm_tensor_free(&wt);
    adm_tensor_free(&a);
    adm_tensor_free(&b);
    adm_tensor_free(&c);
}
END_TEST

/* Special: the plugin ABI's versions. Every version from 1 up to admit's
 * own loads (version 1's struct read only up to its end); version 0, a
 * newer version, and a struct smaller than its version's documented size
 * are refused with a message naming the file. The version 1 build runs and
 * gives the same bits as the version 2 build of the same kernel. */
START_TEST(test_plugin_versions)
{
    static const struct {
        const char *variant;
        adm_status want;
        const char *says;
    } cases[] = {
        {"example", ADM_OK, "one rounding to bf16 ("},
        {"v1", ADM_OK, "adm_plugin_v1.so"},
        {"broken_version", ADM_ERR_VERSION, "ABI version 99; this admit understands versions 1 to 2"},
        {"version_zero", ADM_ERR_VERSION, "ABI version 0;"},
        {"broken_size", ADM_ERR_VERSION, "struct of 16 bytes, smaller than version 1's"},
        {"short_v2", ADM_ERR_VERSION, "smaller than version 2's"},
    };
    int64_t xs[2] = {4, 32}, ws[2] = {6, 32}, bs[1] = {6};
    adm_tensor x, w, b, y[2];
    adm_op_params p;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &b};
    int ran = 0;
    ck_assert_int_eq(adm_synth_gaussian(4, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(5, 0.2, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(6, 0.02, ADM_BF16, 1, bs, &b), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(adm_op_find("linear+gelu"), "{\"approximate\":\"tanh\"}", &p), ADM_OK);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[1024];
        const adm_impl *im = NULL;
        adm_status st;
        snprintf(path, sizeof path, "%s/adm_plugin_%s.so", ADM_PLUGIN_DIR, cases[c].variant);
        st = adm_plugin_load(path, "example_fused_gelu", &im);
        ck_assert_msg(st == cases[c].want, "%s: %s (%s)", cases[c].variant, adm_status_name(st), adm_error_message());
        if (st != ADM_OK) {
            ck_assert_ptr_null(im);
            ck_assert_msg(strstr(adm_error_message(), cases[c].says) && strstr(adm_error_message(), path),
                          "%s: '%s'", cases[c].variant, adm_error_message());
            adm_error_clear();
            continue;
        }
        ck_assert_msg(strstr(im->what, cases[c].says) != NULL, "%s: what '%s'", cases[c].variant, im->what);
        ck_assert_ptr_null(strstr(im->what, "NOT PART OF")); /* nothing read past version 1's struct */
        ck_assert_int_eq(im->decl.accumulator, ADM_FP32);
        ck_assert_int_eq(im->run(im, &p, in, &y[ran]), ADM_OK);
        ran++;
        adm_plugin_free(im);
    }
    ck_assert_int_eq(ran, 2);
    for (int64_t k = 0; k < adm_tensor_numel(&y[0]); k++)
        ck_assert_uint_eq(adm_tensor_bits(&y[0], k), adm_tensor_bits(&y[1], k));
    adm_tensor_free(&y[0]);
    adm_tensor_free(&y[1]);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
}
END_TEST

/* Attention: each path within the error bound of where it rounds, against
 * the oracle o with its condition scale c = sum_j p_j |v_j|:
 *   math (fp32 throughout, one output rounding): |y - o| <= ulp(|o| + d)/2 + d,
 *     d = 2^-12 c (fp32 logits, softmax and sums: (T + D) 2^-24 relative
 *     at most, with room);
 *   flash, tiled (P rounded to bf16: each p within 2^-9 relative):
 *     the same with d = 2^-12 c + 2^-9 c;
 *   math_bf16 (q sf, S, P in bf16) is bounded by neither.
 * The P rounding must show: flash and tiled exceed the math bound on some
 * elements. Causal masks are top-left: row 0 attends to key 0 only, so it
 * is v[0] exactly on every path. */
START_TEST(test_attention_roundings)
{
    static const struct { int64_t S, D; int causal; } shapes[4] = {{100, 64, 0}, {96, 128, 1}, {130, 64, 1}, {64, 128, 0}};
    static const adm_attn_path paths[4] = {ADM_ATTN_MATH, ADM_ATTN_FLASH, ADM_ATTN_TILED, ADM_ATTN_MATH_BF16};
    static const char *names[4] = {"math", "flash", "tiled64", "math_bf16"};
    for (int sh = 0; sh < 4; sh++) {
        int64_t S = shapes[sh].S, D = shapes[sh].D, qs[3] = {2, S, D};
        adm_tensor q, k, v, y;
        const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&q, &k, &v};
        const adm_op *op = adm_op_find("attention");
        adm_op_params p;
        adm_oracle *o;
        adm_oracle_result r;
        ck_assert_int_eq(adm_synth_gaussian(40 + (uint64_t)sh, 1.0, ADM_BF16, 3, qs, &q), ADM_OK);
        ck_assert_int_eq(adm_synth_gaussian(50 + (uint64_t)sh, 1.0, ADM_BF16, 3, qs, &k), ADM_OK);
        ck_assert_int_eq(adm_synth_gaussian(60 + (uint64_t)sh, 1.0, ADM_BF16, 3, qs, &v), ADM_OK);
        ck_assert_int_eq(adm_op_params_parse(op, shapes[sh].causal ? "{\"causal\":true}" : "{}", &p), ADM_OK);
        ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
        ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &r), ADM_OK);
        for (int pa = 0; pa < 4; pa++) {
            int64_t over_math = 0, over_own = 0, n;
            double worst = 0;
            ck_assert_int_eq(adm_emu_attention(&p, in, paths[pa], &y), ADM_OK);
            ck_assert_int_eq(y.dtype, ADM_BF16);
            n = adm_tensor_numel(&y);
            ck_assert_int_eq(n, 2 * S * D);
            for (int64_t i = 0; i < n; i++) {
                double ov = ((double *)r.value.data)[i], c = ((double *)r.cond.data)[i], e = fabs(adm_tensor_get(&y, i) - ov);
                double dm = 0x1p-12 * c, dp = dm + 0x1p-9 * c;
                double bm = adm_format_ulp(ADM_BF16, fabs(ov) + dm) / 2 + dm, bp = adm_format_ulp(ADM_BF16, fabs(ov) + dp) / 2 + dp;
                over_math += e > bm;
                over_own += e > (pa == 0 ? bm : bp);
                worst = fmax(worst, e / bp);
            }
            printf("attention S %lld D %lld%s %-9s: %lld of %lld beyond the math path's bound, %lld beyond its own, "
                   "worst error / flash bound %.3g\n", (long long)S, (long long)D, shapes[sh].causal ? " causal" : "",
                   names[pa], (long long)over_math, (long long)n, (long long)over_own, worst);
            if (pa < 3) ck_assert_int_eq(over_own, 0);
            if (pa == 1 || pa == 2) ck_assert_int_gt(over_math, 0);
            if (pa == 3) ck_assert_int_gt(over_own, 0);
            if (shapes[sh].causal)
                for (int64_t e = 0; e < D; e++) ck_assert_uint_eq(adm_tensor_bits(&y, e), adm_tensor_bits(&v, e));
            adm_tensor_free(&y);
        }
        adm_oracle_result_free(&r);
        adm_oracle_free(o);
        adm_tensor_free(&q);
        adm_tensor_free(&k);
        adm_tensor_free(&v);
    }
}
END_TEST

/* Row sums, on values chosen so that the order shows: 1 then 63 times
 * t = 2^-24 (exact sum 1 + 31.5 2^-23). Sequential: each 1 + t is a tie
 * and rounds back to 1. Pairwise: the subtree holding the 1 doubles its
 * tiny partner each level (1 + t -> 1, then + 2t, + 4t, ...: 1 + 31 2^-23).
 * Warp: lane 0 holds 1 + t -> 1, the other lanes 2t each; the tree gives
 * 1 + 31 2^-23 as well. bf16 accumulation: 1. And 1, 2^-9, 2^-9, 2^-9: in
 * bf16 every add ties back to 1, fp32 keeps them. */
START_TEST(test_row_sum_roundings)
{
    int64_t xs[2] = {2, 64};
    double xv[128];
    adm_tensor x, y;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x};
    adm_op_params p;
    static const double want0[4] = {1 + 31 * 0x1p-23, 1.0, 1 + 31 * 0x1p-23, 1.0};
    static const double want1[4] = {1 + 3 * 0x1p-9, 1 + 3 * 0x1p-9, 1 + 3 * 0x1p-9, 1.0};
    for (int i = 0; i < 64; i++) xv[i] = i == 0 ? 1.0 : 0x1p-24;
    for (int i = 0; i < 64; i++) xv[64 + i] = i == 0 ? 1.0 : (i < 4 ? 0x1p-9 : 0.0);
    ck_assert_int_eq(adm_tensor_from_f64(&x, ADM_FP32, 2, xs, xv, ADM_RNE, 0), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(adm_op_find("row_sum"), "{}", &p), ADM_OK);
    for (int o = 0; o < 4; o++) {
        ck_assert_int_eq(adm_emu_row_sum(&p, in, (adm_sum_order)o, &y), ADM_OK);
        ck_assert_int_eq(y.dtype, ADM_FP32);
        ck_assert_msg(adm_tensor_get(&y, 0) == want0[o], "order %d: %a", o, adm_tensor_get(&y, 0));
        ck_assert_msg(adm_tensor_get(&y, 1) == want1[o], "order %d: %a", o, adm_tensor_get(&y, 1));
        adm_tensor_free(&y);
    }
    /* along axis 0 of the transpose: the same sums */
    {
        adm_tensor xt;
        ck_assert_int_eq(adm_tensor_transpose(&x, 0, 1, &xt), ADM_OK);
        in[0] = &xt;
        ck_assert_int_eq(adm_op_params_parse(adm_op_find("row_sum"), "{\"axis\":0}", &p), ADM_OK);
        ck_assert_int_eq(adm_emu_row_sum(&p, in, ADM_SUM_PAIRWISE, &y), ADM_OK);
        ck_assert(adm_tensor_get(&y, 0) == want0[0] && adm_tensor_get(&y, 1) == want1[0]);
        adm_tensor_free(&y);
    }
    adm_tensor_free(&x);
}
END_TEST

/* NaN, Inf and empty inputs through the attention and row-sum paths: a NaN
 * in a query row makes that row NaN and leaves the others finite; an
 * empty batch gives an empty output; unknown paths are refused. */
START_TEST(test_attention_special)
{
    int64_t qs[3] = {1, 8, 16}, es[3] = {0, 8, 16}, xs[2] = {3, 4};
    adm_tensor q, k, v, y, e;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&q, &k, &v};
    adm_op_params p;
    double xv[12] = {1, 2, 3, 4, NAN, 1, 1, 1, INFINITY, 1, 1, 1};
    ck_assert_int_eq(adm_synth_gaussian(1, 1.0, ADM_BF16, 3, qs, &q), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(2, 1.0, ADM_BF16, 3, qs, &k), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(3, 1.0, ADM_BF16, 3, qs, &v), ADM_OK);
    adm_tensor_set_bits(&q, 3 * 16 + 5, 0x7fc0); /* NaN in query row 3 */
    ck_assert_int_eq(adm_op_params_parse(adm_op_find("attention"), "{}", &p), ADM_OK);
    for (int pa = ADM_ATTN_MATH; pa <= ADM_ATTN_TILED; pa++) {
        ck_assert_int_eq(adm_emu_attention(&p, in, (adm_attn_path)pa, &y), ADM_OK);
        for (int64_t i = 0; i < 8 * 16; i++) ck_assert_msg(isnan(adm_tensor_get(&y, i)) == (i / 16 == 3), "path %d element %lld", pa, (long long)i);
        adm_tensor_free(&y);
    }
    ck_assert_int_eq(adm_emu_attention(&p, in, (adm_attn_path)9, &y), ADM_ERR_INVALID);
    ck_assert_int_eq(adm_tensor_alloc(&e, ADM_BF16, 3, es), ADM_OK);
    in[0] = &e;
    ck_assert_int_eq(adm_emu_attention(&p, in, ADM_ATTN_FLASH, &y), ADM_OK);
    ck_assert_int_eq(adm_tensor_numel(&y), 0);
    adm_tensor_free(&y);
    adm_tensor_free(&e);
    adm_tensor_free(&q);
    adm_tensor_free(&k);
    adm_tensor_free(&v);
    ck_assert_int_eq(adm_tensor_from_f64(&q, ADM_FP32, 2, xs, xv, ADM_RNE, 0), ADM_OK);
    in[0] = &q;
    ck_assert_int_eq(adm_op_params_parse(adm_op_find("row_sum"), "{}", &p), ADM_OK);
    for (int o = ADM_SUM_PAIRWISE; o <= ADM_SUM_BF16_ACC; o++) {
        ck_assert_int_eq(adm_emu_row_sum(&p, in, (adm_sum_order)o, &y), ADM_OK);
        ck_assert(adm_tensor_get(&y, 0) == 10.0 && isnan(adm_tensor_get(&y, 1)) && isinf(adm_tensor_get(&y, 2)));
        adm_tensor_free(&y);
    }
    ck_assert_int_eq(adm_emu_row_sum(&p, in, (adm_sum_order)7, &y), ADM_ERR_INVALID);
    p.axis = 2;
    ck_assert_int_eq(adm_emu_row_sum(&p, in, ADM_SUM_PAIRWISE, &y), ADM_ERR_INVALID);
    adm_tensor_free(&q);
    adm_error_clear();
}
END_TEST

static Suite *candidates_suite(void)
{
    Suite *s = suite_create("candidates");
    TCase *tc = tcase_create("Emulations");
    tcase_add_test(tc, test_gemm_roundings);
    tcase_add_test(tc, test_registry_names);
    tcase_add_test(tc, test_registry_runs);
    tcase_add_test(tc, test_no_self_comparison);
    tcase_add_test(tc, test_strided_inputs);
    tcase_add_test(tc, test_norm_roundings);
    tcase_add_test(tc, test_attention_roundings);
    tcase_add_test(tc, test_row_sum_roundings);
    suite_add_tcase(s, tc);
    tc = tcase_create("Special");
    tcase_add_test(tc, test_attention_special);
    tcase_add_test(tc, test_plugin_refusals);
    tcase_add_test(tc, test_plugin_versions);
    tcase_add_test(tc, test_plugin_desc_checked);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(candidates_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
