/* candidates: the emulations round where their kernels round, the
 * registry resolves names, the plugin loader refuses what it must. */
#include "adm_candidates.h"
#include "adm_capture.h"

#include <check.h>
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

/* Every registered implementation runs on its op's synthetic inputs, the
 * reference of each op is the first registered, and the static
 * declarations are filled. */
START_TEST(test_registry)
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

static Suite *candidates_suite(void)
{
    Suite *s = suite_create("candidates");
    TCase *tc = tcase_create("Emulations");
    tcase_add_test(tc, test_gemm_roundings);
    tcase_add_test(tc, test_registry);
    tcase_add_test(tc, test_strided_inputs);
    tcase_add_test(tc, test_norm_roundings);
    suite_add_tcase(s, tc);
    tc = tcase_create("Special");
    tcase_add_test(tc, test_plugin_refusals);
    tcase_add_test(tc, test_plugin_versions);
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
