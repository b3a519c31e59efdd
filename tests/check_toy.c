/* toy: the toy DiT is deterministic; TP2 over two processes reproduces the
 * emulated TP2 bit for bit and differs from TP1 only by rounding; tiers
 * come from a fusion table's sites; the fp64 run sits within bf16
 * rounding of the bf16 run; compounding catches a biased rounding that
 * passes the operator-level magnitude gate. */
#include "adm_capture.h"
#include "adm_cuda.h"
#include "adm_harness.h"
#include "adm_toy.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef ADM_SOURCE_DIR
#define ADM_SOURCE_DIR "."
#endif

static void small(adm_toy_config *c)
{
    adm_toy_config_default(c);
    c->grid = 8;
    c->blocks = 2;
    c->steps = 2;
}

static double psnr(const adm_image *a, const adm_image *b)
{
    adm_drift_metrics m;
    ck_assert_int_eq(adm_drift_compare(a, b, 255, NULL, &m), ADM_OK);
    return m.psnr;
}

START_TEST(test_deterministic)
{
    adm_toy_config c;
    adm_toy *t;
    adm_toy_tier ex;
    adm_image a, b;
    small(&c);
    ck_assert_int_eq(adm_toy_create(&c, &t), ADM_OK);
    adm_toy_tier_reference(&ex);
    ck_assert_int_eq(adm_toy_run(t, &ex, 1, &a, NULL), ADM_OK);
    ck_assert_int_eq(adm_toy_run(t, &ex, 1, &b, NULL), ADM_OK);
    ck_assert(a.frames == 1 && a.height == 32 && a.width == 32 && a.channels == 3 && a.data_range == 255);
    ck_assert(!memcmp(a.data, b.data, sizeof(double) * (size_t)adm_image_numel(&a)));
    /* the image uses the range: not flat, not saturated */
    {
        double lo = 255, hi = 0;
        for (int64_t i = 0; i < adm_image_numel(&a); i++) {
            lo = fmin(lo, a.data[i]);
            hi = fmax(hi, a.data[i]);
        }
        ck_assert(hi - lo > 100);
    }
    adm_image_free(&b);
    /* another seed, another image */
    adm_toy_free(t);
    c.seed = 2;
    ck_assert_int_eq(adm_toy_create(&c, &t), ADM_OK);
    ck_assert_int_eq(adm_toy_run(t, &ex, 1, &b, NULL), ADM_OK);
    ck_assert(psnr(&a, &b) < 20);
    adm_image_free(&a);
    adm_image_free(&b);
    adm_toy_free(t);
}
END_TEST

/* TP2 in one process and over two processes (pipes) are the same
 * computation: bit-identical. Against TP1 it moves only rounding. */
START_TEST(test_tp2)
{
    adm_toy_config c;
    adm_toy *t;
    adm_toy_tier ex;
    adm_image tp1, em, pr;
    small(&c);
    ck_assert_int_eq(adm_toy_create(&c, &t), ADM_OK);
    adm_toy_tier_reference(&ex);
    ck_assert_int_eq(adm_toy_run(t, &ex, 1, &tp1, NULL), ADM_OK);
    ck_assert_int_eq(adm_toy_run(t, &ex, 2, &em, NULL), ADM_OK);
    ck_assert_int_eq(adm_toy_run_processes(t, &ex, ADM_TOY_TP2_PROCESSES, 2, &pr), ADM_OK);
    ck_assert(!memcmp(em.data, pr.data, sizeof(double) * (size_t)adm_image_numel(&em)));
    {
        double p = psnr(&tp1, &em);
        ck_assert_msg(isfinite(p) && p > 40, "TP1 vs TP2: %g dB", p);
    }
    adm_image_free(&pr);
    /* one process of world 1 runs TP1 through the same path */
    ck_assert_int_eq(adm_toy_run_processes(t, &ex, ADM_TOY_TP2_PROCESSES, 1, &pr), ADM_OK);
    ck_assert(!memcmp(tp1.data, pr.data, sizeof(double) * (size_t)adm_image_numel(&tp1)));
    adm_image_free(&pr);
    adm_image_free(&tp1);
    adm_image_free(&em);
    adm_toy_free(t);
}
END_TEST

START_TEST(test_tiers_from_table)
{
    adm_toy_tier ex, ll, hi, ref;
    char path[1024];
    adm_toy_tier_reference(&ref);
    snprintf(path, sizeof path, "%s/fusions/toy.json", ADM_SOURCE_DIR);
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_EXACT, NULL, &ex), ADM_OK);
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_LOSSLESS, NULL, &ll), ADM_OK);
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_HIGH, "flux2_nvfp4_fc1_swiglu_quant", &hi), ADM_OK);
    for (int s = 0; s < ADM_TOY_SITE_COUNT; s++) ck_assert_ptr_eq(ex.impl[s], ref.impl[s]);
    ck_assert_str_eq(ll.impl[ADM_TOY_FC1]->name, "fused_epilogue");
    ck_assert_str_eq(ll.entry[ADM_TOY_FC1], "flux1_ff_linear_gelu_epilogue");
    ck_assert_ptr_eq(ll.impl[ADM_TOY_FC2], ref.impl[ADM_TOY_FC2]);
    ck_assert_str_eq(hi.impl[ADM_TOY_FC2]->name, "nvfp4_input");
    ck_assert_str_eq(hi.impl[ADM_TOY_FC1]->name, "fused_epilogue"); /* high includes lossless */
    ck_assert_ptr_eq(hi.impl[ADM_TOY_PROJ], ref.impl[ADM_TOY_PROJ]); /* its 'sites': fc2 only */
    /* a table without sites: the first lossless entry of each op at every site of the op */
    snprintf(path, sizeof path, "%s/fusions/dit.json", ADM_SOURCE_DIR);
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_LOSSLESS, NULL, &ll), ADM_OK);
    ck_assert_str_eq(ll.impl[ADM_TOY_QKV]->name, "splitk_fp32");
    ck_assert_str_eq(ll.impl[ADM_TOY_FC2]->name, "splitk_fp32");
    ck_assert_str_eq(ll.impl[ADM_TOY_RESIDUAL]->name, "early_round");
    /* the high entry at a site named by the caller */
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_HIGH, "splitk_bf16_partials@proj", &hi), ADM_OK);
    ck_assert_str_eq(hi.impl[ADM_TOY_PROJ]->name, "splitk_bf16");
    ck_assert_str_eq(hi.impl[ADM_TOY_FC2]->name, "splitk_fp32");
    /* mounts */
    ck_assert_int_eq(adm_toy_tier_mount(&ll, "residual=eager"), ADM_OK);
    ck_assert_str_eq(ll.impl[ADM_TOY_RESIDUAL]->name, "eager");
    ck_assert_str_eq(ll.entry[ADM_TOY_RESIDUAL], "--mount");
}
END_TEST

/* The fp64 run of the same math: the bf16 run's hidden states sit within
 * a few bf16 roundings of it, never on it. */
START_TEST(test_fp64)
{
    adm_toy_config c;
    adm_toy *t;
    adm_toy_tier ex;
    adm_toy_trace tr, ref;
    adm_image a, b;
    double err[64];
    small(&c);
    ck_assert_int_eq(adm_toy_create(&c, &t), ADM_OK);
    adm_toy_tier_reference(&ex);
    ck_assert_int_eq(adm_toy_run(t, &ex, 1, &a, &tr), ADM_OK);
    ck_assert_int_eq(adm_toy_run_f64(t, &b, &ref), ADM_OK);
    ck_assert(tr.n_hidden == 4 && tr.n_latent == 2 && ref.n_hidden == 4);
    ck_assert_int_eq(adm_toy_trace_error(&tr, &ref, 0, err), ADM_OK);
    for (int k = 0; k < 4; k++) ck_assert_msg(err[k] > 1e-4 && err[k] < 0.05, "depth %d: %g", k + 1, err[k]);
    ck_assert_int_eq(adm_toy_trace_error(&tr, &ref, 1, err), ADM_OK);
    for (int k = 0; k < 2; k++) ck_assert(err[k] > 1e-5 && err[k] < 0.05);
    ck_assert_int_eq(adm_toy_trace_error(&ref, &ref, 0, err), ADM_OK);
    ck_assert(err[0] == 0 && err[3] == 0);
    ck_assert(psnr(&a, &b) > 40);
    adm_toy_trace_free(&tr);
    adm_toy_trace_free(&ref);
    adm_image_free(&a);
    adm_image_free(&b);
    adm_toy_free(t);
}
END_TEST

/* x + g y rounded after adding a quarter of an ulp: a biased rounding
 * (mean +0.25 ulp) whose RMS error is still within 1.5x of the
 * reference's. */
static adm_status gr_biased(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    const adm_tensor *x = in[0], *y = in[2];
    adm_tensor g;
    int64_t n = adm_tensor_numel(x);
    (void)p;
    (void)self;
    ADM_TRY(adm_tensor_broadcast(in[1], x->ndim, x->shape, &g));
    ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, x->shape));
    for (int64_t i = 0; i < n; i++) {
        float v = (float)adm_tensor_get(x, i) + (float)adm_tensor_get(&g, i) * (float)adm_tensor_get(y, i);
        double w = isfinite(v) ? v + 0.25 * adm_format_ulp(x->dtype, v) : v;
        uint64_t b;
        adm_format_encode(x->dtype, w, ADM_RNE, 0, &b);
        adm_tensor_set_bits(out, i, b);
    }
    return ADM_OK;
}

START_TEST(test_compounding)
{
    adm_toy_config c;
    adm_toy *t;
    adm_toy_tier ex, biased, ll;
    adm_impl imp;
    adm_toy_trace tr, ref;
    adm_image img;
    adm_drift *d;
    double dep[16], err[16];
    char path[1024];
    adm_toy_config_default(&c);
    c.grid = 8;
    c.blocks = 16;
    c.steps = 1;
    ck_assert_int_eq(adm_toy_create(&c, &t), ADM_OK);
    adm_toy_tier_reference(&ex);
    snprintf(path, sizeof path, "%s/fusions/toy.json", ADM_SOURCE_DIR);
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_LOSSLESS, NULL, &ll), ADM_OK);
    biased = ex;
    imp = *ex.impl[ADM_TOY_RESIDUAL];
    imp.name = "biased";
    imp.run = gr_biased;
    biased.impl[ADM_TOY_RESIDUAL] = &imp;
    ck_assert_int_eq(adm_toy_run_f64(t, &img, &ref), ADM_OK);
    adm_image_free(&img);
    ck_assert_int_eq(adm_drift_create("compounding", &d), ADM_OK);
    for (int k = 0; k < 16; k++) dep[k] = k + 1;
    {
        const adm_toy_tier *tiers[3] = {&ex, &ll, &biased};
        for (int i = 0; i < 3; i++) {
            ck_assert_int_eq(adm_toy_run(t, tiers[i], 1, &img, &tr), ADM_OK);
            adm_image_free(&img);
            ck_assert_int_eq(adm_toy_trace_error(&tr, &ref, 0, err), ADM_OK);
            ck_assert_int_eq(adm_drift_add_growth(d, "layers", i == 0 ? "exact" : i == 1 ? "lossless" : "biased", i == 0,
                                                  ADM_TIER_LOSSLESS, 16, dep, err),
                             ADM_OK);
            adm_toy_trace_free(&tr);
        }
    }
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    {
        const adm_drift_growth *g0 = adm_drift_growth_at(d, 0), *g1 = adm_drift_growth_at(d, 1),
                               *g2 = adm_drift_growth_at(d, 2);
        /* the reference grows like a random walk, the lossless tier with it,
         * the biased rounding faster */
        ck_assert_msg(g0->exponent > 0.2 && g0->exponent < 0.7, "exact: %g", g0->exponent);
        ck_assert_msg(g1->passed && fabs(g1->excess) < 0.1, "lossless: %g", g1->excess);
        ck_assert_msg(!g2->passed && g2->excess > ADM_DRIFT_GROWTH_SLACK, "biased: %g", g2->excess);
    }
    adm_drift_free(d);
    adm_toy_trace_free(&ref);
    adm_toy_free(t);
    /* one application of the biased rounding passes the magnitude gate */
    {
        adm_capture *cap;
        const adm_op *op = adm_op_find("gated_residual");
        adm_op_params p;
        const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
        adm_run_result rr;
        adm_gate_config gc;
        snprintf(path, sizeof path, "%s/captures/data/dit_gated_residual.h5", ADM_SOURCE_DIR);
        ck_assert_int_eq(adm_capture_read(path, &cap), ADM_OK);
        ck_assert_int_eq(adm_op_params_parse(op, adm_capture_params(cap), &p), ADM_OK);
        for (int i = 0; i < adm_op_input_count(op); i++) in[i] = adm_capture_find_input(cap, adm_op_input_name(op, i));
        adm_gate_config_default(&gc);
        ck_assert_int_eq(adm_harness_run(op, &p, in, adm_impl_reference("gated_residual"), &imp, NULL, &gc, &rr), ADM_OK);
        ck_assert_msg(rr.verdict.gate[ADM_GATE_MAGNITUDE].passed && rr.verdict.rms_ratio < 1.5, "rms ratio %g",
                      rr.verdict.rms_ratio);
        adm_capture_free(cap);
    }
}
END_TEST

START_TEST(test_special)
{
    adm_toy_config c;
    adm_toy *t;
    adm_toy_tier ex;
    adm_image img;
    char path[256];
    FILE *f;
    small(&c);
    c.hidden = 60; /* not a multiple of 2 heads x 2 */
    c.heads = 4;
    ck_assert_int_eq(adm_toy_create(&c, &t), ADM_ERR_INVALID);
    small(&c);
    ck_assert_int_eq(adm_toy_create(&c, &t), ADM_OK);
    adm_toy_tier_reference(&ex);
    ck_assert_int_eq(adm_toy_run(t, &ex, 3, &img, NULL), ADM_ERR_INVALID);
    /* a rank that fails reports its error; its peer is ended, not waited on forever */
    if (!adm_cuda_built()) {
        ck_assert_int_eq(adm_toy_run_processes(t, &ex, ADM_TOY_TP2_NCCL, 2, &img), ADM_ERR_CUDA);
        ck_assert_msg(strstr(adm_error_message(), "rank") && strstr(adm_error_message(), "without CUDA"), "%s",
                      adm_error_message());
        ck_assert_int_eq(adm_toy_cuda_select(0), ADM_ERR_NO_DEVICE);
    }
    adm_toy_free(t);
    /* tables and mounts that are wrong name the file and the field */
    snprintf(path, sizeof path, "/tmp/check_toy_%d.json", (int)getpid());
    f = fopen(path, "w");
    fputs("{\"fusions\": [{\"name\": \"x\", \"op\": \"linear+gelu\", \"reference\": \"eager\", \"candidate\": "
          "\"fused_epilogue\", \"declared\": \"lossless\", \"sites\": [\"fc2\"]}]}", f);
    fclose(f);
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_LOSSLESS, NULL, &ex), ADM_ERR_FORMAT);
    ck_assert(strstr(adm_error_message(), "fusions[0].sites[0]") && strstr(adm_error_message(), "linear+gelu"));
    f = fopen(path, "w");
    fputs("{\"fusions\": [{\"name\": \"x\", \"op\": \"linear\", \"reference\": \"eager\", \"candidate\": "
          "\"no_such\", \"declared\": \"lossless\"}]}", f);
    fclose(f);
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_LOSSLESS, NULL, &ex), ADM_ERR_NOT_FOUND);
    ck_assert(strstr(adm_error_message(), "fusions[0].candidate") && strstr(adm_error_message(), "no_such"));
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_EXACT, NULL, &ex), ADM_OK); /* exact mounts no candidate */
    f = fopen(path, "w");
    fputs("{\"fusions\": [", f);
    fclose(f);
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_EXACT, NULL, &ex), ADM_ERR_JSON);
    unlink(path);
    ck_assert_int_eq(adm_toy_tier_from_table(path, ADM_TIER_EXACT, NULL, &ex), ADM_ERR_IO);
    adm_toy_tier_reference(&ex);
    ck_assert_int_eq(adm_toy_tier_mount(&ex, "fc9=eager"), ADM_ERR_NOT_FOUND);
    ck_assert_int_eq(adm_toy_tier_mount(&ex, "fc1=nothing"), ADM_ERR_NOT_FOUND);
    ck_assert(strstr(adm_error_message(), "fused_epilogue")); /* the registered names are listed */
    ck_assert_int_eq(adm_toy_tier_mount(&ex, "fc1=./x.so:k"), ADM_ERR_UNSUPPORTED);
    ck_assert_int_eq(adm_toy_tier_mount(&ex, "fc1"), ADM_ERR_INVALID);
}
END_TEST

static Suite *toy_suite(void)
{
    Suite *s = suite_create("toy");
    TCase *tc = tcase_create("Model");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_tp2);
    tcase_add_test(tc, test_tiers_from_table);
    tcase_add_test(tc, test_fp64);
    suite_add_tcase(s, tc);
    tc = tcase_create("Compounding");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_compounding);
    suite_add_tcase(s, tc);
    tc = tcase_create("Special");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_special);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(toy_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
