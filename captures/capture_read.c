/* The HDF5 capture format v1: the reader (captures/FORMAT.md).
 *
 * The reader trusts nothing in the file: every attribute's class and size,
 * every dataset's storage type against its declared dtype, every extent
 * against the size limit, before a byte is allocated. Every error names
 * the file and the dataset or attribute, and what was expected. */
#include "capture_h5.h"
#include "adm_env.h"
#include "adm_trace.h"

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

void adm_cap_h5_init(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* A filter libhdf5 lacks is looked for in HDF5_PLUGIN_PATH: every
     * library there would be dlopen()ed, its constructors run, on behalf of
     * a file. admit reads with the filters built in and names any other
     * (adm_cap_storage_holds). */
    H5PLset_loading_state(0);
}

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

/* The registered filters a capture may plausibly carry (the HDF Group's
 * list of filter ids), named in the refusal when this libhdf5 lacks one. */
static const struct {
    int id;
    const char *name;
} known_filters[] = {
    {1, "deflate"}, {2, "shuffle"}, {3, "fletcher32"}, {4, "szip"}, {5, "nbit"}, {6, "scaleoffset"},
    {307, "bzip2"}, {32000, "LZF"}, {32001, "Blosc"}, {32004, "LZ4"}, {32008, "bitshuffle"},
    {32013, "zfp"}, {32015, "Zstandard"}, {32017, "SZ"}, {32026, "Blosc2"},
};

/* The first filter of a pipeline this libhdf5 cannot decode (optional
 * ones too when asked), with its name in name[len]: its id; -1 when there
 * is none, -2 when the pipeline cannot be read. Plugin loading is off
 * (adm_cap_h5_init), so only the filters built in are available. */
static int missing_filter(hid_t dcpl, int optional_too, char *name, size_t len)
{
    int nfilters = H5Pget_nfilters(dcpl);
    for (int i = 0; i < nfilters; i++) {
        unsigned flags = 0, config = 0, info = 0, cd[16];
        size_t ncd = sizeof cd / sizeof cd[0], n = 0;
        char fname[64] = "";
        const char *known = NULL;
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof fname, fname, &config);
        if (id < 0) return -2;
        if ((flags & H5Z_FLAG_OPTIONAL) && !optional_too) continue;
        if (H5Zfilter_avail(id) > 0 && H5Zget_filter_info(id, &info) >= 0 && (info & H5Z_FILTER_CONFIG_DECODE_ENABLED))
            continue;
        for (size_t k = 0; k < sizeof known_filters / sizeof known_filters[0]; k++)
            if (known_filters[k].id == (int)id) known = known_filters[k].name;
        if (known) {
            snprintf(name, len, "%s", known);
        } else {
            /* the name the file gives it: its own text, shown printable */
            fname[sizeof fname - 1] = '\0';
            for (const char *p = fname; *p && n + 1 < len && n < 40; p++) name[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
            name[n] = '\0';
            if (!n) snprintf(name, len, "unregistered");
        }
        return (int)id;
    }
    return -1;
}

/* Every mandatory filter of a dataset's pipeline must be one this libhdf5
 * decodes, checked before its data is read: a missing one is otherwise a
 * read error that looks like a corrupt file. An optional filter may have
 * been skipped when the chunks were written; where it was not, the read
 * fails and read_dataset names it then. */
static adm_status filters_available(hid_t dcpl, const char *where)
{
    char name[64];
    int id = missing_filter(dcpl, 0, name, sizeof name);
    if (id == -2) return ADM_FAIL(ADM_ERR_FORMAT, "%s: its filter pipeline cannot be read (corrupt file)", where);
    if (id < 0) return ADM_OK;
    return ADM_FAIL(ADM_ERR_FORMAT, "%s: compressed with filter %d (%s), which is not available in this libhdf5 "
                    "(admit loads no HDF5 plugins); rewrite the capture with gzip compression",
                    where, id, name);
}

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
        if ((st = filters_available(dcpl, where)) != ADM_OK) goto done;
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

/* ---------------------------------------------------------------- one pass over a file */

/* A file is read in two passes over the same open file: the first takes
 * every dataset's dtype and shape through every check of this file and
 * reads no data (the declared layout, which the whole-file ratio and the
 * caller's plan judge: adm_capture_read_plan), the second reads the data,
 * no more bytes of it than the first declared. */
typedef struct reader {
    hid_t file;
    int data;          /* 0: the declared layout only (tensors without data); 1: the data */
    int64_t declared;  /* the bytes the datasets declare (pass 1) */
    int64_t left;      /* pass 2: the bytes still to allocate */
} reader;

/* libhdf5 resolves a soft link's target path itself, through whatever
 * links lie on it, external ones included: a soft link /inputs/x ->
 * /zz/inputs/x, with /zz an external link, reads another file. So the
 * reader never hands libhdf5 a path of more than one link: it opens
 * objects through hard links only, one name at a time, and resolves a soft
 * link's target itself, every component checked alike; an external or
 * user-defined link anywhere on the way is refused before it is followed.
 * At most MAX_SOFT soft links are followed for one name (libhdf5's own
 * limit, H5L_NUM_LINKS, is 16), which ends a cycle; a target has at most
 * MAX_TARGET bytes, so at most MAX_SOFT x MAX_TARGET / 2 links are looked
 * at per name. */
#define MAX_SOFT 16
#define MAX_TARGET 1024

static adm_status follow(reader *r, hid_t loc, const char *name, const char *where, const char *target,
                         int *soft_left, hid_t *obj);

/* Opens what a soft link's target names, from the root (absolute) or the
 * group holding the link (relative). */
static adm_status follow_target(reader *r, hid_t loc, const char *target, const char *where, int *soft_left,
                                hid_t *obj)
{
    char comp[MAX_TARGET + 1];
    const char *p = target;
    hid_t cur;
    adm_status st = ADM_OK;
    *obj = -1;
    if ((cur = H5Oopen(target[0] == '/' ? r->file : loc, target[0] == '/' ? "/" : ".", H5P_DEFAULT)) < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: the group of its soft link to '%s' cannot be opened (corrupt file)",
                        where, target);
    while (*p) {
        size_t n = strcspn(p, "/");
        hid_t next;
        memcpy(comp, p, n);
        comp[n] = '\0';
        p += n;
        if (*p == '/') p++;
        if (n == 0 || !strcmp(comp, ".")) continue; /* "a//b", "./a": as libhdf5 reads them */
        if (H5Iget_type(cur) != H5I_GROUP) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its soft link to '%s' goes on past an object that is not a group",
                          where, target);
            break;
        }
        if ((st = follow(r, cur, comp, where, target, soft_left, &next)) != ADM_OK) break;
        H5Oclose(cur);
        cur = next;
    }
    if (st != ADM_OK) {
        H5Oclose(cur);
        return st;
    }
    *obj = cur;
    return ADM_OK;
}

/* Opens the object that link name of group loc leads to. target: the soft
 * link being resolved (for messages), NULL for the link the reader named. */
static adm_status follow(reader *r, hid_t loc, const char *name, const char *where, const char *target,
                         int *soft_left, hid_t *obj)
{
    H5L_info_t li;
    char val[MAX_TARGET + 1];
    *obj = -1;
    ADM_CAPTURE_TRACE("the link '%s' on the way to %s", name, where);
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0 || H5Lget_info(loc, name, &li, H5P_DEFAULT) < 0) {
        if (target)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: its soft link to '%s' is dangling ('%s' is not there)", where, target, name);
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: cannot read the link", where);
    }
    switch (li.type) {
    case H5L_TYPE_HARD:
        if ((*obj = H5Oopen(loc, name, H5P_DEFAULT)) < 0)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: the object '%s' cannot be opened (corrupt file)", where, name);
        return ADM_OK;
    case H5L_TYPE_SOFT:
        if (--*soft_left < 0)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: more than %d soft links on its way (a cycle of soft links?)", where,
                            MAX_SOFT);
        if (li.u.val_size < 2 || li.u.val_size > MAX_TARGET)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: soft link '%s' has a target of %zu bytes, expected 1 to %d", where,
                            name, li.u.val_size ? li.u.val_size - 1 : 0, MAX_TARGET - 1);
        memset(val, 0, sizeof val);
        if (H5Lget_val(loc, name, val, li.u.val_size, H5P_DEFAULT) < 0 || !val[0])
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: the target of soft link '%s' cannot be read", where, name);
        return follow_target(r, loc, val, where, soft_left, obj);
    default:
        if (target)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: its soft link to '%s' passes through '%s', an external or "
                            "user-defined link: only hard and soft links within the file are allowed (a capture "
                            "is one self-contained file)", where, target, name);
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: external and user-defined links are not allowed "
                        "(only hard and soft links)", where);
    }
}

/* Opens the group or dataset that link name of loc leads to (follow). */
static adm_status open_object(reader *r, hid_t loc, const char *name, const char *where, H5I_type_t want, hid_t *obj)
{
    int soft_left = MAX_SOFT;
    ADM_TRY(follow(r, loc, name, where, NULL, &soft_left, obj));
    if (H5Iget_type(*obj) == want) return ADM_OK;
    H5Oclose(*obj);
    *obj = -1;
    if (want == H5I_GROUP) return ADM_FAIL(ADM_ERR_FORMAT, "%s: not a group", where);
    return ADM_FAIL(ADM_ERR_FORMAT, "%s: not a readable dataset (a group, a named type, or a corrupt file)", where);
}

/* Reads the dataset that link name of loc leads to: into an owned tensor
 * (pass 2), or its dtype and shape with no data (pass 1). */
static adm_status read_dataset(reader *r, hid_t loc, const char *name, const char *where, adm_tensor *out)
{
    hid_t d = -1, ft = -1, sp = -1, mt = -1;
    char *dtname = NULL;
    adm_dtype dt;
    hsize_t dims[ADM_MAX_DIMS];
    int64_t shape[ADM_MAX_DIMS], numel, bytes;
    int ndim;
    char buf[160];
    adm_status st = ADM_OK;
    adm_tensor t;
    double t_trace = adm_trace_ms();
    memset(&t, 0, sizeof t);

    ADM_CAPTURE_TRACE("%s", where);
    if ((st = open_object(r, loc, name, where, H5I_DATASET, &d)) != ADM_OK) goto done;
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
    bytes = numel * adm_format_get(dt)->storage_bytes;
    if (bytes > max_tensor_bytes()) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: shape %s needs %lld bytes, above the limit of %lld "
                      "(ADM_CAPTURE_MAX_BYTES)", where, adm_shape_str(ndim, shape, buf, sizeof buf),
                      (long long)bytes, (long long)max_tensor_bytes());
        goto done;
    }
    if (numel > 0 && (st = adm_cap_storage_holds(d, dims, ndim, bytes, where)) != ADM_OK)
        goto done;
    if (!r->data) {
        int64_t stride = 1;
        t.dtype = dt;
        t.ndim = ndim;
        memcpy(t.shape, shape, sizeof(int64_t) * (size_t)ndim);
        for (int i = ndim - 1; i >= 0; i--) {
            t.stride[i] = stride;
            stride *= shape[i] > 0 ? shape[i] : 1;
        }
        t.capacity = numel; /* no data: a declaration */
        r->declared = bytes > INT64_MAX - r->declared ? INT64_MAX : r->declared + bytes;
        *out = t;
        memset(&t, 0, sizeof t);
        goto done;
    }
    if (bytes > r->left) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: declares more data than the file did when it was first read (the file "
                      "changed while it was read)", where);
        goto done;
    }
    r->left -= bytes;
    st = adm_capture_tensor_alloc_ ? adm_capture_tensor_alloc_(&t, dt, ndim, shape) : adm_tensor_alloc(&t, dt, ndim, shape);
    if (st != ADM_OK) {
        adm_error_prefix("%s: ", where);
        goto done;
    }
    ADM_CAPTURE_TRACE("the data of %s", where);
    if (numel > 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data) < 0) {
        hid_t dcpl = H5Dget_create_plist(d);
        char fname[64];
        int id = dcpl >= 0 ? missing_filter(dcpl, 1, fname, sizeof fname) : -1;
        if (dcpl >= 0) H5Pclose(dcpl);
        if (id >= 0)
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its data cannot be read: compressed with filter %d (%s), which is not "
                          "available in this libhdf5 (admit loads no HDF5 plugins); rewrite the capture with gzip "
                          "compression", where, id, fname);
        else
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
    if (adm_trace_on()) {
        char part[200];
        snprintf(part, sizeof part, "read.tensor %s %lld bytes", where, (long long)bytes);
        adm_trace_part(part, t_trace, -1);
    }
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

/* Reads every dataset of group `gname` under loc into list; absent group
 * is fine unless required. */
static adm_status read_group(reader *r, hid_t loc, const char *file, const char *prefix, const char *gname,
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
    ADM_TRY(open_object(r, loc, gname, where, H5I_GROUP, &g));
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
        if ((st = read_dataset(r, g, names[i], dwhere, &t)) != ADM_OK) break;
        if ((st = adm_cap_list_push(list, names[i], &t)) != ADM_OK) adm_tensor_free(&t);
    }
done:
    free_names(names, n);
    H5Oclose(g);
    return st;
}

static adm_status read_optional_dataset(reader *r, hid_t loc, const char *file, const char *prefix,
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
    ADM_TRY(read_dataset(r, loc, name, where, t));
    *has = 1;
    return ADM_OK;
}

static adm_status read_specials(reader *r, const char *file, adm_capture *c)
{
    hid_t g;
    char **names = NULL, where[WHERE_LEN];
    int n = 0;
    adm_status st = ADM_OK;
    ADM_CAPTURE_TRACE("group '/special'");
    if (H5Lexists(r->file, "special", H5P_DEFAULT) <= 0) return ADM_OK;
    snprintf(where, sizeof where, "%s: group '/special'", file);
    ADM_TRY(open_object(r, r->file, "special", where, H5I_GROUP, &g));
    if ((st = group_names(g, where, &names, &n)) != ADM_OK) goto done;
    for (int i = 0; i < n && st == ADM_OK; i++) {
        hid_t cg;
        int idx;
        char prefix[300], cwhere[WHERE_LEN], *refused = NULL;
        adm_special *s;
        snprintf(prefix, sizeof prefix, "/special/%s", names[i]);
        snprintf(cwhere, sizeof cwhere, "%s: group '%s'", file, prefix);
        ADM_CAPTURE_TRACE("%s", cwhere);
        if ((st = open_object(r, g, names[i], cwhere, H5I_GROUP, &cg)) != ADM_OK) break;
        if ((st = adm_capture_add_special(c, names[i], &idx)) != ADM_OK) {
            adm_error_prefix("%s: ", cwhere);
            st = ADM_ERR_FORMAT;
            H5Oclose(cg);
            break;
        }
        s = &c->specials[idx];
        st = read_group(r, cg, file, prefix, "inputs", 1, &s->inputs);
        if (st == ADM_OK) st = read_optional_dataset(r, cg, file, prefix, "reference", &s->has_ref, &s->ref);
        if (st == ADM_OK) st = read_group(r, cg, file, prefix, "candidates", 0, &s->candidates);
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
        H5Oclose(cg);
    }
done:
    free_names(names, n);
    H5Oclose(g);
    return st;
}

/* One pass over the open file (reader): the capture, with or without its
 * tensors' data. */
static adm_status read_file(reader *r, const char *path, adm_capture **out)
{
    adm_capture *c = NULL;
    hid_t f = r->file;
    char where[WHERE_LEN], *magic = NULL;
    int64_t version = 0, step = -1;
    int present;
    adm_status st = ADM_OK;

    *out = NULL;
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
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'admit_version' = %lld, expected 1 or 2", where, (long long)version);
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
    if ((st = read_group(r, f, path, "", "inputs", 1, &c->inputs)) != ADM_OK) goto done;
    if (c->inputs.n == 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: group '/inputs' is empty, expected the op's input datasets", path);
        goto done;
    }
    if ((st = read_optional_dataset(r, f, path, "", "reference", &c->has_ref, &c->ref)) != ADM_OK) goto done;
    if ((st = read_group(r, f, path, "", "candidates", 0, &c->candidates)) != ADM_OK) goto done;
    if ((st = read_optional_dataset(r, f, path, "", "oracle", &c->has_oracle, &c->oracle)) != ADM_OK) goto done;
    if (c->has_oracle && c->oracle.dtype != ADM_FP64) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '/oracle' has dtype %s, expected fp64", path,
                      adm_dtype_name(c->oracle.dtype));
        goto done;
    }
    if ((st = read_optional_dataset(r, f, path, "", "oracle_bound", &c->has_oracle_bound, &c->oracle_bound)) != ADM_OK)
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
    st = read_specials(r, path, c);
done:
    free(magic);
    if (st != ADM_OK) {
        adm_capture_free(c);
        return st;
    }
    *out = c;
    return ADM_OK;
}

/* A capture may declare at most DECLARED_FREE bytes plus ratio x its
 * file's size (ADM_CAPTURE_MAX_RATIO, default 64; 0: no limit). Every
 * dataset is already held to what its filters can give (1100:1), but a
 * file of gzip'ed constants at that ratio declares a gigabyte in a
 * megabyte, and the commands' memory and work grow with the declaration
 * (issue 15); activations and weights compress about 1.3:1. */
#define DECLARED_FREE ((int64_t)64 << 20)
#define DEFAULT_DECLARED_RATIO 64

static adm_status declared_ratio_ok(const reader *r, const char *path)
{
    const char *e = getenv("ADM_CAPTURE_MAX_RATIO");
    int64_t ratio = DEFAULT_DECLARED_RATIO, allowed;
    hsize_t fsize = 0;
    if (e && *e) {
        char *end;
        long long v;
        errno = 0;
        v = strtoll(e, &end, 10);
        if (errno || *end || v < 0 || !(e[0] >= '0' && e[0] <= '9'))
            return ADM_FAIL(ADM_ERR_INVALID, "ADM_CAPTURE_MAX_RATIO = '%.64s': expected a whole number >= 0 "
                            "(0: no limit)", e);
        ratio = v;
    }
    if (ratio == 0) return ADM_OK;
    if (H5Fget_filesize(r->file, &fsize) < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: the size of the file cannot be read", path);
    allowed = (int64_t)fsize > (INT64_MAX - DECLARED_FREE) / ratio ? INT64_MAX : DECLARED_FREE + ratio * (int64_t)fsize;
    if (r->declared <= allowed) return ADM_OK;
    return ADM_FAIL(ADM_ERR_FORMAT, "%s: its datasets declare %lld bytes in a file of %llu bytes, more than "
                    "64 MiB + %lld x the file's size: data this compressible is no capture of activations but a "
                    "decompression bomb (ADM_CAPTURE_MAX_RATIO raises the ratio; 0: no limit)", path,
                    (long long)r->declared, (unsigned long long)fsize, (long long)ratio);
}

adm_status adm_capture_read_plan(const char *path, adm_capture_plan_fn plan, void *user, adm_capture **out)
{
    reader r;
    adm_capture *declared = NULL;
    htri_t acc;
    adm_status st;

    *out = NULL;
    adm_cap_h5_init();
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
    memset(&r, 0, sizeof r);
    r.file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (r.file < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: the HDF5 file cannot be opened (truncated or corrupt)", path);
    st = read_file(&r, path, &declared);
    if (st == ADM_OK) st = declared_ratio_ok(&r, path);
    if (st == ADM_OK && plan) st = plan(declared, user);
    adm_capture_free(declared);
    if (st == ADM_OK) {
        r.data = 1;
        r.left = r.declared;
        st = read_file(&r, path, out);
    }
    ADM_CAPTURE_TRACE("the file's metadata while closing it");
    H5Fclose(r.file);
    adm_cap_heap_forget();
    return st;
}

adm_status adm_capture_read(const char *path, adm_capture **out) { return adm_capture_read_plan(path, NULL, NULL, out); }
