/* captures: format v1 round trips, every malformed-file case, atomic
 * writes, statistics, the synthetic generator, and a capture written by
 * the Python helper (ADM_PY_CAPTURE). */
#include "adm_capture.h"
#include "adm_harness.h"
#include "adm_oracle.h"
#include "bad_captures.h"

#include <check.h>
#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/adm_check_capture.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char p[600];
    if (!d) return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
            remove(p);
        }
    closedir(d);
    rmdir(tmpdir);
}

static int count_tmp_files(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

static void path_in(char *buf, size_t n, const char *file) { snprintf(buf, n, "%s/%s", tmpdir, file); }

static int same_bits(const adm_tensor *a, const adm_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    for (int64_t i = 0; i < adm_tensor_numel(a); i++)
        if (adm_tensor_bits(a, i) != adm_tensor_bits(b, i)) return 0;
    return 1;
}

/* ------------------------------------------------------------ round trip */

static void roundtrip(int gzip)
{
    adm_capture *c, *r;
    adm_tensor x, xt, w, b, ref, e4, e2, orc, empty;
    int64_t xs[2] = {8, 16}, ws[2] = {5, 8}, bs[1] = {5}, rs[2] = {16, 5}, es[2] = {0, 8}, er[2] = {0, 5};
    char path[512];
    int idx;
    double ov[80];

    ck_assert_int_eq(adm_synth_gaussian(11, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    /* a transposed view: written contiguous, as [16, 8] */
    ck_assert_int_eq(adm_tensor_transpose(&x, 0, 1, &xt), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(12, 1.0, ADM_FP16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(13, 1.0, ADM_FP32, 1, bs, &b), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(14, 1.0, ADM_BF16, 2, rs, &ref), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(15, 100.0, ADM_E4M3, 2, rs, &e4), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(16, 2.0, ADM_E2M1, 2, rs, &e2), ADM_OK);
    for (int i = 0; i < 80; i++) ov[i] = i / 7.0;
    ck_assert_int_eq(adm_tensor_from_f64(&orc, ADM_FP64, 2, rs, ov, ADM_RNE, 0), ADM_OK);
    ck_assert_int_eq(adm_tensor_alloc(&empty, ADM_BF16, 2, es), ADM_OK);

    ck_assert_int_eq(adm_capture_create("linear", "{}", &c), ADM_OK);
    ck_assert_int_eq(adm_capture_set_provenance(c, "FLUX.1-dev", "blocks.3.ff", 12, "check_capture"), ADM_OK);
    ck_assert_int_eq(adm_capture_add_input(c, "x", &xt), ADM_OK);
    ck_assert_int_eq(adm_capture_add_input(c, "w", &w), ADM_OK);
    ck_assert_int_eq(adm_capture_add_input(c, "bias", &b), ADM_OK);
    ck_assert_int_eq(adm_capture_add_input(c, "x", &x), ADM_ERR_INVALID); /* duplicate name */
    ck_assert_int_eq(adm_capture_add_input(c, "a/b", &x), ADM_ERR_INVALID);
    ck_assert_int_eq(adm_capture_set_reference(c, &ref), ADM_OK);
    ck_assert_int_eq(adm_capture_add_candidate(c, "fp8", &e4), ADM_OK);
    ck_assert_int_eq(adm_capture_add_candidate(c, "fp4", &e2), ADM_OK);
    ck_assert_int_eq(adm_capture_set_oracle(c, &ref), ADM_ERR_DTYPE);
    ck_assert_int_eq(adm_capture_set_oracle(c, &orc), ADM_OK);
    ck_assert_int_eq(adm_capture_add_special(c, "empty", &idx), ADM_OK);
    ck_assert_int_eq(adm_capture_special_add_input(c, idx, "x", &empty), ADM_OK);
    ck_assert_int_eq(adm_capture_special_add_input(c, idx, "w", &w), ADM_OK);
    {
        adm_tensor eo;
        ck_assert_int_eq(adm_tensor_alloc(&eo, ADM_BF16, 2, er), ADM_OK);
        ck_assert_int_eq(adm_capture_special_set_reference(c, idx, &eo), ADM_OK);
        ck_assert_int_eq(adm_capture_special_add_candidate(c, idx, "fp8", &eo), ADM_OK);
        adm_tensor_free(&eo);
    }
    ck_assert_int_eq(adm_capture_add_special(c, "refused", &idx), ADM_OK);
    ck_assert_int_eq(adm_capture_special_add_input(c, idx, "x", &w), ADM_OK);
    ck_assert_int_eq(adm_capture_special_set_refusal(c, idx, ADM_ERR_SHAPE), ADM_OK);
    ck_assert_int_eq(adm_capture_validate(c), ADM_OK);

    path_in(path, sizeof path, gzip ? "rt_gzip.h5" : "rt.h5");
    ck_assert_int_eq(adm_capture_write(c, path, gzip), ADM_OK);
    ck_assert_int_eq(count_tmp_files(), 0);
    ck_assert_int_eq(adm_capture_read(path, &r), ADM_OK);
    ck_assert_int_eq(adm_capture_validate(r), ADM_OK);
    ck_assert_str_eq(adm_capture_op(r), "linear");
    ck_assert_str_eq(adm_capture_params(r), "{}");
    ck_assert_str_eq(adm_capture_model(r), "FLUX.1-dev");
    ck_assert_str_eq(adm_capture_layer(r), "blocks.3.ff");
    ck_assert_str_eq(adm_capture_source(r), "check_capture");
    ck_assert_int_eq(adm_capture_step(r), 12);
    /* its cases leave out inputs (the empty case the bias, the refused one
     * w and the bias): version 2, where they are the capture's */
    ck_assert_int_eq(adm_capture_version(r), 2);
    ck_assert_ptr_eq(adm_capture_special_find_input(r, 0, "bias"), adm_capture_find_input(r, "bias"));
    ck_assert_ptr_eq(adm_capture_special_find_input(r, 0, "w"), adm_capture_special_input(r, 0, 1).tensor);
    ck_assert_ptr_null(adm_capture_special_find_input(r, 0, "nope"));
    ck_assert_int_eq(adm_capture_input_count(r), 3);
    /* creation order is kept */
    ck_assert_str_eq(adm_capture_input(r, 0).name, "x");
    ck_assert_str_eq(adm_capture_input(r, 2).name, "bias");
    ck_assert(same_bits(adm_capture_input(r, 0).tensor, &xt));
    ck_assert(adm_tensor_is_contiguous(adm_capture_input(r, 0).tensor));
    ck_assert(same_bits(adm_capture_find_input(r, "w"), &w));
    ck_assert(same_bits(adm_capture_find_input(r, "bias"), &b));
    ck_assert_ptr_null(adm_capture_find_input(r, "nope"));
    ck_assert(same_bits(adm_capture_reference(r), &ref));
    ck_assert_int_eq(adm_capture_candidate_count(r), 2);
    ck_assert_str_eq(adm_capture_candidate(r, 0).name, "fp8");
    ck_assert(same_bits(adm_capture_candidate(r, 0).tensor, &e4));
    ck_assert(same_bits(adm_capture_candidate(r, 1).tensor, &e2));
    ck_assert(same_bits(adm_capture_oracle(r), &orc));
    ck_assert_int_eq(adm_capture_special_count(r), 2);
    ck_assert_str_eq(adm_capture_special_name(r, 0), "empty");
    ck_assert_int_eq(adm_capture_special_input_count(r, 0), 2);
    ck_assert(adm_tensor_numel(adm_capture_special_input(r, 0, 0).tensor) == 0);
    ck_assert_ptr_nonnull(adm_capture_special_reference(r, 0));
    ck_assert_int_eq(adm_capture_special_candidate_count(r, 0), 1);
    ck_assert_str_eq(adm_capture_special_input(r, 0, 1).name, "w");
    ck_assert_str_eq(adm_capture_special_candidate(r, 0, 0).name, "fp8");
    ck_assert_int_eq(adm_capture_special_candidate_count(r, 1), 0);
    /* no such case or entry: empty, never a crash */
    for (int i = -1; i <= 2; i += 3) {
        ck_assert_int_eq(adm_capture_special_input_count(r, i), 0);
        ck_assert_int_eq(adm_capture_special_candidate_count(r, i), 0);
        ck_assert_ptr_null(adm_capture_special_input(r, i, 0).name);
        ck_assert_ptr_null(adm_capture_special_candidate(r, i, 0).tensor);
    }
    ck_assert_ptr_null(adm_capture_special_input(r, 0, 2).tensor);
    ck_assert_ptr_null(adm_capture_special_candidate(r, 0, -1).name);
    ck_assert_int_eq(adm_capture_special_refusal(r, 0), ADM_OK);
    ck_assert_ptr_null(adm_capture_special_reference(r, 1));
    ck_assert_int_eq(adm_capture_special_refusal(r, 1), ADM_ERR_SHAPE);
    adm_capture_free(r);
    adm_capture_free(c);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
    adm_tensor_free(&ref);
    adm_tensor_free(&e4);
    adm_tensor_free(&e2);
    adm_tensor_free(&orc);
    adm_tensor_free(&empty);
}

/* Version 2 (issue 17): a special case stores its own small inputs and
 * leaves the rest to /inputs; a file whose every case is whole is written
 * as version 1, and a version 1 file keeps version 1's meaning (an input
 * a case lacks is absent, not the capture's). */
START_TEST(test_special_inherit)
{
    adm_capture *c, *r;
    adm_tensor x, w, b, y, xs, ys;
    int64_t xsh[2] = {64, 32}, wsh[2] = {24, 32}, bsh[1] = {24}, ysh[2] = {64, 24}, cs[2] = {8, 32}, cy[2] = {8, 24};
    char path[512];
    int idx;
    hid_t f;
    ck_assert_int_eq(adm_synth_gaussian(1, 1.0, ADM_BF16, 2, xsh, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(2, 0.1, ADM_BF16, 2, wsh, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(3, 0.1, ADM_BF16, 1, bsh, &b), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(4, 1.0, ADM_BF16, 2, ysh, &y), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(5, 1.0, ADM_BF16, 2, cs, &xs), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(6, 1.0, ADM_BF16, 2, cy, &ys), ADM_OK);
    for (int whole = 0; whole < 2; whole++) {
        ck_assert_int_eq(adm_capture_create("linear", "{}", &c), ADM_OK);
        ck_assert_int_eq(adm_capture_add_input(c, "x", &x), ADM_OK);
        ck_assert_int_eq(adm_capture_add_input(c, "w", &w), ADM_OK);
        ck_assert_int_eq(adm_capture_add_input(c, "bias", &b), ADM_OK);
        ck_assert_int_eq(adm_capture_set_reference(c, &y), ADM_OK);
        ck_assert_int_eq(adm_capture_add_special(c, "nan_row", &idx), ADM_OK);
        ck_assert_int_eq(adm_capture_special_add_input(c, idx, "x", &xs), ADM_OK);
        if (whole) {
            ck_assert_int_eq(adm_capture_special_add_input(c, idx, "w", &w), ADM_OK);
            ck_assert_int_eq(adm_capture_special_add_input(c, idx, "bias", &b), ADM_OK);
        }
        ck_assert_int_eq(adm_capture_special_set_reference(c, idx, &ys), ADM_OK);
        ck_assert_msg(adm_capture_validate(c) == ADM_OK, "%s", adm_error_message());
        path_in(path, sizeof path, whole ? "inherit_whole.h5" : "inherit.h5");
        ck_assert_int_eq(adm_capture_write(c, path, 0), ADM_OK);
        ck_assert_int_eq(adm_capture_read(path, &r), ADM_OK);
        ck_assert_int_eq(adm_capture_version(r), whole ? 1 : 2);
        ck_assert_int_eq(adm_capture_special_input_count(r, 0), whole ? 3 : 1);
        ck_assert(same_bits(adm_capture_special_find_input(r, 0, "x"), &xs));
        ck_assert(same_bits(adm_capture_special_find_input(r, 0, "w"), &w));
        ck_assert(same_bits(adm_capture_special_find_input(r, 0, "bias"), &b));
        ck_assert_msg(adm_capture_validate(r) == ADM_OK, "%s", adm_error_message());
        adm_capture_free(r);
        adm_capture_free(c);
    }
    /* version 1 without w in its case: w is missing there, not inherited */
    path_in(path, sizeof path, "inherit_whole.h5");
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    ck_assert_int_ge(f, 0);
    ck_assert_int_ge(H5Ldelete(f, "/special/nan_row/inputs/w", H5P_DEFAULT), 0);
    H5Fclose(f);
    ck_assert_int_eq(adm_capture_read(path, &r), ADM_OK);
    ck_assert_int_eq(adm_capture_version(r), 1);
    ck_assert_ptr_null(adm_capture_special_find_input(r, 0, "w"));
    ck_assert_int_eq(adm_capture_validate(r), ADM_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "/special/nan_row/inputs"));
    adm_capture_free(r);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
    adm_tensor_free(&y);
    adm_tensor_free(&xs);
    adm_tensor_free(&ys);
    adm_error_clear();
}
END_TEST

START_TEST(test_roundtrip_raw) { roundtrip(0); }
END_TEST
START_TEST(test_roundtrip_gzip) { roundtrip(6); }
END_TEST

/* ------------------------------------------------------------ malformed files */

START_TEST(test_bad_capture)
{
    const adm_bad_case *bc = &adm_bad_cases[_i];
    char path[512];
    adm_capture *c = NULL;
    adm_status st;
    path_in(path, sizeof path, bc->file);
    st = adm_capture_read(path, &c);
    if (bc->at_validate) {
        ck_assert_msg(st == ADM_OK, "%s: read refused: %s", bc->file, adm_error_message());
        st = adm_capture_validate(c);
        adm_capture_free(c);
    } else {
        ck_assert_ptr_null(c);
    }
    ck_assert_msg(st == bc->status, "%s: status %s, expected %s (%s)", bc->file, adm_status_name(st),
                  adm_status_name(bc->status), adm_error_message());
    ck_assert_msg(strstr(adm_error_message(), path) != NULL, "%s: message does not name the file: %s",
                  bc->file, adm_error_message());
    ck_assert_msg(strstr(adm_error_message(), bc->needle1) != NULL, "%s: message lacks \"%s\": %s", bc->file,
                  bc->needle1, adm_error_message());
    ck_assert_msg(strstr(adm_error_message(), bc->needle2) != NULL, "%s: message lacks \"%s\": %s", bc->file,
                  bc->needle2, adm_error_message());
}
END_TEST

/* Soft links inside the file are followed by the reader itself: absolute,
 * relative, chained, and through a soft-linked group on the way. */
START_TEST(test_soft_links_inside)
{
    char base[512], path[512];
    adm_capture *b, *c;
    hid_t f;
    FILE *in, *out;
    int ch;
    path_in(base, sizeof base, "base.h5");
    path_in(path, sizeof path, "soft_inside.h5");
    in = fopen(base, "rb");
    out = fopen(path, "wb");
    ck_assert(in && out);
    while ((ch = getc(in)) != EOF) putc(ch, out);
    fclose(in);
    fclose(out);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    ck_assert(f >= 0);
    ck_assert(H5Lcreate_soft("/reference", f, "/candidates/same", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    ck_assert(H5Lcreate_soft("fused", f, "/candidates/rel", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    ck_assert(H5Lcreate_soft("/candidates/./rel", f, "/candidates/chain", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    ck_assert(H5Lcreate_soft("/special", f, "/alias", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    ck_assert(H5Lcreate_soft("//alias/nan/reference", f, "/candidates/deep", H5P_DEFAULT, H5P_DEFAULT) >= 0);
    H5Fclose(f);
    ck_assert_int_eq(adm_capture_read(base, &b), ADM_OK);
    ck_assert_msg(adm_capture_read(path, &c) == ADM_OK, "%s", adm_error_message());
    ck_assert_int_eq(adm_capture_candidate_count(c), 5);
    for (int i = 0; i < 5; i++) {
        adm_named_tensor t = adm_capture_candidate(c, i);
        const adm_tensor *want = !strcmp(t.name, "deep") ? adm_capture_special_reference(b, 0)
                                                         : adm_capture_reference(b);
        ck_assert_msg(same_bits(t.tensor, want), "candidate '%s' is not what its link names", t.name);
    }
    adm_capture_free(c);
    adm_capture_free(b);
}
END_TEST

/* A plan judges the declared layout (shapes, no data) before the data is
 * read; in the sandbox it runs in the child and again in the caller, so
 * a child that skipped it cannot pass a capture over it. */
static pid_t plan_caller;
static adm_status plan_declared(const adm_capture *c, void *user)
{
    int *calls = user;
    const adm_tensor *x = adm_capture_find_input(c, "x");
    (*calls)++;
    if (!x || x->ndim != 2 || x->shape[0] != 4 || x->shape[1] != 8 || !adm_capture_reference(c))
        return ADM_FAIL(ADM_ERR_INTERNAL, "the plan did not see the declared layout");
    if (x->data || adm_capture_reference(c)->data)
        return ADM_FAIL(ADM_ERR_INTERNAL, "the plan saw data: it ran after the read");
    return ADM_FAIL(ADM_ERR_RANGE, "%s: refused by the plan", adm_capture_path(c));
}
static adm_status plan_in_caller(const adm_capture *c, void *user)
{
    (void)user;
    if (getpid() != plan_caller) return ADM_OK; /* the child lets it through */
    return ADM_FAIL(ADM_ERR_RANGE, "%s: refused by the caller's plan", adm_capture_path(c));
}
static adm_status plan_in_child(const adm_capture *c, void *user)
{
    (void)user;
    if (getpid() == plan_caller) return ADM_OK;
    return ADM_FAIL(ADM_ERR_RANGE, "refused by the child's plan (%lld inputs)", (long long)adm_capture_input_count(c));
}

START_TEST(test_plan)
{
    char path[512];
    adm_capture *c = (adm_capture *)1;
    int calls = 0;
    path_in(path, sizeof path, "base.h5");
    ck_assert_int_eq(adm_capture_read_plan(path, plan_declared, &calls, &c), ADM_ERR_RANGE);
    ck_assert_msg(strstr(adm_error_message(), "refused by the plan") != NULL, "%s", adm_error_message());
    ck_assert_ptr_null(c);
    ck_assert_int_eq(calls, 1);
    plan_caller = getpid();
    setenv("ADM_SANDBOX", "on", 1);
    c = (adm_capture *)1;
    ck_assert_int_eq(adm_capture_read_sandboxed_plan(path, NULL, plan_in_caller, NULL, &c), ADM_ERR_RANGE);
    ck_assert_msg(strstr(adm_error_message(), "refused by the caller's plan") != NULL, "%s", adm_error_message());
    ck_assert_ptr_null(c);
    ck_assert_int_eq(adm_capture_read_sandboxed_plan(path, NULL, plan_in_child, NULL, &c), ADM_ERR_RANGE);
    ck_assert_msg(strstr(adm_error_message(), path) && strstr(adm_error_message(), "refused by the child's plan (3 inputs)"),
                  "%s", adm_error_message());
    ck_assert_ptr_null(c);
    unsetenv("ADM_SANDBOX");
}
END_TEST

START_TEST(test_base_is_valid)
{
    char path[512];
    adm_capture *c;
    path_in(path, sizeof path, "base.h5");
    ck_assert_int_eq(adm_capture_read(path, &c), ADM_OK);
    ck_assert_int_eq(adm_capture_validate(c), ADM_OK);
    adm_capture_free(c);
}
END_TEST

START_TEST(test_atomic_write)
{
    adm_capture *c;
    adm_tensor x;
    int64_t xs[2] = {2, 3};
    char path[512];
    struct stat sb;
    ck_assert_int_eq(adm_capture_create("relu", "{}", &c), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(1, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_capture_add_input(c, "x", &x), ADM_OK);
    /* a directory that does not exist */
    ck_assert_int_eq(adm_capture_write(c, "/nonexistent-admit-dir/x.h5", 0), ADM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "/nonexistent-admit-dir/x.h5"));
    /* the target is a directory: the rename fails, nothing is left behind */
    path_in(path, sizeof path, "adir");
    ck_assert_int_eq(mkdir(path, 0755), 0);
    ck_assert_int_eq(adm_capture_write(c, path, 0), ADM_ERR_IO);
    ck_assert_int_eq(count_tmp_files(), 0);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert(S_ISDIR(sb.st_mode));
    rmdir(path);
    adm_capture_free(c);
    adm_tensor_free(&x);
}
END_TEST

/* ------------------------------------------------------------ statistics and synth */

START_TEST(test_stats)
{
    float v[8] = {1.0f, -2.0f, NAN, INFINITY, -INFINITY, 0.0f, 3.0f, -4.0f};
    int64_t s8[1] = {8};
    adm_tensor t;
    adm_tensor_stats s;
    double q[5] = {5, -1, NAN, 3, 2};
    ck_assert_int_eq(adm_tensor_wrap(&t, ADM_FP32, 1, s8, NULL, 0, v, 8), ADM_OK);
    ck_assert_int_eq(adm_tensor_stats_compute(&t, &s), ADM_OK);
    ck_assert_int_eq(s.count, 8);
    ck_assert_int_eq(s.nan_count, 1);
    ck_assert_int_eq(s.posinf_count, 1);
    ck_assert_int_eq(s.neginf_count, 1);
    ck_assert_int_eq(s.zero_count, 1);
    ck_assert(s.min == -4.0 && s.max == 3.0 && s.absmax == 4.0);
    ck_assert(s.p99_abs == 4.0 && s.max_over_p99 == 1.0);
    ck_assert(fabs(s.mean - (-0.4)) < 1e-15);
    /* nearest-rank quantile of |x| over finite values: 1, 2, 3, 5 */
    ck_assert(adm_quantile_abs_inplace(q, 5, 0.5) == 2.0);
    {
        double q2[5] = {5, -1, NAN, 3, 2};
        ck_assert(adm_quantile_abs_inplace(q2, 5, 0.75) == 3.0);
    }
    {
        double q3[2] = {NAN, INFINITY};
        ck_assert(isnan(adm_quantile_abs_inplace(q3, 2, 0.5)));
    }
}
END_TEST

START_TEST(test_synth)
{
    adm_synth_config cfg;
    adm_tensor a, b, c;
    adm_tensor_stats s;
    adm_synth_config_default(&cfg);
    ck_assert(cfg.tokens == 4096 && cfg.channels == 3072 && cfg.dtype == ADM_BF16);
    cfg.tokens = 512;
    cfg.channels = 1024;
    cfg.seed = 42;
    ck_assert_int_eq(adm_synth_activations(&cfg, &a), ADM_OK);
    ck_assert_int_eq(adm_synth_activations(&cfg, &b), ADM_OK);
    ck_assert(same_bits(&a, &b)); /* deterministic */
    cfg.seed = 43;
    ck_assert_int_eq(adm_synth_activations(&cfg, &c), ADM_OK);
    ck_assert(!same_bits(&a, &c));
    ck_assert_int_eq(adm_tensor_stats_compute(&a, &s), ADM_OK);
    ck_assert_msg(fabs(s.max_over_p99 - 8.0) < 0.4, "max/p99 = %g", s.max_over_p99);
    ck_assert_int_eq(s.nan_count + s.posinf_count + s.neginf_count, 0);
    ck_assert(fabs(s.mean) < 0.05 * s.rms);
    cfg.target_max_over_p99 = 20;
    adm_tensor_free(&c);
    ck_assert_int_eq(adm_synth_activations(&cfg, &c), ADM_OK);
    ck_assert_int_eq(adm_tensor_stats_compute(&c, &s), ADM_OK);
    ck_assert_msg(fabs(s.max_over_p99 - 20.0) < 1.0, "max/p99 = %g", s.max_over_p99);
    adm_tensor_free(&a);
    adm_tensor_free(&b);
    adm_tensor_free(&c);
    cfg.outlier_fraction = 0.7;
    ck_assert_int_eq(adm_synth_activations(&cfg, &a), ADM_ERR_INVALID);
    cfg.outlier_fraction = 0.005;
    cfg.tokens = 0;
    ck_assert_int_eq(adm_synth_activations(&cfg, &a), ADM_ERR_INVALID);
}
END_TEST

/* ------------------------------------------------------------ the Python helper's capture */

START_TEST(test_python_capture)
{
    const char *path = getenv("ADM_PY_CAPTURE");
    adm_capture *c;
    const adm_tensor *t;
    if (!path) {
        /* Run by ctest after tests/python_capture.py; nothing to read alone. */
        return;
    }
    ck_assert_msg(adm_capture_read(path, &c) == ADM_OK, "%s", adm_error_message());
    ck_assert_msg(adm_capture_validate(c) == ADM_OK, "%s", adm_error_message());
    ck_assert_str_eq(adm_capture_op(c), "linear");
    ck_assert_str_eq(adm_capture_model(c), "pytest-model");
    ck_assert_str_eq(adm_capture_layer(c), "blocks.0.mlp");
    ck_assert_int_eq(adm_capture_step(c), 7);
    t = adm_capture_find_input(c, "x");
    ck_assert(t && t->dtype == ADM_BF16 && t->shape[0] == 256 && t->shape[1] == 256);
    for (int64_t i = 0; i < 65536; i++) ck_assert_uint_eq(adm_tensor_bits(t, i), (uint64_t)i);
    t = adm_capture_find_input(c, "w");
    ck_assert(t && t->dtype == ADM_FP16 && t->shape[0] == 4);
    for (int64_t i = 0; i < 1024; i++) ck_assert_uint_eq(adm_tensor_bits(t, i), (uint64_t)((i * 97) % 65536));
    t = adm_capture_find_input(c, "bias");
    ck_assert(t && t->dtype == ADM_FP32);
    ck_assert(adm_tensor_get(t, 0) == 1.5 && adm_tensor_get(t, 1) == 0 && signbit(adm_tensor_get(t, 1)));
    ck_assert(isinf(adm_tensor_get(t, 2)) && adm_tensor_get(t, 3) == (double)1e-45f);
    t = adm_capture_reference(c);
    for (int64_t i = 0; i < 1024; i++) ck_assert(adm_tensor_get(t, i) == (double)(float)(i * 0.25 - 100));
    ck_assert_int_eq(adm_capture_candidate_count(c), 4);
    for (int k = 0; k < 4; k++) {
        adm_named_tensor nt = adm_capture_candidate(c, k);
        for (int64_t i = 0; i < 1024; i++) {
            uint64_t want = 0;
            if (!strcmp(nt.name, "e4m3")) want = (uint64_t)(i % 256);
            else if (!strcmp(nt.name, "e5m2")) want = (uint64_t)((i * 3) % 256);
            else if (!strcmp(nt.name, "e2m1")) want = (uint64_t)(i % 16);
            else if (!strcmp(nt.name, "rounded")) want = adm_bf16_from_f32((float)(i * 0.25 - 100));
            else ck_abort_msg("unexpected candidate %s", nt.name);
            ck_assert_msg(adm_tensor_bits(nt.tensor, i) == want, "%s[%lld]", nt.name, (long long)i);
        }
    }
    t = adm_capture_oracle(c);
    for (int64_t i = 0; i < 1024; i++) ck_assert(adm_tensor_get(t, i) == i / 3.0);
    ck_assert_int_eq(adm_capture_special_count(c), 2);
    ck_assert_int_eq(adm_capture_special_refusal(c, 1), ADM_ERR_SHAPE);
    ck_assert(adm_tensor_numel(adm_capture_special_reference(c, 0)) == 0);
    adm_capture_free(c);
}
END_TEST

/* ------------------------------------------------------------ borrowed */

/* The two captures' replays, verdict by verdict: every byte (adm_judge
 * zeroes a verdict before filling it, so padding compares too). */
static void same_replay(const adm_capture *a, const adm_capture *b, const char *what)
{
    adm_replay_result ra, rb;
    ck_assert_msg(adm_harness_replay(a, NULL, NULL, &ra) == ADM_OK, "%s: %s", what, adm_error_message());
    ck_assert_msg(adm_harness_replay(b, NULL, NULL, &rb) == ADM_OK, "%s: %s", what, adm_error_message());
    ck_assert_int_eq(ra.n, rb.n);
    ck_assert_int_eq(ra.mpfr_refined, rb.mpfr_refined);
    for (int k = 0; k < ra.n; k++) {
        ck_assert_str_eq(ra.names[k], rb.names[k]);
        ck_assert_msg(!memcmp(&ra.verdicts[k], &rb.verdicts[k], sizeof ra.verdicts[k]),
                      "%s: candidate %s: %s, rms ratio %.17g from the borrowed views; %s, %.17g from the file", what,
                      ra.names[k], adm_tier_name(ra.verdicts[k].tier), ra.verdicts[k].rms_ratio,
                      adm_tier_name(rb.verdicts[k].tier), rb.verdicts[k].rms_ratio);
    }
    adm_replay_result_free(&ra);
    adm_replay_result_free(&rb);
}

/* A view of dense storage with the given strides and offset. */
static adm_tensor view_of(const adm_tensor *storage, int ndim, const int64_t *shape, const int64_t *stride,
                          int64_t offset)
{
    adm_tensor v;
    ck_assert_int_eq(adm_tensor_wrap(&v, storage->dtype, ndim, shape, stride, offset, storage->data,
                                     adm_tensor_numel(storage)),
                     ADM_OK);
    return v;
}

/* Copies the logical elements of v into dense storage laid out as `into`
 * (a view of it), so that the view reads v's values. */
static void fill_view(adm_tensor *into, const adm_tensor *v)
{
    for (int64_t i = 0; i < adm_tensor_numel(v); i++) adm_tensor_set_bits(into, i, adm_tensor_bits(v, i));
}

START_TEST(test_borrowed_views)
{
    enum { M = 48, K = 64, N = 40 };
    int64_t xs[2] = {M, K}, xts[2] = {K, M}, ws[2] = {N, K}, b2[1] = {2 * N}, os[2] = {M, N}, ots[2] = {N, M};
    adm_tensor x, w, b, xT, wR, bS, orc_ref, ref, candT, cand;
    adm_tensor vx, vw, vb, vcand, vref;
    adm_capture *bor, *cpy, *back;
    const adm_op *op = adm_op_find("linear");
    adm_op_params p;
    adm_oracle *o;
    adm_oracle_result res;
    char path[512];
    int idx;

    ck_assert_int_eq(adm_synth_gaussian(21, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(22, 0.125, ADM_BF16, 2, ws, &w), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(23, 0.02, ADM_FP32, 1, b2, &b), ADM_OK);
    /* x read through a transposed layout, w with its rows reversed (a
     * negative stride), bias every other element */
    {
        int64_t st_t[2] = {1, M}, st_r[2] = {-K, 1}, st_s[1] = {2}, nb[1] = {N};
        adm_tensor into;
        ck_assert_int_eq(adm_tensor_alloc(&xT, ADM_BF16, 2, xts), ADM_OK);
        into = view_of(&xT, 2, xs, st_t, 0);
        fill_view(&into, &x);
        vx = into;
        ck_assert_int_eq(adm_tensor_alloc(&wR, ADM_BF16, 2, ws), ADM_OK);
        into = view_of(&wR, 2, ws, st_r, (int64_t)(N - 1) * K);
        fill_view(&into, &w);
        vw = into;
        bS = b;
        vb = view_of(&bS, 1, nb, st_s, 1);
    }
    ck_assert(!adm_tensor_is_contiguous(&vx) && !adm_tensor_is_contiguous(&vw) && !adm_tensor_is_contiguous(&vb));
    /* reference: the oracle rounded to bf16; candidate: truncated, stored transposed */
    ck_assert_int_eq(adm_op_params_parse(op, "{}", &p), ADM_OK);
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_OK);
    {
        const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&vx, &vw, &vb};
        ck_assert_msg(adm_oracle_eval(o, op, &p, in, &res) == ADM_OK, "%s", adm_error_message());
    }
    ck_assert_int_eq(adm_tensor_from_f64(&ref, ADM_BF16, 2, os, res.value.data, ADM_RNE, 0), ADM_OK);
    ck_assert_int_eq(adm_tensor_from_f64(&cand, ADM_BF16, 2, os, res.value.data, ADM_RTZ, 0), ADM_OK);
    ck_assert_int_eq(adm_tensor_from_f64(&orc_ref, ADM_FP64, 2, os, res.value.data, ADM_RNE, 0), ADM_OK);
    {
        int64_t st_t[2] = {1, M};
        ck_assert_int_eq(adm_tensor_alloc(&candT, ADM_BF16, 2, ots), ADM_OK);
        vcand = view_of(&candT, 2, os, st_t, 0);
        fill_view(&vcand, &cand);
    }
    vref = ref;

    /* the same tensors, borrowed and copied */
    ck_assert_int_eq(adm_capture_create_borrowed("linear", "{}", &bor), ADM_OK);
    ck_assert_int_eq(adm_capture_create("linear", "{}", &cpy), ADM_OK);
    {
        adm_capture *both[2] = {bor, cpy};
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(adm_capture_set_provenance(both[k], "m", "blocks.0", 3, "check_capture"), ADM_OK);
            ck_assert_int_eq(adm_capture_add_input(both[k], "x", &vx), ADM_OK);
            ck_assert_int_eq(adm_capture_add_input(both[k], "w", &vw), ADM_OK);
            ck_assert_int_eq(adm_capture_add_input(both[k], "bias", &vb), ADM_OK);
            ck_assert_int_eq(adm_capture_set_reference(both[k], &vref), ADM_OK);
            ck_assert_int_eq(adm_capture_add_candidate(both[k], "truncated", &vcand), ADM_OK);
            ck_assert_int_eq(adm_capture_add_candidate(both[k], "same", &vref), ADM_OK);
            ck_assert_int_eq(adm_capture_add_special(both[k], "refused", &idx), ADM_OK);
            ck_assert_int_eq(adm_capture_special_add_input(both[k], idx, "x", &vw), ADM_OK);
            ck_assert_int_eq(adm_capture_special_set_refusal(both[k], idx, ADM_ERR_SHAPE), ADM_OK);
            ck_assert_int_eq(adm_capture_special_add_candidate(both[k], idx, "same", &vref), ADM_OK);
            ck_assert_msg(adm_capture_validate(both[k]) == ADM_OK, "%s", adm_error_message());
        }
    }
    /* borrowed: the caller's storage, read where it lies */
    ck_assert_ptr_eq(adm_capture_find_input(bor, "x")->data, xT.data);
    ck_assert_ptr_eq(adm_capture_find_input(bor, "w")->data, wR.data);
    ck_assert_int_eq(adm_capture_find_input(bor, "w")->stride[0], -K);
    ck_assert_ptr_eq(adm_capture_candidate(bor, 0).tensor->data, candT.data);
    ck_assert_ptr_ne(adm_capture_find_input(cpy, "x")->data, xT.data);
    /* judged as the same tensors written to a file and read back */
    path_in(path, sizeof path, "borrowed_copy.h5");
    ck_assert_int_eq(adm_capture_write(cpy, path, 0), ADM_OK);
    ck_assert_int_eq(adm_capture_read(path, &back), ADM_OK);
    same_replay(bor, back, "linear, strided views");
    adm_capture_free(back);
    /* and written as the same bits */
    path_in(path, sizeof path, "borrowed.h5");
    ck_assert_int_eq(adm_capture_write(bor, path, 4), ADM_OK);
    ck_assert_int_eq(adm_capture_read(path, &back), ADM_OK);
    ck_assert(same_bits(adm_capture_find_input(back, "x"), &x));
    ck_assert(same_bits(adm_capture_find_input(back, "w"), &w));
    ck_assert(same_bits(adm_capture_candidate(back, 0).tensor, &cand));
    ck_assert_str_eq(adm_capture_layer(back), "blocks.0");
    adm_capture_free(back);
    adm_capture_free(cpy);

    /* an op outside the catalog, judged by the user's oracle given as a
     * transposed view: read by value, not from its first byte on */
    {
        adm_tensor oT, vo;
        int64_t st_t[2] = {1, M};
        ck_assert_int_eq(adm_tensor_alloc(&oT, ADM_FP64, 2, ots), ADM_OK);
        vo = view_of(&oT, 2, os, st_t, 0);
        fill_view(&vo, &orc_ref);
        ck_assert_int_eq(adm_capture_create_borrowed("my_gemm", "{}", &cpy), ADM_OK);
        ck_assert_int_eq(adm_capture_add_input(cpy, "x", &vx), ADM_OK);
        ck_assert_int_eq(adm_capture_set_reference(cpy, &vref), ADM_OK);
        ck_assert_int_eq(adm_capture_add_candidate(cpy, "truncated", &vcand), ADM_OK);
        ck_assert_int_eq(adm_capture_set_oracle(cpy, &vo), ADM_OK);
        ck_assert_int_eq(adm_capture_validate(cpy), ADM_OK);
        path_in(path, sizeof path, "borrowed_user.h5");
        ck_assert_int_eq(adm_capture_write(cpy, path, 0), ADM_OK);
        ck_assert_int_eq(adm_capture_read(path, &back), ADM_OK);
        same_replay(cpy, back, "user oracle, transposed view");
        adm_capture_free(back);
        adm_capture_free(cpy);
        adm_tensor_free(&oT);
    }

    /* a bad view is refused and leaves the capture as it was */
    {
        adm_tensor bad = vx;
        int n0 = adm_capture_input_count(bor);
        bad.capacity = K * M - 1; /* its last element lies beyond */
        ck_assert_int_eq(adm_capture_add_input(bor, "y", &bad), ADM_ERR_SHAPE);
        bad = vx;
        bad.data = (char *)xT.data + 1; /* not aligned for bf16 */
        ck_assert_int_eq(adm_capture_add_input(bor, "y", &bad), ADM_ERR_INVALID);
        ck_assert_msg(strstr(adm_error_message(), "aligned"), "%s", adm_error_message());
        bad = vx;
        bad.data = NULL;
        ck_assert_int_eq(adm_capture_add_input(bor, "y", &bad), ADM_ERR_INVALID);
        bad = vx;
        bad.dtype = ADM_DTYPE_COUNT;
        ck_assert_int_eq(adm_capture_set_reference(bor, &bad), ADM_ERR_DTYPE);
        bad = vx;
        bad.ndim = ADM_MAX_DIMS + 1;
        ck_assert_int_eq(adm_capture_add_candidate(bor, "y", &bad), ADM_ERR_SHAPE);
        ck_assert_int_eq(adm_capture_input_count(bor), n0);
        ck_assert_int_eq(adm_capture_candidate_count(bor), 2);
        ck_assert_ptr_eq(adm_capture_reference(bor)->data, ref.data);
    }
    adm_capture_free(bor);
    /* the caller's tensors are the caller's: intact after the capture is freed */
    ck_assert(same_bits(&vx, &x));
    adm_oracle_result_free(&res);
    adm_oracle_free(o);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
    adm_tensor_free(&xT);
    adm_tensor_free(&wR);
    adm_tensor_free(&orc_ref);
    adm_tensor_free(&ref);
    adm_tensor_free(&cand);
    adm_tensor_free(&candT);
}
END_TEST

/* ------------------------------------------------------------ suite */

static void bad_setup(void)
{
    make_tmpdir();
    ck_assert_msg(adm_make_bad_captures(tmpdir) == ADM_OK, "%s", adm_error_message());
}

static Suite *capture_suite(void)
{
    Suite *s = suite_create("capture");
    TCase *tc;
    tc = tcase_create("Roundtrip");
    tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
    tcase_add_test(tc, test_roundtrip_raw);
    tcase_add_test(tc, test_roundtrip_gzip);
    tcase_add_test(tc, test_atomic_write);
    tcase_add_test(tc, test_stats);
    suite_add_tcase(s, tc);
    tc = tcase_create("Special");
    tcase_add_unchecked_fixture(tc, bad_setup, remove_tmpdir);
    tcase_add_test(tc, test_base_is_valid);
    tcase_add_test(tc, test_soft_links_inside);
    tcase_add_test(tc, test_special_inherit);
    tcase_add_test(tc, test_plan);
    tcase_add_loop_test(tc, test_bad_capture, 0, adm_bad_case_count);
    suite_add_tcase(s, tc);
    tc = tcase_create("Synth");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_synth);
    suite_add_tcase(s, tc);
    tc = tcase_create("Borrowed");
    tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
    tcase_add_test(tc, test_borrowed_views);
    suite_add_tcase(s, tc);
    tc = tcase_create("Python");
    tcase_add_test(tc, test_python_capture);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(capture_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
