/* What the sandbox adds to reading a capture, side by side in one run:
 * adm_capture_read in this process against adm_capture_read_sandboxed
 * (fork, limits, the child's read, the tensors through a pipe, decoding),
 * alternating, median of reps. Usage: bench_sandbox CAPTURE [reps] [gpu].
 * With "gpu", the CUDA module is loaded first (adm_cuda_device_count), as
 * in a run that has used the GPU: every fork then copies its mappings.
 * `admit-kernel capture synth -o flux.h5` makes the FLUX.1 MLP input
 * (4096 x 3072 bf16, plus w 12288 x 3072 and the bias). */
#include "adm_capture.h"
#include "adm_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "bench_util.h"

/* CPU seconds (user + system) of this process and its reaped children:
 * the cost on a machine whose other cores are busy, where wall time
 * mostly measures the wait for a core. */
static double cpu_now(void)
{
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    getrusage(RUSAGE_CHILDREN, &b);
    return (double)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) +
           1e-6 * (double)(a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec);
}

static int64_t capture_bytes(const adm_capture *c)
{
    int64_t n = 0;
    for (int i = 0; i < adm_capture_input_count(c); i++) {
        const adm_tensor *t = adm_capture_input(c, i).tensor;
        n += adm_tensor_numel(t) * adm_format_get(t->dtype)->storage_bytes;
    }
    for (int i = 0; i < adm_capture_candidate_count(c); i++) {
        const adm_tensor *t = adm_capture_candidate(c, i).tensor;
        n += adm_tensor_numel(t) * adm_format_get(t->dtype)->storage_bytes;
    }
    if (adm_capture_reference(c))
        n += adm_tensor_numel(adm_capture_reference(c)) * adm_format_get(adm_capture_reference(c)->dtype)->storage_bytes;
    return n;
}

int main(int argc, char **argv)
{
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    double t_in[64], t_sb[64], c_in[64], c_sb[64];
    int64_t bytes = 0;
    struct stat sb;
    int gpu = argc > 3 && strcmp(argv[3], "gpu") == 0;
    if (argc < 2 || reps < 1 || reps > 64 || (argc > 3 && !gpu)) {
        fprintf(stderr, "usage: bench_sandbox CAPTURE [reps (1-64)] [gpu]\n");
        return 2;
    }
    if (gpu) {
        int n = 0;
        adm_status st = adm_cuda_device_count(&n);
        printf("asked for a GPU first: %s\n", st == ADM_OK ? "one is usable" : adm_error_message());
    }
    for (int r = 0; r < reps; r++) {
        adm_capture *a = NULL, *b = NULL;
        double c0 = cpu_now(), t0 = bench_now(), t1, t2, c1, c2;
        if (adm_capture_read(argv[1], &a) != ADM_OK) goto fail;
        t1 = bench_now();
        c1 = cpu_now();
        if (adm_capture_read_sandboxed(argv[1], NULL, &b) != ADM_OK) goto fail;
        t2 = bench_now();
        c2 = cpu_now();
        t_in[r] = t1 - t0;
        t_sb[r] = t2 - t1;
        c_in[r] = c1 - c0;
        c_sb[r] = c2 - c1;
        bytes = capture_bytes(b);
        adm_capture_free(a);
        adm_capture_free(b);
    }
    stat(argv[1], &sb);
    {
        double in = bench_median(t_in, reps), sbx = bench_median(t_sb, reps);
        double cin = bench_median(c_in, reps), csb = bench_median(c_sb, reps);
        printf("capture %s: %lld bytes on disk, %lld bytes of tensors; median of %d, alternating\n", argv[1],
               (long long)sb.st_size, (long long)bytes, reps);
        printf("                   wall ms     cpu ms (user+sys, with the child)\n");
        printf("in-process read  %9.2f  %9.2f\n", 1e3 * in, 1e3 * cin);
        printf("sandboxed read   %9.2f  %9.2f\n", 1e3 * sbx, 1e3 * csb);
        printf("sandbox cost     %9.2f  %9.2f   (%+.1f%% wall, %+.1f%% cpu)\n", 1e3 * (sbx - in), 1e3 * (csb - cin),
               100.0 * (sbx - in) / in, 100.0 * (csb - cin) / cin);
    }
    return 0;
fail:
    fprintf(stderr, "bench_sandbox: %s\n", adm_error_message());
    return 2;
}
