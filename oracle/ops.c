/* The op catalog: names, parameters, inputs and shape rules. */
#include "oracle_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Parameter keys, as written in JSON. */
enum { P_AXIS = 1, P_FACTOR = 2, P_APPROX = 4, P_EPS = 8, P_MODULATE = 16, P_GROUPS = 32,
       P_SILU = 64, P_CHANNELS_LAST = 128, P_CAUSAL = 256, P_SCALE = 512, P_SCHEME = 1024 };

typedef adm_status (*shape_fn)(const adm_op_params *p, const adm_op_shapes *in,
                               int *ndim, int64_t *shape);

struct adm_op {
    const char *name;
    unsigned keys;       /* accepted parameter keys */
    unsigned required;   /* keys with no default */
    double eps_default;
    int n_inputs;
    const char *inputs[ADM_OP_MAX_INPUTS];
    unsigned optional;   /* bit i: input i may be absent */
    shape_fn shape;
};

static const char *cur_input_name(const adm_op *op, int i) { return op->inputs[i]; }

/* ---------------------------------------------------------------- shapes */

static _Thread_local const adm_op *shape_op; /* the op being checked, for messages */

static adm_status bad_shape(int i, const adm_op_shapes *in, const char *expected)
{
    char buf[160];
    return ADM_FAIL(ADM_ERR_SHAPE, "input '%s' has shape %s, expected %s",
                    cur_input_name(shape_op, i),
                    adm_shape_str(in->ndim[i], in->shape[i], buf, sizeof buf), expected);
}

static int64_t last(const adm_op_shapes *in, int i) { return in->shape[i][in->ndim[i] - 1]; }

static void copy_shape(const adm_op_shapes *in, int i, int *ndim, int64_t *shape)
{
    *ndim = in->ndim[i];
    memcpy(shape, in->shape[i], sizeof(int64_t) * (size_t)in->ndim[i]);
}

static adm_status need_rank(const adm_op_shapes *in, int i, int lo, int hi)
{
    char exp[96];
    if (in->ndim[i] >= lo && in->ndim[i] <= hi) return ADM_OK;
    if (lo == hi) snprintf(exp, sizeof exp, "rank %d", lo);
    else snprintf(exp, sizeof exp, "rank %d to %d", lo, hi);
    return bad_shape(i, in, exp);
}

/* Input i must be a vector [n]. */
static adm_status need_vector(const adm_op_shapes *in, int i, int64_t n, const char *what)
{
    char exp[128];
    if (!in->present[i]) return ADM_OK;
    if (in->ndim[i] == 1 && in->shape[i][0] == n) return ADM_OK;
    snprintf(exp, sizeof exp, "[%lld] (%s)", (long long)n, what);
    return bad_shape(i, in, exp);
}

/* Input i must equal input j's shape. */
static adm_status need_same(const adm_op_shapes *in, int i, int j)
{
    char exp[200], buf[160];
    if (in->ndim[i] == in->ndim[j] &&
        memcmp(in->shape[i], in->shape[j], sizeof(int64_t) * (size_t)in->ndim[i]) == 0)
        return ADM_OK;
    snprintf(exp, sizeof exp, "%s (the shape of '%s')",
             adm_shape_str(in->ndim[j], in->shape[j], buf, sizeof buf), cur_input_name(shape_op, j));
    return bad_shape(i, in, exp);
}

/* Input i must broadcast to input j's shape (NumPy rules). */
static adm_status need_broadcast(const adm_op_shapes *in, int i, int j)
{
    char exp[200], buf[160];
    int lead = in->ndim[j] - in->ndim[i];
    int ok = lead >= 0;
    for (int d = 0; ok && d < in->ndim[i]; d++) {
        int64_t a = in->shape[i][d], b = in->shape[j][d + lead];
        if (a != b && a != 1) ok = 0;
    }
    if (ok) return ADM_OK;
    snprintf(exp, sizeof exp, "a shape that broadcasts to %s (the shape of '%s')",
             adm_shape_str(in->ndim[j], in->shape[j], buf, sizeof buf), cur_input_name(shape_op, j));
    return bad_shape(i, in, exp);
}

static adm_status norm_axis(const adm_op_params *p, int ndim, int *axis)
{
    int a = p->axis < 0 ? p->axis + ndim : p->axis;
    if (a < 0 || a >= ndim)
        return ADM_FAIL(ADM_ERR_INVALID, "parameter 'axis' = %d is out of range for rank %d",
                        p->axis, ndim);
    *axis = a;
    return ADM_OK;
}

static adm_status shape_reduce(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    int axis = 0, k = 0;
    ADM_TRY(need_rank(in, 0, 1, ADM_MAX_DIMS));
    ADM_TRY(norm_axis(p, in->ndim[0], &axis));
    for (int d = 0; d < in->ndim[0]; d++)
        if (d != axis) shape[k++] = in->shape[0][d];
    *ndim = k;
    return ADM_OK;
}

static adm_status shape_same(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    (void)p;
    ADM_TRY(need_rank(in, 0, 0, ADM_MAX_DIMS));
    copy_shape(in, 0, ndim, shape);
    return ADM_OK;
}

static adm_status shape_softmax(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    int axis = 0;
    ADM_TRY(need_rank(in, 0, 1, ADM_MAX_DIMS));
    ADM_TRY(norm_axis(p, in->ndim[0], &axis));
    copy_shape(in, 0, ndim, shape);
    return ADM_OK;
}

static adm_status shape_binary_same(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    (void)p;
    ADM_TRY(need_same(in, 1, 0));
    copy_shape(in, 0, ndim, shape);
    return ADM_OK;
}

static adm_status shape_matmul(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    char exp[96];
    (void)p;
    ADM_TRY(need_rank(in, 0, 2, 2));
    ADM_TRY(need_rank(in, 1, 2, 2));
    if (in->shape[1][0] != in->shape[0][1]) {
        snprintf(exp, sizeof exp, "[%lld, N] (K of 'a')", (long long)in->shape[0][1]);
        return bad_shape(1, in, exp);
    }
    *ndim = 2;
    shape[0] = in->shape[0][0];
    shape[1] = in->shape[1][1];
    return ADM_OK;
}

/* linear and linear+gelu: x [..., K], w [N, K], bias [N] -> [..., N] */
static adm_status shape_linear(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    char exp[96];
    (void)p;
    ADM_TRY(need_rank(in, 0, 2, ADM_MAX_DIMS));
    ADM_TRY(need_rank(in, 1, 2, 2));
    if (in->shape[1][1] != last(in, 0)) {
        snprintf(exp, sizeof exp, "[N, %lld] (K of 'x')", (long long)last(in, 0));
        return bad_shape(1, in, exp);
    }
    ADM_TRY(need_vector(in, 2, in->shape[1][0], "N of 'w'"));
    copy_shape(in, 0, ndim, shape);
    shape[*ndim - 1] = in->shape[1][0];
    return ADM_OK;
}

static adm_status shape_gated_residual(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    (void)p;
    ADM_TRY(need_rank(in, 0, 1, ADM_MAX_DIMS));
    ADM_TRY(need_broadcast(in, 1, 0));
    ADM_TRY(need_same(in, 2, 0));
    copy_shape(in, 0, ndim, shape);
    return ADM_OK;
}

static adm_status shape_rmsnorm(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    (void)p;
    ADM_TRY(need_rank(in, 0, 1, ADM_MAX_DIMS));
    ADM_TRY(need_vector(in, 1, last(in, 0), "the channels of 'x'"));
    copy_shape(in, 0, ndim, shape);
    return ADM_OK;
}

static adm_status shape_layernorm(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    ADM_TRY(need_rank(in, 0, 1, ADM_MAX_DIMS));
    ADM_TRY(need_vector(in, 1, last(in, 0), "the channels of 'x'"));
    ADM_TRY(need_vector(in, 2, last(in, 0), "the channels of 'x'"));
    for (int i = 3; i <= 4; i++) {
        if (p->modulate && !in->present[i])
            return ADM_FAIL(ADM_ERR_SHAPE, "input '%s' is required when 'modulate' is true",
                            cur_input_name(shape_op, i));
        if (!p->modulate && in->present[i])
            return ADM_FAIL(ADM_ERR_SHAPE, "input '%s' is given but 'modulate' is false",
                            cur_input_name(shape_op, i));
        if (in->present[i]) ADM_TRY(need_broadcast(in, i, 0));
    }
    copy_shape(in, 0, ndim, shape);
    return ADM_OK;
}

static adm_status shape_groupnorm(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    int64_t c;
    ADM_TRY(need_rank(in, 0, 3, 3));
    c = p->channels_last ? in->shape[0][2] : in->shape[0][1];
    if (c % p->groups != 0)
        return ADM_FAIL(ADM_ERR_INVALID, "parameter 'groups' = %d does not divide the %lld channels of 'x'",
                        p->groups, (long long)c);
    ADM_TRY(need_vector(in, 1, c, "the channels of 'x'"));
    ADM_TRY(need_vector(in, 2, c, "the channels of 'x'"));
    copy_shape(in, 0, ndim, shape);
    return ADM_OK;
}

/* attention and linear attention: q [..., S, D], k [..., T, D], v [..., T, E] */
static adm_status shape_attention(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    char exp[160];
    int r = in->ndim[0];
    (void)p;
    ADM_TRY(need_rank(in, 0, 2, ADM_MAX_DIMS));
    if (in->ndim[1] != r || in->ndim[2] != r) {
        snprintf(exp, sizeof exp, "rank %d (the rank of 'q')", r);
        return bad_shape(in->ndim[1] != r ? 1 : 2, in, exp);
    }
    for (int d = 0; d < r - 2; d++)
        if (in->shape[1][d] != in->shape[0][d] || in->shape[2][d] != in->shape[0][d]) {
            snprintf(exp, sizeof exp, "the leading (batch, head) extents of 'q'");
            return bad_shape(in->shape[1][d] != in->shape[0][d] ? 1 : 2, in, exp);
        }
    if (in->shape[1][r - 1] != in->shape[0][r - 1]) {
        snprintf(exp, sizeof exp, "[..., T, %lld] (D of 'q')", (long long)in->shape[0][r - 1]);
        return bad_shape(1, in, exp);
    }
    if (in->shape[2][r - 2] != in->shape[1][r - 2]) {
        snprintf(exp, sizeof exp, "[..., %lld, E] (T of 'k')", (long long)in->shape[1][r - 2]);
        return bad_shape(2, in, exp);
    }
    copy_shape(in, 0, ndim, shape);
    shape[r - 1] = in->shape[2][r - 1];
    return ADM_OK;
}

static adm_status shape_quantize(const adm_op_params *p, const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    ADM_TRY(need_rank(in, 0, p->scheme == ADM_Q_FP8_TENSOR ? 1 : 2, ADM_MAX_DIMS));
    if (p->scheme == ADM_Q_NVFP4 && last(in, 0) % 16 != 0)
        return bad_shape(0, in, "a last extent divisible by 16 (nvfp4 blocks)");
    copy_shape(in, 0, ndim, shape);
    return ADM_OK;
}

/* ---------------------------------------------------------------- catalog */

#define OPT(i) (1u << (i))
static const adm_op catalog[] = {
    {"row_sum", P_AXIS, 0, 0, 1, {"x"}, 0, shape_reduce},
    {"mean_sq", P_AXIS, 0, 0, 1, {"x"}, 0, shape_reduce},
    {"matmul", 0, 0, 0, 2, {"a", "b"}, 0, shape_matmul},
    {"linear", 0, 0, 0, 3, {"x", "w", "bias"}, OPT(2), shape_linear},
    {"scale", P_FACTOR, P_FACTOR, 0, 1, {"x"}, 0, shape_same},
    {"relu", 0, 0, 0, 1, {"x"}, 0, shape_same},
    {"gelu", P_APPROX, 0, 0, 1, {"x"}, 0, shape_same},
    {"silu", 0, 0, 0, 1, {"x"}, 0, shape_same},
    {"swiglu", 0, 0, 0, 2, {"gate", "up"}, 0, shape_binary_same},
    {"linear+gelu", P_APPROX, 0, 0, 3, {"x", "w", "bias"}, OPT(2), shape_linear},
    {"gated_residual", 0, 0, 0, 3, {"x", "g", "y"}, 0, shape_gated_residual},
    {"rmsnorm", P_EPS | P_SILU, 0, 1e-6, 2, {"x", "weight"}, OPT(1), shape_rmsnorm},
    {"layernorm", P_EPS | P_MODULATE, 0, 1e-5, 5, {"x", "weight", "bias", "shift", "scale"},
     OPT(1) | OPT(2) | OPT(3) | OPT(4), shape_layernorm},
    {"groupnorm", P_EPS | P_GROUPS | P_SILU | P_CHANNELS_LAST, P_GROUPS, 1e-5, 3,
     {"x", "weight", "bias"}, OPT(1) | OPT(2), shape_groupnorm},
    {"softmax", P_AXIS, 0, 0, 1, {"x"}, 0, shape_softmax},
    {"attention", P_CAUSAL | P_SCALE, 0, 0, 3, {"q", "k", "v"}, 0, shape_attention},
    {"linear_attention", P_EPS, 0, 1e-6, 3, {"q", "k", "v"}, 0, shape_attention},
    {"quantize", P_SCHEME, P_SCHEME, 0, 1, {"x"}, 0, shape_quantize},
};
#define N_OPS ((int)(sizeof catalog / sizeof catalog[0]))

adm_op_id adm_op_id_of(const adm_op *op) { return (adm_op_id)(op - catalog); }

const adm_op *adm_op_find(const char *name)
{
    for (int i = 0; name && i < N_OPS; i++)
        if (strcmp(catalog[i].name, name) == 0) return &catalog[i];
    return NULL;
}

int adm_op_count(void) { return N_OPS; }
const adm_op *adm_op_at(int i) { return (i >= 0 && i < N_OPS) ? &catalog[i] : NULL; }
const char *adm_op_name(const adm_op *op) { return op->name; }
int adm_op_input_count(const adm_op *op) { return op->n_inputs; }
const char *adm_op_input_name(const adm_op *op, int i) { return (i >= 0 && i < op->n_inputs) ? op->inputs[i] : NULL; }
int adm_op_input_optional(const adm_op *op, int i) { return (op->optional >> i) & 1u; }

int adm_op_input_index(const adm_op *op, const char *name)
{
    for (int i = 0; i < op->n_inputs; i++)
        if (strcmp(op->inputs[i], name) == 0) return i;
    return -1;
}

/* ---------------------------------------------------------------- params */

static const struct { unsigned key; const char *name; } key_names[] = {
    {P_AXIS, "axis"}, {P_FACTOR, "factor"}, {P_APPROX, "approximate"}, {P_EPS, "eps"},
    {P_MODULATE, "modulate"}, {P_GROUPS, "groups"}, {P_SILU, "silu"},
    {P_CHANNELS_LAST, "channels_last"}, {P_CAUSAL, "causal"}, {P_SCALE, "scale"},
    {P_SCHEME, "scheme"},
};

static adm_status want_bool(const adm_op *op, const char *k, json_t *v, int *out)
{
    if (!json_is_boolean(v))
        return ADM_FAIL(ADM_ERR_INVALID, "op '%s': parameter '%s' must be true or false", op->name, k);
    *out = json_is_true(v);
    return ADM_OK;
}

static adm_status want_number(const adm_op *op, const char *k, json_t *v, double *out)
{
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return ADM_FAIL(ADM_ERR_INVALID, "op '%s': parameter '%s' must be a finite number", op->name, k);
    *out = json_number_value(v);
    return ADM_OK;
}

static adm_status want_int(const adm_op *op, const char *k, json_t *v, int lo, int hi, int *out)
{
    json_int_t i;
    if (!json_is_integer(v))
        return ADM_FAIL(ADM_ERR_INVALID, "op '%s': parameter '%s' must be an integer", op->name, k);
    i = json_integer_value(v);
    if (i < lo || i > hi)
        return ADM_FAIL(ADM_ERR_INVALID, "op '%s': parameter '%s' = %lld is outside %d..%d",
                        op->name, k, (long long)i, lo, hi);
    *out = (int)i;
    return ADM_OK;
}

static adm_status set_param(const adm_op *op, unsigned key, const char *k, json_t *v, adm_op_params *p)
{
    const char *s;
    switch (key) {
    case P_AXIS: return want_int(op, k, v, -ADM_MAX_DIMS, ADM_MAX_DIMS - 1, &p->axis);
    case P_FACTOR: return want_number(op, k, v, &p->factor);
    case P_APPROX:
        s = json_string_value(v);
        if (s && strcmp(s, "tanh") == 0) p->gelu_tanh = 1;
        else if (s && strcmp(s, "none") == 0) p->gelu_tanh = 0;
        else return ADM_FAIL(ADM_ERR_INVALID, "op '%s': parameter 'approximate' must be \"tanh\" or \"none\"", op->name);
        return ADM_OK;
    case P_EPS:
        ADM_TRY(want_number(op, k, v, &p->eps));
        if (p->eps < 0)
            return ADM_FAIL(ADM_ERR_INVALID, "op '%s': parameter 'eps' = %g must be >= 0", op->name, p->eps);
        return ADM_OK;
    case P_MODULATE: return want_bool(op, k, v, &p->modulate);
    case P_GROUPS: return want_int(op, k, v, 1, 1 << 20, &p->groups);
    case P_SILU: return want_bool(op, k, v, &p->silu);
    case P_CHANNELS_LAST: return want_bool(op, k, v, &p->channels_last);
    case P_CAUSAL: return want_bool(op, k, v, &p->causal);
    case P_SCALE:
        ADM_TRY(want_number(op, k, v, &p->attn_scale));
        if (!(p->attn_scale > 0))
            return ADM_FAIL(ADM_ERR_INVALID, "op '%s': parameter 'scale' must be > 0", op->name);
        return ADM_OK;
    case P_SCHEME:
        s = json_string_value(v);
        if (s && strcmp(s, "fp8_e4m3_tensor") == 0) p->scheme = ADM_Q_FP8_TENSOR;
        else if (s && strcmp(s, "fp8_e4m3_row") == 0) p->scheme = ADM_Q_FP8_ROW;
        else if (s && strcmp(s, "nvfp4") == 0) p->scheme = ADM_Q_NVFP4;
        else return ADM_FAIL(ADM_ERR_INVALID, "op '%s': parameter 'scheme' must be \"fp8_e4m3_tensor\", "
                             "\"fp8_e4m3_row\" or \"nvfp4\"", op->name);
        return ADM_OK;
    }
    return ADM_FAIL(ADM_ERR_INTERNAL, "unhandled parameter key %u", key);
}

adm_status adm_op_params_parse(const adm_op *op, const char *text, adm_op_params *p)
{
    json_t *root;
    json_error_t err;
    const char *k;
    json_t *v;
    unsigned seen = 0;
    adm_status st = ADM_OK;

    memset(p, 0, sizeof *p);
    p->axis = -1;
    p->eps = op->eps_default;
    if (!text || !*text) text = "{}";
    p->json = text;
    root = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ADM_FAIL(ADM_ERR_JSON, "op '%s': parameters are not valid JSON (line %d, column %d: %s)",
                        op->name, err.line, err.column, err.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return ADM_FAIL(ADM_ERR_JSON, "op '%s': parameters must be a JSON object", op->name);
    }
    json_object_foreach(root, k, v) {
        unsigned key = 0;
        for (size_t i = 0; i < sizeof key_names / sizeof key_names[0]; i++)
            if (strcmp(k, key_names[i].name) == 0) key = key_names[i].key;
        if (!key || !(op->keys & key)) {
            st = ADM_FAIL(ADM_ERR_INVALID, "op '%s' has no parameter '%s'", op->name, k);
            break;
        }
        if ((st = set_param(op, key, k, v, p)) != ADM_OK) break;
        seen |= key;
    }
    json_decref(root);
    if (st != ADM_OK) return st;
    for (size_t i = 0; i < sizeof key_names / sizeof key_names[0]; i++)
        if ((op->required & key_names[i].key) && !(seen & key_names[i].key))
            return ADM_FAIL(ADM_ERR_INVALID, "op '%s' requires parameter '%s'", op->name, key_names[i].name);
    return ADM_OK;
}

adm_status adm_op_output_shape(const adm_op *op, const adm_op_params *p,
                               const adm_op_shapes *in, int *ndim, int64_t *shape)
{
    for (int i = 0; i < op->n_inputs; i++) {
        int64_t n;
        if (!in->present[i] && !adm_op_input_optional(op, i))
            return ADM_FAIL(ADM_ERR_SHAPE, "op '%s' requires input '%s'", op->name, op->inputs[i]);
        if (in->present[i]) ADM_TRY(adm_shape_numel(in->ndim[i], in->shape[i], &n));
    }
    shape_op = op;
    return op->shape(p, in, ndim, shape);
}
