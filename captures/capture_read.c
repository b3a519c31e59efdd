/* The HDF5 capture format v1: the reader (captures/FORMAT.md).
 *
 * The reader trusts nothing in the file: every attribute's class and size,
 * every dataset's storage type against its declared dtype, every extent
 * against the size limit, before a byte is allocated. Every error names
 * the file and the dataset or attribute, and what was expected. */
#include "capture_h5.h"
#include "adm_env.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* "FILE: dataset '/special/NAME/candidates/NAME'": a path of PATH_MAX bytes
 * and names of 128, whole (a cut would lose the dataset from messages) */
#define WHERE_LEN (PATH_MAX + 512)

#define NAME_MAX_LEN 128
#define ATTR_MAX_LEN (1 << 20)

/* ---------------------------------------------------------------- HDF5 helpers */

void adm_cap_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

void adm_cap_h5_close(hid_t id)
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

static void close_attr(hid_t a, hid_t t, hid_t s)
{
    adm_cap_h5_close(s);
    adm_cap_h5_close(t);
    adm_cap_h5_close(a);
}

/* Opens attribute name of loc with its type and space. *a is -1 (and
 * ADM_OK) when it is absent and not required; on failure nothing is left
 * open. */
static adm_status open_attr(hid_t loc, const char *where, const char *name, int required, hid_t *a, hid_t *t,
                            hid_t *s)
{
    htri_t ex;
    *a = *t = *s = -1;
    ADM_CAPTURE_TRACE("attribute '%s' of %s", name, where);
    ex = H5Aexists(loc, name);
    if (ex < 0) return ADM_FAIL(ADM_ERR_FORMAT, "%s: cannot look up attribute '%s'", where, name);
    if (ex == 0) {
        if (required) return ADM_FAIL(ADM_ERR_FORMAT, "%s: missing attribute '%s'", where, name);
        return ADM_OK;
    }
    if ((*a = H5Aopen(loc, name, H5P_DEFAULT)) < 0 || (*t = H5Aget_type(*a)) < 0 ||
        (*s = H5Aget_space(*a)) < 0) {
        close_attr(*a, *t, *s);
        *a = *t = *s = -1;
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' cannot be read", where, name);
    }
    return ADM_OK;
}

/* Reads a scalar string attribute of loc (variable or fixed length).
 * *out is NULL (and ADM_OK) when absent and not required. */
static adm_status read_str_attr(hid_t loc, const char *where, const char *name, int required, char **out)
{
    hid_t a, t, s, mt = -1;
    adm_status st;
    *out = NULL;
    if ((st = open_attr(loc, where, name, required, &a, &t, &s)) != ADM_OK || a < 0) return st;
    if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(s) != 1) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' must be a single string", where, name);
        goto done;
    }
    /* What the file stores for it, before H5Aread allocates from it: the
     * string itself (fixed length), or a heap reference (variable length)
     * whose declared length and heap object adm_cap_heap_check checks
     * against the file (issue 8 R5-R7). */
    if (H5Aget_storage_size(a) > ATTR_MAX_LEN) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' stores %llu bytes, more than %d", where, name,
                      (unsigned long long)H5Aget_storage_size(a), ATTR_MAX_LEN);
        goto done;
    }
    mt = H5Tcopy(H5T_C_S1);
    if (H5Tis_variable_str(t) > 0) {
        char *v = NULL;
        if ((st = adm_cap_heap_check(a, where, name, ATTR_MAX_LEN)) != ADM_OK) goto done;
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
    adm_cap_h5_close(mt);
    close_attr(a, t, s);
    return st;
}

static adm_status read_int_attr(hid_t loc, const char *where, const char *name, int required,
                                int *present, int64_t *out)
{
    hid_t a, t, s;
    adm_status st;
    *present = 0;
    if ((st = open_attr(loc, where, name, required, &a, &t, &s)) != ADM_OK || a < 0) return st;
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
    close_attr(a, t, s);
    return st;
}

static int64_t max_tensor_bytes(void)
{
    int64_t v;
    return adm_env_i64("ADM_CAPTURE_MAX_BYTES", ADM_CAPTURE_DEFAULT_MAX_BYTES, &v) == ADM_OK ? v
                                                                                        : ADM_CAPTURE_DEFAULT_MAX_BYTES;
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
adm_status adm_cap_storage_holds(hid_t d, const hsize_t *dims, int ndim, int64_t raw, const char *where)
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

    ADM_CAPTURE_TRACE("%s", where);
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
    ADM_CAPTURE_TRACE("the type and extent of %s", where);
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
    if (numel > 0 && (st = adm_cap_storage_holds(d, dims, ndim, numel * adm_format_get(dt)->storage_bytes, where)) != ADM_OK)
        goto done;
    st = adm_capture_tensor_alloc_ ? adm_capture_tensor_alloc_(&t, dt, ndim, shape) : adm_tensor_alloc(&t, dt, ndim, shape);
    if (st != ADM_OK) {
        adm_error_prefix("%s: ", where);
        goto done;
    }
    ADM_CAPTURE_TRACE("the data of %s", where);
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
    adm_cap_h5_close(mt);
    adm_cap_h5_close(sp);
    adm_cap_h5_close(ft);
    adm_cap_h5_close(d);
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
    ADM_CAPTURE_TRACE("the links of %s", where);
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
    ADM_CAPTURE_TRACE("the link to %s", where);
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
    char where[WHERE_LEN], **names = NULL;
    int n = 0;
    adm_status st = ADM_OK;
    htri_t ex;
    snprintf(where, sizeof where, "%s: group '%s/%s'", file, prefix, gname);
    ADM_CAPTURE_TRACE("%s", where);
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
        char dwhere[WHERE_LEN];
        snprintf(dwhere, sizeof dwhere, "%s: dataset '%s/%s/%s'", file, prefix, gname, names[i]);
        /* names travel into reports and claims: the format's alphabet */
        if ((st = adm_cap_check_name(names[i])) != ADM_OK) {
            adm_error_prefix("%s: ", dwhere);
            st = ADM_ERR_FORMAT;
            break;
        }
        if ((st = link_kind_ok(g, names[i], dwhere)) != ADM_OK) break;
        if ((st = read_dataset(g, names[i], dwhere, &t)) != ADM_OK) break;
        if ((st = adm_cap_list_push(list, names[i], &t)) != ADM_OK) adm_tensor_free(&t);
    }
done:
    free_names(names, n);
    H5Gclose(g);
    return st;
}

static adm_status read_optional_dataset(hid_t loc, const char *file, const char *prefix,
                                        const char *name, int *has, adm_tensor *t)
{
    char where[WHERE_LEN];
    htri_t ex;
    snprintf(where, sizeof where, "%s: dataset '%s/%s'", file, prefix, name);
    ADM_CAPTURE_TRACE("%s", where);
    ex = H5Lexists(loc, name, H5P_DEFAULT);
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
    char **names = NULL, where[WHERE_LEN];
    int n = 0;
    adm_status st = ADM_OK;
    ADM_CAPTURE_TRACE("group '/special'");
    if (H5Lexists(file_id, "special", H5P_DEFAULT) <= 0) return ADM_OK;
    snprintf(where, sizeof where, "%s: group '/special'", file);
    ADM_TRY(link_kind_ok(file_id, "special", where));
    if ((g = H5Gopen2(file_id, "special", H5P_DEFAULT)) < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: not a group", where);
    if ((st = group_names(g, where, &names, &n)) != ADM_OK) goto done;
    for (int i = 0; i < n && st == ADM_OK; i++) {
        hid_t cg;
        int idx;
        char prefix[300], cwhere[WHERE_LEN], *refused = NULL;
        adm_special *s;
        snprintf(prefix, sizeof prefix, "/special/%s", names[i]);
        snprintf(cwhere, sizeof cwhere, "%s: group '%s'", file, prefix);
        if ((st = link_kind_ok(g, names[i], cwhere)) != ADM_OK) break;
        ADM_CAPTURE_TRACE("%s", cwhere);
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
    char where[WHERE_LEN], *magic = NULL;
    int64_t version = 0, step = -1;
    int present;
    htri_t acc;
    adm_status st = ADM_OK;

    *out = NULL;
    adm_cap_h5_quiet();
    /* a FIFO or a device would block libhdf5's open, or feed it endlessly */
    ADM_TRY(adm_file_check_regular(path, "the capture"));
    adm_cap_heap_forget();
    ADM_CAPTURE_TRACE("the file's superblock");
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
    if (!(c = adm_cap_new())) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
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
    ADM_CAPTURE_TRACE("the file's metadata while closing it");
    if (f >= 0) H5Fclose(f);
    adm_cap_heap_forget();
    if (st != ADM_OK) {
        adm_capture_free(c);
        return st;
    }
    *out = c;
    return ADM_OK;
}

