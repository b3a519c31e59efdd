/* The validator: a capture's tensors against its op's catalog entry. */
#include "capture_internal.h"
#include "adm_oracle.h"

#include <stdio.h>

static const char *file_of(const adm_capture *c) { return c->path ? c->path : "(capture in memory)"; }

/* inherit: the capture's /inputs, whose entries stand in for the ones
 * inputs lacks (a special case of version 2); NULL: none. */
static adm_status check_inputs(const adm_capture *c, const adm_op *op, const adm_op_params *p,
                               const adm_entry_list *inputs, const adm_entry_list *inherit, const char *prefix,
                               int *ndim, int64_t *shape)
{
    adm_op_shapes in;
    adm_status st;
    memset(&in, 0, sizeof in);
    for (int i = 0; inherit && i < inherit->n; i++) {
        int k = adm_op_input_index(op, inherit->v[i].name);
        if (k < 0) continue; /* refused where /inputs itself is checked */
        in.present[k] = 1;
        in.ndim[k] = inherit->v[i].t.ndim;
        memcpy(in.shape[k], inherit->v[i].t.shape, sizeof(int64_t) * (size_t)inherit->v[i].t.ndim);
    }
    for (int i = 0; i < inputs->n; i++) {
        int k = adm_op_input_index(op, inputs->v[i].name);
        if (k < 0) {
            char names[256] = "";
            for (int j = 0; j < adm_op_input_count(op); j++) {
                strncat(names, j ? ", " : "", sizeof names - strlen(names) - 1);
                strncat(names, adm_op_input_name(op, j), sizeof names - strlen(names) - 1);
            }
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s/inputs/%s': op '%s' has no such input "
                            "(expected %s)", file_of(c), prefix, inputs->v[i].name, adm_op_name(op), names);
        }
        in.present[k] = 1;
        in.ndim[k] = inputs->v[i].t.ndim;
        memcpy(in.shape[k], inputs->v[i].t.shape, sizeof(int64_t) * (size_t)inputs->v[i].t.ndim);
    }
    st = adm_op_output_shape(op, p, &in, ndim, shape);
    if (st != ADM_OK) {
        adm_error_prefix("%s: group '%s/inputs': ", file_of(c), prefix);
        return ADM_ERR_FORMAT;
    }
    return ADM_OK;
}

static adm_status check_output(const adm_capture *c, const char *what, const adm_tensor *t,
                               int ndim, const int64_t *shape, const char *op)
{
    char a[160], b[160];
    if (t->ndim == ndim && memcmp(t->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0) return ADM_OK;
    return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s' has shape %s, expected %s (the output of "
                    "'%s' for these inputs)", file_of(c), what, adm_shape_str(t->ndim, t->shape, a, sizeof a),
                    adm_shape_str(ndim, shape, b, sizeof b), op);
}

static adm_status check_outputs(const adm_capture *c, const char *prefix, int has_ref,
                                const adm_tensor *ref, const adm_entry_list *cands, int ndim,
                                const int64_t *shape)
{
    char what[400];
    if (has_ref) {
        snprintf(what, sizeof what, "%s/reference", prefix);
        ADM_TRY(check_output(c, what, ref, ndim, shape, c->op));
    }
    for (int i = 0; i < cands->n; i++) {
        snprintf(what, sizeof what, "%s/candidates/%s", prefix, cands->v[i].name);
        ADM_TRY(check_output(c, what, &cands->v[i].t, ndim, shape, c->op));
    }
    return ADM_OK;
}

adm_status adm_capture_validate(const adm_capture *c)
{
    const adm_op *op = adm_op_find(c->op);
    adm_op_params p;
    int ndim = 0;
    int64_t shape[ADM_MAX_DIMS];

    if (!op) {
        /* Not in the catalog: valid only with the user's own evaluation,
         * and then every output must have the oracle's shape. */
        if (!c->has_oracle)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: root attribute 'op' = '%s' is not in the catalog, and "
                            "there is no dataset '/oracle' (a user fp64 evaluation) to judge it by",
                            file_of(c), c->op);
        ADM_TRY(check_outputs(c, "", c->has_ref, &c->ref, &c->candidates, c->oracle.ndim, c->oracle.shape));
        return ADM_OK;
    }
    if (adm_op_params_parse(op, c->params, &p) != ADM_OK) {
        adm_error_prefix("%s: root attribute 'op_params': ", file_of(c));
        return ADM_ERR_FORMAT;
    }
    ADM_TRY(check_inputs(c, op, &p, &c->inputs, NULL, "", &ndim, shape));
    ADM_TRY(check_outputs(c, "", c->has_ref, &c->ref, &c->candidates, ndim, shape));
    if (c->has_oracle) ADM_TRY(check_output(c, "/oracle", &c->oracle, ndim, shape, c->op));
    for (int i = 0; i < c->n_specials; i++) {
        const adm_special *s = &c->specials[i];
        char prefix[300];
        snprintf(prefix, sizeof prefix, "/special/%s", s->name);
        /* A case the reference refuses may not fit the op at all: that is
         * what it probes. */
        if (s->refusal != ADM_OK) continue;
        ADM_TRY(check_inputs(c, op, &p, &s->inputs, c->version >= 2 ? &c->inputs : NULL, prefix, &ndim, shape));
        ADM_TRY(check_outputs(c, prefix, s->has_ref, &s->ref, &s->candidates, ndim, shape));
    }
    return ADM_OK;
}
