/* Malformed captures for the error tests (see bad_captures.h). */
#include "bad_captures.h"

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const adm_bad_case adm_bad_cases[] = {
    {"missing.h5", 0, ADM_ERR_IO, "cannot open", "No such file"},
    {"not_hdf5.h5", 0, ADM_ERR_FORMAT, "not an HDF5 file", "captures/FORMAT.md"},
    {"empty.h5", 0, ADM_ERR_FORMAT, "not an HDF5 file", "admit capture"},
    {"truncated.h5", 0, ADM_ERR_FORMAT, "truncated", "corrupt"},
    {"no_magic.h5", 0, ADM_ERR_FORMAT, "'admit_format' is missing", "expected 'admit-capture'"},
    {"wrong_magic.h5", 0, ADM_ERR_FORMAT, "'admit_format' is 'not-admit'", "expected 'admit-capture'"},
    {"newer_version.h5", 0, ADM_ERR_VERSION, "'admit_version' = 3", "newer admit"},
    {"op_not_string.h5", 0, ADM_ERR_FORMAT, "attribute 'op'", "must be a single string"},
    {"missing_inputs.h5", 0, ADM_ERR_FORMAT, "group '/inputs'", "missing"},
    {"unknown_dtype.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'", "unknown dtype 'bf17'"},
    {"no_dtype.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/w'", "missing attribute 'dtype'"},
    {"wrong_storage.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'", "16-bit integer patterns"},
    {"absurd_dims.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'", "absurd"},
    {"huge_dims.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'", "above the limit"},
    {"rank9.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'", "rank 9"},
    {"null_space.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'", "null dataspace"},
    {"external_link.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'", "external"},
    {"dangling_soft.h5", 0, ADM_ERR_FORMAT, "dataset '/candidates/ghost'", "soft link to '/nowhere' is dangling"},
    /* Every link on the way, soft links' targets included (issue 15): an
     * external link behind a soft link reads another file. */
    {"soft_through_external.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'",
     "soft link to '/zz/inputs/x' passes through 'zz', an external or user-defined link"},
    {"soft_chain_external.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'", "soft link to '/b/x' passes through 'b'"},
    {"soft_group_external.h5", 0, ADM_ERR_FORMAT, "group '/inputs'", "soft link to 'zz/inputs' passes through 'zz'"},
    {"soft_cycle.h5", 0, ADM_ERR_FORMAT, "dataset '/candidates/loop'", "more than 16 soft links on its way"},
    {"soft_past_dataset.h5", 0, ADM_ERR_FORMAT, "dataset '/candidates/odd'",
     "soft link to '/reference/x' goes on past an object that is not a group"},
    {"unwritten_chunks.h5", 0, ADM_ERR_FORMAT, "dataset '/candidates/fused'", "0 of its 4096 chunks are written"},
    {"partial_chunks.h5", 0, ADM_ERR_FORMAT, "dataset '/reference'", "1 of its 2 chunks are written"},
    {"unwritten_contiguous.h5", 0, ADM_ERR_FORMAT, "dataset '/inputs/x'", "holds 0 bytes of the 64"},
    {"name_space.h5", 0, ADM_ERR_FORMAT, "dataset '/candidates/a b'", "may hold only letters, digits and _ - . +"},
    {"name_not_utf8.h5", 0, ADM_ERR_FORMAT, "dataset '/candidates/cand\\xff\\xfe'", "may hold only letters"},
    {"name_control.h5", 0, ADM_ERR_FORMAT, "'/special/nan\\x01x'", "may hold only letters"},
    {"bad_fp4.h5", 0, ADM_ERR_FORMAT, "dataset '/candidates/fp4'", "not a 4-bit fp4_e2m1 pattern"},
    {"oracle_fp32.h5", 0, ADM_ERR_FORMAT, "dataset '/oracle'", "expected fp64"},
    {"refused_and_ref.h5", 0, ADM_ERR_FORMAT, "group '/special/nan'", "both"},
    {"missing_w.h5", 1, ADM_ERR_FORMAT, "group '/inputs'", "requires input 'w'"},
    {"unknown_input.h5", 1, ADM_ERR_FORMAT, "dataset '/inputs/z'", "no such input"},
    {"shape_w.h5", 1, ADM_ERR_FORMAT, "input 'w' has shape [6, 9]", "expected [N, 8] (K of 'x')"},
    {"shape_ref.h5", 1, ADM_ERR_FORMAT, "dataset '/reference' has shape [4, 7]", "expected [4, 6]"},
    {"shape_special.h5", 1, ADM_ERR_FORMAT, "dataset '/special/nan/reference'", "expected [2, 6]"},
    {"bad_params.h5", 1, ADM_ERR_FORMAT, "'op_params'", "'approximate' must be"},
    {"bad_json.h5", 1, ADM_ERR_FORMAT, "'op_params'", "not valid JSON"},
    {"unknown_param.h5", 1, ADM_ERR_FORMAT, "'op_params'", "no parameter 'alpha'"},
    {"unknown_op.h5", 1, ADM_ERR_FORMAT, "'op' = 'cubic_spline'", "not in the catalog"},
    /* Byte edits of the global heap that libhdf5 1.10 trusts (issue 8
     * R5-R7, captures/heap_check.c): the reference of attribute 'op' ... */
    {"heap_ref_free.h5", 0, ADM_ERR_FORMAT, "attribute 'op'", "names object 0 of the global heap collection"},
    {"heap_ref_length.h5", 0, ADM_ERR_FORMAT, "attribute 'op'", "declares 12 bytes, but object"},
    {"heap_ref_huge.h5", 0, ADM_ERR_FORMAT, "attribute 'op'", "declares a string of 1920299016 bytes"},
    {"heap_ref_missing.h5", 0, ADM_ERR_FORMAT, "attribute 'op'", "names object 999"},
    {"heap_ref_outside.h5", 0, ADM_ERR_FORMAT, "attribute 'op'", "lies outside the file"},
    /* ... and the collection, met first by attribute 'admit_format' */
    {"heap_free_zero.h5", 0, ADM_ERR_FORMAT, "attribute 'admit_format'", "free space of the global heap collection"},
    {"heap_overrun.h5", 0, ADM_ERR_FORMAT, "attribute 'admit_format'", "past the collection's end"},
    {"heap_duplicate.h5", 0, ADM_ERR_FORMAT, "attribute 'admit_format'", "twice"},
    {"heap_magic.h5", 0, ADM_ERR_FORMAT, "attribute 'admit_format'", "holds no global heap collection"},
    {"heap_size.h5", 0, ADM_ERR_FORMAT, "attribute 'admit_format'", "it must hold 4096 to"},
};
const int adm_bad_case_count = (int)(sizeof adm_bad_cases / sizeof adm_bad_cases[0]);

static adm_status base_capture(adm_capture **out)
{
    int64_t xs[2] = {4, 8}, ws[2] = {6, 8}, bs[1] = {6}, os[2] = {4, 6}, sxs[2] = {2, 8}, sos[2] = {2, 6};
    adm_tensor x, w, b, r, sx, sr;
    adm_capture *c;
    int idx;
    ADM_TRY(adm_capture_create("linear+gelu", "{\"approximate\":\"tanh\"}", &c));
    ADM_TRY(adm_synth_gaussian(1, 1.0, ADM_BF16, 2, xs, &x));
    ADM_TRY(adm_synth_gaussian(2, 0.3, ADM_BF16, 2, ws, &w));
    ADM_TRY(adm_synth_gaussian(3, 0.02, ADM_BF16, 1, bs, &b));
    ADM_TRY(adm_synth_gaussian(4, 1.0, ADM_BF16, 2, os, &r));
    ADM_TRY(adm_synth_gaussian(5, 1.0, ADM_BF16, 2, sxs, &sx));
    ADM_TRY(adm_synth_gaussian(6, 1.0, ADM_BF16, 2, sos, &sr));
    ADM_TRY(adm_capture_add_input(c, "x", &x));
    ADM_TRY(adm_capture_add_input(c, "w", &w));
    ADM_TRY(adm_capture_add_input(c, "bias", &b));
    ADM_TRY(adm_capture_set_reference(c, &r));
    ADM_TRY(adm_capture_add_candidate(c, "fused", &r));
    ADM_TRY(adm_capture_add_special(c, "nan", &idx));
    ADM_TRY(adm_capture_special_add_input(c, idx, "x", &sx));
    ADM_TRY(adm_capture_special_add_input(c, idx, "w", &w));
    ADM_TRY(adm_capture_special_set_reference(c, idx, &sr));
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
    adm_tensor_free(&r);
    adm_tensor_free(&sx);
    adm_tensor_free(&sr);
    *out = c;
    return ADM_OK;
}

static void set_str(hid_t loc, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR), a;
    if (H5Aexists(loc, name) > 0) H5Adelete(loc, name);
    H5Tset_size(t, H5T_VARIABLE);
    a = H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, &value);
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
}

static void set_int(hid_t loc, const char *name, long long v)
{
    hid_t s = H5Screate(H5S_SCALAR), a;
    if (H5Aexists(loc, name) > 0) H5Adelete(loc, name);
    a = H5Acreate2(loc, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_LLONG, &v);
    H5Aclose(a);
    H5Sclose(s);
}

/* Replaces dataset path with one of the given storage type and extent,
 * written (when data) or left unallocated, with a dtype attribute. */
static void put_dataset(hid_t f, const char *path, hid_t type, int rank, const hsize_t *dims,
                        const void *data, const char *dtype)
{
    hid_t s, d;
    if (H5Lexists(f, path, H5P_DEFAULT) > 0) H5Ldelete(f, path, H5P_DEFAULT);
    s = rank < 0 ? H5Screate(H5S_NULL) : H5Screate_simple(rank, dims, NULL);
    d = H5Dcreate2(f, path, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (data) H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (dtype) set_str(d, "dtype", dtype);
    H5Dclose(d);
    H5Sclose(s);
}

static char *join(const char *dir, const char *file)
{
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, file);
    return p;
}

static int copy_file(const char *from, const char *to, long limit)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    long n = 0;
    int ch;
    if (!a || !b) {
        if (a) fclose(a);
        if (b) fclose(b);
        return -1;
    }
    while ((limit < 0 || n < limit) && (ch = fgetc(a)) != EOF) {
        fputc(ch, b);
        n++;
    }
    fclose(a);
    fclose(b);
    return 0;
}

static long file_size(const char *p)
{
    FILE *f = fopen(p, "rb");
    long n;
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fclose(f);
    return n;
}

static uint64_t get_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    while (n--) v = v << 8 | p[n];
    return v;
}

static void put_le(unsigned char *p, int n, uint64_t v)
{
    for (int i = 0; i < n; i++, v >>= 8) p[i] = (unsigned char)v;
}

enum { HEAP_REF_FREE, HEAP_REF_LENGTH, HEAP_REF_HUGE, HEAP_REF_MISSING, HEAP_REF_OUTSIDE, HEAP_FREE_ZERO,
       HEAP_OVERRUN, HEAP_DUPLICATE, HEAP_MAGIC, HEAP_SIZE };

/* Copies base.h5 to name with one edit of its global heap: the collection
 * ("GCOL", 8-byte lengths and addresses, as adm_capture_write makes it),
 * or the 16-byte reference {length, collection address, object index} of
 * attribute 'op', found by the object holding "linear+gelu". */
static void heap_case(const char *dir, const char *base, const char *name, int edit)
{
    long n = file_size(base);
    unsigned char *b = n > 0 ? malloc((size_t)n) : NULL, ref[16];
    char *p = join(dir, name);
    FILE *f = fopen(base, "rb");
    long g = -1, op = -1, r = -1, fr = -1, p1 = -1, p2 = -1;
    if (!b || !f || fread(b, 1, (size_t)n, f) != (size_t)n) goto done;
    for (long i = 0; i + 16 <= n && g < 0; i++)
        if (!memcmp(b + i, "GCOL", 4)) g = i;
    if (g < 0) goto done;
    for (long q = g + 16; q + 16 <= g + (long)get_le(b + g + 8, 8);) {
        unsigned idx = (unsigned)get_le(b + q, 2);
        uint64_t size = get_le(b + q + 8, 8);
        if (idx == 0) { fr = q; break; }
        if (p1 < 0) p1 = q;
        else if (p2 < 0) p2 = q;
        if (size == 11 && !memcmp(b + q + 16, "linear+gelu", 11)) op = q;
        q += 16 + (long)((size + 7) & ~(uint64_t)7);
    }
    if (op < 0 || fr < 0 || p2 < 0) goto done;
    put_le(ref, 4, 11);
    put_le(ref + 4, 8, (uint64_t)g);
    put_le(ref + 12, 4, get_le(b + op, 2));
    for (long i = 0; i + 16 <= n && r < 0; i++)
        if (!memcmp(b + i, ref, 16)) r = i;
    if (r < 0) goto done;
    switch (edit) {
    case HEAP_REF_FREE: put_le(b + r + 12, 4, 0); break;
    case HEAP_REF_LENGTH: put_le(b + r, 4, 12); break;
    case HEAP_REF_HUGE: put_le(b + r, 4, 0x72757008); break; /* R6's length */
    case HEAP_REF_MISSING: put_le(b + r + 12, 4, 999); break;
    case HEAP_REF_OUTSIDE: put_le(b + r + 4, 8, (uint64_t)n + 4096); break;
    case HEAP_FREE_ZERO: put_le(b + fr + 8, 8, 0); break; /* R5: an endless walk */
    case HEAP_OVERRUN: put_le(b + p1 + 8, 8, 1 << 20); break;
    case HEAP_DUPLICATE: memcpy(b + p2, b + p1, 2); break;
    case HEAP_MAGIC: b[g + 3] = 'X'; break;
    case HEAP_SIZE: put_le(b + g + 8, 8, (uint64_t)n * 2); break;
    default: goto done;
    }
    fclose(f);
    f = fopen(p, "wb");
    if (f) fwrite(b, 1, (size_t)n, f);
done:
    if (f) fclose(f);
    free(b);
    free(p);
}

/* Copies base.h5 to name and opens it for editing. */
static hid_t edit(const char *dir, const char *base, const char *name)
{
    char *p = join(dir, name);
    hid_t f;
    copy_file(base, p, -1);
    f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    free(p);
    return f;
}

adm_status adm_make_bad_captures(const char *dir)
{
    adm_capture *c;
    char *base = join(dir, "base.h5"), *p;
    hid_t f;
    FILE *fp;
    adm_status st;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if ((st = base_capture(&c)) != ADM_OK) { free(base); return st; }
    st = adm_capture_write(c, base, 0);
    adm_capture_free(c);
    if (st != ADM_OK) { free(base); return st; }

    p = join(dir, "missing.h5");
    remove(p);
    free(p);
    p = join(dir, "not_hdf5.h5");
    fp = fopen(p, "w");
    if (fp) { fputs("x,w,bias\n1,2,3\n", fp); fclose(fp); }
    free(p);
    p = join(dir, "empty.h5");
    fp = fopen(p, "w");
    if (fp) fclose(fp);
    free(p);
    p = join(dir, "truncated.h5");
    copy_file(base, p, file_size(base) / 2);
    free(p);

    heap_case(dir, base, "heap_ref_free.h5", HEAP_REF_FREE);
    heap_case(dir, base, "heap_ref_length.h5", HEAP_REF_LENGTH);
    heap_case(dir, base, "heap_ref_huge.h5", HEAP_REF_HUGE);
    heap_case(dir, base, "heap_ref_missing.h5", HEAP_REF_MISSING);
    heap_case(dir, base, "heap_ref_outside.h5", HEAP_REF_OUTSIDE);
    heap_case(dir, base, "heap_free_zero.h5", HEAP_FREE_ZERO);
    heap_case(dir, base, "heap_overrun.h5", HEAP_OVERRUN);
    heap_case(dir, base, "heap_duplicate.h5", HEAP_DUPLICATE);
    heap_case(dir, base, "heap_magic.h5", HEAP_MAGIC);
    heap_case(dir, base, "heap_size.h5", HEAP_SIZE);

    f = edit(dir, base, "no_magic.h5");
    H5Adelete(f, "admit_format");
    H5Fclose(f);
    f = edit(dir, base, "wrong_magic.h5");
    set_str(f, "admit_format", "not-admit");
    H5Fclose(f);
    f = edit(dir, base, "newer_version.h5");
    set_int(f, "admit_version", 3);
    H5Fclose(f);
    f = edit(dir, base, "op_not_string.h5");
    set_int(f, "op", 7);
    H5Fclose(f);
    f = edit(dir, base, "missing_inputs.h5");
    H5Ldelete(f, "/inputs", H5P_DEFAULT);
    H5Fclose(f);
    {
        hsize_t d2[2] = {4, 8};
        uint16_t xs[32] = {0};
        float xf[32] = {0};
        f = edit(dir, base, "unknown_dtype.h5");
        put_dataset(f, "/inputs/x", H5T_STD_U16LE, 2, d2, xs, "bf17");
        H5Fclose(f);
        f = edit(dir, base, "wrong_storage.h5");
        put_dataset(f, "/inputs/x", H5T_IEEE_F32LE, 2, d2, xf, "bf16");
        H5Fclose(f);
    }
    {
        hsize_t d[2] = {6, 8};
        uint16_t w[48] = {0};
        f = edit(dir, base, "no_dtype.h5");
        put_dataset(f, "/inputs/w", H5T_STD_U16LE, 2, d, w, NULL);
        H5Fclose(f);
    }
    {
        hsize_t big[2] = {(hsize_t)1 << 31, (hsize_t)1 << 31}, huge[2] = {(hsize_t)1 << 20, (hsize_t)1 << 20};
        hsize_t r9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
        uint16_t one = 0;
        f = edit(dir, base, "absurd_dims.h5");
        put_dataset(f, "/inputs/x", H5T_STD_U16LE, 2, big, NULL, "bf16");
        H5Fclose(f);
        f = edit(dir, base, "huge_dims.h5");
        put_dataset(f, "/inputs/x", H5T_STD_U16LE, 2, huge, NULL, "bf16");
        H5Fclose(f);
        f = edit(dir, base, "rank9.h5");
        put_dataset(f, "/inputs/x", H5T_STD_U16LE, 9, r9, &one, "bf16");
        H5Fclose(f);
        f = edit(dir, base, "null_space.h5");
        put_dataset(f, "/inputs/x", H5T_STD_U16LE, -1, NULL, NULL, "bf16");
        H5Fclose(f);
    }
    {
        /* R3: a small file declaring 512 MiB in chunks that were never
         * written, one of two chunks written, a contiguous dataset never
         * written: refused before the memory is allocated */
        hsize_t big[1] = {(hsize_t)1 << 28}, chunk[1] = {(hsize_t)1 << 16}, d2[2] = {4, 6}, c2[2] = {2, 6};
        hsize_t d8[2] = {4, 8}, start[2] = {0, 0};
        uint16_t half[12] = {0};
        hid_t sp, dcpl, d, ms;
        f = edit(dir, base, "unwritten_chunks.h5");
        H5Ldelete(f, "/candidates/fused", H5P_DEFAULT);
        sp = H5Screate_simple(1, big, NULL);
        dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, chunk);
        d = H5Dcreate2(f, "/candidates/fused", H5T_STD_U16LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        set_str(d, "dtype", "bf16");
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
        H5Fclose(f);
        f = edit(dir, base, "partial_chunks.h5");
        H5Ldelete(f, "/reference", H5P_DEFAULT);
        sp = H5Screate_simple(2, d2, NULL);
        dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 2, c2);
        d = H5Dcreate2(f, "/reference", H5T_STD_U16LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        ms = H5Screate_simple(2, c2, NULL);
        H5Sselect_hyperslab(sp, H5S_SELECT_SET, start, NULL, c2, NULL);
        H5Dwrite(d, H5T_NATIVE_UINT16, ms, sp, H5P_DEFAULT, half);
        set_str(d, "dtype", "bf16");
        H5Sclose(ms);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
        H5Fclose(f);
        f = edit(dir, base, "unwritten_contiguous.h5");
        put_dataset(f, "/inputs/x", H5T_STD_U16LE, 2, d8, NULL, "bf16");
        H5Fclose(f);
    }
    /* R4: names outside the format's alphabet, as h5py can write them */
    f = edit(dir, base, "name_space.h5");
    H5Lmove(f, "/candidates/fused", f, "/candidates/a b", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    f = edit(dir, base, "name_not_utf8.h5");
    H5Lmove(f, "/candidates/fused", f, "/candidates/cand\xff\xfe", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    f = edit(dir, base, "name_control.h5");
    H5Lmove(f, "/special/nan", f, "/special/nan\x01x", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    f = edit(dir, base, "external_link.h5");
    H5Ldelete(f, "/inputs/x", H5P_DEFAULT);
    H5Lcreate_external("base.h5", "/inputs/x", f, "/inputs/x", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    f = edit(dir, base, "dangling_soft.h5");
    H5Lcreate_soft("/nowhere", f, "/candidates/ghost", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    f = edit(dir, base, "soft_through_external.h5");
    H5Lcreate_external("base.h5", "/", f, "/zz", H5P_DEFAULT, H5P_DEFAULT);
    H5Ldelete(f, "/inputs/x", H5P_DEFAULT);
    H5Lcreate_soft("/zz/inputs/x", f, "/inputs/x", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    f = edit(dir, base, "soft_chain_external.h5");
    H5Lcreate_external("base.h5", "/inputs", f, "/b", H5P_DEFAULT, H5P_DEFAULT);
    H5Lcreate_soft("/b/x", f, "/a", H5P_DEFAULT, H5P_DEFAULT);
    H5Ldelete(f, "/inputs/x", H5P_DEFAULT);
    H5Lcreate_soft("/a", f, "/inputs/x", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    f = edit(dir, base, "soft_group_external.h5");
    H5Lcreate_external("base.h5", "/", f, "/zz", H5P_DEFAULT, H5P_DEFAULT);
    H5Lmove(f, "/inputs", f, "/inputs_here", H5P_DEFAULT, H5P_DEFAULT);
    H5Lcreate_soft("zz/inputs", f, "/inputs", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    f = edit(dir, base, "soft_cycle.h5");
    H5Lcreate_soft("/candidates/loop2", f, "/candidates/loop", H5P_DEFAULT, H5P_DEFAULT);
    H5Lcreate_soft("/candidates/loop", f, "/candidates/loop2", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    f = edit(dir, base, "soft_past_dataset.h5");
    H5Lcreate_soft("/reference/x", f, "/candidates/odd", H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(f);
    {
        hsize_t d[2] = {4, 6};
        uint8_t v[24] = {0};
        double o[24] = {0};
        float of[24] = {0};
        v[5] = 0x20;
        f = edit(dir, base, "bad_fp4.h5");
        put_dataset(f, "/candidates/fp4", H5T_STD_U8LE, 2, d, v, "fp4_e2m1");
        H5Fclose(f);
        f = edit(dir, base, "oracle_fp32.h5");
        put_dataset(f, "/oracle", H5T_IEEE_F32LE, 2, d, of, "fp32");
        H5Fclose(f);
        (void)o;
    }
    f = edit(dir, base, "refused_and_ref.h5");
    {
        hid_t g = H5Gopen2(f, "/special/nan", H5P_DEFAULT);
        set_str(g, "reference_refused", "ADM_ERR_SHAPE");
        H5Gclose(g);
    }
    H5Fclose(f);
    f = edit(dir, base, "missing_w.h5");
    H5Ldelete(f, "/inputs/w", H5P_DEFAULT);
    H5Fclose(f);
    {
        hsize_t d1[1] = {3}, dw[2] = {6, 9}, dr[2] = {4, 7}, ds[2] = {2, 5};
        uint16_t z[3] = {0}, w[54] = {0}, r[28] = {0};
        f = edit(dir, base, "unknown_input.h5");
        put_dataset(f, "/inputs/z", H5T_STD_U16LE, 1, d1, z, "bf16");
        H5Fclose(f);
        f = edit(dir, base, "shape_w.h5");
        put_dataset(f, "/inputs/w", H5T_STD_U16LE, 2, dw, w, "bf16");
        H5Fclose(f);
        f = edit(dir, base, "shape_ref.h5");
        put_dataset(f, "/reference", H5T_STD_U16LE, 2, dr, r, "bf16");
        H5Fclose(f);
        f = edit(dir, base, "shape_special.h5");
        put_dataset(f, "/special/nan/reference", H5T_STD_U16LE, 2, ds, r, "bf16");
        H5Fclose(f);
    }
    f = edit(dir, base, "bad_params.h5");
    set_str(f, "op_params", "{\"approximate\": \"cubic\"}");
    H5Fclose(f);
    f = edit(dir, base, "bad_json.h5");
    set_str(f, "op_params", "{\"approximate\": ");
    H5Fclose(f);
    f = edit(dir, base, "unknown_param.h5");
    set_str(f, "op_params", "{\"alpha\": 1}");
    H5Fclose(f);
    f = edit(dir, base, "unknown_op.h5");
    set_str(f, "op", "cubic_spline");
    H5Fclose(f);
    free(base);
    return ADM_OK;
}
