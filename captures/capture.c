/* The HDF5 capture format v1: reader and writer (captures/FORMAT.md).
 *
 * The reader trusts nothing in the file: every attribute's class and size,
 * every dataset's storage type against its declared dtype, every extent
 * against the size limit, before a byte is allocated. Every error names
 * the file and the dataset or attribute, and what was expected. */
#include "capture_internal.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NAME_MAX_LEN 128
#define ATTR_MAX_LEN (1 << 20)

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

/* Takes ownership of *t on success. */
static adm_status list_push(adm_entry_list *l, const char *name, adm_tensor *t)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0)
            return ADM_FAIL(ADM_ERR_INVALID, "a tensor named '%s' is already there", name);
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        adm_entry *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n].name = adm_strdup(name);
    if (!l->v[l->n].name) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    l->v[l->n].t = *t;
    memset(t, 0, sizeof *t);
    l->n++;
    return ADM_OK;
}

static adm_status check_name(const char *name) { return adm_name_check("tensor name", name); }

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
    free(c);
}

static adm_capture *capture_new(void)
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

static adm_named_tensor named(const adm_entry_list *l, int i)
{
    adm_named_tensor r = {NULL, NULL};
    if (i >= 0 && i < l->n) {
        r.name = l->v[i].name;
        r.tensor = &l->v[i].t;
    }
    return r;
}

static const adm_special *special_at(const adm_capture *c, int i)
{
    return (i >= 0 && i < c->n_specials) ? &c->specials[i] : NULL;
}

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

int adm_capture_special_input_count(const adm_capture *c, int i)
{
    const adm_special *s = special_at(c, i);
    return s ? s->inputs.n : 0;
}

adm_named_tensor adm_capture_special_input(const adm_capture *c, int i, int j)
{
    const adm_special *s = special_at(c, i);
    adm_named_tensor none = {NULL, NULL};
    return s ? named(&s->inputs, j) : none;
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

int adm_capture_special_candidate_count(const adm_capture *c, int i)
{
    const adm_special *s = special_at(c, i);
    return s ? s->candidates.n : 0;
}

adm_named_tensor adm_capture_special_candidate(const adm_capture *c, int i, int j)
{
    const adm_special *s = special_at(c, i);
    adm_named_tensor none = {NULL, NULL};
    return s ? named(&s->candidates, j) : none;
}

/* ---------------------------------------------------------------- building */

adm_status adm_capture_create(const char *op, const char *params_json, adm_capture **out)
{
    adm_capture *c;
    if (!op || !*op) return ADM_FAIL(ADM_ERR_INVALID, "a capture needs an op name");
    c = capture_new();
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

static adm_status add_copy(adm_entry_list *l, const char *name, const adm_tensor *t)
{
    adm_tensor copy;
    adm_status st;
    ADM_TRY(check_name(name));
    ADM_TRY(adm_tensor_contiguous(t, &copy));
    st = list_push(l, name, &copy);
    adm_tensor_free(&copy);
    return st;
}

static adm_status set_copy(int *has, adm_tensor *dst, const adm_tensor *t)
{
    adm_tensor copy;
    ADM_TRY(adm_tensor_contiguous(t, &copy));
    adm_tensor_free(dst);
    *dst = copy;
    *has = 1;
    return ADM_OK;
}

adm_status adm_capture_add_input(adm_capture *c, const char *name, const adm_tensor *t)
{
    return add_copy(&c->inputs, name, t);
}

adm_status adm_capture_set_reference(adm_capture *c, const adm_tensor *t)
{
    return set_copy(&c->has_ref, &c->ref, t);
}

adm_status adm_capture_add_candidate(adm_capture *c, const char *name, const adm_tensor *t)
{
    return add_copy(&c->candidates, name, t);
}

adm_status adm_capture_set_oracle(adm_capture *c, const adm_tensor *t)
{
    if (t->dtype != ADM_FP64)
        return ADM_FAIL(ADM_ERR_DTYPE, "a user oracle must be fp64, not %s", adm_dtype_name(t->dtype));
    adm_tensor_free(&c->oracle_bound);
    c->has_oracle_bound = 0;
    c->oracle_certified = 0;
    return set_copy(&c->has_oracle, &c->oracle, t);
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
    ADM_TRY(set_copy(&c->has_oracle, &c->oracle, value));
    ADM_TRY(set_copy(&c->has_oracle_bound, &c->oracle_bound, bound));
    c->oracle_certified = 1;
    return ADM_OK;
}

adm_status adm_capture_add_special(adm_capture *c, const char *name, int *index)
{
    adm_special *s;
    ADM_TRY(check_name(name));
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
    return add_copy(&s->inputs, name, t);
}

adm_status adm_capture_special_set_reference(adm_capture *c, int index, const adm_tensor *t)
{
    adm_special *s = NULL;
    ADM_TRY(special_mut(c, index, &s));
    return set_copy(&s->has_ref, &s->ref, t);
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
    return add_copy(&s->candidates, name, t);
}

/* ---------------------------------------------------------------- HDF5 helpers */

static void h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

static void h5_close(hid_t id)
{
    if (id < 0) return;
    switch (H5Iget_type(id)) {
    case H5I_FILE: H5Fclose(id); break;
    case H5I_GROUP: H5Gclose(id); break;
    case H5I_DATASET: H5Dclose(id); break;
    case H5I_ATTR: H5Aclose(id); break;
    case H5I_DATATYPE: H5Tclose(id); break;
    case H5I_DATASPACE: H5Sclose(id); break;
    case H5I_GENPROP_LST: H5Pclose(id); break;
    default: break;
    }
}

/* Reads a scalar string attribute of loc (variable or fixed length).
 * *out is NULL (and ADM_OK) when absent and not required. */
static adm_status read_str_attr(hid_t loc, const char *where, const char *name, int required, char **out)
{
    hid_t a = -1, t = -1, s = -1, mt = -1;
    adm_status st = ADM_OK;
    htri_t ex = H5Aexists(loc, name);
    *out = NULL;
    if (ex < 0) return ADM_FAIL(ADM_ERR_FORMAT, "%s: cannot look up attribute '%s'", where, name);
    if (ex == 0) {
        if (required) return ADM_FAIL(ADM_ERR_FORMAT, "%s: missing attribute '%s'", where, name);
        return ADM_OK;
    }
    if ((a = H5Aopen(loc, name, H5P_DEFAULT)) < 0 || (t = H5Aget_type(a)) < 0 ||
        (s = H5Aget_space(a)) < 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' cannot be read", where, name);
        goto done;
    }
    if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(s) != 1) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' must be a single string", where, name);
        goto done;
    }
    mt = H5Tcopy(H5T_C_S1);
    if (H5Tis_variable_str(t) > 0) {
        char *v = NULL;
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(t));
        if (H5Aread(a, mt, &v) < 0 || !v) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' cannot be read", where, name);
            goto done;
        }
        if (strlen(v) > ATTR_MAX_LEN)
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' is longer than %d bytes", where, name, ATTR_MAX_LEN);
        else if (!(*out = adm_strdup(v)))
            st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        H5free_memory(v);
    } else {
        size_t n = H5Tget_size(t);
        char *v;
        if (n == 0 || n > ATTR_MAX_LEN) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' has an absurd length %zu", where, name, n);
            goto done;
        }
        v = calloc(n + 1, 1);
        if (!v) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
        H5Tset_size(mt, n);
        H5Tset_strpad(mt, H5T_STR_NULLPAD);
        if (H5Aread(a, mt, v) < 0) {
            free(v);
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' cannot be read", where, name);
            goto done;
        }
        *out = v;
    }
done:
    h5_close(mt);
    h5_close(s);
    h5_close(t);
    h5_close(a);
    return st;
}

static adm_status read_int_attr(hid_t loc, const char *where, const char *name, int required,
                                int *present, int64_t *out)
{
    hid_t a = -1, t = -1, s = -1;
    adm_status st = ADM_OK;
    htri_t ex = H5Aexists(loc, name);
    *present = 0;
    if (ex < 0) return ADM_FAIL(ADM_ERR_FORMAT, "%s: cannot look up attribute '%s'", where, name);
    if (ex == 0) {
        if (required) return ADM_FAIL(ADM_ERR_FORMAT, "%s: missing attribute '%s'", where, name);
        return ADM_OK;
    }
    if ((a = H5Aopen(loc, name, H5P_DEFAULT)) < 0 || (t = H5Aget_type(a)) < 0 ||
        (s = H5Aget_space(a)) < 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' cannot be read", where, name);
        goto done;
    }
    if (H5Tget_class(t) != H5T_INTEGER || H5Sget_simple_extent_npoints(s) != 1) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' must be a single integer", where, name);
        goto done;
    }
    if (H5Aread(a, H5T_NATIVE_INT64, out) < 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' cannot be read", where, name);
        goto done;
    }
    *present = 1;
done:
    h5_close(s);
    h5_close(t);
    h5_close(a);
    return st;
}

static int64_t max_tensor_bytes(void)
{
    const char *e = getenv("ADM_CAPTURE_MAX_BYTES");
    if (e && *e) {
        char *end;
        long long v = strtoll(e, &end, 10);
        if (*end == '\0' && v > 0) return (int64_t)v;
    }
    return ADM_CAPTURE_DEFAULT_MAX_BYTES;
}

/* The HDF5 storage a dtype must have, and the memory type to read it. */
static adm_status storage_ok(adm_dtype dt, hid_t ft, hid_t *mt, const char *where)
{
    H5T_class_t cls = H5Tget_class(ft);
    size_t size = H5Tget_size(ft);
    H5T_sign_t sign = cls == H5T_INTEGER ? H5Tget_sign(ft) : H5T_SGN_NONE;
    H5T_order_t order = H5Tget_order(ft);
    switch (dt) {
    case ADM_BF16:
    case ADM_FP16:
        if (cls == H5T_INTEGER && size == 2) {
            *mt = H5Tcopy(sign == H5T_SGN_2 ? H5T_NATIVE_INT16 : H5T_NATIVE_UINT16);
            return ADM_OK;
        }
        if (dt == ADM_FP16 && cls == H5T_FLOAT && size == 2 && order == H5T_ORDER_LE) {
            *mt = H5Tcopy(ft); /* IEEE half as numpy writes it: the same bits */
            return ADM_OK;
        }
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: dtype %s must be stored as 16-bit integer patterns%s",
                        where, adm_dtype_name(dt), dt == ADM_FP16 ? " (or IEEE half)" : "");
    case ADM_FP32:
        if (cls == H5T_FLOAT && size == 4) { *mt = H5Tcopy(H5T_NATIVE_FLOAT); return ADM_OK; }
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: dtype fp32 must be stored as 32-bit IEEE floats", where);
    case ADM_FP64:
        if (cls == H5T_FLOAT && size == 8) { *mt = H5Tcopy(H5T_NATIVE_DOUBLE); return ADM_OK; }
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: dtype fp64 must be stored as 64-bit IEEE floats", where);
    case ADM_E4M3:
    case ADM_E5M2:
    case ADM_E2M1:
        if (cls == H5T_INTEGER && size == 1) {
            *mt = H5Tcopy(sign == H5T_SGN_2 ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8);
            return ADM_OK;
        }
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: dtype %s must be stored as 8-bit integer patterns",
                        where, adm_dtype_name(dt));
    default:
        return ADM_FAIL(ADM_ERR_INTERNAL, "%s: unhandled dtype", where);
    }
}

/* The largest ratio of raw to stored bytes a dataset may claim: deflate's
 * limit is 1032:1 (258-byte matches in 2 bits); shuffle and fletcher32 do
 * not compress. */
#define MAX_FILTER_RATIO 1100

/* Whether the file can actually hold the raw bytes a dataset declares,
 * checked before they are allocated: every chunk written (an unwritten
 * chunk reads as fill values, so a 20 KB file could declare 16 GiB), the
 * storage within the file's size, and no more expansion than the filters
 * can give. Virtual datasets and external raw storage are refused: a
 * capture is one self-contained file. */
static adm_status storage_holds(hid_t d, const hsize_t *dims, int ndim, int64_t raw, const char *where)
{
    hid_t dcpl = H5Dget_create_plist(d), fid = H5Iget_file_id(d);
    H5D_layout_t lay = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    hsize_t stored = H5Dget_storage_size(d), fsize = 0;
    int nfilters = 0;
    adm_status st = ADM_OK;
    if (fid < 0 || H5Fget_filesize(fid, &fsize) < 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: the size of its file cannot be read", where);
        goto done;
    }
    switch (lay) {
    case H5D_COMPACT:
        break;
    case H5D_CONTIGUOUS:
        if (H5Pget_external_count(dcpl) != 0) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its data lives in external files; a capture must be one "
                          "self-contained file", where);
            goto done;
        }
        break;
    case H5D_CHUNKED: {
        hsize_t cd[ADM_MAX_DIMS], want = 1, have = 0;
        if (H5Pget_chunk(dcpl, ndim, cd) != ndim) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its chunk shape cannot be read", where);
            goto done;
        }
        for (int i = 0; i < ndim; i++) want *= cd[i] ? (dims[i] + cd[i] - 1) / cd[i] : 0;
        hid_t fs = H5Dget_space(d);
        herr_t rc = fs >= 0 ? H5Dget_num_chunks(d, fs, &have) : -1;
        if (fs >= 0) H5Sclose(fs);
        if (rc < 0) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its chunk index cannot be read (corrupt file)", where);
            goto done;
        }
        if (have < want) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: %llu of its %llu chunks are written; a capture's datasets must hold "
                          "all their elements (the rest would read as fill values)", where,
                          (unsigned long long)have, (unsigned long long)want);
            goto done;
        }
        nfilters = H5Pget_nfilters(dcpl);
        break;
    }
    default:
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: virtual or unknown storage layout; a capture's datasets must be "
                      "compact, contiguous or chunked", where);
        goto done;
    }
    if (stored > fsize) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: claims %llu bytes of storage in a file of %llu bytes (corrupt file)", where,
                      (unsigned long long)stored, (unsigned long long)fsize);
    } else if (nfilters <= 0 && stored < (hsize_t)raw) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: holds %llu bytes of the %lld its shape needs (unwritten or truncated data)",
                      where, (unsigned long long)stored, (long long)raw);
    } else if (nfilters > 0 && stored < (hsize_t)(raw / MAX_FILTER_RATIO)) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: %llu stored bytes cannot hold the %lld its shape needs (more than "
                      "%d:1, beyond what deflate gives)", where, (unsigned long long)stored, (long long)raw,
                      MAX_FILTER_RATIO);
    }
done:
    if (fid >= 0) H5Fclose(fid);
    if (dcpl >= 0) H5Pclose(dcpl);
    return st;
}

/* Reads the dataset at path (relative to loc) into an owned tensor. */
static adm_status read_dataset(hid_t loc, const char *path, const char *where, adm_tensor *out)
{
    hid_t d = -1, ft = -1, sp = -1, mt = -1;
    char *dtname = NULL;
    adm_dtype dt;
    hsize_t dims[ADM_MAX_DIMS];
    int64_t shape[ADM_MAX_DIMS], numel;
    int ndim;
    char buf[160];
    adm_status st = ADM_OK;
    adm_tensor t;
    memset(&t, 0, sizeof t);

    if ((d = H5Dopen2(loc, path, H5P_DEFAULT)) < 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: not a readable dataset (a dangling link, a group, or a corrupt file)", where);
        goto done;
    }
    if ((st = read_str_attr(d, where, "dtype", 1, &dtname)) != ADM_OK) goto done;
    if ((st = adm_dtype_from_name(dtname, &dt)) != ADM_OK) {
        adm_error_prefix("%s: attribute 'dtype': ", where);
        st = ADM_ERR_FORMAT;
        goto done;
    }
    ft = H5Dget_type(d);
    sp = H5Dget_space(d);
    if (ft < 0 || sp < 0) { st = ADM_FAIL(ADM_ERR_FORMAT, "%s: cannot read its type or extent", where); goto done; }
    if ((st = storage_ok(dt, ft, &mt, where)) != ADM_OK) goto done;
    if (H5Sget_simple_extent_type(sp) == H5S_NULL) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: has a null dataspace, expected an array", where);
        goto done;
    }
    ndim = H5Sget_simple_extent_ndims(sp);
    if (ndim < 0 || ndim > ADM_MAX_DIMS) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: rank %d, expected 0 to %d", where, ndim, ADM_MAX_DIMS);
        goto done;
    }
    H5Sget_simple_extent_dims(sp, dims, NULL);
    for (int i = 0; i < ndim; i++) {
        if (dims[i] > (hsize_t)ADM_MAX_ELEMENTS) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: extent %llu in dimension %d is absurd (limit 2^40)",
                          where, (unsigned long long)dims[i], i);
            goto done;
        }
        shape[i] = (int64_t)dims[i];
    }
    if (adm_shape_numel(ndim, shape, &numel) != ADM_OK) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: shape %s is absurd (more than 2^40 elements)", where,
                      adm_shape_str(ndim, shape, buf, sizeof buf));
        goto done;
    }
    if (numel * adm_format_get(dt)->storage_bytes > max_tensor_bytes()) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: shape %s needs %lld bytes, above the limit of %lld "
                      "(ADM_CAPTURE_MAX_BYTES)", where, adm_shape_str(ndim, shape, buf, sizeof buf),
                      (long long)(numel * adm_format_get(dt)->storage_bytes), (long long)max_tensor_bytes());
        goto done;
    }
    if (numel > 0 && (st = storage_holds(d, dims, ndim, numel * adm_format_get(dt)->storage_bytes, where)) != ADM_OK)
        goto done;
    if ((st = adm_tensor_alloc(&t, dt, ndim, shape)) != ADM_OK) {
        adm_error_prefix("%s: ", where);
        goto done;
    }
    if (numel > 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data) < 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its data cannot be read (truncated or corrupt file)", where);
        goto done;
    }
    if (dt == ADM_E2M1)
        for (int64_t i = 0; i < numel; i++)
            if (((uint8_t *)t.data)[i] > 0xf) {
                st = ADM_FAIL(ADM_ERR_FORMAT, "%s: element %lld is 0x%02x, not a 4-bit fp4_e2m1 pattern",
                              where, (long long)i, ((uint8_t *)t.data)[i]);
                goto done;
            }
    *out = t;
    memset(&t, 0, sizeof t);
done:
    adm_tensor_free(&t);
    free(dtname);
    h5_close(mt);
    h5_close(sp);
    h5_close(ft);
    h5_close(d);
    return st;
}

/* Link names of a group in creation order where tracked, else by name. */
static adm_status group_names(hid_t g, const char *where, char ***names, int *count)
{
    H5G_info_t info;
    hid_t gcpl;
    unsigned flags = 0;
    H5_index_t idx = H5_INDEX_NAME;
    char **v;
    if (H5Gget_info(g, &info) < 0) return ADM_FAIL(ADM_ERR_FORMAT, "%s: cannot list the group", where);
    if (info.nlinks > 4096) return ADM_FAIL(ADM_ERR_FORMAT, "%s: %llu entries, at most 4096 expected", where, (unsigned long long)info.nlinks);
    gcpl = H5Gget_create_plist(g);
    if (gcpl >= 0) {
        if (H5Pget_link_creation_order(gcpl, &flags) >= 0 && (flags & H5P_CRT_ORDER_INDEXED))
            idx = H5_INDEX_CRT_ORDER;
        H5Pclose(gcpl);
    }
    v = calloc(info.nlinks + 1, sizeof *v);
    if (!v) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    for (hsize_t i = 0; i < info.nlinks; i++) {
        ssize_t n = H5Lget_name_by_idx(g, ".", idx, H5_ITER_INC, i, NULL, 0, H5P_DEFAULT);
        if (n <= 0 || n > NAME_MAX_LEN || !(v[i] = calloc((size_t)n + 1, 1)) ||
            H5Lget_name_by_idx(g, ".", idx, H5_ITER_INC, i, v[i], (size_t)n + 1, H5P_DEFAULT) < 0) {
            for (hsize_t j = 0; j <= i; j++) free(v[j]);
            free(v);
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: entry %llu has an unreadable or over-long name", where,
                            (unsigned long long)i);
        }
    }
    *names = v;
    *count = (int)info.nlinks;
    return ADM_OK;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

static adm_status link_kind_ok(hid_t g, const char *name, const char *where)
{
    H5L_info_t li;
    if (H5Lget_info(g, name, &li, H5P_DEFAULT) < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: cannot read the link", where);
    if (li.type != H5L_TYPE_HARD && li.type != H5L_TYPE_SOFT)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: external and user-defined links are not allowed "
                        "(only hard and soft links)", where);
    return ADM_OK;
}

/* Reads every dataset of group `gname` under loc into list; absent group
 * is fine unless required. */
static adm_status read_group(hid_t loc, const char *file, const char *prefix, const char *gname,
                             int required, adm_entry_list *list)
{
    hid_t g;
    char where[512], **names = NULL;
    int n = 0;
    adm_status st = ADM_OK;
    htri_t ex;
    snprintf(where, sizeof where, "%s: group '%s/%s'", file, prefix, gname);
    ex = H5Lexists(loc, gname, H5P_DEFAULT);
    if (ex <= 0) {
        if (required) return ADM_FAIL(ADM_ERR_FORMAT, "%s: missing (expected a group of datasets)", where);
        return ADM_OK;
    }
    ADM_TRY(link_kind_ok(loc, gname, where));
    if ((g = H5Gopen2(loc, gname, H5P_DEFAULT)) < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: not a group", where);
    if ((st = group_names(g, where, &names, &n)) != ADM_OK) goto done;
    for (int i = 0; i < n && st == ADM_OK; i++) {
        adm_tensor t;
        char dwhere[640];
        snprintf(dwhere, sizeof dwhere, "%s: dataset '%s/%s/%s'", file, prefix, gname, names[i]);
        /* names travel into reports and claims: the format's alphabet */
        if ((st = check_name(names[i])) != ADM_OK) {
            adm_error_prefix("%s: ", dwhere);
            st = ADM_ERR_FORMAT;
            break;
        }
        if ((st = link_kind_ok(g, names[i], dwhere)) != ADM_OK) break;
        if ((st = read_dataset(g, names[i], dwhere, &t)) != ADM_OK) break;
        if ((st = list_push(list, names[i], &t)) != ADM_OK) adm_tensor_free(&t);
    }
done:
    free_names(names, n);
    H5Gclose(g);
    return st;
}

static adm_status read_optional_dataset(hid_t loc, const char *file, const char *prefix,
                                        const char *name, int *has, adm_tensor *t)
{
    char where[512];
    htri_t ex = H5Lexists(loc, name, H5P_DEFAULT);
    snprintf(where, sizeof where, "%s: dataset '%s/%s'", file, prefix, name);
    *has = 0;
    if (ex < 0) return ADM_FAIL(ADM_ERR_FORMAT, "%s: cannot look it up", where);
    if (ex == 0) return ADM_OK;
    ADM_TRY(link_kind_ok(loc, name, where));
    ADM_TRY(read_dataset(loc, name, where, t));
    *has = 1;
    return ADM_OK;
}

static adm_status read_specials(hid_t file_id, const char *file, adm_capture *c)
{
    hid_t g;
    char **names = NULL, where[512];
    int n = 0;
    adm_status st = ADM_OK;
    if (H5Lexists(file_id, "special", H5P_DEFAULT) <= 0) return ADM_OK;
    snprintf(where, sizeof where, "%s: group '/special'", file);
    ADM_TRY(link_kind_ok(file_id, "special", where));
    if ((g = H5Gopen2(file_id, "special", H5P_DEFAULT)) < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: not a group", where);
    if ((st = group_names(g, where, &names, &n)) != ADM_OK) goto done;
    for (int i = 0; i < n && st == ADM_OK; i++) {
        hid_t cg;
        int idx;
        char prefix[300], cwhere[512], *refused = NULL;
        adm_special *s;
        snprintf(prefix, sizeof prefix, "/special/%s", names[i]);
        snprintf(cwhere, sizeof cwhere, "%s: group '%s'", file, prefix);
        if ((st = link_kind_ok(g, names[i], cwhere)) != ADM_OK) break;
        if ((cg = H5Gopen2(g, names[i], H5P_DEFAULT)) < 0) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: not a group", cwhere);
            break;
        }
        if ((st = adm_capture_add_special(c, names[i], &idx)) != ADM_OK) {
            adm_error_prefix("%s: ", cwhere);
            st = ADM_ERR_FORMAT;
            H5Gclose(cg);
            break;
        }
        s = &c->specials[idx];
        st = read_group(cg, file, prefix, "inputs", 1, &s->inputs);
        if (st == ADM_OK) st = read_optional_dataset(cg, file, prefix, "reference", &s->has_ref, &s->ref);
        if (st == ADM_OK) st = read_group(cg, file, prefix, "candidates", 0, &s->candidates);
        if (st == ADM_OK) st = read_str_attr(cg, cwhere, "reference_refused", 0, &refused);
        if (st == ADM_OK && refused) {
            if (adm_status_from_name(refused, &s->refusal) != ADM_OK || s->refusal == ADM_OK) {
                st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'reference_refused' = '%s' is not an error "
                              "status name such as ADM_ERR_SHAPE", cwhere, refused);
            } else if (s->has_ref) {
                st = ADM_FAIL(ADM_ERR_FORMAT, "%s: has both a reference output and 'reference_refused'",
                              cwhere);
            }
        }
        free(refused);
        H5Gclose(cg);
    }
done:
    free_names(names, n);
    H5Gclose(g);
    return st;
}

adm_status adm_capture_read(const char *path, adm_capture **out)
{
    adm_capture *c = NULL;
    hid_t f = -1;
    char where[512], *magic = NULL;
    int64_t version = 0, step = -1;
    int present;
    htri_t acc;
    adm_status st = ADM_OK;

    *out = NULL;
    h5_quiet();
    /* a FIFO or a device would block libhdf5's open, or feed it endlessly */
    ADM_TRY(adm_file_check_regular(path, "the capture"));
#if H5_VERSION_GE(1, 12, 0)
    acc = H5Fis_accessible(path, H5P_DEFAULT);
#else
    acc = H5Fis_hdf5(path);
#endif
    if (acc <= 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: not an HDF5 file (expected an admit capture, "
                        "captures/FORMAT.md)", path);
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: the HDF5 file cannot be opened (truncated or corrupt)", path);
    if (!(c = capture_new())) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
    if (!(c->path = adm_strdup(path))) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
    snprintf(where, sizeof where, "%s: root", path);
    if ((st = read_str_attr(f, where, "admit_format", 0, &magic)) != ADM_OK) goto done;
    if (!magic || strcmp(magic, ADM_CAPTURE_MAGIC) != 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'admit_format' is %s%s%s, expected '%s' "
                      "(not an admit capture)", where, magic ? "'" : "", magic ? magic : "missing",
                      magic ? "'" : "", ADM_CAPTURE_MAGIC);
        goto done;
    }
    if ((st = read_int_attr(f, where, "admit_version", 1, &present, &version)) != ADM_OK) goto done;
    if (version < 1) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'admit_version' = %lld, expected 1", where, (long long)version);
        goto done;
    }
    if (version > ADM_CAPTURE_VERSION) {
        st = ADM_FAIL(ADM_ERR_VERSION, "%s: attribute 'admit_version' = %lld: written by a newer admit; "
                      "this reader understands version %d and older", where, (long long)version,
                      ADM_CAPTURE_VERSION);
        goto done;
    }
    c->version = (int)version;
    free(c->params);
    c->params = NULL;
    if ((st = read_str_attr(f, where, "op", 1, &c->op)) != ADM_OK) goto done;
    if ((st = read_str_attr(f, where, "op_params", 0, &c->params)) != ADM_OK) goto done;
    if (!c->params && !(c->params = adm_strdup("{}"))) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
    {
        char *m = NULL, *l = NULL, *s = NULL;
        st = read_str_attr(f, where, "model", 0, &m);
        if (st == ADM_OK) st = read_str_attr(f, where, "layer", 0, &l);
        if (st == ADM_OK) st = read_str_attr(f, where, "source", 0, &s);
        if (st == ADM_OK) st = read_int_attr(f, where, "step", 0, &present, &step);
        if (st == ADM_OK) st = adm_capture_set_provenance(c, m ? m : "", l ? l : "", present ? step : -1, s ? s : "");
        free(m);
        free(l);
        free(s);
        if (st != ADM_OK) goto done;
    }
    if ((st = read_group(f, path, "", "inputs", 1, &c->inputs)) != ADM_OK) goto done;
    if (c->inputs.n == 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: group '/inputs' is empty, expected the op's input datasets", path);
        goto done;
    }
    if ((st = read_optional_dataset(f, path, "", "reference", &c->has_ref, &c->ref)) != ADM_OK) goto done;
    if ((st = read_group(f, path, "", "candidates", 0, &c->candidates)) != ADM_OK) goto done;
    if ((st = read_optional_dataset(f, path, "", "oracle", &c->has_oracle, &c->oracle)) != ADM_OK) goto done;
    if (c->has_oracle && c->oracle.dtype != ADM_FP64) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '/oracle' has dtype %s, expected fp64", path,
                      adm_dtype_name(c->oracle.dtype));
        goto done;
    }
    if ((st = read_optional_dataset(f, path, "", "oracle_bound", &c->has_oracle_bound, &c->oracle_bound)) != ADM_OK)
        goto done;
    {
        int64_t cert = 0;
        if ((st = read_int_attr(f, where, "oracle_certified", 0, &present, &cert)) != ADM_OK) goto done;
        c->oracle_certified = present && cert == 1;
    }
    if (c->has_oracle_bound &&
        (!c->has_oracle || c->oracle_bound.dtype != ADM_FP64 || c->oracle_bound.ndim != c->oracle.ndim ||
         memcmp(c->oracle_bound.shape, c->oracle.shape, sizeof(int64_t) * (size_t)c->oracle.ndim) != 0)) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '/oracle_bound' must be fp64 with the shape of '/oracle'", path);
        goto done;
    }
    if (c->oracle_certified && !c->has_oracle_bound) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: root attribute 'oracle_certified' = 1 without dataset '/oracle_bound'", path);
        goto done;
    }
    st = read_specials(f, path, c);
done:
    free(magic);
    if (f >= 0) H5Fclose(f);
    if (st != ADM_OK) {
        adm_capture_free(c);
        return st;
    }
    *out = c;
    return ADM_OK;
}

/* ---------------------------------------------------------------- writing */

static adm_status write_str_attr(hid_t loc, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR), a = -1;
    adm_status st = ADM_OK;
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    a = H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, t, &value) < 0)
        st = ADM_FAIL(ADM_ERR_HDF5, "cannot write attribute '%s'", name);
    h5_close(a);
    h5_close(s);
    h5_close(t);
    return st;
}

static adm_status write_int_attr(hid_t loc, const char *name, int64_t value)
{
    hid_t s = H5Screate(H5S_SCALAR), a;
    adm_status st = ADM_OK;
    a = H5Acreate2(loc, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &value) < 0)
        st = ADM_FAIL(ADM_ERR_HDF5, "cannot write attribute '%s'", name);
    h5_close(a);
    h5_close(s);
    return st;
}

static hid_t new_group(hid_t loc, const char *name)
{
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE), g;
    H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
    H5Pset_obj_track_times(gcpl, 0);
    g = H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
    H5Pclose(gcpl);
    return g;
}

static adm_status write_dataset(hid_t loc, const char *name, const adm_tensor *t, int gzip)
{
    hsize_t dims[ADM_MAX_DIMS], chunk[ADM_MAX_DIMS];
    hid_t sp = -1, dcpl = -1, d = -1, ft, mt;
    int64_t numel = adm_tensor_numel(t);
    adm_status st = ADM_OK;
    const adm_format_info *f = adm_format_get(t->dtype);
    switch (f->storage_bytes) {
    case 1: ft = H5T_STD_U8LE; mt = H5T_NATIVE_UINT8; break;
    case 2: ft = H5T_STD_U16LE; mt = H5T_NATIVE_UINT16; break;
    case 4: ft = H5T_IEEE_F32LE; mt = H5T_NATIVE_FLOAT; break;
    default: ft = H5T_IEEE_F64LE; mt = H5T_NATIVE_DOUBLE; break;
    }
    for (int i = 0; i < t->ndim; i++) dims[i] = (hsize_t)t->shape[i];
    sp = t->ndim ? H5Screate_simple(t->ndim, dims, NULL) : H5Screate(H5S_SCALAR);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);
    if (gzip > 0 && t->ndim > 0 && numel > 0) {
        /* Chunks of at most 2^18 elements, whole rows of the last dims. */
        int64_t budget = (int64_t)1 << 18;
        for (int i = t->ndim - 1; i >= 0; i--) {
            int64_t c = t->shape[i] < budget ? t->shape[i] : budget;
            if (c < 1) c = 1;
            chunk[i] = (hsize_t)c;
            budget /= c;
            if (budget < 1) budget = 1;
        }
        H5Pset_chunk(dcpl, t->ndim, chunk);
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, (unsigned)(gzip > 9 ? 9 : gzip));
    }
    d = H5Dcreate2(loc, name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0) {
        st = ADM_FAIL(ADM_ERR_HDF5, "cannot create dataset '%s'", name);
        goto done;
    }
    if (numel > 0) {
        adm_tensor dense;
        const void *src = (const char *)t->data + (size_t)t->offset * (size_t)f->storage_bytes;
        int copied = 0;
        if (!adm_tensor_is_contiguous(t)) {
            if ((st = adm_tensor_contiguous(t, &dense)) != ADM_OK) goto done;
            src = dense.data;
            copied = 1;
        }
        if (H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, src) < 0)
            st = ADM_FAIL(ADM_ERR_HDF5, "cannot write dataset '%s'", name);
        if (copied) adm_tensor_free(&dense);
        if (st != ADM_OK) goto done;
    }
    st = write_str_attr(d, "dtype", f->name);
done:
    h5_close(d);
    h5_close(dcpl);
    h5_close(sp);
    return st;
}

static adm_status write_list(hid_t loc, const char *gname, const adm_entry_list *l, int gzip)
{
    hid_t g = new_group(loc, gname);
    adm_status st = ADM_OK;
    if (g < 0) return ADM_FAIL(ADM_ERR_HDF5, "cannot create group '%s'", gname);
    for (int i = 0; i < l->n && st == ADM_OK; i++) st = write_dataset(g, l->v[i].name, &l->v[i].t, gzip);
    H5Gclose(g);
    return st;
}

static adm_status write_all(hid_t f, const adm_capture *c, int gzip)
{
    ADM_TRY(write_str_attr(f, "admit_format", ADM_CAPTURE_MAGIC));
    ADM_TRY(write_int_attr(f, "admit_version", ADM_CAPTURE_VERSION));
    ADM_TRY(write_str_attr(f, "op", c->op));
    ADM_TRY(write_str_attr(f, "op_params", c->params));
    if (c->model[0]) ADM_TRY(write_str_attr(f, "model", c->model));
    if (c->layer[0]) ADM_TRY(write_str_attr(f, "layer", c->layer));
    if (c->source[0]) ADM_TRY(write_str_attr(f, "source", c->source));
    if (c->step >= 0) ADM_TRY(write_int_attr(f, "step", c->step));
    ADM_TRY(write_list(f, "inputs", &c->inputs, gzip));
    if (c->has_ref) ADM_TRY(write_dataset(f, "reference", &c->ref, gzip));
    if (c->candidates.n) ADM_TRY(write_list(f, "candidates", &c->candidates, gzip));
    if (c->has_oracle) ADM_TRY(write_dataset(f, "oracle", &c->oracle, gzip));
    if (c->has_oracle_bound) ADM_TRY(write_dataset(f, "oracle_bound", &c->oracle_bound, gzip));
    if (c->oracle_certified) ADM_TRY(write_int_attr(f, "oracle_certified", 1));
    if (c->n_specials) {
        hid_t sg = new_group(f, "special");
        adm_status st = ADM_OK;
        if (sg < 0) return ADM_FAIL(ADM_ERR_HDF5, "cannot create group 'special'");
        for (int i = 0; i < c->n_specials && st == ADM_OK; i++) {
            const adm_special *s = &c->specials[i];
            hid_t cg = new_group(sg, s->name);
            if (cg < 0) { st = ADM_FAIL(ADM_ERR_HDF5, "cannot create group 'special/%s'", s->name); break; }
            st = write_list(cg, "inputs", &s->inputs, gzip);
            if (st == ADM_OK && s->has_ref) st = write_dataset(cg, "reference", &s->ref, gzip);
            if (st == ADM_OK && s->candidates.n) st = write_list(cg, "candidates", &s->candidates, gzip);
            if (st == ADM_OK && s->refusal != ADM_OK)
                st = write_str_attr(cg, "reference_refused", adm_status_name(s->refusal));
            H5Gclose(cg);
        }
        H5Gclose(sg);
        return st;
    }
    return ADM_OK;
}

adm_status adm_capture_write(const adm_capture *c, const char *path, int gzip_level)
{
    char *tmp;
    hid_t fapl, f;
    int fd;
    adm_status st;
    h5_quiet();
    ADM_TRY(adm_temp_beside(path, &tmp, &fd));
    close(fd);
    fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_EARLIEST, H5F_LIBVER_V18);
    f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (f < 0) {
        unlink(tmp);
        free(tmp);
        return ADM_FAIL(ADM_ERR_IO, "%s: cannot create the HDF5 file", path);
    }
    st = write_all(f, c, gzip_level);
    if (st != ADM_OK) adm_error_prefix("%s: ", path);
    if (H5Fclose(f) < 0 && st == ADM_OK) st = ADM_FAIL(ADM_ERR_IO, "%s: cannot finish writing", path);
    if (st == ADM_OK && rename(tmp, path) != 0)
        st = ADM_FAIL(ADM_ERR_IO, "%s: cannot move the finished file into place: %s", path, strerror(errno));
    if (st != ADM_OK) unlink(tmp);
    free(tmp);
    return st;
}
