/* oracle: the op catalog's parameters and shape rules. */
#include "adm_oracle.h"
#include "adm_capture.h"
#include "oracle_internal.h"
#include "widen.h"

#include <check.h>
#include <float.h>
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

/* ------------------------------------------------------------ exact references */

/* Everything below checks the oracle against references it does not
 * share code with: exact rationals (GMP mpq, built here from the inputs)
 * for the sums and GEMMs, and the MPFR evaluator's enclosures (interval
 * arithmetic, oracle/mpfr_eval.c) for the rest, at two precisions. The
 * checks have no slack: an fp64 value v with bound b fails as soon as the
 * exact value provably lies outside [v - b, v + b]. */

#include "oracle_internal.h" /* the test copy of the oracle exposes its internals */

#include <gmp.h>

#define P_HI 256 /* the precisions of the two enclosures */
#define P_LO 96

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double uniform(uint64_t *s) { return (double)(rng(s) >> 11) * 0x1p-53; }

typedef struct tctx {
    adm_o_ctx c;
    int64_t shape[ADM_MAX_DIMS];
} tctx;

/* The evaluation context oracle.c would make, for the MPFR evaluator. */
static void make_tctx(const adm_op *op, const adm_op_params *p, const adm_tensor *const *in, tctx *t)
{
    adm_op_shapes s;
    int ndim = 0;
    memset(t, 0, sizeof *t);
    memset(&s, 0, sizeof s);
    for (int i = 0; i < adm_op_input_count(op); i++) {
        if (!in[i]) continue;
        s.present[i] = 1;
        s.ndim[i] = in[i]->ndim;
        memcpy(s.shape[i], in[i]->shape, sizeof(int64_t) * (size_t)in[i]->ndim);
    }
    ck_assert_int_eq(adm_op_output_shape(op, p, &s, &ndim, t->shape), ADM_OK);
    t->c.op = op;
    t->c.p = p;
    t->c.in = in;
    t->c.ndim = ndim;
    t->c.shape = t->shape;
    ck_assert_int_eq(adm_shape_numel(ndim, t->shape, &t->c.numel), ADM_OK);
    t->c.threads = 1;
}

/* 1 when the exact value provably lies outside [v - b, v + b]:
 * v + b < lo or v - b > hi, both sums exact at 2200 bits. */
static int outside(double v, double b, const adm_o_iv *y)
{
    mpfr_t s;
    int out;
    if (isinf(b)) return 0;
    mpfr_init2(s, 2200);
    mpfr_set_d(s, v, MPFR_RNDN);
    mpfr_add_d(s, s, b, MPFR_RNDN);
    out = mpfr_less_p(s, y->lo);
    mpfr_set_d(s, v, MPFR_RNDN);
    mpfr_sub_d(s, s, b, MPFR_RNDN);
    out |= mpfr_greater_p(s, y->hi);
    mpfr_clear(s);
    return out;
}

/* The largest |v - exact| the enclosure allows, rounded up. */
static double err_up(double v, const adm_o_iv *y)
{
    mpfr_t d;
    double e;
    mpfr_init2(d, 64);
    mpfr_sub_d(d, y->hi, v, MPFR_RNDU);
    e = mpfr_get_d(d, MPFR_RNDU);
    mpfr_d_sub(d, v, y->lo, MPFR_RNDU);
    e = fmax(e, mpfr_get_d(d, MPFR_RNDU));
    mpfr_clear(d);
    return e;
}

/* (hi - lo) / b rounded up, in MPFR's exponent range (no underflow) */
static double width_ratio(const adm_o_iv *y, double b)
{
    mpfr_t d;
    double w;
    mpfr_init2(d, 64);
    mpfr_sub(d, y->hi, y->lo, MPFR_RNDU);
    mpfr_div_d(d, d, b, MPFR_RNDU);
    w = mpfr_get_d(d, MPFR_RNDU);
    mpfr_clear(d);
    return w;
}

static int enclosure(const adm_op *op, const adm_op_params *p, const adm_tensor *const *in, int64_t i, adm_o_iv *y)
{
    tctx t;
    make_tctx(op, p, in, &t);
    return adm_o_mpfr_element(&t.c, i, y) == ADM_OK;
}

static int is_op(const adm_op *op, const char *name) { return strcmp(adm_op_name(op), name) == 0; }

/* The exact value of an element of a sum-like op as a rational, built
 * here from the definitions (independently of oracle/exact.c); 0 when the
 * op is not one or an input is not finite. */
static int exact_q(const adm_op *op, const adm_op_params *p, const adm_tensor *const *in, int64_t i, mpq_t q)
{
    mpq_t a, b;
    int ok = 1;
    int64_t K, N;
    mpq_set_ui(q, 0, 1);
    mpq_inits(a, b, (mpq_ptr)0);
#define ACC(prod_a, prod_b)                                                  \
    do {                                                                     \
        double fa_ = (prod_a), fb_ = (prod_b);                               \
        if (!isfinite(fa_) || !isfinite(fb_)) { ok = 0; break; }             \
        mpq_set_d(a, fa_);                                                   \
        mpq_set_d(b, fb_);                                                   \
        mpq_mul(a, a, b);                                                    \
        mpq_add(q, q, a);                                                    \
    } while (0)
    if (is_op(op, "matmul")) {
        K = in[0]->shape[1];
        N = in[1]->shape[1];
        for (int64_t k = 0; k < K && ok; k++) ACC(adm_tensor_get(in[0], i / N * K + k), adm_tensor_get(in[1], k * N + i % N));
    } else if (is_op(op, "linear")) {
        K = in[1]->shape[1];
        N = in[1]->shape[0];
        for (int64_t k = 0; k < K && ok; k++) ACC(adm_tensor_get(in[0], i / N * K + k), adm_tensor_get(in[1], i % N * K + k));
        if (in[2] && ok) ACC(adm_tensor_get(in[2], i % N), 1.0);
    } else if (is_op(op, "row_sum") || is_op(op, "mean_sq")) {
        int axis = p->axis < 0 ? p->axis + in[0]->ndim : p->axis;
        int64_t outer = 1, n = in[0]->shape[axis], inner = 1;
        for (int d = 0; d < in[0]->ndim; d++) {
            if (d < axis) outer *= in[0]->shape[d];
            if (d > axis) inner *= in[0]->shape[d];
        }
        (void)outer;
        for (int64_t j = 0; j < n && ok; j++) {
            double v = adm_tensor_get(in[0], i / inner * n * inner + j * inner + i % inner);
            ACC(v, is_op(op, "mean_sq") ? v : 1.0);
        }
        if (is_op(op, "mean_sq")) {
            mpq_set_ui(a, 1, (unsigned long)n);
            mpq_mul(q, q, a);
        }
    } else if (is_op(op, "gated_residual")) {
        adm_tensor g;
        int64_t ndim = in[0]->ndim;
        ck_assert_int_eq(adm_tensor_broadcast(in[1], (int)ndim, in[0]->shape, &g), ADM_OK);
        ACC(adm_tensor_get(in[0], i), 1.0);
        if (ok) ACC(adm_tensor_get(&g, i), adm_tensor_get(in[2], i));
    } else {
        ok = 0;
    }
#undef ACC
    mpq_clears(a, b, (mpq_ptr)0);
    return ok;
}

/* |v - q| > b, exactly */
static int outside_q(double v, double b, const mpq_t q)
{
    mpq_t d, bq;
    int out;
    if (!isfinite(v) || isinf(b)) return !isfinite(v) && !isinf(b);
    mpq_inits(d, bq, (mpq_ptr)0);
    mpq_set_d(d, v);
    mpq_sub(d, d, q);
    mpq_abs(d, d);
    mpq_set_d(bq, b);
    out = mpq_cmp(d, bq) > 0;
    mpq_clears(d, bq, (mpq_ptr)0);
    return out;
}

typedef struct tally {
    int64_t n, outside;  /* elements checked; fp64 elements provably outside their bound */
    double worst;        /* max |v - exact| / bound (upper estimate) */
    double finest;       /* max over elements of (hi - lo at P_LO bits) / bound: the enclosure's resolution */
} tally;

/* Checks every element of r against the exact rational (sum-like ops) and
 * the enclosures at P_HI and P_LO bits; the evaluator's own consistency is
 * asserted (the two enclosures overlap and hold the exact rational). */
static void check_result(const adm_op *op, const adm_op_params *p, const adm_tensor *const *in,
                         const adm_oracle_result *r, tally *t)
{
    int64_t n = adm_tensor_numel(&r->value);
    adm_o_iv hi, lo;
    mpq_t q;
    adm_o_iv_init(&hi, P_HI);
    adm_o_iv_init(&lo, P_LO);
    mpq_init(q);
    for (int64_t i = 0; i < n; i++) {
        double v = ((double *)r->value.data)[i], b = ((double *)r->bound.data)[i];
        int has_q = exact_q(op, p, in, i, q);
        ck_assert(enclosure(op, p, in, i, &hi) && enclosure(op, p, in, i, &lo));
        t->n++;
        if (mpfr_nan_p(hi.lo)) {
            ck_assert_msg(mpfr_nan_p(lo.lo), "%s element %lld: NaN at %d bits only", adm_op_name(op), (long long)i, P_HI);
            if (!isnan(v)) t->outside++;
            continue;
        }
        /* the evaluator: its enclosures at two precisions overlap, and hold the exact rational */
        ck_assert_msg(mpfr_lessequal_p(hi.lo, lo.hi) && mpfr_lessequal_p(lo.lo, hi.hi),
                      "%s element %lld: the enclosures at %d and %d bits are disjoint", adm_op_name(op), (long long)i,
                      P_HI, P_LO);
        if (has_q) {
            mpfr_t f;
            mpfr_init2(f, P_HI);
            mpfr_set_q(f, q, MPFR_RNDD);
            ck_assert_msg(mpfr_lessequal_p(hi.lo, f), "%s element %lld: the enclosure misses the exact value",
                          adm_op_name(op), (long long)i);
            mpfr_set_q(f, q, MPFR_RNDU);
            ck_assert_msg(mpfr_lessequal_p(f, hi.hi), "%s element %lld: the enclosure misses the exact value",
                          adm_op_name(op), (long long)i);
            mpfr_clear(f);
            if (outside_q(v, b, q)) t->outside++;
        }
        if (isnan(v)) {
            t->outside++;
            continue;
        }
        if (isinf(v) || mpfr_inf_p(hi.lo) || mpfr_inf_p(hi.hi)) {
            if (!(mpfr_inf_p(hi.lo) && mpfr_equal_p(hi.lo, hi.hi) && v == mpfr_get_d(hi.lo, MPFR_RNDN)) && !isinf(b))
                t->outside++;
            continue;
        }
        if (!has_q && outside(v, b, &hi)) {
            t->outside++;
            if (t->outside <= 3 && !adm_o_mutant.op)
                mpfr_printf("%s element %lld: %a with bound %g, exact in [%.20Rg, %.20Rg]\n", adm_op_name(op),
                            (long long)i, v, b, hi.lo, hi.hi);
        }
        if (b > 0) {
            if (b > ldexp(fabs(v), -60)) t->worst = fmax(t->worst, err_up(v, &hi) / b);
            /* the enclosure must resolve the bound, where the bound is
             * not itself below what P_LO bits resolve (gelu's |x| 2^-1000
             * where exp underflows: checked at P_HI, one-sided) */
            if (b > ldexp(fabs(v), -60)) t->finest = fmax(t->finest, width_ratio(&lo, b));
        } else if (!mpfr_equal_p(hi.lo, hi.hi) || mpfr_get_d(hi.lo, MPFR_RNDN) != v) {
            t->outside++; /* exact claimed */
        }
    }
    mpq_clear(q);
    adm_o_iv_clear(&hi);
    adm_o_iv_clear(&lo);
}

/* ------------------------------------------------------------ scalar functions */

typedef double (*scalar_fn)(double, double *);
typedef void (*scalar_iv)(adm_o_iv *, const adm_o_iv *);
static const struct { const char *name; scalar_fn f; scalar_iv m; } scalars[] = {
    {"gelu_tanh", adm_o_gelu_tanh, adm_o_gelu_tanh_iv},
    {"gelu_erf", adm_o_gelu_erf, adm_o_gelu_erf_iv},
    {"silu", adm_o_silu, adm_o_silu_iv},
};

/* |f(x) - exact| <= err, exact enclosed by MPFR at P_HI bits; returns the
 * ratio |error| / err (upper estimate), and fails past 1. */
static double check_scalar(int fi, double x, adm_o_iv *mx, adm_o_iv *my)
{
    double err, v = scalars[fi].f(x, &err);
    adm_o_iv_set_d(mx, x);
    scalars[fi].m(my, mx);
    if (isnan(v) || mpfr_nan_p(my->lo)) {
        ck_assert_msg(isnan(x) && isnan(v) && mpfr_nan_p(my->lo), "%s(%a) = %a", scalars[fi].name, x, v);
        return 0;
    }
    ck_assert_msg(!outside(v, err, my), "%s(%a) = %a: the exact value lies outside its bound %g (libm %+d)",
                  scalars[fi].name, x, v, err, adm_o_libm_worst);
    if (mpfr_inf_p(my->lo) || mpfr_inf_p(my->hi)) return 0;
    return err > 0 ? err_up(v, my) / err : 0;
}

START_TEST(test_scalar_exhaustive)
{
    adm_o_iv mx, my;
    double worst[2] = {0, 0};
    adm_o_iv_init(&mx, 64);
    adm_o_iv_init(&my, P_HI);
    for (uint32_t b = 0; b < 65536; b++) {
        worst[0] = fmax(worst[0], check_scalar(_i, adm_bf16_to_f32((uint16_t)b), &mx, &my));
        worst[1] = fmax(worst[1], check_scalar(_i, adm_fp16_to_f32((uint16_t)b), &mx, &my));
    }
    printf("%s: all bf16 inputs, worst error/bound %.3g; all fp16 inputs, %.3g\n", scalars[_i].name, worst[0],
           worst[1]);
    adm_o_iv_clear(&mx);
    adm_o_iv_clear(&my);
}
END_TEST

/* Random fp32 patterns and doubles in the range that matters, with libm
 * as it is and with the worst results its assumption allows on either
 * side: the bounds must hold for any libm within the assumption. */
START_TEST(test_scalar_random)
{
    adm_o_iv mx, my;
    uint64_t s = 88172645463325252ull + (uint64_t)_i;
    double worst[3] = {0, 0, 0};
    int f = _i % 3, mode = _i / 3; /* libm as is, worst above, worst below */
    adm_o_iv_init(&mx, 64);
    adm_o_iv_init(&my, P_HI);
    adm_o_libm_worst = mode == 0 ? 0 : mode == 1 ? 1 : -1;
    for (int i = 0; i < 10000; i++) {
        uint64_t r = rng(&s);
        double x = (i & 1) ? (double)adm_f32_from_bits((uint32_t)r)
                           : ldexp((double)(r >> 11) * 0x1p-53 * 2.0 - 1.0, (int)(rng(&s) % 24) - 12);
        worst[mode] = fmax(worst[mode], check_scalar(f, x, &mx, &my));
    }
    adm_o_libm_worst = 0;
    printf("%s, libm %s: 10000 random fp32/fp64 inputs, worst error/bound %.3g\n", scalars[f].name,
           mode == 0 ? "as is" : mode == 1 ? "worst above" : "worst below", worst[mode]);
    adm_o_iv_clear(&mx);
    adm_o_iv_clear(&my);
}
END_TEST

/* The Lipschitz constants used to propagate an input's error through
 * GELU (linear+gelu) and SiLU (groupnorm+silu): sup |f'| on a fine grid,
 * with the slope over each step (the mean value theorem: a slope over a
 * step is f' somewhere in it), stays below them. */
START_TEST(test_lipschitz)
{
    double worst[3] = {0, 0, 0};
    static const double limit[3] = {ADM_GELU_LIPSCHITZ, ADM_GELU_LIPSCHITZ, ADM_SILU_LIPSCHITZ};
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

/* ------------------------------------------------------------ the libm assumption */

/* |r - f| in ulps of f's binade (glibc's measure; 2^-1074 below the
 * normal range), rounded up. */
static double ulps(double r, const mpfr_t f)
{
    mpfr_t d;
    mpfr_exp_t e;
    double u;
    if (mpfr_zero_p(f)) return ldexp(fabs(r), 1074);
    e = mpfr_get_exp(f) - 53;
    if (e < -1074) e = -1074;
    mpfr_init2(d, 128);
    mpfr_sub_d(d, f, r, MPFR_RNDA);
    mpfr_abs(d, d, MPFR_RNDU);
    mpfr_div_2si(d, d, e, MPFR_RNDU);
    u = mpfr_get_d(d, MPFR_RNDU);
    mpfr_clear(d);
    return u;
}

/* Hard-to-round inputs of exp from the worst cases found by Lefevre and
 * Muller's searches (as listed by the CORE-MATH project, binary64 exp):
 * exp(x) lies within 2^-45 ulp of a rounding boundary. */
static const double exp_hard[] = {
    0x1.0122ef37212ebp-1, 0x1.00d48a707b93ep-1, -0x1.62c9fc0dcbdb5p+9, -0x1.5b3e4e2e3bba9p+9,
    -0x1.4ea04cbfc458ap+8, -0x1.671e26a8abff2p+9, -0x1.93fc7d5587af9p+5, -0x1.4f00000000037p-46,
};

/* More hard cases, built: for a small x, exp(x) = 1 + x + x^2/2 + x^3/6 +
 * ..., so the double nearest m - x^2/2 - x^3/6, m a midpoint 1 + (j + 1/2)
 * 2^-52, has exp within about 2^-30 ulp of m; likewise erfc(x) = 1 -
 * (2/sqrt(pi)) (x - x^3/3 + ...) near 0. */
static double built_hard(int fn, int j)
{
    /* target: exp(x) = 1 + m or erfc(x) = 1 - m, midpoints between the
     * doubles above 1 (spaced 2^-52) and below (2^-53) */
    double m = fn == 0 ? (j + 0.5) * 0x1p-52 : (j + 0.25) * 0x1p-52;
    mpfr_t x, t, f;
    double r;
    mpfr_inits2(200, x, t, f, (mpfr_ptr)0);
    /* solve f(x) = 1 +- m by Newton at 200 bits, then round x to double */
    mpfr_set_d(x, fn == 0 ? m : -m * 0.886, MPFR_RNDN);
    for (int it = 0; it < 60; it++) {
        if (fn == 0) {
            mpfr_exp(f, x, MPFR_RNDN); /* f' = f */
            mpfr_sub_ui(t, f, 1, MPFR_RNDN);
            mpfr_sub_d(t, t, m, MPFR_RNDN);
            mpfr_div(t, t, f, MPFR_RNDN);
        } else {
            mpfr_erfc(f, x, MPFR_RNDN);
            mpfr_sub_ui(t, f, 1, MPFR_RNDN);
            mpfr_add_d(t, t, m, MPFR_RNDN);
            /* erfc' = -2/sqrt(pi) e^-x^2 */
            mpfr_sqr(f, x, MPFR_RNDN);
            mpfr_neg(f, f, MPFR_RNDN);
            mpfr_exp(f, f, MPFR_RNDN);
            mpfr_mul_d(f, f, -1.1283791670955126, MPFR_RNDN);
            mpfr_div(t, t, f, MPFR_RNDN);
        }
        mpfr_sub(x, x, t, MPFR_RNDN);
    }
    r = mpfr_get_d(x, MPFR_RNDN);
    mpfr_clears(x, t, f, (mpfr_ptr)0);
    return r;
}

/* The libm assumption (oracle/scalar_fns.h) holds on this machine's libm:
 * exp within ADM_LIBM_EXP_ULP and erfc within ADM_LIBM_ERFC_ULP ulps, on
 * the hard cases, on every bf16 and fp16 input, and on dense samples of
 * the ranges the oracle calls them in (exp: its arguments down to -746,
 * the underflow, up to the overflow; erfc: -x/sqrt 2 for x over the fp32
 * range, so all of its non-trivial range). */
START_TEST(test_libm)
{
    int fn = _i; /* 0 exp, 1 erfc */
    double lim = fn == 0 ? ADM_LIBM_EXP_ULP : ADM_LIBM_ERFC_ULP, worst = 0, worst_x = 0, hard_worst = 0;
    double lo = fn == 0 ? -746 : -6, hi = fn == 0 ? 710 : 28;
    int64_t n = 0;
    uint64_t s = 0x2545f4914f6cdd1dull + (uint64_t)fn;
    mpfr_t x, f;
    mpfr_inits2(128, x, f, (mpfr_ptr)0);
#define TRY_X(xv, is_hard)                                                   \
    do {                                                                     \
        double x_ = (xv), r_ = fn == 0 ? exp(x_) : erfc(x_), u_;             \
        if (!isfinite(x_)) break;                                            \
        mpfr_set_d(x, x_, MPFR_RNDN);                                        \
        if (fn == 0) mpfr_exp(f, x, MPFR_RNDN);                              \
        else mpfr_erfc(f, x, MPFR_RNDN);                                     \
        if (mpfr_inf_p(f) || mpfr_get_exp(f) > 1024) { ck_assert(isinf(r_) || r_ == DBL_MAX); break; } \
        u_ = ulps(r_, f);                                                    \
        n++;                                                                 \
        if (is_hard) hard_worst = fmax(hard_worst, u_);                      \
        if (u_ > worst) { worst = u_; worst_x = x_; }                        \
        ck_assert_msg(u_ <= lim, "%s(%a) = %a is %.3f ulp off (assumed <= %g)", fn == 0 ? "exp" : "erfc", x_, \
                      r_, u_, lim);                                          \
    } while (0)
    if (fn == 0)
        for (size_t i = 0; i < sizeof exp_hard / sizeof exp_hard[0]; i++) TRY_X(exp_hard[i], 1);
    for (int j = 1; j < 4000; j += 37) TRY_X(built_hard(fn, j), 1);
    for (uint32_t b = 0; b < 65536; b += fn == 0 ? 1 : 2) {
        TRY_X(adm_bf16_to_f32((uint16_t)b), 0);
        TRY_X(adm_fp16_to_f32((uint16_t)b), 0);
    }
    for (int i = 0; i < (fn == 0 ? 100000 : 30000); i++) {
        TRY_X(lo + (hi - lo) * uniform(&s), 0);
        TRY_X((i & 1 ? 1 : -1) * ldexp(1.0 + uniform(&s), -(int)(rng(&s) % 60)), 0);
    }
#undef TRY_X
    printf("%s: %lld inputs (hard-to-round cases worst %.3f ulp), worst %.3f ulp at %a; assumed <= %g\n",
           fn == 0 ? "exp" : "erfc", (long long)n, hard_worst, worst, worst_x, lim);
    mpfr_clears(x, f, (mpfr_ptr)0);
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
    int kind;
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
    {"gelu erf", "gelu", "{}", 1, {2}, {{16, 32}}, {ADM_FP16}, 0},
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
    /* kind 3: built so that the fp64 error approaches the bound (a halved
     * bound is then exceeded): sums whose every addition rounds away
     * almost half an ulp, products just below half an ulp */
    {"row_sum tight", "row_sum", "{}", 1, {2}, {{3, 200}}, {ADM_FP32}, 3},
    {"mean_sq tight", "mean_sq", "{}", 1, {2}, {{3, 200}}, {ADM_FP32}, 3},
    {"matmul tight", "matmul", "{}", 2, {2, 2}, {{3, 2}, {2, 4}}, {ADM_FP32, ADM_FP32}, 3},
    {"linear tight", "linear", "{}", 2, {2, 2}, {{3, 2}, {4, 2}}, {ADM_FP32, ADM_FP32}, 3},
    {"linear+gelu tight", "linear+gelu", "{\"approximate\":\"tanh\"}", 2, {2, 2}, {{3, 2}, {4, 2}},
     {ADM_FP32, ADM_FP32}, 3},
    {"gated_residual tight", "gated_residual", "{}", 3, {2, 2, 2}, {{8, 16}, {8, 1}, {8, 16}},
     {ADM_FP32, ADM_FP32, ADM_FP32}, 3},
    {"softmax tight", "softmax", "{}", 1, {2}, {{3, 200}}, {ADM_FP32}, 3},
    {"rmsnorm tight", "rmsnorm", "{\"eps\":0}", 1, {2}, {{3, 200}}, {ADM_FP32}, 3},
    {"layernorm tight", "layernorm", "{\"eps\":0}", 1, {2}, {{3, 200}}, {ADM_FP32}, 3},
    {"groupnorm tight", "groupnorm", "{\"groups\":1,\"eps\":0}", 1, {3}, {{3, 2, 100}}, {ADM_FP32}, 3},
    {"attention tight", "attention", "{\"scale\":1}", 3, {2, 2, 2}, {{1, 256}, {16, 256}, {16, 2}},
     {ADM_FP32, ADM_FP32, ADM_FP32}, 3},
    {"linear_attention tight", "linear_attention", "{\"eps\":0}", 3, {2, 2, 2}, {{2, 1}, {64, 1}, {64, 2}},
     {ADM_FP32, ADM_FP32, ADM_FP32}, 3},
};
#define N_OP_CASES ((int)(sizeof op_cases / sizeof op_cases[0]))

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
        double g = (uniform(&s) - 0.5) * 3.46;
        if (k % 13 == 5) g *= 8; /* outliers */
        v[k] = g;
        if (c->kind == 1) {
            /* x pairs (a, -a) against w pairs (b, b): products cancel */
            if (k % 2 == 1) v[k] = i == 1 ? v[k - 1] : -v[k - 1];
            if (k % 17 == 3) v[k] = g * 0x1p-20;
        } else if (c->kind == 3) {
            /* t2: t2^2 just below 2^-53 (rounds away on 1); t1: just below
             * half an ulp of 2 when squared (layernorm's +-1 pairs) */
            const double t2 = 0x1.6a09e6p-27, t1 = 0x1.fffffep-27;
            int64_t row = !strcmp(c->op, "groupnorm") ? c->shape[i][1] * c->shape[i][2] : c->shape[i][c->ndim[i] - 1];
            int64_t k0 = k % row;
            if (!strcmp(c->op, "row_sum")) v[k] = k0 == 0 ? 1.0 : 0x1p-53; /* 1 + 2^-53 ties to 1 */
            else if (!strcmp(c->op, "mean_sq") || !strcmp(c->op, "rmsnorm")) v[k] = k0 == 0 ? 1.0 : t2;
            else if (!strcmp(c->op, "softmax")) v[k] = k0 == 0 ? 0.0 : -36.75; /* e^-36.75 < 2^-53 */
            else if (!strcmp(c->op, "layernorm") || !strcmp(c->op, "groupnorm"))
                v[k] = k0 == 0 ? 1.0 : k0 == 1 ? -1.0 : (k0 % 2 ? -t1 : t1);
            else if (!strcmp(c->op, "attention")) {
                /* q (1, 2^-27 ...); k_0's products just below half an ulp
                 * of 1 (its dot rounds 255 u low), k_1..15's just above (255
                 * u high): the scores err apart, the probabilities by ~2 dmax;
                 * v on row 0 only */
                if (i == 0) v[k] = k % 256 ? 0x1p-27 : 1.0;
                else if (i == 1) v[k] = k % 256 == 0 ? 1.0 : k / 256 == 0 ? 0x1.fffffep-27 : 0x1.000002p-26;
                else v[k] = k / 2 == 0 ? 1.0 : 0.0;
            } else if (!strcmp(c->op, "linear_attention")) {
                /* KV's terms just below half an ulp of 1 (rounded away), the
                 * key sum's just above (rounded up): num low, den high */
                if (i == 0) v[k] = 1.0;
                else if (i == 1) v[k] = k == 0 ? 1.0 : 0x1.00001p-53;
                else v[k] = k / 2 == 0 ? 1.0 : 0x1.ffffep-1;
            }
            else if (!strcmp(c->op, "gated_residual")) v[k] = i == 0 ? 1.0 + (double)(k % 5) * 0x1p-20 : i == 1 ? 1.0 : 0x1.fffffep-54;
            else if (!strcmp(c->op, "matmul") || !strcmp(c->op, "linear") || !strcmp(c->op, "linear+gelu")) {
                /* x rows (s, 2^-27), w rows (1, 2^-26 (1 - 2^-23)): s + 2^-53 s (1 - 2^-23)
                 * rounds back to s; s = 1, or 2^10 for GELU's linear range */
                double big = !strcmp(c->op, "linear+gelu") ? 1024.0 : 1.0;
                if (i == 0) v[k] = k % 2 ? 0x1p-27 * big : big;
                else v[k] = (!strcmp(c->op, "matmul") ? k / 4 : k % 2) ? 0x1.fffffep-27 : 1.0;
            }
        } else if (c->kind == 2) {
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

/* Evaluates an op case with the fp64 pass (no refinement) and checks it;
 * libm as is and at either limit of its assumption. */
static void run_case(int ci, int libm, tally *t)
{
    const op_case *c = &op_cases[ci];
    const adm_op *op = adm_op_find(c->op);
    adm_op_params p;
    adm_tensor x[5];
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
    adm_oracle *o;
    adm_oracle_result r;
    ck_assert_ptr_nonnull(op);
    memset(x, 0, sizeof x);
    ck_assert_int_eq(adm_op_params_parse(op, c->params, &p), ADM_OK);
    for (int i = 0; i < c->n; i++) {
        if (c->ndim[i] == 0) continue;
        make_input(c, i, &x[i], (uint64_t)ci);
        in[i] = &x[i];
    }
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    adm_o_libm_worst = libm;
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &r) == ADM_OK, "%s", adm_error_message());
    adm_o_libm_worst = 0;
    ck_assert(r.certified && r.mpfr_refined == 0);
    check_result(op, &p, in, &r, t);
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    for (int i = 0; i < 5; i++) adm_tensor_free(&x[i]);
}

START_TEST(test_op_mpfr)
{
    tally t[3];
    memset(t, 0, sizeof t);
    for (int m = 0; m < 3; m++) run_case(_i, m == 0 ? 0 : m == 1 ? 1 : -1, &t[m]);
    printf("%-26s %lld elements, worst error/bound %.3g (libm at its limits: %.3g, %.3g); enclosure at %d bits "
           "within %.2g of the bound\n",
           op_cases[_i].name, (long long)t[0].n, t[0].worst, t[1].worst, t[2].worst, P_LO, t[0].finest);
    for (int m = 0; m < 3; m++) {
        ck_assert_msg(t[m].outside == 0, "%s: %lld elements outside their bound", op_cases[_i].name,
                      (long long)t[m].outside);
        ck_assert_msg(t[m].finest < 0x1p-30, "%s: the MPFR enclosure at %d bits is only %g of the bound",
                      op_cases[_i].name, P_LO, t[m].finest);
    }
}
END_TEST

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

/* The GEMM's condition scale at shapes that leave every blocking of its
 * bf16 path a remainder (M = 37 rows: 8-row blocks; N = 101: 48-column
 * panels; K = 301: odd, and past one 128-pair pass), with rows of very
 * different magnitudes (the per-row power-of-two scaling), a row whose
 * bf16 values are partly subnormal (scaled up, they count) and a row of
 * zeros: within gamma_K of fp32 (2e-5 at K = 301; 1e-4 asked) of the
 * direct long double sums of |x_ik w_jk| everywhere. A lost pair, pass
 * or row scale fails it; so does a panel that reads past its rows. */
START_TEST(test_cond_gemm_blocks)
{
    const adm_op *lin = adm_op_find("linear");
    adm_op_params p;
    adm_tensor x, w;
    int64_t xs[2] = {37, 301}, ws[2] = {101, 301};
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, NULL};
    adm_oracle *o;
    adm_oracle_result r;
    double worst = 0;
    double *xv = malloc(sizeof *xv * 37 * 301), *wv = malloc(sizeof *wv * 101 * 301);
    uint64_t s = 12345;
    ck_assert(xv && wv);
    for (int64_t i = 0; i < 37 * 301 + 101 * 301; i++) {
        double u;
        s = s * 6364136223846793005u + 1442695040888963407u;
        u = (double)(s >> 11) * 0x1p-53 * 2 - 1; /* uniform in [-1, 1) */
        if (i < 37 * 301) {
            int64_t row = i / 301;
            xv[i] = row == 3 ? ldexp(u, 90) : row == 5 ? ldexp(u, -100) : row == 7 ? ldexp(u, -125) : row == 36 ? 0.0 : u;
        } else {
            int64_t row = (i - 37 * 301) / 301;
            wv[i - 37 * 301] = row == 100 ? ldexp(u, 20) : u * 0.05;
        }
    }
    ck_assert_int_eq(adm_tensor_from_f64(&x, ADM_BF16, 2, xs, xv, ADM_RNE, 0), ADM_OK);
    ck_assert_int_eq(adm_tensor_from_f64(&w, ADM_BF16, 2, ws, wv, ADM_RNE, 0), ADM_OK);
    free(xv);
    free(wv);
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(lin, "{}", &p), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, lin, &p, in, &r), ADM_OK);
    ck_assert_int_eq(r.has_cond, 1);
    for (int64_t i = 0; i < 37; i++)
        for (int64_t j = 0; j < 101; j++) {
            long double d = 0;
            double c = ((const double *)r.cond.data)[i * 101 + j], rel;
            for (int64_t k = 0; k < 301; k++)
                d += fabsl((long double)adm_tensor_get(&x, i * 301 + k) * adm_tensor_get(&w, j * 301 + k));
            rel = d > 0 ? (double)(fabsl((long double)c - d) / d) : c;
            if (rel > worst) worst = rel;
            ck_assert_msg(rel <= 1e-4, "cond[%lld][%lld] = %.17g, the direct sum %.17Lg", (long long)i, (long long)j,
                          c, d);
        }
    printf("GEMM cond at 37 x 301 by 101: worst relative difference %.3g\n", worst);
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
}
END_TEST

/* The GEMM's row norms as oracle/gemm.c derives them: s = add_up(s,
 * mul_up(p, p)) in k order, then sqrt_up, one row at a time with the
 * scalar functions. */
static void row_norms_up(const adm_tensor *t, int64_t rows, int64_t K, double *out)
{
    for (int64_t row = 0; row < rows; row++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++) {
            double v = adm_tensor_get(t, row * K + k);
            s = adm_add_up(s, adm_mul_up(v, v));
        }
        out[row] = adm_sqrt_up(s);
    }
}

/* The GEMM's bound keeps the bits of its derivation (oracle/gemm.c):
 * gamma_(K-1) ||x_i|| ||w_j|| (no bias), each norm the chain s =
 * add_up(s, mul_up(p, p)) in k order then sqrt_up, recomputed here one row
 * at a time with the scalar functions. 21 rows of x (two blocks of the
 * side-by-side chains and a remainder), 11 of w, odd K; zero rows,
 * subnormals, the largest bf16, an Inf and a NaN. */
START_TEST(test_gemm_bound_bits)
{
    const adm_op *lin = adm_op_find("linear");
    enum { M = 21, K = 37, N = 11 };
    int64_t xs[2] = {M, K}, ws[2] = {N, K};
    adm_tensor x, w;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, NULL};
    adm_op_params p;
    adm_oracle *o;
    adm_oracle_result r;
    double nx[M], nw[N], gk = adm_gamma_up(K - 1);
    ck_assert_int_eq(adm_synth_gaussian(31, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(32, 0.2, ADM_BF16, 2, ws, &w), ADM_OK);
    for (int k = 0; k < K; k++) {
        adm_tensor_set_bits(&x, 2 * K + k, 0);  /* a row of zeros: norm 0 */
        adm_tensor_set_bits(&x, 17 * K + k, 1); /* a row of the least subnormal */
        adm_tensor_set_bits(&w, 4 * K + k, k % 2 ? 0x8001 : 0);
    }
    adm_tensor_set_bits(&x, 5 * K + 3, 0x7f7f);  /* the largest finite bf16 */
    adm_tensor_set_bits(&x, 9 * K + 36, 0x7f80); /* +Inf */
    adm_tensor_set_bits(&x, 12 * K, 0x7fc1);     /* NaN */
    adm_tensor_set_bits(&w, 7 * K + 20, 0x0281); /* a small normal */
    row_norms_up(&x, M, K, nx);
    row_norms_up(&w, N, K, nw);
    ck_assert_int_eq(adm_op_params_parse(lin, "{}", &p), ADM_OK);
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, lin, &p, in, &r), ADM_OK);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double got = ((const double *)r.bound.data)[i * N + j], want = adm_mul_up(adm_mul_up(gk, nx[i]), nw[j]);
            ck_assert_msg(memcmp(&got, &want, sizeof got) == 0 || (isnan(got) && isnan(want)),
                          "bound[%d][%d] = %a, the scalar chain's %a (||x_i|| %a, ||w_j|| %a)", i, j, got, want, nx[i],
                          nw[j]);
        }
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
}
END_TEST

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The CPU's directed rounding by the bits (scalar_fns.h, branch-free so
 * that loops of bounds vectorise) against libm's nextafter: adm_nextup(r)
 * is nextafter(r, +Inf) for every double (NaN kept as it is), adm_nextdn(r)
 * nextafter(r, -Inf) but at +Inf, which it keeps. Signed zeros, the
 * subnormal and normal edges, the infinities, NaN, then random bit
 * patterns. */
START_TEST(test_nextup_bits)
{
    const double edge[] = {0.0, -0.0, 0x1p-1074, -0x1p-1074, 0x1p-1022, -0x1p-1022, 0x1.fffffffffffffp-1023,
                           -0x1.fffffffffffffp-1023, 1.0, -1.0, 0x1.fffffffffffffp+1023, -0x1.fffffffffffffp+1023,
                           INFINITY, -INFINITY, NAN, -NAN};
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 16 + 100000; i++) {
        double r = i < 16 ? edge[i] : adm_f64_from_bits(rng(&s)), up = adm_nextup(r), dn = adm_nextdn(r);
        if (isnan(r)) {
            ck_assert_msg(same_bits(up, r) && same_bits(dn, r), "NaN %a: up %a, down %a", r, up, dn);
            continue;
        }
        ck_assert_msg(same_bits(up, nextafter(r, INFINITY)), "adm_nextup(%a) = %a, nextafter's %a", r, up,
                      nextafter(r, INFINITY));
        ck_assert_msg(same_bits(dn, r == INFINITY ? r : nextafter(r, -INFINITY)), "adm_nextdn(%a) = %a", r, dn);
    }
    /* adm_nextup_nn, on its domain (+0, r > 0, +Inf, NaN of either sign):
     * nextafter(r, +Inf), NaN kept */
    for (int i = 0; i < 16 + 100000; i++) {
        double r = i < 16 ? edge[i] : adm_f64_from_bits(rng(&s)), up;
        if (signbit(r) && !isnan(r)) r = -r;
        up = adm_nextup_nn(r);
        ck_assert_msg(same_bits(up, isnan(r) ? r : nextafter(r, INFINITY)), "adm_nextup_nn(%a) = %a, nextafter's %a",
                      r, up, nextafter(r, INFINITY));
    }
}
END_TEST

/* The bound of tanh-GELU with nn = 1 (scalar_fns.h: the cheaper nextup
 * where every operand is >= +0, the GEMM's vectorised epilogue) against
 * nn = 0 (adm_nextup at every step, what every other caller runs): the
 * same value and bound bits for every x: the edges (signed zeros,
 * subnormals, where exp saturates or turns subnormal, the infinities,
 * NaN), a dense sweep of [-30, 30], and random bit patterns. */
START_TEST(test_gelu_tanh_nn_bits)
{
    const double edge[] = {0.0, -0.0, 0x1p-1074, -0x1p-1074, 0x1p-1022, -0x1p-1022, 1e-300, -1e-300, 1.0, -1.0,
                           18.0, -18.0, 18.3, -18.3, 19.0, -19.0, 25.0, -25.0, 1e30, -1e30, 0x1.fffffffffffffp+1023,
                           -0x1.fffffffffffffp+1023, INFINITY, -INFINITY, NAN, -NAN};
    const int ne = (int)(sizeof edge / sizeof edge[0]);
    uint64_t s = 0x2545f4914f6cdd1du;
    int sat = 0;
    for (int i = 0; i < ne + 120001 + 100000; i++) {
        double x = i < ne ? edge[i] : i < ne + 120001 ? -30.0 + (i - ne) * 0x1p-12 : adm_f64_from_bits(rng(&s));
        double w = adm_fn_gelu_tanh_w(x), e = ADM_EXP(w), e0, e1;
        double g0 = adm_fn_gelu_tanh_fin_(x, w, e, &e0, 0), g1 = adm_fn_gelu_tanh_fin_(x, w, e, &e1, 1);
        sat += isfinite(x) && (e == 0 || isinf(e));
        ck_assert_msg(same_bits(g0, g1), "gelu_tanh(%a) = %a with nn, %a without", x, g1, g0);
        ck_assert_msg(same_bits(e0, e1), "gelu_tanh(%a)'s bound = %a with nn, %a without", x, e1, e0);
    }
    ck_assert_msg(sat > 1000, "exp saturated %d times", sat);
}
END_TEST

/* The GEMM's epilogue (oracle/gemm.c: vectorised where the scale's
 * exponents allow) keeps the bits of the scalar chain, one element at a
 * time with scalar_fns.h's functions: from linear's value, bound and
 * scale (with bias), linear+gelu's are GELU's value, its bound e +
 * slope(v, b) b and max(|g|, |g'| cond); linear's bound with bias is
 * gamma ||x_i|| ||w_j|| (test_gemm_bound_bits) + u |v|, its scale that
 * without bias + |b_j|. 300 columns (two passes of the vectorised loop
 * and a remainder), both GELUs; a zero row with zero bias (v = 0: gelu' =
 * 1/2), Inf and NaN rows, biases that saturate exp (+-25, +-1e30) and put
 * v - b past 10 (the slope's other branch). */
START_TEST(test_gemm_epilogue_bits)
{
    const adm_op *lin = adm_op_find("linear"), *lg = adm_op_find("linear+gelu");
    enum { M = 9, K = 29, N = 300 };
    int64_t xs[2] = {M, K}, ws[2] = {N, K}, bs[1] = {N};
    adm_tensor x, w, bias;
    adm_op_params p;
    adm_oracle *o;
    adm_oracle_result rl, rn, rg;
    const double bset[] = {0.0, 25.0, -25.0, 1e30, -1e30, 12.0, -3.0, 0.5};
    double nx[M], nw[N], gk = adm_gamma_up(K - 1);
    ck_assert_int_eq(adm_synth_gaussian(41, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(42, 0.2, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(43, 2.0, ADM_BF16, 1, bs, &bias), ADM_OK);
    for (int k = 0; k < K; k++) adm_tensor_set_bits(&x, 1 * K + k, 0); /* a row of zeros */
    adm_tensor_set_bits(&x, 4 * K + 7, 0x7f80);                          /* +Inf */
    adm_tensor_set_bits(&x, 6 * K + 2, 0xff80);                          /* -Inf */
    adm_tensor_set_bits(&x, 7 * K, 0x7fc1);                              /* NaN */
    for (int j = 0; j < N; j += 7) {
        adm_tensor bt;
        double v = bset[(j / 7) % 8];
        int64_t one[1] = {1};
        ck_assert_int_eq(adm_tensor_from_f64(&bt, ADM_BF16, 1, one, &v, ADM_RNE, 0), ADM_OK);
        adm_tensor_set_bits(&bias, j, adm_tensor_bits(&bt, 0));
        adm_tensor_free(&bt);
    }
    row_norms_up(&x, M, K, nx);
    row_norms_up(&w, N, K, nw);
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(lin, "{}", &p), ADM_OK);
    {
        const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &bias}, *in0[ADM_OP_MAX_INPUTS] = {&x, &w, NULL};
        ck_assert_int_eq(adm_oracle_eval(o, lin, &p, in, &rl), ADM_OK);
        ck_assert_int_eq(adm_oracle_eval(o, lin, &p, in0, &rn), ADM_OK);
    }
    for (int i = 0; i < M * N; i++) {
        double v = ((const double *)rl.value.data)[i], b = ((const double *)rl.bound.data)[i];
        double c = ((const double *)rl.cond.data)[i], c0 = ((const double *)rn.cond.data)[i];
        double bj = adm_tensor_get(&bias, i % N);
        double want = adm_add_up(adm_mul_up(adm_mul_up(gk, nx[i / N]), nw[i % N]), adm_mul_up(ADM_U, fabs(v)));
        ck_assert_msg(same_bits(b, want) || (isnan(b) && isnan(want)), "linear bound[%d] = %a, the chain's %a", i, b,
                      want);
        ck_assert_msg(same_bits(c, c0 + fabs(bj)) || (isnan(c) && isnan(c0)), "linear cond[%d] = %a, %a + |%a|", i,
                      c, c0, bj);
    }
    for (int tanh_ = 0; tanh_ < 2; tanh_++) {
        const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &bias};
        int zero = 0, sat = 0, slope = 0;
        ck_assert_int_eq(adm_op_params_parse(lg, tanh_ ? "{\"approximate\":\"tanh\"}" : "{}", &p), ADM_OK);
        ck_assert_int_eq(adm_oracle_eval(o, lg, &p, in, &rg), ADM_OK);
        for (int i = 0; i < M * N; i++) {
            double v = ((const double *)rl.value.data)[i], b = ((const double *)rl.bound.data)[i];
            double cz = ((const double *)rl.cond.data)[i], e;
            double g = tanh_ ? adm_fn_gelu_tanh(v, &e) : adm_fn_gelu_erf(v, &e);
            double wb = adm_add_up(e, adm_mul_up(adm_fn_gelu_slope(v, b), b));
            double wc = adm_fn_cond_chain(g, tanh_ ? adm_o_gelu_tanh_d_from(v, g) : adm_fn_gelu_erf_d(v), cz);
            double gv = ((const double *)rg.value.data)[i], gb = ((const double *)rg.bound.data)[i];
            double gc = ((const double *)rg.cond.data)[i];
            zero += v == 0;
            sat += isfinite(v) && fabs(v) > 20;
            slope += v - b >= 10.0;
            ck_assert_msg(same_bits(gv, g) || (isnan(gv) && isnan(g)), "gelu %d value[%d] = %a, scalar %a (v %a)",
                          tanh_, i, gv, g, v);
            ck_assert_msg(same_bits(gb, wb) || (isnan(gb) && isnan(wb)), "gelu %d bound[%d] = %a, scalar %a (v %a)",
                          tanh_, i, gb, wb, v);
            ck_assert_msg(same_bits(gc, wc) || (isnan(gc) && isnan(wc)), "gelu %d cond[%d] = %a, scalar %a (v %a)",
                          tanh_, i, gc, wc, v);
        }
        ck_assert_msg(zero > 0 && sat > 0 && slope > 0, "edges reached: v = 0 %d, |v| > 20 %d, v - b >= 10 %d", zero,
                      sat, slope);
        adm_oracle_result_free(&rg);
    }
    adm_oracle_result_free(&rl);
    adm_oracle_result_free(&rn);
    adm_oracle_free(o);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&bias);
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

/* ------------------------------------------------------------ refinement */

/* Rows (or GEMM outputs) built to cancel to about 1e-12 of their sum of
 * |terms|, with magnitudes spread over 2^+-16 so that fp64 sums round:
 * terms +a and -a in a shuffled order, and two survivors s and s 2^-40
 * whose sum no double holds. */
static void cancel_row(double *v, int64_t n, uint64_t *s)
{
    double total = 0;
    for (int64_t k = 0; k + 1 < n - 2; k += 2) {
        double a = (double)(float)((1.0 + uniform(s)) * ldexp(1.0, (int)(rng(s) % 33) - 16));
        v[k] = a;
        v[k + 1] = -a;
        total += 2 * fabs(a);
    }
    v[n - 2] = (double)(float)(total * 1e-12 * (1.0 + uniform(s)));
    v[n - 1] = (double)(float)(v[n - 2] * 0x1p-40 * (1.0 + uniform(s)));
    for (int64_t k = n - 1; k > 0; k--) {
        int64_t j = (int64_t)(rng(s) % (uint64_t)(k + 1));
        double t = v[k];
        v[k] = v[j];
        v[j] = t;
    }
}

/* An independent GELU (tanh) at 600 bits: 0.5 s (1 + tanh(C (s + A s^3))),
 * the textbook form (the oracle evaluates x / (1 + exp(-2z)) with
 * intervals); its rounding errors are below 2^-590 relative. */
static void gelu_tanh_ref(mpfr_t y, const mpq_t s)
{
    mpfr_t x, t, c;
    mpfr_inits2(600, x, t, c, (mpfr_ptr)0);
    mpfr_set_q(x, s, MPFR_RNDN);
    mpfr_const_pi(c, MPFR_RNDN);
    mpfr_ui_div(c, 2, c, MPFR_RNDN);
    mpfr_sqrt(c, c, MPFR_RNDN);
    mpfr_pow_ui(t, x, 3, MPFR_RNDN);
    {
        mpfr_t a;
        mpfr_init2(a, 600);
        mpfr_set_str(a, "0.044715", 10, MPFR_RNDN);
        mpfr_mul(t, t, a, MPFR_RNDN);
        mpfr_clear(a);
    }
    mpfr_add(t, t, x, MPFR_RNDN);
    mpfr_mul(t, t, c, MPFR_RNDN);
    mpfr_tanh(t, t, MPFR_RNDN);
    mpfr_add_ui(t, t, 1, MPFR_RNDN);
    mpfr_mul(t, t, x, MPFR_RNDN);
    mpfr_div_2ui(t, t, 1, MPFR_RNDN);
    mpfr_set(y, t, MPFR_RNDN);
    mpfr_clears(x, t, c, (mpfr_ptr)0);
}

/* Refinement on inputs fp64 cannot resolve: scenario 0 row_sum, 1
 * linear, 2 matmul, 3 linear+gelu (tanh). Every refined element is
 * checked against the exact rational (and, for GELU, the independent
 * GELU above at 600 bits), never against the MPFR path itself. Returns
 * the elements outside their refined bound (0 unless mutated). */
static int64_t refine_scenario(int sc, int verbose)
{
    static const char *ops[] = {"row_sum", "linear", "matmul", "linear+gelu"};
    const adm_op *op = adm_op_find(ops[sc]);
    adm_op_params p;
    adm_tensor a, b;
    int64_t K = 64, as[2] = {3, K}, bs[2] = {sc == 2 ? K : 4, sc == 2 ? 4 : K}, bad = 0, n;
    double av[3 * 64], bv[4 * 64], thr;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&a, sc == 0 ? NULL : &b, NULL};
    adm_oracle_config cfg;
    adm_oracle *o;
    adm_oracle_result r0, r;
    uint64_t s = 0x9e3779b97f4a7c15ull + (uint64_t)sc;
    mpq_t q;
    mpfr_t ref, d;
    ck_assert_int_eq(adm_op_params_parse(op, sc == 3 ? "{\"approximate\":\"tanh\"}" : "{}", &p), ADM_OK);
    if (sc == 0) {
        /* each row cancels on its own */
        for (int row = 0; row < 3; row++) cancel_row(av + row * K, K, &s);
    } else {
        /* GEMMs: rows of a are one row times 1, 2, 4; each column of b pairs
         * (a_k+1, -a_k) 2^j against a's pairs, so the products cancel in
         * pairs, but for two survivors, about 1e-12 and 1e-24 of the sum of
         * |terms| */
        for (int64_t k = 0; k < K; k++)
            av[k] = (double)(float)((uniform(&s) - 0.5) * ldexp(1.0, (int)(rng(&s) % 33) - 16));
        for (int row = 1; row < 3; row++)
            for (int64_t k = 0; k < K; k++) av[row * K + k] = ldexp(av[k], row);
        for (int j = 0; j < 4; j++) {
            double col[64], c = ldexp(1.0, j - 2), total = 0;
            for (int64_t k = 0; k + 3 < K; k += 2) {
                col[k] = av[k + 1] * c;
                col[k + 1] = -av[k] * c;
                total += 2 * fabs(av[k] * av[k + 1] * c);
            }
            col[K - 1] = (double)(float)(total * 1e-12 * (1.0 + uniform(&s)) / av[K - 1]);
            col[K - 2] = (double)(float)(av[K - 1] * col[K - 1] * 0x1p-40 * (1.0 + uniform(&s)) / av[K - 2]);
            for (int64_t k = 0; k < K; k++) {
                if (sc == 2) bv[k * 4 + j] = col[k]; /* matmul: b is [K, N] */
                else bv[j * K + k] = col[k];
            }
        }
    }
    ck_assert_int_eq(adm_tensor_from_f64(&a, ADM_FP32, 2, as, av, ADM_RNE, 0), ADM_OK);
    if (sc > 0) ck_assert_int_eq(adm_tensor_from_f64(&b, ADM_FP32, 2, bs, bv, ADM_RNE, 0), ADM_OK);
    /* without refinement: the fp64 bounds are far above the values */
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &r0), ADM_OK);
    adm_oracle_free(o);
    n = adm_tensor_numel(&r0.value);
    thr = INFINITY;
    for (int64_t i = 0; i < n; i++) thr = fmin(thr, fabs(((double *)r0.value.data)[i]));
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(((double *)r0.bound.data)[i] > 1e-3 * thr, "%s element %lld: the fp64 bound %g resolves "
                      "the scale %g", ops[sc], (long long)i, ((double *)r0.bound.data)[i], thr);
    /* refined to the smallest value's scale (1e-3 of it, the default sharpness) */
    adm_oracle_config_default(&cfg);
    cfg.resolve_scale = thr;
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_msg(adm_oracle_eval(o, op, &p, in, &r) == ADM_OK, "%s", adm_error_message());
    ck_assert_int_eq(r.mpfr_refined, n);
    ck_assert_ptr_null(r.assumption); /* every element proven */
    mpq_init(q);
    mpfr_inits2(600, ref, d, (mpfr_ptr)0);
    for (int64_t i = 0; i < n; i++) {
        double v = ((double *)r.value.data)[i], bd = ((double *)r.bound.data)[i];
        const adm_op *pre = sc == 3 ? adm_op_find("linear") : op;
        ck_assert(exact_q(pre, &p, in, i, q));
        if (sc != 3) {
            /* the value is the exact sum rounded once; the bound at most half an ulp */
            mpfr_set_q(d, q, MPFR_RNDN);
            ck_assert_msg(v == mpfr_get_d(d, MPFR_RNDN), "%s element %lld: %a is not the exact sum rounded",
                          ops[sc], (long long)i, v);
            ck_assert(bd <= fabs(nextafter(v, INFINITY) - v));
            if (outside_q(v, bd, q)) bad++;
        } else {
            gelu_tanh_ref(ref, q);
            mpfr_sub_d(d, ref, v, MPFR_RNDN);
            mpfr_abs(d, d, MPFR_RNDN);
            /* |v - gelu| <= bd, with the reference's own 2^-590 */
            if (mpfr_get_d(d, MPFR_RNDD) > bd + fabs(v) * 0x1p-580) bad++;
            ck_assert(bd <= 2 * fabs(nextafter(v, INFINITY) - v));
        }
        if (verbose && i < 2)
            printf("%s element %lld: %.17g, refined bound %.3g, fp64 bound %.3g\n", ops[sc], (long long)i, v, bd,
                   ((double *)r0.bound.data)[i]);
    }
    mpfr_clears(ref, d, (mpfr_ptr)0);
    mpq_clear(q);
    adm_oracle_result_free(&r0);
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    adm_tensor_free(&a);
    if (sc > 0) adm_tensor_free(&b);
    return bad;
}

START_TEST(test_refine_cancel)
{
    ck_assert_int_eq(refine_scenario(_i, 1), 0);
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
    ck_assert_int_eq(adm_synth_gaussian(5, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(6, 0.2, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_op_params_parse(op, "{\"approximate\":\"tanh\"}", &p), ADM_OK);
    adm_oracle_config_default(&cfg);
    cfg.resolve_scale = 1e-3; /* a bf16 output's rounding: nothing to refine */
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &r), ADM_OK);
    ck_assert_int_eq(r.mpfr_refined, 0);
    ck_assert(r.max_bound < 1e-12);
    ck_assert_ptr_nonnull(r.assumption);
    ck_assert_ptr_nonnull(strstr(r.assumption, "exp within"));
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    cfg.resolve_scale = 1e-13; /* below the fp64 bounds: MPFR must step in */
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_OK);
    ck_assert_int_eq(adm_oracle_eval(o, op, &p, in, &r), ADM_OK);
    ck_assert_int_gt(r.mpfr_refined, 0);
    ck_assert_msg(r.max_bound <= 1e-16, "max bound %g after refinement", r.max_bound);
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
    /* ops without a transcendental function: proven bounds */
    {
        adm_tensor xx;
        int64_t sh[2] = {4, 32};
        const adm_tensor *in3[ADM_OP_MAX_INPUTS] = {&xx};
        ck_assert_int_eq(adm_synth_gaussian(7, 1.0, ADM_BF16, 2, sh, &xx), ADM_OK);
        ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
        ck_assert_int_eq(adm_op_params_parse(adm_op_find("row_sum"), "{}", &p), ADM_OK);
        ck_assert_int_eq(adm_oracle_eval(o, adm_op_find("row_sum"), &p, in3, &r), ADM_OK);
        ck_assert_ptr_null(r.assumption);
        adm_oracle_result_free(&r);
        ck_assert_int_eq(adm_op_params_parse(adm_op_find("softmax"), "{}", &p), ADM_OK);
        ck_assert_int_eq(adm_oracle_eval(o, adm_op_find("softmax"), &p, in3, &r), ADM_OK);
        ck_assert_str_eq(r.assumption, "assuming libm's exp within 1 ulp");
        adm_oracle_result_free(&r);
        adm_oracle_free(o);
        adm_tensor_free(&xx);
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

/* The exact accumulator against rationals: products over the whole
 * exponent range (subnormal to near overflow), cancellation, specials. */
START_TEST(test_exact_sums)
{
    uint64_t s = 12345;
    adm_o_exact x;
    mpq_t q, a, b;
    mpfr_t f;
    adm_o_exact_init(&x);
    mpq_inits(q, a, b, (mpq_ptr)0);
    mpfr_init2(f, 53);
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + (int)(rng(&s) % 40);
        double dist;
        adm_o_exact_zero(&x);
        mpq_set_ui(q, 0, 1);
        for (int k = 0; k < n; k++) {
            double u = ldexp(uniform(&s) - 0.5, (int)(rng(&s) % 2000) - 1000);
            double v = ldexp(uniform(&s) - 0.5, (int)(rng(&s) % 2000) - 1100);
            if (trial % 3 == 0) v = 1.0;
            if (k % 2 && trial % 5 == 1) u = -ldexp(uniform(&s), -1074 + (int)(rng(&s) % 60)); /* subnormal */
            adm_o_exact_add_prod(&x, u, v);
            mpq_set_d(a, u);
            mpq_set_d(b, v);
            mpq_mul(a, a, b);
            mpq_add(q, q, a);
            if (trial % 7 == 0) { /* cancel it again, leaving a tiny survivor */
                adm_o_exact_add_prod(&x, -u, v);
                mpq_sub(q, q, a);
            }
        }
        {
            double v = adm_o_exact_get_d(&x, &dist);
            mpfr_set_q(f, q, MPFR_RNDN);
            ck_assert_msg(v == mpfr_get_d(f, MPFR_RNDN), "trial %d: %a", trial, v);
            ck_assert(!outside_q(v, dist, q));
            if (dist > 0) ck_assert(outside_q(v, nextafter(dist, 0) * 0.999, q) || dist < 0x1p-1070);
        }
    }
    adm_o_exact_zero(&x);
    adm_o_exact_add(&x, INFINITY);
    adm_o_exact_add(&x, 1.0);
    {
        double d, v = adm_o_exact_get_d(&x, &d);
        ck_assert(isinf(v) && v > 0);
        adm_o_exact_add(&x, -INFINITY);
        ck_assert(isnan(adm_o_exact_get_d(&x, &d)));
    }
    mpfr_clear(f);
    mpq_clears(q, a, b, (mpq_ptr)0);
    adm_o_exact_clear(&x);
}
END_TEST

/* ------------------------------------------------------------ mutation */

/* Each mutant shrinks one op's bounds (halved, zeroed) or, for the ops
 * whose bound is 0 (exact), moves their values by an ulp; refined mutants
 * do it to the elements refinement recomputes. The op's tests above must
 * catch every one: some element provably outside its (mutated) bound. */
typedef struct mutant { const char *op; double factor; int ulps; int refined; } mutant;
static const mutant mutants[] = {
    {"row_sum", 0.5, 0, 0}, {"row_sum", 0, 0, 0}, {"mean_sq", 0.5, 0, 0}, {"mean_sq", 0, 0, 0},
    {"matmul", 0.5, 0, 0}, {"matmul", 0, 0, 0}, {"linear", 0.5, 0, 0}, {"linear", 0, 0, 0},
    {"scale", 0.5, 0, 0}, {"scale", 0, 0, 0}, {"relu", 1, 1, 0}, {"gelu", 0.5, 0, 0}, {"gelu", 0, 0, 0},
    {"silu", 0.5, 0, 0}, {"silu", 0, 0, 0}, {"swiglu", 0.5, 0, 0}, {"swiglu", 0, 0, 0},
    {"linear+gelu", 0.5, 0, 0}, {"linear+gelu", 0, 0, 0}, {"gated_residual", 0.5, 0, 0},
    {"gated_residual", 0, 0, 0}, {"rmsnorm", 0.5, 0, 0}, {"rmsnorm", 0, 0, 0}, {"layernorm", 0.5, 0, 0},
    {"layernorm", 0, 0, 0}, {"groupnorm", 0.5, 0, 0}, {"groupnorm", 0, 0, 0}, {"softmax", 0.5, 0, 0},
    {"softmax", 0, 0, 0}, {"attention", 0.5, 0, 0}, {"attention", 0, 0, 0}, {"linear_attention", 0.5, 0, 0},
    {"linear_attention", 0, 0, 0}, {"quantize", 1, 1, 0},
    {"row_sum", 0.5, 0, 1}, {"row_sum", 0, 0, 1}, {"linear", 0.5, 0, 1}, {"linear", 0, 0, 1},
    {"matmul", 0.5, 0, 1}, {"matmul", 0, 0, 1}, {"linear+gelu", 0.5, 0, 1}, {"linear+gelu", 0, 0, 1},
};
#define N_MUTANTS ((int)(sizeof mutants / sizeof mutants[0]))

START_TEST(test_mutant)
{
    const mutant *m = &mutants[_i];
    const adm_op *op = adm_op_find(m->op);
    int64_t caught = 0, cases = 0;
    ck_assert_ptr_nonnull(op);
    adm_o_mutant.op = (int)adm_op_id_of(op) + 1;
    adm_o_mutant.bound_factor = m->factor;
    adm_o_mutant.value_ulps = m->ulps;
    adm_o_mutant.refined = m->refined;
    if (m->refined) {
        static const char *sc[] = {"row_sum", "linear", "matmul", "linear+gelu"};
        for (int k = 0; k < 4; k++)
            if (!strcmp(sc[k], m->op)) {
                caught += refine_scenario(k, 0);
                cases++;
            }
    } else {
        for (int ci = 0; ci < N_OP_CASES; ci++) {
            if (strcmp(op_cases[ci].op, m->op)) continue;
            for (int libm = -1; libm <= 1; libm++) {
                tally t;
                memset(&t, 0, sizeof t);
                run_case(ci, libm, &t);
                caught += t.outside;
                cases++;
            }
        }
    }
    memset(&adm_o_mutant, 0, sizeof adm_o_mutant);
    printf("mutant %-16s %s %-8s %s: %lld elements outside their bound over %lld runs\n", m->op,
           m->refined ? "refined" : "fp64   ", m->ulps ? "value+1" : m->factor == 0 ? "bound*0" : "bound/2",
           caught ? "caught  " : "SURVIVED", (long long)caught, (long long)cases);
    ck_assert_msg(caught > 0, "mutant %s (%s, factor %g, %d ulps) survived every test", m->op,
                  m->refined ? "refined" : "fp64", m->factor, m->ulps);
}
END_TEST

/* Widen: the GPU oracle widens bf16, fp16 and fp32 operands on the device
 * (oracle/widen.h, the same code here); its fp64 bits must be adm_o_rows'
 * (the host's widening, whose values the DGEMM read before), NaN payloads
 * included: every bf16 and fp16 pattern, a sample of fp32 patterns with
 * every exponent (subnormals, Inf, signalling and quiet NaNs), each dense,
 * transposed (matmul's w), as a slice with gaps and an offset, and a row
 * broadcast (an elementwise op's gate). */
static void widen_check(const adm_tensor *t, const char *what)
{
    int64_t K = t->shape[t->ndim - 1], n = adm_tensor_numel(t), R = n / K, lo = 0, span = 0, bad = 0;
    size_t es = adm_format_get(t->dtype)->storage_bytes;
    adm_o_widen_src s;
    double *want = malloc(sizeof(double) * (size_t)n);
    ck_assert_ptr_nonnull(want);
    ck_assert_msg(adm_o_widen_plan(t, &s, &lo, &span), "%s: no device plan", what);
    ck_assert(t->offset + lo >= 0 && t->offset + lo + span <= t->capacity);
    adm_o_rows(t, K, 0, R, want);
    for (int64_t i = 0; i < n; i++) {
        uint64_t got = adm_o_widen_elem((const char *)t->data + es * (size_t)(t->offset + lo), &s, i);
        if (got != adm_f64_bits(want[i]) && bad++ < 4)
            fprintf(stderr, "%s %s element %lld: widened 0x%016llx, adm_o_rows 0x%016llx\n", what,
                    adm_dtype_name(t->dtype), (long long)i, (unsigned long long)got,
                    (unsigned long long)adm_f64_bits(want[i]));
    }
    free(want);
    ck_assert_msg(bad == 0, "%s %s: %lld elements differ", what, adm_dtype_name(t->dtype), (long long)bad);
}

START_TEST(test_widen)
{
    static const adm_dtype dts[3] = {ADM_BF16, ADM_FP16, ADM_FP32};
    adm_dtype dt = dts[_i];
    int64_t shape[2] = {256, 256};
    adm_tensor t, v;
    if (dt == ADM_FP32) shape[0] = 4096; /* 2^20 patterns: every 4096th, then edge cases */
    ck_assert_int_eq(adm_tensor_alloc(&t, dt, 2, shape), ADM_OK);
    for (int64_t i = 0; i < shape[0] * shape[1]; i++) {
        if (dt == ADM_FP32) {
            static const uint32_t edge[] = {0x00000001u, 0x80000001u, 0x007fffffu, 0x00400000u, 0x7f800000u,
                                            0xff800000u, 0x7f800001u, 0xffbfffffu, 0x7fc00000u, 0x7fffffffu,
                                            0x00800000u, 0x7f7fffffu, 0x80000000u};
            uint32_t b = i < (int64_t)(sizeof edge / sizeof edge[0]) ? edge[i] : (uint32_t)i * 4096u + (uint32_t)(i % 4093);
            ((uint32_t *)t.data)[i] = b;
        } else {
            ((uint16_t *)t.data)[i] = (uint16_t)i;
        }
    }
    widen_check(&t, "dense");
    ck_assert_int_eq(adm_tensor_transpose(&t, 0, 1, &v), ADM_OK);
    widen_check(&v, "transposed");
    v = t;
    v.owned = 0;
    v.shape[0] -= 3;
    v.shape[1] -= 5;
    v.offset = 2 * shape[1] + 3;
    widen_check(&v, "slice");
    {
        /* an elementwise op's broadcast operand (stride 0) */
        int64_t bs[2] = {64, 256};
        adm_tensor row = t, b;
        row.owned = 0;
        row.shape[0] = 1;
        row.offset = 5 * 256;
        ck_assert_int_eq(adm_tensor_broadcast(&row, 2, bs, &b), ADM_OK);
        widen_check(&b, "broadcast");
    }
    adm_tensor_free(&t);
}
END_TEST

/* ---------------------------------------------------------------- quantize */

#include "quantize_fns.h"

/* The rounding quantize_fns.h replaced: the formats' own directed
 * roundings (core/format.c) find the neighbours. */
static double q_ref_div_round(adm_dtype dt, double a, double b)
{
    double qd = a / b, lo, hi, m, mb;
    const adm_format_info *f = adm_format_get(dt);
    uint64_t bits;
    if (isnan(qd)) return qd;
    if (fabs(qd) >= f->max_finite) return copysign(f->max_finite, qd);
    if (adm_format_neighbors(dt, qd, &lo, &hi) != ADM_OK) return NAN;
    if (lo == hi) return lo;
    m = (lo + hi) / 2;
    mb = m * b;
    if (a > mb) return hi;
    if (a < mb) return lo;
    (void)adm_format_encode(dt, lo, ADM_RNE, 0, &bits);
    return (bits & 1) ? hi : lo;
}

static int q_same(double x, double y) { return (isnan(x) && isnan(y)) || !memcmp(&x, &y, sizeof x); }

/* quantize_fns.h's rounding against the formats' on every bf16 and fp16
 * dividend (zeros, subnormals, Inf and NaN among them) over divisors as
 * the schemes make them: fp32 scales amax / 448 and 6 g for e4m3, block
 * scales sb g for e2m1, and 448 and 6 * 448 for the fp32 scales
 * themselves; bit for bit, signed zeros included. */
START_TEST(test_quantize_rounding)
{
    static const adm_dtype src[2] = {ADM_BF16, ADM_FP16};
    static const struct { int fmt; adm_dtype dt; } tgt[3] = {
        {ADM_QF_E4M3, ADM_E4M3}, {ADM_QF_E2M1, ADM_E2M1}, {ADM_QF_FP32, ADM_FP32}};
    double div[3][160];
    int nd[3] = {0, 0, 0};
    long long bad = 0, calls = 0, ties = 0;
    /* e4m3's divisors: fp32(amax / 448) and 6 fp32(amax / 2688), amax a
     * spread of bf16 magnitudes from subnormal to large */
    for (uint32_t u = 0x0001; u < 0x7f80 && nd[0] < 158; u += 0x0265) {
        double amax = adm_format_decode(ADM_BF16, u);
        div[0][nd[0]++] = (double)(float)(amax / 448.0);
        div[0][nd[0]++] = 6.0 * (double)(float)(amax / 2688.0);
    }
    /* e2m1's: sb g, sb an e4m3 value, g fp32 */
    for (uint32_t u = 1; u < 0x7f && nd[1] < 160; u += 2) {
        double sb = adm_format_decode(ADM_E4M3, u);
        div[1][nd[1]++] = sb * (double)(float)(3.0 / 2688.0);
        div[1][nd[1]++] = sb * (double)(float)(1e-3 / 2688.0);
    }
    div[2][nd[2]++] = 448.0;
    div[2][nd[2]++] = 2688.0;
    for (int t = 0; t < 3; t++)
        for (int d = 0; d < nd[t]; d++) {
            double b = div[t][d];
            if (!(b > 0) || !isfinite(b)) continue;
            for (int sidx = 0; sidx < 2; sidx++)
                for (uint32_t u = 0; u < 65536; u++) {
                    double a = adm_format_decode(src[sidx], u), want = q_ref_div_round(tgt[t].dt, a, b);
                    double got = adm_qf_div_round(tgt[t].fmt, a, b), lo, hi;
                    calls++;
                    if (!q_same(want, got)) {
                        if (bad < 5)
                            fprintf(stderr, "quantize rounding: %s / %a into %s: %a, the formats' %a\n",
                                    adm_dtype_name(src[sidx]), a, adm_dtype_name(tgt[t].dt), got, want);
                        bad++;
                    }
                    if (isfinite(a) && fabs(a / b) < adm_format_get(tgt[t].dt)->max_finite &&
                        adm_format_neighbors(tgt[t].dt, a / b, &lo, &hi) == ADM_OK && lo != hi &&
                        a == (lo + hi) / 2 * b)
                        ties++;
                    adm_error_clear();
                }
        }
    printf("quantize rounding: %lld divisions, %lld exact ties, %lld differ from the formats' rounding\n", calls,
           ties, bad);
    ck_assert_int_gt(ties, 1000);
    ck_assert_int_eq(bad, 0);
}
END_TEST

/* A NaN in a row makes that row's fp8 scale NaN, and every output of the
 * row NaN (torch.amax's rule, as the tensor's amax already had it); the
 * other rows keep theirs. */
START_TEST(test_quantize_nan_rows)
{
    static const char *schemes[3] = {"fp8_e4m3_row", "fp8_e4m3_tensor", "nvfp4"};
    const adm_op *op = adm_op_find("quantize");
    int64_t shape[2] = {3, 32};
    for (int sc = 0; sc < 3; sc++) {
        adm_tensor x;
        adm_op_params p;
        adm_oracle *o;
        adm_oracle_result r;
        char params[64];
        const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x};
        int64_t nan_out[3] = {0, 0, 0};
        ck_assert_int_eq(adm_tensor_alloc(&x, ADM_BF16, 2, shape), ADM_OK);
        for (int64_t i = 0; i < 96; i++) {
            uint64_t b;
            adm_format_encode(ADM_BF16, ldexp(1.0 + (double)(i % 7) / 8, (int)(i % 5) - 2), ADM_RNE, 0, &b);
            adm_tensor_set_bits(&x, i, b);
        }
        /* row 1, early in it and in its first block of 16 */
        adm_tensor_set_bits(&x, 32 + 3, adm_format_get(ADM_BF16)->nan_bits);
        snprintf(params, sizeof params, "{\"scheme\":\"%s\"}", schemes[sc]);
        ck_assert_int_eq(adm_op_params_parse(op, params, &p), ADM_OK);
        ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
        ck_assert_msg(adm_oracle_eval(o, op, &p, in, &r) == ADM_OK, "%s", adm_error_message());
        for (int64_t i = 0; i < 96; i++) nan_out[i / 32] += isnan(((double *)r.value.data)[i]);
        printf("quantize %s, a NaN in row 1: NaN outputs per row %lld %lld %lld\n", schemes[sc],
               (long long)nan_out[0], (long long)nan_out[1], (long long)nan_out[2]);
        if (sc == 0) {
            ck_assert_int_eq(nan_out[0], 0);
            ck_assert_int_eq(nan_out[1], 32);
            ck_assert_int_eq(nan_out[2], 0);
        } else {
            for (int k = 0; k < 3; k++) ck_assert_int_eq(nan_out[k], 32); /* the tensor's scale is NaN */
        }
        adm_oracle_result_free(&r);
        adm_oracle_free(o);
        adm_tensor_free(&x);
    }
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
    tcase_add_test(tc, test_sharpness);
    tcase_add_test(tc, test_views);
    tcase_add_test(tc, test_exact_sums);
    tcase_add_loop_test(tc, test_refine_cancel, 0, 4);
    tcase_add_test(tc, test_cond_special);
    tcase_add_test(tc, test_gemm_bound_bits);
    tcase_add_test(tc, test_gemm_epilogue_bits);
    tcase_add_test(tc, test_nextup_bits);
    tcase_add_test(tc, test_gelu_tanh_nn_bits);
    suite_add_tcase(s, tc);
    tc = tcase_create("Cond");
    tcase_add_loop_test(tc, test_op_cond, 0, N_OP_CASES);
    tcase_add_test(tc, test_cond_gemm_blocks);
    suite_add_tcase(s, tc);
    tc = tcase_create("Elementwise");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_scalar_exhaustive, 0, 3);
    tcase_add_loop_test(tc, test_scalar_random, 0, 9);
    tcase_add_test(tc, test_lipschitz);
    suite_add_tcase(s, tc);
    tc = tcase_create("Libm");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_libm, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("MPFR");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_op_mpfr, 0, N_OP_CASES);
    suite_add_tcase(s, tc);
    tc = tcase_create("Widen");
    tcase_add_loop_test(tc, test_widen, 0, 3);
    suite_add_tcase(s, tc);
    tc = tcase_create("Quantize");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_quantize_rounding);
    tcase_add_test(tc, test_quantize_nan_rows);
    suite_add_tcase(s, tc);
    tc = tcase_create("Mutation");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_mutant, 0, N_MUTANTS);
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
