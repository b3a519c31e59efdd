/* The CUDA twins of the GEMM emulations at a size, wall time per call
 * (median of reps after a warm-up; the inputs read into fp32 on the host
 * and uploaded, the kernel, the output downloaded: what a table entry
 * pays per run). Default: the FLUX.1-dev MLP up-projection, x 4096 x 3072,
 * w 12288 x 3072, bias, tanh-GELU. Usage: bench_twins [M K N] [reps].
 * Exits 0 saying "skipped" without a GPU. */
#include "adm_candidates.h"
#include "adm_capture.h"
#include "adm_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    static const struct { const char *op, *name; } twins[] = {
        {"linear+gelu", "cuda_eager"}, {"linear+gelu", "cuda_fused_epilogue"}, {"linear", "cuda_splitk_fp32"},
        {"linear", "cuda_added_qkv_fused"}, {"linear", "cuda_nvfp4_input"}};
    int64_t M = 4096, K = 3072, N = 12288, ws[2], bs[1], xs[2];
    int reps = 3, count = 0;
    char name[256];
    int major = 0, minor = 0;
    adm_tensor x, w, b;
    const adm_tensor *in[6] = {&x, &w, &b, NULL, NULL, NULL};
    if (argc >= 4) { M = atoll(argv[1]); K = atoll(argv[2]); N = atoll(argv[3]); }
    if (argc >= 5) reps = atoi(argv[4]);
    if (M < 1 || K < 1 || N < 1 || reps < 1 || reps > 100) {
        fprintf(stderr, "usage: bench_twins [M K N] [reps 1..100]\n");
        return 2;
    }
    if (adm_cuda_device_count(&count) != ADM_OK) {
        printf("bench_twins: skipped: %s\n", adm_error_message());
        return 0;
    }
    adm_cuda_device_name(name, sizeof name, &major, &minor);
    xs[0] = M; xs[1] = K; ws[0] = N; ws[1] = K; bs[0] = N;
    if (adm_synth_gaussian(1, 1.0, ADM_BF16, 2, xs, &x) != ADM_OK ||
        adm_synth_gaussian(2, 1.0 / 64, ADM_BF16, 2, ws, &w) != ADM_OK ||
        adm_synth_gaussian(3, 0.02, ADM_BF16, 1, bs, &b) != ADM_OK) {
        fprintf(stderr, "bench_twins: %s\n", adm_error_message());
        return 2;
    }
    printf("device %s (sm_%d%d), x %lld x %lld bf16, w %lld x %lld, bias; wall per call, median of %d\n", name, major,
           minor, (long long)M, (long long)K, (long long)N, (long long)K, reps);
    for (size_t t = 0; t < sizeof twins / sizeof twins[0]; t++) {
        const adm_impl *im = adm_impl_find(twins[t].op, twins[t].name);
        const adm_op *op = adm_op_find(twins[t].op);
        adm_op_params p;
        double ms[100];
        adm_tensor y;
        if (!im || adm_op_params_parse(op, !strcmp(twins[t].op, "linear") ? "{}" : "{\"approximate\":\"tanh\"}", &p))
            return 2;
        for (int r = -1; r < reps; r++) {
            double t0 = now_ms();
            if (im->run(im, &p, in, &y) != ADM_OK) {
                fprintf(stderr, "bench_twins: %s/%s: %s\n", twins[t].op, twins[t].name, adm_error_message());
                return 2;
            }
            if (r >= 0) ms[r] = now_ms() - t0;
            adm_tensor_free(&y);
        }
        qsort(ms, (size_t)reps, sizeof ms[0], cmp_double);
        printf("%-12s %-22s %10.1f ms  %7.2f T(mul+add)/s\n", twins[t].op, twins[t].name, ms[reps / 2],
               (double)M * (double)N * (double)K / ms[reps / 2] * 1e-9);
    }
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
    return 0;
}
