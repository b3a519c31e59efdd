/* Plugins that attack admit's process rather than fail their own run
 * (issue 15), one per build, for tests/cli_plugin_hostile.sh. The kernel
 * is an fp32 row sum in index order ("k", op row_sum); each variant adds:
 *   ADM_HOSTILE_QUERY_EXIT   the query calls exit(0)
 *   ADM_HOSTILE_QUERY_CRASH  the query writes to an unmapped address
 *   ADM_HOSTILE_QUERY_LOOP   the query never returns
 *   ADM_HOSTILE_QUERY_STOP   the query stops its parent process (SIGSTOP) and returns
 *   ADM_HOSTILE_CTOR_EXIT    a constructor calls exit(0) when the library is loaded
 *   ADM_HOSTILE_FTZ          the kernel flushes subnormals (a real fault: FTZ/DAZ
 *                            in its run), and the query sets FTZ/DAZ too
 *   ADM_HOSTILE_ROUND        the query sets the rounding mode upward
 *   ADM_HOSTILE_CTOR_FTZ     a constructor sets FTZ/DAZ when the library is loaded
 *                            (as -ffast-math's crtfastmath does)
 *   ADM_HOSTILE_FORK         the kernel leaves processes running: a child, a
 *                            setsid daemon and a double-forked one, each sleeping
 *                            30 s after writing its pid under $ADM_TEST_DIR
 *   ADM_HOSTILE_FLIP         the query describes an fp32 output the first time
 *                            ($ADM_TEST_DIR/flipped absent, which it creates),
 *                            bf16 after
 *   ADM_HOSTILE_DESC_ESCAPE  a description holding an escape sequence
 *   ADM_HOSTILE_DESC_DTYPE   an accumulator that is not a dtype name
 *   ADM_HOSTILE_DESC_LONG_OP an op of 100 characters
 *   ADM_HOSTILE_DESC_NAN     transcendental_ulps NaN
 *   ADM_HOSTILE_SLOW         in the MPI rank ADM_TEST_SLOW_RANK names, the first
 *                            run writes $ADM_TEST_DIR/slow.<rank> and sleeps
 *                            10 s (a unit long enough to kill or stop its rank
 *                            in; tests/cli_mpi.sh) */
#define _GNU_SOURCE
#include "plugin.h"

#include <fcntl.h>
#include <fenv.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#define SET_FTZ_DAZ() _mm_setcsr(_mm_getcsr() | 0x8040u)
#else
#define SET_FTZ_DAZ() ((void)0)
#endif

#ifdef ADM_HOSTILE_FORK
/* Writes this process's pid to $ADM_TEST_DIR/pid.<pid>, says so on ready,
 * and sleeps 30 s. */
static void linger(int ready)
{
    const char *dir = getenv("ADM_TEST_DIR");
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/pid.%d", dir ? dir : ".", (int)getpid());
    if ((f = fopen(path, "w"))) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
    if (write(ready, "x", 1) != 1) _exit(1);
    close(ready);
    sleep(30);
    _exit(0);
}
#endif

static int run(const char *params, const adm_plugin_tensor *in, int n, adm_plugin_tensor *out, char *err, size_t len)
{
    const adm_plugin_tensor *x = &in[0];
    float *y = out->data;
    (void)params;
    (void)n;
    (void)err;
    (void)len;
#ifdef ADM_HOSTILE_FTZ
    SET_FTZ_DAZ();
#endif
#ifdef ADM_HOSTILE_SLOW
    {
        const char *want = getenv("ADM_TEST_SLOW_RANK"), *rank = getenv("OMPI_COMM_WORLD_RANK");
        const char *dir = getenv("ADM_TEST_DIR");
        char path[512];
        int fd;
        if (want && rank && dir && !strcmp(want, rank)) {
            snprintf(path, sizeof path, "%s/slow.%s", dir, rank);
            if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) >= 0) {
                close(fd);
                sleep(10);
            }
        }
    }
#endif
#ifdef ADM_HOSTILE_FORK
    {
        /* the kernel returns once all three have written their pids */
        int ready[2];
        char b[3];
        size_t got = 0;
        if (pipe(ready) != 0) return 1;
        if (fork() == 0) linger(ready[1]);    /* stays in the worker's process group */
        if (fork() == 0) {                    /* a daemon: its own session */
            setsid();
            linger(ready[1]);
        }
        if (fork() == 0) {                    /* double-forked: its parent ends at once */
            if (fork() == 0) {
                setsid();
                linger(ready[1]);
            }
            _exit(0);
        }
        while (got < 3) {
            ssize_t r = read(ready[0], b, 3 - got);
            if (r <= 0) return 1;
            got += (size_t)r;
        }
        close(ready[0]);
        close(ready[1]);
    }
#endif
    for (int64_t i = 0; i < x->shape[0]; i++) {
        volatile float acc = 0;
        for (int64_t k = 0; k < x->shape[1]; k++) acc += ((const float *)x->data)[i * x->stride[0] + k * x->stride[1]];
        y[i] = acc;
    }
    return 0;
}

#ifdef ADM_HOSTILE_CTOR_EXIT
__attribute__((constructor)) static void on_load(void) { exit(0); }
#endif
#ifdef ADM_HOSTILE_CTOR_FTZ
__attribute__((constructor)) static void on_load(void) { SET_FTZ_DAZ(); }
#endif

#if defined(ADM_HOSTILE_DESC_LONG_OP)
#define OP "row_sum_row_sum_row_sum_row_sum_row_sum_row_sum_row_sum_row_sum_row_sum_row_sum_row_sum_row_sum_row_s"
#else
#define OP "row_sum"
#endif
#if defined(ADM_HOSTILE_DESC_DTYPE)
#define ACC "fp33"
#else
#define ACC "fp32"
#endif
#if defined(ADM_HOSTILE_DESC_NAN)
#define ULPS NAN
#else
#define ULPS 0.0
#endif
#if defined(ADM_HOSTILE_DESC_ESCAPE)
#define WHAT "sequential fp32 row sum\n\033[1mverdict: exact\033[0m"
#else
#define WHAT "sequential fp32 row sum"
#endif

static adm_plugin_kernel kernel = {ADM_PLUGIN_ABI_VERSION, sizeof(adm_plugin_kernel), "k", OP, ADM_PLUGIN_FP32,
                                   ACC, "fp32", "fp32", ULPS, 1, run, WHAT};

const adm_plugin_kernel *adm_plugin_query(const char *name);
const adm_plugin_kernel *adm_plugin_query(const char *name)
{
#if defined(ADM_HOSTILE_QUERY_EXIT)
    exit(0);
#elif defined(ADM_HOSTILE_QUERY_CRASH)
    {
        volatile uintptr_t unmapped = 16; /* not NULL: a sanitizer would stop at NULL first */
        *(volatile int *)unmapped = 1;
    }
#elif defined(ADM_HOSTILE_QUERY_LOOP)
    for (volatile int spin = 1; spin;) {}
#elif defined(ADM_HOSTILE_QUERY_STOP)
    kill(getppid(), SIGSTOP);
#elif defined(ADM_HOSTILE_FTZ)
    SET_FTZ_DAZ();
#elif defined(ADM_HOSTILE_ROUND)
    fesetround(FE_UPWARD);
#elif defined(ADM_HOSTILE_FLIP)
    {
        const char *dir = getenv("ADM_TEST_DIR");
        char path[512];
        int fd;
        snprintf(path, sizeof path, "%s/flipped", dir ? dir : ".");
        if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644)) < 0) kernel.output_dtype = ADM_PLUGIN_BF16;
        else close(fd);
    }
#endif
    return strcmp(name, "k") ? NULL : &kernel;
}
