/* oracle: the op catalog's parameters and shape rules. */
#include "adm_oracle.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct shape_case {
    const char *op, *params;
    int n;                       /* inputs given, in catalog order; NULL name = absent */
    const char *names[5];
    int ndim[5];
    int64_t shape[5][4];
    adm_status want;
    int out_ndim;
    int64_t out[4];
    const char *needle;          /* in the message when refused */
} shape_case;

static const shape_case shape_cases[] = {
    {"linear", "{}", 3, {"x", "w", "bias"}, {2, 2, 1}, {{4, 8}, {6, 8}, {6}}, ADM_OK, 2, {4, 6}, NULL},
    {"linear", "{}", 2, {"x", "w"}, {3, 2}, {{2, 4, 8}, {6, 8}}, ADM_OK, 3, {2, 4, 6}, NULL},
    {"linear", "{}", 2, {"x", "w"}, {2, 2}, {{4, 8}, {6, 9}}, ADM_ERR_SHAPE, 0, {0}, "input 'w' has shape [6, 9], expected [N, 8]"},
    {"linear", "{}", 3, {"x", "w", "bias"}, {2, 2, 1}, {{4, 8}, {6, 8}, {5}}, ADM_ERR_SHAPE, 0, {0}, "input 'bias' has shape [5], expected [6]"},
    {"linear", "{}", 1, {"x"}, {2}, {{4, 8}}, ADM_ERR_SHAPE, 0, {0}, "requires input 'w'"},
    {"linear+gelu", "{\"approximate\":\"tanh\"}", 3, {"x", "w", "bias"}, {2, 2, 1}, {{0, 8}, {6, 8}, {6}}, ADM_OK, 2, {0, 6}, NULL},
    {"matmul", "{}", 2, {"a", "b"}, {2, 2}, {{4, 8}, {8, 3}}, ADM_OK, 2, {4, 3}, NULL},
    {"matmul", "{}", 2, {"a", "b"}, {2, 2}, {{4, 8}, {7, 3}}, ADM_ERR_SHAPE, 0, {0}, "expected [8, N]"},
    {"row_sum", "{\"axis\":0}", 1, {"x"}, {3}, {{2, 3, 4}}, ADM_OK, 2, {3, 4}, NULL},
    {"mean_sq", "{}", 1, {"x"}, {2}, {{5, 7}}, ADM_OK, 1, {5}, NULL},
    {"mean_sq", "{\"axis\":2}", 1, {"x"}, {2}, {{5, 7}}, ADM_ERR_INVALID, 0, {0}, "'axis' = 2 is out of range"},
    {"softmax", "{\"axis\":-2}", 1, {"x"}, {2}, {{5, 7}}, ADM_OK, 2, {5, 7}, NULL},
    {"swiglu", "{}", 2, {"gate", "up"}, {2, 2}, {{4, 8}, {4, 8}}, ADM_OK, 2, {4, 8}, NULL},
    {"swiglu", "{}", 2, {"gate", "up"}, {2, 2}, {{4, 8}, {4, 7}}, ADM_ERR_SHAPE, 0, {0}, "the shape of 'gate'"},
    {"gated_residual", "{}", 3, {"x", "g", "y"}, {2, 2, 2}, {{4, 8}, {4, 1}, {4, 8}}, ADM_OK, 2, {4, 8}, NULL},
    {"gated_residual", "{}", 3, {"x", "g", "y"}, {2, 1, 2}, {{4, 8}, {8}, {4, 8}}, ADM_OK, 2, {4, 8}, NULL},
    {"gated_residual", "{}", 3, {"x", "g", "y"}, {2, 2, 2}, {{4, 8}, {3, 1}, {4, 8}}, ADM_ERR_SHAPE, 0, {0}, "broadcasts to [4, 8]"},
    {"rmsnorm", "{\"eps\":1e-6}", 2, {"x", "weight"}, {2, 1}, {{4, 8}, {8}}, ADM_OK, 2, {4, 8}, NULL},
    {"rmsnorm", "{}", 2, {"x", "weight"}, {2, 1}, {{4, 8}, {4}}, ADM_ERR_SHAPE, 0, {0}, "the channels of 'x'"},
    {"layernorm", "{\"modulate\":true}", 5, {"x", "weight", "bias", "shift", "scale"}, {2, 1, 1, 2, 2},
     {{4, 8}, {8}, {8}, {1, 8}, {4, 8}}, ADM_OK, 2, {4, 8}, NULL},
    {"layernorm", "{\"modulate\":true}", 1, {"x"}, {2}, {{4, 8}}, ADM_ERR_SHAPE, 0, {0}, "'shift' is required when 'modulate'"},
    {"groupnorm", "{\"groups\":4}", 1, {"x"}, {3}, {{2, 8, 16}}, ADM_OK, 3, {2, 8, 16}, NULL},
    {"groupnorm", "{\"groups\":3}", 1, {"x"}, {3}, {{2, 8, 16}}, ADM_ERR_INVALID, 0, {0}, "'groups' = 3 does not divide the 8 channels"},
    {"groupnorm", "{\"groups\":4,\"channels_last\":true}", 2, {"x", "weight"}, {3, 1}, {{2, 16, 8}, {8}}, ADM_OK, 3, {2, 16, 8}, NULL},
    {"attention", "{\"causal\":true}", 3, {"q", "k", "v"}, {3, 3, 3}, {{2, 5, 8}, {2, 7, 8}, {2, 7, 4}}, ADM_OK, 3, {2, 5, 4}, NULL},
    {"attention", "{}", 3, {"q", "k", "v"}, {3, 3, 3}, {{2, 5, 8}, {2, 7, 8}, {2, 6, 4}}, ADM_ERR_SHAPE, 0, {0}, "(T of 'k')"},
    {"linear_attention", "{}", 3, {"q", "k", "v"}, {2, 2, 2}, {{5, 8}, {7, 8}, {7, 4}}, ADM_OK, 2, {5, 4}, NULL},
    {"quantize", "{\"scheme\":\"nvfp4\"}", 1, {"x"}, {2}, {{4, 32}}, ADM_OK, 2, {4, 32}, NULL},
    {"quantize", "{\"scheme\":\"nvfp4\"}", 1, {"x"}, {2}, {{4, 24}}, ADM_ERR_SHAPE, 0, {0}, "divisible by 16"},
    {"quantize", "{\"scheme\":\"fp8_e4m3_row\"}", 1, {"x"}, {2}, {{4, 24}}, ADM_OK, 2, {4, 24}, NULL},
};

START_TEST(test_shape)
{
    const shape_case *c = &shape_cases[_i];
    const adm_op *op = adm_op_find(c->op);
    adm_op_params p;
    adm_op_shapes in;
    int ndim = -1;
    int64_t out[ADM_MAX_DIMS];
    adm_status st;
    ck_assert_ptr_nonnull(op);
    memset(&in, 0, sizeof in);
    ck_assert_msg(adm_op_params_parse(op, c->params, &p) == ADM_OK, "%s", adm_error_message());
    for (int i = 0; i < c->n; i++) {
        int k = adm_op_input_index(op, c->names[i]);
        ck_assert_int_ge(k, 0);
        in.present[k] = 1;
        in.ndim[k] = c->ndim[i];
        memcpy(in.shape[k], c->shape[i], sizeof(int64_t) * (size_t)c->ndim[i]);
    }
    st = adm_op_output_shape(op, &p, &in, &ndim, out);
    ck_assert_msg(st == c->want, "%s: %s (%s)", c->op, adm_status_name(st), adm_error_message());
    if (st == ADM_OK) {
        ck_assert_int_eq(ndim, c->out_ndim);
        for (int i = 0; i < ndim; i++) ck_assert_int_eq(out[i], c->out[i]);
    } else {
        ck_assert_msg(strstr(adm_error_message(), c->needle) != NULL, "%s: \"%s\" lacks \"%s\"", c->op,
                      adm_error_message(), c->needle);
    }
}
END_TEST

typedef struct param_case { const char *op, *json; adm_status want; const char *needle; } param_case;
static const param_case param_cases[] = {
    {"gelu", "", ADM_OK, NULL},
    {"gelu", "{\"approximate\":\"tanh\"}", ADM_OK, NULL},
    {"gelu", "{\"approximate\":\"cubic\"}", ADM_ERR_INVALID, "'approximate' must be"},
    {"gelu", "{\"eps\":1}", ADM_ERR_INVALID, "op 'gelu' has no parameter 'eps'"},
    {"gelu", "[1,2]", ADM_ERR_JSON, "must be a JSON object"},
    {"gelu", "{\"approximate\":", ADM_ERR_JSON, "not valid JSON"},
    {"gelu", "{\"approximate\":\"tanh\",\"approximate\":\"none\"}", ADM_ERR_JSON, "duplicate"},
    {"rmsnorm", "{\"eps\":-1e-6}", ADM_ERR_INVALID, "'eps' = -1e-06 must be >= 0"},
    {"rmsnorm", "{\"eps\":\"small\"}", ADM_ERR_INVALID, "must be a finite number"},
    {"scale", "{}", ADM_ERR_INVALID, "requires parameter 'factor'"},
    {"scale", "{\"factor\":0.5}", ADM_OK, NULL},
    {"groupnorm", "{\"groups\":0}", ADM_ERR_INVALID, "'groups' = 0 is outside"},
    {"groupnorm", "{\"groups\":2.5}", ADM_ERR_INVALID, "must be an integer"},
    {"groupnorm", "{\"groups\":2,\"silu\":1}", ADM_ERR_INVALID, "must be true or false"},
    {"softmax", "{\"axis\":99}", ADM_ERR_INVALID, "'axis' = 99 is outside"},
    {"attention", "{\"scale\":0}", ADM_ERR_INVALID, "'scale' must be > 0"},
    {"quantize", "{\"scheme\":\"int8\"}", ADM_ERR_INVALID, "'scheme' must be"},
    {"quantize", "{}", ADM_ERR_INVALID, "requires parameter 'scheme'"},
};

START_TEST(test_params)
{
    const param_case *c = &param_cases[_i];
    adm_op_params p;
    adm_status st = adm_op_params_parse(adm_op_find(c->op), c->json, &p);
    ck_assert_msg(st == c->want, "%s %s: %s (%s)", c->op, c->json, adm_status_name(st), adm_error_message());
    if (c->needle) ck_assert_msg(strstr(adm_error_message(), c->needle), "\"%s\" lacks \"%s\"", adm_error_message(), c->needle);
}
END_TEST

START_TEST(test_catalog)
{
    /* Every op of the design's first catalog is there, inputs named. */
    static const char *ops[] = {"row_sum", "mean_sq", "matmul", "linear", "scale", "relu", "gelu", "silu",
                                "swiglu", "linear+gelu", "gated_residual", "rmsnorm", "layernorm",
                                "groupnorm", "softmax", "attention", "linear_attention", "quantize"};
    adm_op_params p;
    ck_assert_int_eq(adm_op_count(), (int)(sizeof ops / sizeof ops[0]));
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        const adm_op *op = adm_op_find(ops[i]);
        ck_assert_ptr_nonnull(op);
        ck_assert_ptr_eq(adm_op_at((int)i), op);
        ck_assert_str_eq(adm_op_name(op), ops[i]);
        ck_assert_int_ge(adm_op_input_count(op), 1);
        ck_assert(!adm_op_input_optional(op, 0));
    }
    ck_assert_ptr_null(adm_op_find("cubic"));
    ck_assert_ptr_null(adm_op_find(NULL));
    ck_assert_ptr_null(adm_op_at(-1));
    /* defaults */
    ck_assert_int_eq(adm_op_params_parse(adm_op_find("rmsnorm"), NULL, &p), ADM_OK);
    ck_assert(p.eps == 1e-6 && p.axis == -1);
    ck_assert_int_eq(adm_op_params_parse(adm_op_find("layernorm"), "{}", &p), ADM_OK);
    ck_assert(p.eps == 1e-5 && !p.modulate);
    ck_assert_int_eq(adm_op_params_parse(adm_op_find("gelu"), "{}", &p), ADM_OK);
    ck_assert(!p.gelu_tanh);
}
END_TEST

static Suite *oracle_suite(void)
{
    Suite *s = suite_create("oracle");
    TCase *tc = tcase_create("Catalog");
    tcase_add_test(tc, test_catalog);
    tcase_add_loop_test(tc, test_params, 0, (int)(sizeof param_cases / sizeof param_cases[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("Special");
    tcase_add_loop_test(tc, test_shape, 0, (int)(sizeof shape_cases / sizeof shape_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(oracle_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
