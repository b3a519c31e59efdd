/* The GPU oracle against one cuBLAS DGEMM of the same shape, device-side
 * times from CUDA events (median of reps after a warm-up). Default: the
 * FLUX.1-dev MLP up-projection, 4096 x 3072 by 12288, bias, tanh-GELU.
 * Usage: bench_oracle_gpu [M K N] [reps]. */
#include "oracle_internal.h"
#include "adm_cuda.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int64_t M = 4096, K = 3072, N = 12288;
    int reps = 10;
    double ms[6];
    char name[256];
    int major = 0, minor = 0;
    if (argc >= 4) { M = atoll(argv[1]); K = atoll(argv[2]); N = atoll(argv[3]); }
    if (argc >= 5) reps = atoi(argv[4]);
    if (adm_cuda_device_name(name, sizeof name, &major, &minor) != ADM_OK) {
        printf("bench_oracle_gpu: skipped: %s\n", adm_error_message());
        return 0;
    }
    if (adm_o_cuda_bench_gemm(M, K, N, reps, ms) != ADM_OK) {
        fprintf(stderr, "bench_oracle_gpu: %s\n", adm_error_message());
        return 2;
    }
    printf("device %s (sm_%d%d), M=%lld K=%lld N=%lld, median of %d\n", name, major, minor, (long long)M,
           (long long)K, (long long)N, reps);
    printf("cuBLAS DGEMM alone (fp64 operands resident)          %8.3f ms  %6.1f TFLOP/s\n", ms[0],
           2.0 * (double)M * (double)N * (double)K / ms[0] * 1e-9);
    printf("oracle linear+gelu: bf16->fp64, norms, DGEMM, bound  %8.3f ms\n", ms[1]);
    printf("ratio oracle / DGEMM                                 %8.3f\n", ms[1] / ms[0]);
    printf("condition scale alone (bf16 GEMM, tensor cores)      %8.3f ms  (%.3f of one DGEMM)\n", ms[5],
           ms[5] / ms[0]);
    printf("(upload bf16 inputs %.3f ms; download value+bound %.3f ms; max bound %.3g)\n", ms[2], ms[3], ms[4]);
    return 0;
}
