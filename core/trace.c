/* ADM_CUDA_TRACE (core/adm_trace.h). */
#define _GNU_SOURCE
#include "adm_trace.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static int trace_on;
static int trace_fd = 2;
static double origin_ms;

static double boot_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_BOOTTIME, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* The process's start in CLOCK_BOOTTIME milliseconds: field 22 of
 * /proc/self/stat (clock ticks since boot), else now. A forked child
 * keeps its parent's origin: it is set before any fork (the constructor
 * below, while tracing). */
static void trace_init(void)
{
    const char *e = getenv("ADM_CUDA_TRACE");
    char buf[2048], *p;
    FILE *f;
    size_t n;
    trace_on = e && !strcmp(e, "1");
    if (!trace_on) return;
    origin_ms = boot_ms();
    if (!(f = fopen("/proc/self/stat", "r"))) return;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name (field 2) may hold spaces: count from its ')' */
    if ((p = strrchr(buf, ')'))) {
        unsigned long long start = 0;
        int field = 2;
        for (p++; *p && field < 22; p++)
            if (*p == ' ') field++;
        if (field == 22 && sscanf(p, "%llu", &start) == 1 && sysconf(_SC_CLK_TCK) > 0)
            origin_ms = 1e3 * (double)start / (double)sysconf(_SC_CLK_TCK);
    }
}

__attribute__((constructor)) static void trace_start(void) { pthread_once(&trace_once, trace_init); }

/* Where the process's end goes: each copy (the program's, libadmit's, the
 * CUDA module's) prints when its object is finalized at exit, which the
 * dynamic linker does in the reverse of the order of loading, dependents
 * first: libadmit's line comes after the CUDA libraries' teardown (they
 * were loaded after it). What the kernel does after the last line
 * (unmapping, closing the device's files) is the wall's remainder. */
__attribute__((destructor)) static void trace_fini(void)
{
    if (trace_on) adm_trace_part("exit.fini", 0, -1);
}

int adm_trace_on(void)
{
    pthread_once(&trace_once, trace_init);
    return trace_on;
}

double adm_trace_ms(void) { return adm_trace_on() ? boot_ms() - origin_ms : 0.0; }

void adm_trace_part(const char *part, double t0, double gpu_ms)
{
    char line[256];
    int n;
    if (!adm_trace_on()) return;
    if (gpu_ms >= 0)
        n = snprintf(line, sizeof line, "adm-trace %s %.3f at=%.1f gpu=%.3f\n", part, adm_trace_ms() - t0, t0, gpu_ms);
    else
        n = snprintf(line, sizeof line, "adm-trace %s %.3f at=%.1f\n", part, adm_trace_ms() - t0, t0);
    /* one write a line: lines of threads and processes do not interleave */
    if (n > 0 && write(trace_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0) return;
}

void adm_trace_set_fd(int fd) { trace_fd = fd; }
