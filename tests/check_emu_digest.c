/* The emulations give the same bits at every thread count, and the same
 * bits as the single-threaded code they replaced: every registered CPU
 * implementation runs on deterministic inputs (the bundled captures, x
 * widened to fp32, x as a transposed view, the eight special-value probes,
 * a second parameter set), and a 64-bit FNV-1a digest of each output's
 * dtype, shape and bits (or of the refusal's status) is compared with
 * tests/data/emu_digests.txt, written by the scalar single-threaded
 * emulations before they were threaded (issue 17). Each digest is
 * recomputed with 1 and with 4 OpenMP threads.
 *
 * ADM_EMU_DIGEST_WRITE=FILE writes the digests instead of checking them:
 * only for an emulation whose arithmetic is meant to change, and the
 * commit says why. */
#include "adm_candidates.h"
#include "adm_capture.h"
#include "adm_harness.h"

#include "adm_child.h"

#include <check.h>
#include <omp.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The inputs of an op: a bundled capture, cut where the op is a GEMM so
 * that no extent is a multiple of a vector width (509 = K, 250 = N, 40 =
 * M), and a second parameter set. */
static const struct { const char *op, *capture, *params, *params2; } cases[] = {
    {"linear+gelu", "flux_fc1_gelu_small.h5", NULL, "{\"approximate\":\"none\"}"},
    {"linear", "flux_fc1_linear_small.h5", NULL, NULL},
    {"rmsnorm", "dit_rmsnorm.h5", NULL, "{\"eps\":1e-6,\"silu\":true}"},
    {"mean_sq", "dit_rmsnorm.h5", "{}", NULL},
    {"layernorm", "dit_adaln_layernorm.h5", NULL, "{\"eps\":1e-5}"},
    {"groupnorm", "vae_groupnorm_silu.h5", NULL, "{\"groups\":16,\"silu\":false,\"channels_last\":false,\"eps\":1e-6}"},
    {"gated_residual", "dit_gated_residual.h5", NULL, NULL},
    {"linear_attention", "sana_linear_attention.h5", NULL, NULL},
    {"attention", "dit_attention_causal.h5", NULL, "{\"causal\":false}"},
    {"row_sum", "row_sum_fp32.h5", NULL, "{\"axis\":0}"},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t digest_of(adm_status st, const adm_tensor *y)
{
    uint64_t h = 0xcbf29ce484222325ull;
    if (st != ADM_OK) {
        const char *name = adm_status_name(st);
        return fnv(h, name, strlen(name));
    }
    {
        int32_t dt = (int32_t)y->dtype, nd = y->ndim;
        h = fnv(h, &dt, sizeof dt);
        h = fnv(h, &nd, sizeof nd);
        h = fnv(h, y->shape, sizeof(int64_t) * (size_t)y->ndim);
    }
    for (int64_t i = 0; i < adm_tensor_numel(y); i++) {
        uint64_t b = adm_tensor_bits(y, i);
        h = fnv(h, &b, sizeof b);
    }
    return h;
}

/* A contiguous copy of t[:r0, ...] (dim 0) and, when c0 > 0, [..., :c0]. */
static void cut(const adm_tensor *t, int64_t r0, int64_t c0, adm_tensor *out)
{
    adm_tensor a = *t, b;
    if (r0 > 0) ck_assert_int_eq(adm_tensor_slice(t, 0, 0, r0, 1, &a), ADM_OK);
    b = a;
    if (c0 > 0) ck_assert_int_eq(adm_tensor_slice(&a, a.ndim - 1, 0, c0, 1, &b), ADM_OK);
    ck_assert_int_eq(adm_tensor_contiguous(&b, out), ADM_OK);
}

typedef struct entry { char key[160]; uint64_t digest; } entry;
typedef struct table { entry *v; int n, cap; } table;

static void table_add(table *t, const char *key, uint64_t d)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->v = realloc(t->v, sizeof *t->v * (size_t)t->cap);
        ck_assert_ptr_nonnull(t->v);
    }
    snprintf(t->v[t->n].key, sizeof t->v[t->n].key, "%s", key);
    t->v[t->n++].digest = d;
}

static const entry *table_find(const table *t, const char *key)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].key, key)) return &t->v[i];
    return NULL;
}

/* Every CPU implementation of case c on its inputs variants, digests into
 * out (keys "op name variant"). */
static void run_case(int c, table *out)
{
    char path[1024], key[160];
    adm_capture *cap;
    const adm_op *op = adm_op_find(cases[c].op);
    adm_op_params p[2];
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
    adm_tensor own[ADM_OP_MAX_INPUTS], x32, xt_store, xt, probe[8];
    int gemm = !strcmp(cases[c].op, "linear") || !strcmp(cases[c].op, "linear+gelu"), nparams = 1;
    memset(own, 0, sizeof own);
    snprintf(path, sizeof path, "%s/captures/data/%s", ADM_SOURCE_DIR, cases[c].capture);
    ck_assert_msg(adm_capture_read(path, &cap) == ADM_OK, "%s", adm_error_message());
    ck_assert_int_eq(adm_op_params_parse(op, cases[c].params ? cases[c].params : adm_capture_params(cap), &p[0]),
                     ADM_OK);
    if (cases[c].params2) {
        ck_assert_msg(adm_op_params_parse(op, cases[c].params2, &p[1]) == ADM_OK, "%s", adm_error_message());
        nparams = 2;
    }
    for (int i = 0; i < adm_op_input_count(op); i++) in[i] = adm_capture_find_input(cap, adm_op_input_name(op, i));
    if (gemm) {
        cut(in[0], 40, 509, &own[0]);
        cut(in[1], 250, 509, &own[1]);
        cut(in[2], 250, 0, &own[2]);
        for (int i = 0; i < 3; i++) in[i] = &own[i];
    }
    {
        double *v = malloc(sizeof *v * (size_t)(adm_tensor_numel(in[0]) + 1));
        ck_assert_ptr_nonnull(v);
        adm_tensor_to_f64(in[0], v);
        ck_assert_int_eq(adm_tensor_from_f64(&x32, ADM_FP32, in[0]->ndim, in[0]->shape, v, ADM_RNE, 0), ADM_OK);
        free(v);
    }
    /* x stored transposed (the last two dims swapped in memory) */
    {
        adm_tensor t;
        int r = in[0]->ndim;
        ck_assert_int_eq(adm_tensor_transpose(in[0], r - 2, r - 1, &t), ADM_OK);
        ck_assert_int_eq(adm_tensor_contiguous(&t, &xt_store), ADM_OK);
        ck_assert_int_eq(adm_tensor_transpose(&xt_store, r - 2, r - 1, &xt), ADM_OK);
    }
    for (int k = 0; k < 8; k++) ck_assert_int_eq(adm_harness_probe(in[0], k, &probe[k]), ADM_OK);
    for (int k = 0; k < adm_impl_count(); k++) {
        const adm_impl *im = adm_impl_at(k);
        if (strcmp(im->op, cases[c].op) || strcmp(im->backend, "cpu")) continue;
        for (int v = 0; v < 12; v++) {
            const adm_tensor *vin[ADM_OP_MAX_INPUTS];
            const adm_op_params *pp = &p[0];
            adm_tensor y;
            adm_status st;
            char vname[32];
            memcpy(vin, in, sizeof vin);
            if (v == 0) snprintf(vname, sizeof vname, "inputs");
            else if (v == 1) { vin[0] = &x32; snprintf(vname, sizeof vname, "fp32"); }
            else if (v == 2) { vin[0] = &xt; snprintf(vname, sizeof vname, "transposed"); }
            else if (v == 3) {
                if (nparams < 2) continue;
                pp = &p[1];
                snprintf(vname, sizeof vname, "params2");
            } else {
                vin[0] = &probe[v - 4];
                snprintf(vname, sizeof vname, "probe%d", v - 4);
            }
            memset(&y, 0, sizeof y);
            st = im->run(im, pp, vin, &y);
            adm_error_clear();
            snprintf(key, sizeof key, "%s %s %s", im->op, im->name, vname);
            table_add(out, key, digest_of(st, &y));
            adm_tensor_free(&y);
        }
    }
    for (int k = 0; k < 8; k++) adm_tensor_free(&probe[k]);
    for (int i = 0; i < ADM_OP_MAX_INPUTS; i++) adm_tensor_free(&own[i]);
    adm_tensor_free(&x32);
    adm_tensor_free(&xt_store);
    adm_capture_free(cap);
}

static void run_all(table *t)
{
    for (int c = 0; c < N_CASES; c++) run_case(c, t);
}

static void read_table(const char *path, table *t)
{
    FILE *f = fopen(path, "r");
    char line[256];
    ck_assert_msg(f != NULL, "%s: cannot open", path);
    while (fgets(line, sizeof line, f)) {
        char *sp = strrchr(line, ' ');
        if (line[0] == '#' || !sp) continue;
        *sp = '\0';
        table_add(t, line, strtoull(sp + 1, NULL, 16));
    }
    fclose(f);
}

START_TEST(test_digests)
{
    const char *wr = getenv("ADM_EMU_DIGEST_WRITE");
    table want = {0}, got[2] = {{0}, {0}};
    static const int threads[2] = {1, 4};
    int cpu_impls = 0;
    for (int k = 0; k < adm_impl_count(); k++) cpu_impls += !strcmp(adm_impl_at(k)->backend, "cpu");
    if (wr && *wr) {
        FILE *f = fopen(wr, "w");
        omp_set_num_threads(1);
        run_all(&got[0]);
        ck_assert_ptr_nonnull(f);
        fprintf(f, "# tests/check_emu_digest.c: FNV-1a 64 of each CPU emulation's output (op, name, input)\n");
        for (int i = 0; i < got[0].n; i++) fprintf(f, "%s %016llx\n", got[0].v[i].key,
                                                   (unsigned long long)got[0].v[i].digest);
        fclose(f);
        printf("wrote %d digests to %s\n", got[0].n, wr);
        free(got[0].v);
        return;
    }
    read_table(ADM_SOURCE_DIR "/tests/data/emu_digests.txt", &want);
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(threads[t]);
        run_all(&got[t]);
        ck_assert_int_eq(got[t].n, want.n);
        for (int i = 0; i < got[t].n; i++) {
            const entry *e = table_find(&want, got[t].v[i].key);
            ck_assert_msg(e != NULL, "%s: no stored digest (a new implementation: add it with ADM_EMU_DIGEST_WRITE)",
                          got[t].v[i].key);
            ck_assert_msg(e->digest == got[t].v[i].digest, "%s with %d threads: digest %016llx, stored %016llx",
                          got[t].v[i].key, threads[t], (unsigned long long)got[t].v[i].digest,
                          (unsigned long long)e->digest);
        }
    }
    /* every CPU implementation of the registry was covered */
    for (int k = 0; k < adm_impl_count(); k++) {
        const adm_impl *im = adm_impl_at(k);
        char key[160];
        if (strcmp(im->backend, "cpu")) continue;
        snprintf(key, sizeof key, "%s %s inputs", im->op, im->name);
        ck_assert_msg(table_find(&want, key) != NULL, "%s/%s has no digest", im->op, im->name);
    }
    printf("%d digests of %d CPU implementations equal at 1 and 4 threads\n", want.n, cpu_impls);
    free(want.v);
    free(got[0].v);
    free(got[1].v);
}
END_TEST

/* An emulation in a forked child (the sandboxes' adm_child_fork, the toy's
 * TP2 ranks) after the parent ran one on two threads: libgomp's pool does
 * not survive fork, and without the child dropping to one thread its first
 * parallel region waits forever (cli_drift hung so). The child must finish
 * within 20 s. */
START_TEST(test_fork_after_parallel)
{
    const adm_impl *im = adm_impl_find("linear+gelu", "eager");
    const adm_op *op = adm_op_find("linear+gelu");
    adm_op_params p;
    adm_tensor x, w, y;
    int64_t xs[2] = {16, 32}, ws[2] = {8, 32};
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, NULL};
    int pfd[2], status = 0, done = 0;
    pid_t pid;
    ck_assert_int_eq(adm_op_params_parse(op, "{}", &p), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(3, 1.0, ADM_BF16, 2, xs, &x), ADM_OK);
    ck_assert_int_eq(adm_synth_gaussian(4, 0.1, ADM_BF16, 2, ws, &w), ADM_OK);
    omp_set_num_threads(2);
    ck_assert_int_eq(im->run(im, &p, in, &y), ADM_OK);
    adm_tensor_free(&y);
    ck_assert_int_eq(pipe(pfd), 0);
    pid = adm_child_fork(pfd);
    ck_assert_int_ge(pid, 0);
    if (pid == 0) _exit(im->run(im, &p, in, &y) == ADM_OK ? 0 : 1);
    for (int i = 0; i < 200 && !done; i++) {
        struct timespec ts = {0, 100000000};
        if (waitpid(pid, &status, WNOHANG) == pid) done = 1;
        else nanosleep(&ts, NULL);
    }
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    close(pfd[0]);
    close(pfd[1]);
    ck_assert_msg(done, "the forked child's emulation did not finish in 20 s");
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("emu_digest");
    TCase *tc = tcase_create("Digest");
    SRunner *sr;
    int failed;
    tcase_add_test(tc, test_digests);
    tcase_add_test(tc, test_fork_after_parallel);
    tcase_set_timeout(tc, 300);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
