/* The HDF5 capture format v1: the writer (captures/FORMAT.md). A file is
 * written under a temporary name and renamed, so nothing half-written is
 * left where a capture was asked for. */
#include "capture_h5.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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
    adm_cap_h5_close(a);
    adm_cap_h5_close(s);
    adm_cap_h5_close(t);
    return st;
}

static adm_status write_int_attr(hid_t loc, const char *name, int64_t value)
{
    hid_t s = H5Screate(H5S_SCALAR), a;
    adm_status st = ADM_OK;
    a = H5Acreate2(loc, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &value) < 0)
        st = ADM_FAIL(ADM_ERR_HDF5, "cannot write attribute '%s'", name);
    adm_cap_h5_close(a);
    adm_cap_h5_close(s);
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
    adm_cap_h5_close(d);
    adm_cap_h5_close(dcpl);
    adm_cap_h5_close(sp);
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

/* The oldest version that means what c means: 2 where a special case
 * leaves out an input of /inputs and c was made under version 2's rule
 * (a capture read from a version 1 file keeps version 1's meaning: an
 * absent input is absent), else 1, which every admit reads. */
static int version_of(const adm_capture *c)
{
    if (c->version < 2) return 1;
    for (int s = 0; s < c->n_specials; s++)
        for (int i = 0; i < c->inputs.n; i++) {
            int has = 0;
            for (int j = 0; j < c->specials[s].inputs.n && !has; j++)
                has = !strcmp(c->specials[s].inputs.v[j].name, c->inputs.v[i].name);
            if (!has) return 2;
        }
    return 1;
}

static adm_status write_all(hid_t f, const adm_capture *c, int gzip)
{
    ADM_TRY(write_str_attr(f, "admit_format", ADM_CAPTURE_MAGIC));
    ADM_TRY(write_int_attr(f, "admit_version", version_of(c)));
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
    adm_cap_h5_init();
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
