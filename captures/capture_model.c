/* The capture handle (captures/FORMAT.md's model in memory): its
 * lifetime, accessors and building. The HDF5 reader and writer are
 * captures/capture_read.c and capture_write.c. */
#include "capture_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- memory */

static void list_free(adm_entry_list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].name);
        adm_tensor_free(&l->v[i].t);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Takes ownership of name and *t on success (then *t is zeroed); leaves
 * both to the caller on failure. No check for a repeated name. */
adm_status adm_cap_list_append(adm_entry_list *l, char *name, adm_tensor *t)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        adm_entry *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].name = name;
    l->v[l->n].t = *t;
    memset(t, 0, sizeof *t);
    l->n++;
    return ADM_OK;
}

/* Takes ownership of *t on success. */
adm_status adm_cap_list_push(adm_entry_list *l, const char *name, adm_tensor *t)
{
    char *own;
    adm_status st;
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0)
            return ADM_FAIL(ADM_ERR_INVALID, "a tensor named '%s' is already there", name);
    if (!(own = adm_strdup(name))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    if ((st = adm_cap_list_append(l, own, t)) != ADM_OK) free(own);
    return st;
}

adm_status adm_cap_check_name(const char *name) { return adm_name_check("tensor name", name); }

void adm_capture_free(adm_capture *c)
{
    if (!c) return;
    free(c->path);
    free(c->op);
    free(c->params);
    free(c->model);
    free(c->layer);
    free(c->source);
    list_free(&c->inputs);
    list_free(&c->candidates);
    adm_tensor_free(&c->ref);
    adm_tensor_free(&c->oracle);
    adm_tensor_free(&c->oracle_bound);
    for (int i = 0; i < c->n_specials; i++) {
        free(c->specials[i].name);
        list_free(&c->specials[i].inputs);
        list_free(&c->specials[i].candidates);
        adm_tensor_free(&c->specials[i].ref);
    }
    free(c->specials);
    adm_sandbox_arena_free(c);
    free(c);
}

adm_capture *adm_cap_new(void)
{
    adm_capture *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->version = ADM_CAPTURE_VERSION;
    c->step = -1;
    c->model = adm_strdup("");
    c->layer = adm_strdup("");
    c->source = adm_strdup("");
    c->params = adm_strdup("{}");
    if (!c->model || !c->layer || !c->source || !c->params) {
        adm_capture_free(c);
        return NULL;
    }
    return c;
}

/* ---------------------------------------------------------------- accessors */

/* Entry i of l; {NULL, NULL} where l is NULL or has no entry i. */
static adm_named_tensor named(const adm_entry_list *l, int i)
{
    adm_named_tensor r = {NULL, NULL};
    if (l && i >= 0 && i < l->n) {
        r.name = l->v[i].name;
        r.tensor = &l->v[i].t;
    }
    return r;
}

static const adm_special *special_at(const adm_capture *c, int i)
{
    return (i >= 0 && i < c->n_specials) ? &c->specials[i] : NULL;
}

/* Special case i's inputs (candidates 0) or candidates (1); NULL where
 * there is no case i. */
static const adm_entry_list *special_list(const adm_capture *c, int i, int candidates)
{
    const adm_special *s = special_at(c, i);
    return !s ? NULL : candidates ? &s->candidates : &s->inputs;
}

static int count_of(const adm_entry_list *l) { return l ? l->n : 0; }

const char *adm_capture_path(const adm_capture *c) { return c->path; }
int adm_capture_version(const adm_capture *c) { return c->version; }
const char *adm_capture_op(const adm_capture *c) { return c->op; }
const char *adm_capture_params(const adm_capture *c) { return c->params; }
const char *adm_capture_model(const adm_capture *c) { return c->model; }
const char *adm_capture_layer(const adm_capture *c) { return c->layer; }
int64_t adm_capture_step(const adm_capture *c) { return c->step; }
const char *adm_capture_source(const adm_capture *c) { return c->source; }
int adm_capture_input_count(const adm_capture *c) { return c->inputs.n; }
adm_named_tensor adm_capture_input(const adm_capture *c, int i) { return named(&c->inputs, i); }
const adm_tensor *adm_capture_reference(const adm_capture *c) { return c->has_ref ? &c->ref : NULL; }
int adm_capture_candidate_count(const adm_capture *c) { return c->candidates.n; }
adm_named_tensor adm_capture_candidate(const adm_capture *c, int i) { return named(&c->candidates, i); }
const adm_tensor *adm_capture_oracle(const adm_capture *c) { return c->has_oracle ? &c->oracle : NULL; }
const adm_tensor *adm_capture_oracle_bound(const adm_capture *c) { return c->has_oracle_bound ? &c->oracle_bound : NULL; }
int adm_capture_oracle_certified(const adm_capture *c) { return c->oracle_certified; }
int adm_capture_special_count(const adm_capture *c) { return c->n_specials; }

const adm_tensor *adm_capture_find_input(const adm_capture *c, const char *name)
{
    for (int i = 0; i < c->inputs.n; i++)
        if (strcmp(c->inputs.v[i].name, name) == 0) return &c->inputs.v[i].t;
    return NULL;
}

const char *adm_capture_special_name(const adm_capture *c, int i)
{
    const adm_special *s = special_at(c, i);
    return s ? s->name : NULL;
}

int adm_capture_special_input_count(const adm_capture *c, int i) { return count_of(special_list(c, i, 0)); }
adm_named_tensor adm_capture_special_input(const adm_capture *c, int i, int j)
{
    return named(special_list(c, i, 0), j);
}

const adm_tensor *adm_capture_special_find_input(const adm_capture *c, int i, const char *name)
{
    const adm_entry_list *l = special_list(c, i, 0);
    if (!l || !name) return NULL;
    for (int j = 0; j < l->n; j++)
        if (!strcmp(l->v[j].name, name)) return &l->v[j].t;
    return c->version >= 2 ? adm_capture_find_input(c, name) : NULL;
}

const adm_tensor *adm_capture_special_reference(const adm_capture *c, int i)
{
    const adm_special *s = special_at(c, i);
    return (s && s->has_ref) ? &s->ref : NULL;
}

adm_status adm_capture_special_refusal(const adm_capture *c, int i)
{
    const adm_special *s = special_at(c, i);
    return s ? s->refusal : ADM_OK;
}

int adm_capture_special_candidate_count(const adm_capture *c, int i) { return count_of(special_list(c, i, 1)); }
adm_named_tensor adm_capture_special_candidate(const adm_capture *c, int i, int j)
{
    return named(special_list(c, i, 1), j);
}

/* ---------------------------------------------------------------- building */

adm_status adm_capture_create_borrowed(const char *op, const char *params_json, adm_capture **out)
{
    ADM_TRY(adm_capture_create(op, params_json, out));
    (*out)->borrowed = 1;
    return ADM_OK;
}

adm_status adm_capture_create(const char *op, const char *params_json, adm_capture **out)
{
    adm_capture *c;
    if (!op || !*op) return ADM_FAIL(ADM_ERR_INVALID, "a capture needs an op name");
    c = adm_cap_new();
    if (!c) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    free(c->params);
    c->op = adm_strdup(op);
    c->params = adm_strdup(params_json && *params_json ? params_json : "{}");
    if (!c->op || !c->params) {
        adm_capture_free(c);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    *out = c;
    return ADM_OK;
}

static adm_status replace_str(char **dst, const char *s)
{
    char *d = adm_strdup(s);
    if (!d) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    free(*dst);
    *dst = d;
    return ADM_OK;
}

adm_status adm_capture_set_provenance(adm_capture *c, const char *model, const char *layer,
                                      int64_t step, const char *source)
{
    ADM_TRY(replace_str(&c->model, model));
    ADM_TRY(replace_str(&c->layer, layer));
    ADM_TRY(replace_str(&c->source, source));
    c->step = step < 0 ? -1 : step;
    return ADM_OK;
}

/* A borrowed capture's view of the caller's tensor: the descriptor as
 * given, checked as adm_tensor_wrap checks a view (a known dtype, a rank
 * of at most ADM_MAX_DIMS, every element it addresses within its
 * capacity), with storage that is there and aligned for its elements
 * (they are read through typed pointers). Never owned. */
static adm_status borrow(const adm_tensor *t, adm_tensor *view)
{
    const adm_format_info *f = adm_format_get(t->dtype);
    int64_t n;
    if (!f) return ADM_FAIL(ADM_ERR_DTYPE, "a borrowed tensor has no valid dtype (%d)", (int)t->dtype);
    ADM_TRY(adm_tensor_wrap(view, t->dtype, t->ndim, t->shape, t->stride, t->offset, t->data, t->capacity));
    n = adm_tensor_numel(view);
    if (n > 0 && !t->data) return ADM_FAIL(ADM_ERR_INVALID, "a borrowed tensor of %lld elements has no data", (long long)n);
    if ((uintptr_t)t->data % (uintptr_t)f->storage_bytes)
        return ADM_FAIL(ADM_ERR_INVALID, "a borrowed %s tensor's data is not aligned to its %d-byte elements", f->name,
                        f->storage_bytes);
    return ADM_OK;
}

/* A copy (contiguous, owned), or in a borrowed capture a view. */
static adm_status take(const adm_capture *c, const adm_tensor *t, adm_tensor *out)
{
    return c->borrowed ? borrow(t, out) : adm_tensor_contiguous(t, out);
}

static adm_status add_copy(const adm_capture *c, adm_entry_list *l, const char *name, const adm_tensor *t)
{
    adm_tensor copy;
    adm_status st;
    ADM_TRY(adm_cap_check_name(name));
    ADM_TRY(take(c, t, &copy));
    st = adm_cap_list_push(l, name, &copy);
    adm_tensor_free(&copy);
    return st;
}

static adm_status set_copy(const adm_capture *c, int *has, adm_tensor *dst, const adm_tensor *t)
{
    adm_tensor copy;
    ADM_TRY(take(c, t, &copy));
    adm_tensor_free(dst);
    *dst = copy;
    *has = 1;
    return ADM_OK;
}

adm_status adm_capture_add_input(adm_capture *c, const char *name, const adm_tensor *t)
{
    return add_copy(c, &c->inputs, name, t);
}

adm_status adm_capture_set_reference(adm_capture *c, const adm_tensor *t)
{
    return set_copy(c, &c->has_ref, &c->ref, t);
}

adm_status adm_capture_add_candidate(adm_capture *c, const char *name, const adm_tensor *t)
{
    return add_copy(c, &c->candidates, name, t);
}

adm_status adm_capture_set_oracle(adm_capture *c, const adm_tensor *t)
{
    if (t->dtype != ADM_FP64)
        return ADM_FAIL(ADM_ERR_DTYPE, "a user oracle must be fp64, not %s", adm_dtype_name(t->dtype));
    adm_tensor_free(&c->oracle_bound);
    c->has_oracle_bound = 0;
    c->oracle_certified = 0;
    return set_copy(c, &c->has_oracle, &c->oracle, t);
}

adm_status adm_capture_set_certified_oracle(adm_capture *c, const adm_tensor *value, const adm_tensor *bound)
{
    char a[160], b[160];
    if (value->dtype != ADM_FP64 || bound->dtype != ADM_FP64)
        return ADM_FAIL(ADM_ERR_DTYPE, "a certified oracle is fp64 value and bound");
    if (value->ndim != bound->ndim || memcmp(value->shape, bound->shape, sizeof(int64_t) * (size_t)value->ndim))
        return ADM_FAIL(ADM_ERR_SHAPE, "oracle value %s and bound %s differ in shape",
                        adm_shape_str(value->ndim, value->shape, a, sizeof a),
                        adm_shape_str(bound->ndim, bound->shape, b, sizeof b));
    ADM_TRY(set_copy(c, &c->has_oracle, &c->oracle, value));
    ADM_TRY(set_copy(c, &c->has_oracle_bound, &c->oracle_bound, bound));
    c->oracle_certified = 1;
    return ADM_OK;
}

adm_status adm_capture_add_special(adm_capture *c, const char *name, int *index)
{
    adm_special *s;
    ADM_TRY(adm_cap_check_name(name));
    for (int i = 0; i < c->n_specials; i++)
        if (strcmp(c->specials[i].name, name) == 0)
            return ADM_FAIL(ADM_ERR_INVALID, "a special case named '%s' is already there", name);
    if (c->n_specials == c->cap_specials) {
        int cap = c->cap_specials ? 2 * c->cap_specials : 4;
        adm_special *v = realloc(c->specials, sizeof *v * (size_t)cap);
        if (!v) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        c->specials = v;
        c->cap_specials = cap;
    }
    s = &c->specials[c->n_specials];
    memset(s, 0, sizeof *s);
    s->name = adm_strdup(name);
    if (!s->name) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    *index = c->n_specials++;
    return ADM_OK;
}

static adm_status special_mut(adm_capture *c, int index, adm_special **s)
{
    *s = NULL;
    if (index < 0 || index >= c->n_specials)
        return ADM_FAIL(ADM_ERR_INVALID, "no special case %d", index);
    *s = &c->specials[index];
    return ADM_OK;
}

adm_status adm_capture_special_add_input(adm_capture *c, int index, const char *name, const adm_tensor *t)
{
    adm_special *s = NULL;
    ADM_TRY(special_mut(c, index, &s));
    return add_copy(c, &s->inputs, name, t);
}

adm_status adm_capture_special_set_reference(adm_capture *c, int index, const adm_tensor *t)
{
    adm_special *s = NULL;
    ADM_TRY(special_mut(c, index, &s));
    return set_copy(c, &s->has_ref, &s->ref, t);
}

adm_status adm_capture_special_set_refusal(adm_capture *c, int index, adm_status refused)
{
    adm_special *s = NULL;
    ADM_TRY(special_mut(c, index, &s));
    if ((int)refused < 0 || refused >= ADM_STATUS_COUNT)
        return ADM_FAIL(ADM_ERR_INVALID, "refusal %d is not a status", (int)refused);
    s->refusal = refused;
    return ADM_OK;
}

adm_status adm_capture_special_add_candidate(adm_capture *c, int index, const char *name, const adm_tensor *t)
{
    adm_special *s = NULL;
    ADM_TRY(special_mut(c, index, &s));
    return add_copy(c, &s->candidates, name, t);
}

