/* oracle: the op catalog's parameters and shape rules. */
#include "adm_oracle.h"
#include "adm_capture.h"

#include <check.h>
#include <math.h>
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

/* ------------------------------------------------------------ evaluation against MPFR */

#include <mpfr.h>

double adm_o_gelu_tanh(double x, double *err);
double adm_o_gelu_erf(double x, double *err);
double adm_o_silu(double x, double *err);
void adm_o_gelu_tanh_mpfr(mpfr_t y, const mpfr_t x);
void adm_o_gelu_erf_mpfr(mpfr_t y, const mpfr_t x);
void adm_o_silu_mpfr(mpfr_t y, const mpfr_t x);

typedef double (*scalar_fn)(double, double *);
typedef void (*scalar_mp)(mpfr_t, const mpfr_t);
static const struct { const char *name; scalar_fn f; scalar_mp m; } scalars[] = {
    {"gelu_tanh", adm_o_gelu_tanh, adm_o_gelu_tanh_mpfr},
    {"gelu_erf", adm_o_gelu_erf, adm_o_gelu_erf_mpfr},
    {"silu", adm_o_silu, adm_o_silu_mpfr},
};

/* |f(x) - exact| <= err, exact from MPFR at 256 bits; returns the ratio
 * |error| / err (0 when exact), and fails the test past 1. */
static double check_scalar(int fi, double x, mpfr_t mx, mpfr_t my, mpfr_t d)
{
    double err, v = scalars[fi].f(x, &err), ratio;
    mpfr_set_d(mx, x, MPFR_RNDN);
    scalars[fi].m(my, mx);
    if (isnan(v)) {
        ck_assert_msg(isnan(x), "%s(%a) is NaN", scalars[fi].name, x);
        return 0;
    }
    if (mpfr_inf_p(my)) {
        ck_assert_msg(isinf(v) && (v > 0) == (mpfr_sgn(my) > 0), "%s(%a) = %a, exact infinite", scalars[fi].name, x, v);
        return 0;
    }
    mpfr_sub_d(d, my, v, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    ratio = err > 0 ? mpfr_get_d(d, MPFR_RNDU) / err : (mpfr_zero_p(d) ? 0 : INFINITY);
    ck_assert_msg(ratio <= 1.0, "%s(%a) = %a: error %g above its bound %g", scalars[fi].name, x, v,
                  mpfr_get_d(d, MPFR_RNDU), err);
    return ratio;
}

START_TEST(test_scalar_exhaustive)
{
    mpfr_t mx, my, d;
    double worst[2] = {0, 0};
    mpfr_inits2(256, mx, my, d, (mpfr_ptr)0);
    for (uint32_t b = 0; b < 65536; b++) {
        worst[0] = fmax(worst[0], check_scalar(_i, adm_bf16_to_f32((uint16_t)b), mx, my, d));
        worst[1] = fmax(worst[1], check_scalar(_i, adm_fp16_to_f32((uint16_t)b), mx, my, d));
    }
    printf("%s: all bf16 inputs, worst error/bound %.3g; all fp16 inputs, %.3g\n", scalars[_i].name, worst[0],
           worst[1]);
    mpfr_clears(mx, my, d, (mpfr_ptr)0);
}
END_TEST

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

START_TEST(test_scalar_random)
{
    mpfr_t mx, my, d;
    uint64_t s = 88172645463325252ull + (uint64_t)_i;
    double worst = 0;
    mpfr_inits2(256, mx, my, d, (mpfr_ptr)0);
    for (int i = 0; i < 100000; i++) {
        uint64_t r = rng(&s);
        /* random fp32 patterns, and random doubles in the range that matters */
        double x = (i & 1) ? (double)adm_f32_from_bits((uint32_t)r)
                           : ldexp((double)(r >> 11) * 0x1p-53 * 2.0 - 1.0, (int)(rng(&s) % 24) - 12);
        worst = fmax(worst, check_scalar(_i, x, mx, my, d));
    }
    printf("%s: 100000 random fp32/fp64 inputs, worst error/bound %.3g\n", scalars[_i].name, worst);
    mpfr_clears(mx, my, d, (mpfr_ptr)0);
}
END_TEST

/* The Lipschitz constants used to propagate an input's error through
 * GELU (linear+gelu) and SiLU (groupnorm+silu): sup |f'| on a fine grid,
 * with the slope over each step (the mean value theorem: a slope over a
 * step is f' somewhere in it), stays below them. */
START_TEST(test_lipschitz)
{
    double worst[3] = {0, 0, 0};
    static const double limit[3] = {1.15, 1.15, 1.11};
    for (double x = -30; x < 30; x += 1.0 / 4096) {
        for (int f = 0; f < 3; f++) {
            double e, a = scalars[f].f(x, &e), b = scalars[f].f(x + 1.0 / 4096, &e);
            worst[f] = fmax(worst[f], fabs(b - a) * 4096);
        }
    }
    for (int f = 0; f < 3; f++) {
        printf("%s: max slope %.6f (constant used %.2f)\n", scalars[f].name, worst[f], limit[f]);
        ck_assert(worst[f] < limit[f]);
    }
}
END_TEST

/* ------------------------------------------------------------ whole ops */

typedef struct op_case {
    const char *name;
    const char *op, *params;
    int n;
    int ndim[5];
    int64_t shape[5][4];
    adm_dtype dt[5];
    int adversarial;
} op_case;

static const op_case op_cases[] = {
    {"linear", "linear", "{}", 3, {2, 2, 1}, {{12, 40}, {7, 40}, {7}}, {ADM_BF16, ADM_BF16, ADM_BF16}, 0},
    {"linear cancel", "linear", "{}", 3, {2, 2, 1}, {{12, 40}, {7, 40}, {7}}, {ADM_BF16, ADM_BF16, ADM_FP32}, 1},
    {"linear fp32", "linear", "{}", 2, {2, 2}, {{9, 33}, {5, 33}}, {ADM_FP32, ADM_FP32}, 2},
    {"matmul", "matmul", "{}", 2, {2, 2}, {{6, 24}, {24, 5}}, {ADM_FP16, ADM_FP16}, 0},
    {"linear+gelu tanh", "linear+gelu", "{\"approximate\":\"tanh\"}", 3, {2, 2, 1}, {{10, 48}, {9, 48}, {9}},
     {ADM_BF16, ADM_BF16, ADM_BF16}, 0},
    {"linear+gelu erf cancel", "linear+gelu", "{\"approximate\":\"none\"}", 3, {2, 2, 1}, {{10, 48}, {9, 48}, {9}},
     {ADM_BF16, ADM_BF16, ADM_BF16}, 1},
    {"gelu tanh", "gelu", "{\"approximate\":\"tanh\"}", 1, {2}, {{16, 32}}, {ADM_BF16}, 2},
    {"silu", "silu", "{}", 1, {2}, {{16, 32}}, {ADM_FP16}, 2},
    {"relu", "relu", "{}", 1, {1}, {{64}}, {ADM_BF16}, 0},
    {"scale", "scale", "{\"factor\":0.1}", 1, {2}, {{8, 8}}, {ADM_FP32}, 0},
    {"swiglu", "swiglu", "{}", 2, {2, 2}, {{8, 16}, {8, 16}}, {ADM_BF16, ADM_BF16}, 0},
    {"gated_residual token", "gated_residual", "{}", 3, {2, 2, 2}, {{8, 16}, {8, 1}, {8, 16}},
     {ADM_BF16, ADM_BF16, ADM_BF16}, 1},
    {"gated_residual channel", "gated_residual", "{}", 3, {2, 1, 2}, {{8, 16}, {16}, {8, 16}},
     {ADM_BF16, ADM_FP32, ADM_BF16}, 0},
    {"row_sum", "row_sum", "{\"axis\":1}", 1, {2}, {{6, 50}}, {ADM_BF16}, 1},
    {"row_sum axis0", "row_sum", "{\"axis\":0}", 1, {3}, {{7, 3, 4}}, {ADM_FP32}, 0},
    {"mean_sq", "mean_sq", "{}", 1, {2}, {{6, 50}}, {ADM_BF16}, 2},
    {"softmax", "softmax", "{}", 1, {2}, {{6, 40}}, {ADM_BF16}, 2},
    {"softmax axis0", "softmax", "{\"axis\":0}", 1, {2}, {{9, 5}}, {ADM_FP32}, 0},
    {"rmsnorm", "rmsnorm", "{\"eps\":1e-6}", 2, {2, 1}, {{6, 64}, {64}}, {ADM_BF16, ADM_BF16}, 2},
    {"rmsnorm silu", "rmsnorm", "{\"silu\":true}", 2, {2, 1}, {{6, 64}, {64}}, {ADM_BF16, ADM_BF16}, 0},
    {"layernorm", "layernorm", "{}", 3, {2, 1, 1}, {{6, 64}, {64}, {64}}, {ADM_BF16, ADM_BF16, ADM_BF16}, 1},
    {"layernorm modulate", "layernorm", "{\"modulate\":true,\"eps\":1e-6}", 5, {2, 0, 0, 2, 2},
     {{6, 32}, {0}, {0}, {1, 32}, {6, 32}}, {ADM_BF16, 0, 0, ADM_BF16, ADM_FP32}, 0},
    {"groupnorm silu", "groupnorm", "{\"groups\":4,\"silu\":true}", 3, {3, 1, 1}, {{2, 8, 12}, {8}, {8}},
     {ADM_BF16, ADM_BF16, ADM_BF16}, 0},
    {"groupnorm channels_last", "groupnorm", "{\"groups\":2,\"channels_last\":true}", 1, {3}, {{2, 12, 8}},
     {ADM_FP32}, 1},
    {"attention", "attention", "{}", 3, {3, 3, 3}, {{2, 5, 16}, {2, 7, 16}, {2, 7, 8}}, {ADM_BF16, ADM_BF16, ADM_BF16}, 0},
    {"attention causal", "attention", "{\"causal\":true}", 3, {2, 2, 2}, {{6, 16}, {6, 16}, {6, 4}},
     {ADM_BF16, ADM_BF16, ADM_BF16}, 2},
    {"linear_attention", "linear_attention", "{}", 3, {3, 3, 3}, {{2, 5, 8}, {2, 9, 8}, {2, 9, 6}},
     {ADM_BF16, ADM_BF16, ADM_BF16}, 0},
    {"quantize fp8 tensor", "quantize", "{\"scheme\":\"fp8_e4m3_tensor\"}", 1, {2}, {{8, 32}}, {ADM_BF16}, 2},
    {"quantize fp8 row", "quantize", "{\"scheme\":\"fp8_e4m3_row\"}", 1, {2}, {{8, 32}}, {ADM_FP32}, 0},
    {"quantize nvfp4", "quantize", "{\"scheme\":\"nvfp4\"}", 1, {2}, {{8, 64}}, {ADM_BF16}, 2},
};

/* Inputs: DiT-like (a few outlier channels) for kind 0; built to cancel
 * (pairs +a, -a, a few tiny survivors) for 1; huge and tiny values
 * together with subnormal-range results for 2. */
static void make_input(const op_case *c, int i, adm_tensor *t, uint64_t seed)
{
    int64_t n;
    double *v;
    uint64_t s = seed * 2654435761u + (uint64_t)i + 1;
    ck_assert_int_eq(adm_shape_numel(c->ndim[i], c->shape[i], &n), ADM_OK);
    v = malloc(sizeof *v * (size_t)(n + 1));
    for (int64_t k = 0; k < n; k++) {
        double g = ((double)(rng(&s) >> 11) * 0x1p-53 - 0.5) * 3.46;
        if (k % 13 == 5) g *= 8; /* outliers */
        v[k] = g;
        if (c->adversarial == 1) {
            /* x pairs (a, -a) against w pairs (b, b): products cancel */
            if (k % 2 == 1) v[k] = i == 1 ? v[k - 1] : -v[k - 1];
            if (k % 17 == 3) v[k] = g * 0x1p-20;
        } else if (c->adversarial == 2) {
            int e = (int)(rng(&s) % 40) - 20;
            if (k % 7 == 0) e += 60;
            if (k % 11 == 0) e -= 70;
            v[k] = ldexp(g, e);
            if (!strcmp(c->op, "gelu") || !strcmp(c->op, "silu")) v[k] = g * 12 - 30; /* down to -36: tiny results */
            if (!strcmp(c->op, "softmax") || !strcmp(c->op, "attention")) v[k] = g * (k % 3 ? 40 : 1);
            if (!strcmp(c->op, "quantize")) v[k] = ldexp(g, (int)(rng(&s) % 16) - 8);
        }
    }
    ck_assert_int_eq(adm_tensor_from_f64(t, c->dt[i], c->ndim[i], c->shape[i], v, ADM_RNE, ADM_CVT_SATFINITE),
                     ADM_OK);
    free(v);
}

/* Elements where |value - exact| > scale * bound, exact from MPFR at 256
 * bits (its own error added to the allowance). */
static int64_t violations(const adm_op *op, const adm_op_params *p, const adm_tensor *const *in,
                          const adm_oracle_result *r, double scale, double *worst)
{
    int64_t n = adm_tensor_numel(&r->value), bad = 0;
    *worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = ((double *)r->value.data)[i], b = ((double *)r->bound.data)[i], y, e, dist;
        ck_assert_int_eq(adm_oracle_eval_mpfr(op, p, in, i, 256, &y, &e), ADM_OK);
        if (isnan(y) || isnan(v)) {
            ck_assert_msg(isnan(y) == isnan(v), "element %lld: %a against MPFR %a", (long long)i, v, y);
            continue;
        }
        dist = fabs(v - y);
        if (isinf(y) || isinf(v)) {
            ck_assert(v == y);
            continue;
        }
        if (dist > scale * b + e) bad++;
        if (b > 0) *worst = fmax(*worst, dist / b);
        else ck_assert_msg(dist <= e, "element %lld: exact claimed, off by %g", (long long)i, dist);
    }
    return bad;
}

START_TEST(test_op_mpfr)
{
    const op_case *c = &op_cases[_i];
    const adm_op *op = adm_op_find(c->op);
    adm_op_params p;
    adm_tensor t[5];
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
    adm_oracle *o;
    adm_oracle_result r;
    double worst;
    int64_t bad;
    ck_assert_ptr_nonnull(op);
    memset(t, 0, sizeof t);
    ck_assert_int_eq(adm_op_params_parse(op, c->params, &p), ADM_OK);
    for (int i = 0; i < c->n; i++) {
        if (c->ndim[i] == 0) continue;
        make_input(c, i, &t[i], (uint64_t)_i);
        in[i] = &t[i];
    }
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &r) == ADM_OK, "%s", adm_error_message());
    ck_assert(r.certified && r.mpfr_refined == 0);
    bad = violations(op, &p, in, &r, 1.0, &worst);
    printf("%-26s %lld elements, max bound %.3g, worst error/bound %.3g\n", c->name,
           (long long)adm_tensor_numel(&r.value), r.max_bound, worst);
    ck_assert_msg(bad == 0, "%s: %lld elements outside their bound", c->name, (long long)bad);
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    for (int i = 0; i < 5; i++) adm_tensor_free(&t[i]);
}
END_TEST

/* ------------------------------------------------------------ the condition scale */

/* The condition scale recomputed independently: long double sums of the
 * magnitudes of the explicit terms of each element, with the functions'
 * derivatives by central differences of long double formulas. */
static long double ld_gelu(long double x, int tanh_)
{
    if (tanh_) {
        long double z = sqrtl(2.0L / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x);
        return x / (1.0L + expl(-2.0L * z));
    }
    return 0.5L * x * erfcl(-x / sqrtl(2.0L));
}

static long double ld_silu(long double x, int unused)
{
    (void)unused;
    return x / (1.0L + expl(-x));
}

static long double ld_chain(long double (*f)(long double, int), int arg, long double z, long double cz)
{
    long double h = 1e-7L * (1.0L + fabsl(z)), d = (f(z + h, arg) - f(z - h, arg)) / (2.0L * h), c = fabsl(d) * cz;
    return c > fabsl(f(z, arg)) ? c : fabsl(f(z, arg));
}

static long double at_ld(const adm_tensor *t, int64_t i) { return (long double)adm_tensor_get(t, i); }

/* Broadcast value of t (shape bs) at index i of a row-major shape os. */
static long double at_bcast(const adm_tensor *t, int ondim, const int64_t *os, int64_t i)
{
    adm_tensor v;
    ck_assert_int_eq(adm_tensor_broadcast(t, ondim, os, &v), ADM_OK);
    return at_ld(&v, i);
}

static void cond_direct(const op_case *c, const adm_op_params *p, const adm_tensor *const *in, const adm_tensor *out,
                        long double *cd)
{
    const char *op = c->op;
    int64_t n = adm_tensor_numel(out);
    const adm_tensor *x = in[0];
    if (!strcmp(op, "linear") || !strcmp(op, "linear+gelu") || !strcmp(op, "matmul")) {
        int mm = !strcmp(op, "matmul");
        int64_t K = x->shape[x->ndim - 1], N = mm ? in[1]->shape[1] : in[1]->shape[0];
        for (int64_t i = 0; i < n; i++) {
            int64_t r = i / N, j = i % N;
            long double s = 0, z = 0;
            for (int64_t k = 0; k < K; k++) {
                long double t = at_ld(x, r * K + k) * at_ld(in[1], mm ? k * N + j : j * K + k);
                s += fabsl(t);
                z += t;
            }
            if (!mm && in[2]) {
                s += fabsl(at_ld(in[2], j));
                z += at_ld(in[2], j);
            }
            cd[i] = !strcmp(op, "linear+gelu") ? ld_chain(ld_gelu, p->gelu_tanh, z, s) : s;
        }
    } else if (!strcmp(op, "row_sum") || !strcmp(op, "mean_sq")) {
        int axis = p->axis < 0 ? p->axis + x->ndim : p->axis;
        int64_t L = x->shape[axis], inner = 1;
        for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
        for (int64_t i = 0; i < n; i++) {
            long double s = 0;
            for (int64_t j = 0; j < L; j++) {
                long double v = at_ld(x, (i / inner) * L * inner + j * inner + i % inner);
                s += !strcmp(op, "row_sum") ? fabsl(v) : v * v / (long double)L;
            }
            cd[i] = s;
        }
    } else if (!strcmp(op, "softmax")) {
        int axis = p->axis < 0 ? p->axis + x->ndim : p->axis;
        int64_t L = x->shape[axis], inner = 1;
        for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
        for (int64_t i = 0; i < n; i++) {
            int64_t base = (i / (L * inner)) * L * inner + i % inner;
            long double m = -INFINITY, s = 0;
            for (int64_t j = 0; j < L; j++) m = fmaxl(m, at_ld(x, base + j * inner));
            for (int64_t j = 0; j < L; j++) s += expl(at_ld(x, base + j * inner) - m);
            cd[i] = expl(at_ld(x, i) - m) / s;
        }
    } else if (!strcmp(op, "scale") || !strcmp(op, "relu") || !strcmp(op, "gelu") || !strcmp(op, "silu") ||
               !strcmp(op, "swiglu")) {
        for (int64_t i = 0; i < n; i++) {
            long double v = at_ld(x, i);
            if (!strcmp(op, "scale")) v *= (long double)p->factor;
            else if (!strcmp(op, "relu")) v = v > 0 ? v : 0;
            else if (!strcmp(op, "gelu")) v = ld_gelu(v, p->gelu_tanh);
            else if (!strcmp(op, "silu")) v = ld_silu(v, 0);
            else v = ld_silu(v, 0) * at_ld(in[1], i);
            cd[i] = fabsl(v);
        }
    } else if (!strcmp(op, "gated_residual")) {
        for (int64_t i = 0; i < n; i++)
            cd[i] = fabsl(at_ld(x, i)) + fabsl(at_bcast(in[1], x->ndim, x->shape, i) * at_ld(in[2], i));
    } else if (!strcmp(op, "rmsnorm") || !strcmp(op, "layernorm") || !strcmp(op, "groupnorm")) {
        int gn = !strcmp(op, "groupnorm"), cl = gn && p->channels_last;
        int64_t C = gn ? x->shape[cl ? 2 : 1] : x->shape[x->ndim - 1], Lg = gn ? x->shape[cl ? 1 : 2] : 1;
        int64_t G = gn ? p->groups : 1;
        for (int64_t i = 0; i < n; i++) {
            /* the set of i: its row (rms/layer), or its batch and group */
            int64_t ch, b = 0, g = 0, cnt = 0;
            long double s1 = 0, s2 = 0, mu, var, sd, w, v, cv;
            if (gn) {
                b = i / (C * Lg);
                ch = cl ? i % C : (i / Lg) % C;
                g = ch / (C / G);
                for (int64_t cc = g * (C / G); cc < (g + 1) * (C / G); cc++)
                    for (int64_t l = 0; l < Lg; l++) {
                        long double t = at_ld(x, cl ? (b * Lg + l) * C + cc : (b * C + cc) * Lg + l);
                        s1 += t;
                        s2 += t * t;
                        cnt++;
                    }
            } else {
                int64_t r = i / C;
                ch = i % C;
                for (int64_t k = 0; k < C; k++) {
                    long double t = at_ld(x, r * C + k);
                    s1 += t;
                    s2 += t * t;
                    cnt++;
                }
            }
            w = in[1] ? at_ld(in[1], ch) : 1.0L;
            if (!strcmp(op, "rmsnorm")) {
                v = at_ld(x, i) / sqrtl(s2 / (long double)cnt + (long double)p->eps) * w;
                cv = fabsl(v);
            } else {
                mu = s1 / (long double)cnt;
                var = s2 / (long double)cnt - mu * mu;
                sd = sqrtl(var + (long double)p->eps);
                v = (at_ld(x, i) - mu) / sd * w;
                cv = (fabsl(at_ld(x, i)) + fabsl(mu)) / sd * fabsl(w);
                if (in[2]) {
                    v += at_ld(in[2], ch);
                    cv += fabsl(at_ld(in[2], ch));
                }
                if (!gn && p->modulate) {
                    long double sh = at_bcast(in[3], x->ndim, x->shape, i), sc = at_bcast(in[4], x->ndim, x->shape, i);
                    v = v * (1.0L + sc) + sh;
                    cv = cv * (1.0L + fabsl(sc)) + fabsl(sh);
                }
            }
            cd[i] = p->silu ? ld_chain(ld_silu, 0, v, cv) : cv;
        }
    } else if (!strcmp(op, "attention") || !strcmp(op, "linear_attention")) {
        int r = x->ndim;
        int64_t S = x->shape[r - 2], D = x->shape[r - 1], T = in[1]->shape[r - 2], E = in[2]->shape[r - 1];
        long double sc = p->attn_scale > 0 ? (long double)p->attn_scale : 1.0L / sqrtl((long double)D);
        for (int64_t i = 0; i < n; i++) {
            int64_t h = i / (S * E), q = (i / E) % S, e = i % E, tend = p->causal ? (q + 1 < T ? q + 1 : T) : T;
            long double m = -INFINITY, z = 0, a = 0, s[64];
            ck_assert_int_le(T, 64);
            if (!strcmp(op, "attention")) {
                for (int64_t j = 0; j < tend; j++) {
                    s[j] = 0;
                    for (int64_t d = 0; d < D; d++) s[j] += at_ld(x, (h * S + q) * D + d) * at_ld(in[1], (h * T + j) * D + d);
                    s[j] *= sc;
                    m = fmaxl(m, s[j]);
                }
                for (int64_t j = 0; j < tend; j++) z += expl(s[j] - m);
                for (int64_t j = 0; j < tend; j++) a += expl(s[j] - m) / z * fabsl(at_ld(in[2], (h * T + j) * E + e));
            } else {
                for (int64_t j = 0; j < T; j++) {
                    long double wj = 0;
                    for (int64_t d = 0; d < D; d++)
                        wj += fmaxl(at_ld(x, (h * S + q) * D + d), 0) * fmaxl(at_ld(in[1], (h * T + j) * D + d), 0);
                    a += wj * fabsl(at_ld(in[2], (h * T + j) * E + e));
                    z += wj;
                }
                a /= z + (long double)p->eps;
            }
            cd[i] = a;
        }
    } else {
        ck_abort_msg("no direct condition scale for op %s", op);
    }
}

/* The oracle's condition scale agrees with the direct sums of |terms| to
 * 1e-3 relative (it needs a few bits: the fp32 GEMM of |x| |w| is good to
 * gamma_K of fp32), and it is at least |value| up to that; quantize has
 * none. A cond off by a factor 2 (one binade) fails this; the GEMMs' and
 * GELUs' agree to 3e-7, the rest to 1e-12 or better. */
START_TEST(test_op_cond)
{
    const op_case *c = &op_cases[_i];
    const adm_op *op = adm_op_find(c->op);
    adm_op_params p;
    adm_tensor t[5];
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
    adm_oracle *o;
    adm_oracle_result r;
    long double *cd;
    double worst = 0;
    int64_t n;
    memset(t, 0, sizeof t);
    ck_assert_int_eq(adm_op_params_parse(op, c->params, &p), ADM_OK);
    for (int i = 0; i < c->n; i++) {
        if (c->ndim[i] == 0) continue;
        make_input(c, i, &t[i], (uint64_t)_i + 100);
        in[i] = &t[i];
    }
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &r) == ADM_OK, "%s", adm_error_message());
    n = adm_tensor_numel(&r.value);
    if (!strcmp(c->op, "quantize")) {
        ck_assert_int_eq(r.has_cond, 0);
        ck_assert_ptr_null(r.cond.data);
    } else {
        const double *v = r.value.data, *cc = r.cond.data;
        ck_assert_int_eq(r.has_cond, 1);
        ck_assert_int_eq(r.cond.dtype, ADM_FP64);
        ck_assert_int_eq(r.cond.ndim, r.value.ndim);
        cd = malloc(sizeof *cd * (size_t)n);
        cond_direct(c, &p, in, &r.value, cd);
        for (int64_t i = 0; i < n; i++) {
            double want = (double)cd[i], rel;
            if (!isfinite(v[i])) continue;
            ck_assert_msg(isfinite(cc[i]) && cc[i] >= 0, "%s element %lld: cond %g", c->name, (long long)i, cc[i]);
            /* below 2^-1000 fp64 itself underflows (a GELU tail evaluates to 0) */
            rel = want > 0x1p-1000 ? fabs(cc[i] - want) / want : (cc[i] <= 0x1p-1000 ? 0 : 1);
            worst = fmax(worst, rel);
            ck_assert_msg(rel <= 1e-3, "%s element %lld: cond %.17g, the direct sum of |terms| %.17g (value %g)",
                          c->name, (long long)i, cc[i], want, v[i]);
            ck_assert_msg(cc[i] >= fabs(v[i]) * (1 - 1e-3), "%s element %lld: cond %g below |value| %g", c->name,
                          (long long)i, cc[i], v[i]);
        }
        free(cd);
    }
    printf("%-26s cond against the direct sums of |terms| over %lld elements: worst relative difference %.3g\n",
           c->name, (long long)n, worst);
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    for (int i = 0; i < 5; i++) adm_tensor_free(&t[i]);
}
END_TEST

/* The condition scale at the edges: NaN and Inf inputs leave it finite
 * wherever the value is finite (a row of Infs only where the value is not),
 * an empty input gives an empty scale, and a cancelling sum gets the sum
 * of magnitudes, not its tiny value. */
START_TEST(test_cond_special)
{
    const adm_op *lin = adm_op_find("linear"), *rs = adm_op_find("row_sum"), *q = adm_op_find("quantize");
    adm_op_params p;
    adm_tensor x, w, e;
    int64_t xs[2] = {3, 4}, ws[2] = {2, 4}, es[2] = {0, 4};
    double xv[12] = {1, -1, 2, -2, NAN, 1, 1, 1, 0.5, 0.5, INFINITY, 0.5}, wv[8] = {1, 1, 1, 1, 0.5, 0.25, 0, 1};
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, NULL};
    adm_oracle *o;
    adm_oracle_result r;
    const double *v, *c;
    ck_assert_int_eq(adm_tensor_from_f64(&x, ADM_BF16, 2, xs, xv, ADM_RNE, 0), ADM_OK);
    ck_assert_int_eq(adm_tensor_from_f64(&w, ADM_BF16, 2, ws, wv, ADM_RNE, 0), ADM_OK);
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(lin, "{}", &p), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, lin, &p, in, &r), ADM_OK);
    v = r.value.data;
    c = r.cond.data;
    /* row 0 cancels to 0 against w row 0: cond 6; against row 1: 0.5 - 0.25 + 0 - 2 */
    ck_assert(v[0] == 0 && c[0] == 6.0);
    ck_assert(v[1] == -1.75 && c[1] == 2.75);
    ck_assert(isnan(v[2]) && isnan(v[3]));
    /* Inf times the 0 weight is NaN in the value; the other output is +Inf */
    ck_assert(isnan(v[5]) && isinf(v[4]));
    adm_oracle_result_free(&r);
    ck_assert_int_eq(adm_tensor_from_f64(&e, ADM_BF16, 2, es, xv, ADM_RNE, 0), ADM_OK);
    in[0] = &e;
    ck_assert_int_eq(adm_oracle_eval(o, lin, &p, in, &r), ADM_OK);
    ck_assert_int_eq(r.has_cond, 1);
    ck_assert_int_eq(adm_tensor_numel(&r.cond), 0);
    adm_oracle_result_free(&r);
    in[0] = &x;
    in[1] = NULL;
    ck_assert_int_eq(adm_op_params_parse(rs, "{}", &p), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, rs, &p, in, &r), ADM_OK);
    ck_assert(((double *)r.value.data)[0] == 0 && ((double *)r.cond.data)[0] == 6.0);
    ck_assert(isnan(((double *)r.value.data)[1]));
    adm_oracle_result_free(&r);
    ck_assert_int_eq(adm_op_params_parse(q, "{\"scheme\":\"fp8_e4m3_row\"}", &p), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, q, &p, in, &r), ADM_OK);
    ck_assert_int_eq(r.has_cond, 0);
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&e);
}
END_TEST

/* A deliberately wrong (halved) bound is caught: row_sum of 1 followed by
 * 2^-53's, each of which a running sum rounds away, has an error of n-1
 * units against a bound of about n+1: the checks pass the real bound and
 * reject half of it. */
START_TEST(test_halved_bound)
{
    const adm_op *op = adm_op_find("row_sum");
    adm_op_params p;
    adm_tensor x;
    int64_t shape[2] = {3, 200};
    double v[600], worst;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x};
    adm_oracle *o;
    adm_oracle_result r;
    for (int i = 0; i < 600; i++) v[i] = (i % 200 == 0) ? 1.0 : 0x1p-53;
    ck_assert_int_eq(adm_tensor_from_f64(&x, ADM_FP32, 2, shape, v, ADM_RNE, 0), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(op, "{}", &p), ADM_OK);
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &r), ADM_OK);
    ck_assert_int_eq(violations(op, &p, in, &r, 1.0, &worst), 0);
    ck_assert_msg(worst > 0.9, "the adversarial sum reaches only %g of its bound", worst);
    ck_assert_int_eq(violations(op, &p, in, &r, 0.5, &worst), 3);
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    adm_tensor_free(&x);
}
END_TEST

/* Elements not sharp enough for the scale to resolve are recomputed with
 * MPFR (GEMMs first try the sharper |x||w| bound); an impossible scale is
 * refused rather than judged bluntly. */
START_TEST(test_sharpness)
{
    const adm_op *op = adm_op_find("linear+gelu");
    adm_op_params p;
    adm_tensor x, w;
    int64_t xs[2] = {4, 32}, ws[2] = {3, 32};
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, NULL};
    adm_oracle_config cfg;
    adm_oracle *o;
    adm_oracle_result r;
    double worst;
    ck_assert_int_eq(adm_synth_gaussian(5, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(6, 0.2, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(op, "{\"approximate\":\"tanh\"}", &p), ADM_OK);
    adm_oracle_config_default(&cfg);
    cfg.resolve_scale = 1e-3; /* a bf16 output's rounding: nothing to refine */
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &r), ADM_OK);
    ck_assert_int_eq(r.mpfr_refined, 0);
    ck_assert(r.max_bound < 1e-12);
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    cfg.resolve_scale = 1e-13; /* below the fp64 bounds: MPFR must step in */
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &r), ADM_OK);
    ck_assert_int_gt(r.mpfr_refined, 0);
    ck_assert_msg(r.max_bound <= 1e-16, "max bound %g after refinement", r.max_bound);
    ck_assert_int_eq(violations(op, &p, in, &r, 1.0, &worst), 0);
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    cfg.resolve_scale = 1e-300; /* no double resolves that */
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &r), ADM_ERR_RANGE);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "cannot be resolved"));
    adm_oracle_free(o);
    /* bad configurations and inputs */
    cfg.resolve_scale = -1;
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_ERR_INVALID);
    {
        adm_tensor xd;
        double v[128] = {0};
        const adm_tensor *in2[ADM_OP_MAX_INPUTS] = {&xd, &w, NULL};
        ck_assert_int_eq(adm_tensor_from_f64(&xd, ADM_FP64, 2, xs, v, ADM_RNE, 0), ADM_OK);
        ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
        ck_assert_int_eq(adm_oracle_eval(o, op, &p, in2, &r), ADM_ERR_DTYPE);
        ck_assert_ptr_nonnull(strstr(adm_error_message(), "exact in fp64"));
        {
            adm_tensor wt;
            in2[1] = &x; /* [4, 32] as w: K fits, N = 4 */
            ck_assert_int_eq(adm_tensor_transpose(&w, 0, 1, &wt), ADM_OK);
            in2[0] = &wt; /* [32, 3] against w [4, 32]: K mismatch */
            ck_assert_int_eq(adm_oracle_eval(o, op, &p, in2, &r), ADM_ERR_SHAPE);
        }
        adm_tensor_free(&xd);
        adm_oracle_free(o);
    }
    adm_tensor_free(&x);
    adm_tensor_free(&w);
}
END_TEST

/* Strided and broadcast views give the same oracle as contiguous copies. */
START_TEST(test_views)
{
    const adm_op *op = adm_op_find("linear");
    adm_op_params p;
    adm_tensor x, xt, xtt, w;
    int64_t xs[2] = {16, 6}, ws[2] = {5, 16};
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&xtt, &w, NULL};
    adm_oracle *o;
    adm_oracle_result a, b;
    ck_assert_int_eq(adm_synth_gaussian(9, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(10, 1.0, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_tensor_transpose(&x, 0, 1, &xt), ADM_OK); /* [6, 16], strided */
    xtt = xt;
    ck_assert_int_eq(adm_op_params_parse(op, "{}", &p), ADM_OK);
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &a), ADM_OK);
    ck_assert_int_eq(adm_tensor_contiguous(&xt, &xtt), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &b), ADM_OK);
    for (int64_t i = 0; i < 30; i++) {
        ck_assert(((double *)a.value.data)[i] == ((double *)b.value.data)[i]);
        ck_assert(((double *)a.bound.data)[i] == ((double *)b.bound.data)[i]);
    }
    adm_oracle_result_free(&a);
    adm_oracle_result_free(&b);
    adm_tensor_free(&xtt);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_oracle_free(o);
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
    tcase_add_test(tc, test_halved_bound);
    tcase_add_test(tc, test_sharpness);
    tcase_add_test(tc, test_views);
    tcase_add_test(tc, test_cond_special);
    suite_add_tcase(s, tc);
    tc = tcase_create("Cond");
    tcase_add_loop_test(tc, test_op_cond, 0, (int)(sizeof op_cases / sizeof op_cases[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("Elementwise");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_scalar_exhaustive, 0, 3);
    tcase_add_loop_test(tc, test_scalar_random, 0, 3);
    tcase_add_test(tc, test_lipschitz);
    suite_add_tcase(s, tc);
    tc = tcase_create("MPFR");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_op_mpfr, 0, (int)(sizeof op_cases / sizeof op_cases[0]));
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
