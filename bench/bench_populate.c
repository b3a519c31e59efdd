/* What the sandboxed reader's page population buys (captures/sandbox.c):
 * a 100 MB memory file mapped shared, as the reader's child maps its
 * arena, written by one memcpy (libhdf5's copy stands in for it) with its
 * pages (a) faulted in by the copy, (b) populated first by K threads with
 * MADV_POPULATE_WRITE. Prints the median of REPS of each, side by side.
 *
 * Usage: bench_populate [MB] [REPS]. Linux only. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct slice {
    char *p;
    size_t n;
} slice;

static void *pop(void *a)
{
#ifdef MADV_POPULATE_WRITE
    slice *s = a;
    if (madvise(s->p, s->n, MADV_POPULATE_WRITE) != 0) perror("madvise(MADV_POPULATE_WRITE)");
#else
    (void)a;
#endif
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* one write of n bytes into a fresh memory file, its pages populated by k
 * threads first (k = 0: faulted in by the copy); seconds */
static double once(const char *src, size_t n, int k)
{
    int fd = memfd_create("bench_populate", MFD_CLOEXEC);
    char *p;
    double t0, t1;
    if (fd < 0 || ftruncate(fd, (off_t)n) != 0) {
        perror("memfd");
        exit(2);
    }
    p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    t0 = now();
    if (k > 0) {
        pthread_t th[64];
        slice sl[64];
        size_t step = (n / (size_t)k + 4095) & ~(size_t)4095;
        for (int i = 0; i < k; i++) {
            size_t lo = (size_t)i * step < n ? (size_t)i * step : n, hi = lo + step < n && i < k - 1 ? lo + step : n;
            sl[i].p = p + lo;
            sl[i].n = hi - lo;
            if (pthread_create(&th[i], NULL, pop, &sl[i]) != 0) {
                perror("pthread_create");
                exit(2);
            }
        }
        for (int i = 0; i < k; i++) pthread_join(th[i], NULL);
    }
    memcpy(p, src, n);
    t1 = now();
    munmap(p, n);
    close(fd);
    return t1 - t0;
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 100, n = mb << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 7, ks[] = {0, 1, 2, 4, 8};
    enum { NK = sizeof ks / sizeof ks[0] };
    double *t[NK];
    char *src = malloc(n);
    if (!src || reps < 1 || reps > 1000 || mb < 1 || mb > 65536) {
        fprintf(stderr, "usage: bench_populate [MB 1..65536] [REPS 1..1000]\n");
        return 2;
    }
    memset(src, 1, n);
    for (int j = 0; j < NK; j++)
        if (!(t[j] = malloc(sizeof(double) * (size_t)reps))) return 2;
    for (int r = 0; r < reps; r++) /* interleaved, so a load change falls on every variant */
        for (int j = 0; j < NK; j++) t[j][r] = once(src, n, ks[j]);
    printf("bench_populate: %zu MB into a fresh memory file, %ld CPUs, median of %d\n", mb,
           sysconf(_SC_NPROCESSORS_ONLN), reps);
    for (int j = 0; j < NK; j++) {
        qsort(t[j], (size_t)reps, sizeof(double), cmp);
        char label[64];
        if (ks[j]) snprintf(label, sizeof label, "populated by %d thread%s, then copied", ks[j], ks[j] > 1 ? "s" : "");
        else snprintf(label, sizeof label, "faulted in by the copy");
        printf("%-40s %8.1f ms  (%.2fx of faulting)\n", label, t[j][reps / 2] * 1e3, t[j][reps / 2] / t[0][reps / 2]);
    }
    return 0;
}
