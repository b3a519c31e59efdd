/* The oracle's cost against one DGEMM of the same shape, side by side in
 * one run: FLUX.1-dev's MLP up-projection, x [4096, 3072] bf16, w [12288,
 * 3072] bf16, bias, tanh-GELU; value and bound for all 50M outputs.
 * Usage: bench_oracle [M K N] [reps]. Prints the median of reps for each, wall
 * and CPU seconds.
 *
 * Each timed call starts after a pause of PAUSE_S: OpenBLAS's workers
 * spin (sched_yield) for about 2^28 cycles after a threaded DGEMM returns
 * and OpenMP's for a while after a parallel region, so without it each
 * measurement would also count, in its CPU seconds and on a 2-core machine
 * in its wall time, the other's threads winding down. */
#include "adm_capture.h"
#include "adm_oracle.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "bench_util.h"


#define PAUSE_S 0.3

static void pause_idle(void)
{
    struct timespec t = {0, (long)(PAUSE_S * 1e9)};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
    int64_t M = 4096, K = 3072, N = 12288;
    int reps = 3;
    adm_synth_config cfg;
    adm_tensor x, w, b;
    int64_t ws[2], bs[1];
    double *xd, *wd, *cd, t_gemm[16], t_or[16], c_gemm[16], c_or[16];
    const adm_op *op = adm_op_find("linear+gelu");
    adm_op_params p;
    adm_oracle *o;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &b};
    if (argc >= 4) { M = atoll(argv[1]); K = atoll(argv[2]); N = atoll(argv[3]); }
    if (argc >= 5) reps = atoi(argv[4]);
    if (reps < 1 || reps > 16 || M < 1 || K < 1 || N < 1) { fprintf(stderr, "bad arguments\n"); return 2; }
    ws[0] = N; ws[1] = K; bs[0] = N;
    adm_synth_config_default(&cfg);
    cfg.tokens = M;
    cfg.channels = K;
    if (adm_synth_activations(&cfg, &x) || adm_synth_gaussian(1, 1.0 / sqrt((double)K), ADM_BF16, 2, ws, &w) ||
        adm_synth_gaussian(2, 0.02, ADM_BF16, 1, bs, &b)) {
        fprintf(stderr, "bench_oracle: %s\n", adm_error_message());
        return 2;
    }
    adm_op_params_parse(op, "{\"approximate\":\"tanh\"}", &p);
    adm_oracle_create(NULL, &o);
    xd = malloc(sizeof *xd * (size_t)(M * K));
    wd = malloc(sizeof *wd * (size_t)(N * K));
    cd = malloc(sizeof *cd * (size_t)(M * N));
    if (!xd || !wd || !cd) { fprintf(stderr, "bench_oracle: out of memory\n"); return 2; }
    adm_tensor_to_f64(&x, xd);
    adm_tensor_to_f64(&w, wd);
    for (int r = 0; r < reps; r++) {
        double t0, c0;
        adm_oracle_result res;
        pause_idle();
        t0 = bench_now();
        c0 = bench_cpu();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0, xd, (int)K, wd, (int)K,
                    0.0, cd, (int)N);
        t_gemm[r] = bench_now() - t0;
        c_gemm[r] = bench_cpu() - c0;
        pause_idle();
        t0 = bench_now();
        c0 = bench_cpu();
        if (adm_oracle_eval(o, op, &p, in, &res) != ADM_OK) {
            fprintf(stderr, "bench_oracle: %s\n", adm_error_message());
            return 2;
        }
        t_or[r] = bench_now() - t0;
        c_or[r] = bench_cpu() - c0;
        if (r == 0) printf("max bound %.3g, MPFR refined %lld\n", res.max_bound, (long long)res.mpfr_refined);
        adm_oracle_result_free(&res);
    }
    double med_gemm = bench_median(t_gemm, reps), med_or = bench_median(t_or, reps);
    double cpu_gemm = bench_median(c_gemm, reps), cpu_or = bench_median(c_or, reps);
    printf("shape M=%lld K=%lld N=%lld, %d reps (median)\n", (long long)M, (long long)K, (long long)N, reps);
    printf("DGEMM alone (OpenBLAS, fp64 operands ready)   %.3f s  %.1f GFLOP/s\n", med_gemm,
           2.0 * (double)M * (double)N * (double)K / med_gemm * 1e-9);
    printf("oracle linear+gelu value+bound (from bf16)    %.3f s\n", med_or);
    printf("ratio oracle / DGEMM                          %.3f\n", med_or / med_gemm);
    printf("CPU seconds (all threads): DGEMM %.3f, oracle %.3f, ratio %.3f\n", cpu_gemm, cpu_or, cpu_or / cpu_gemm);
    free(xd);
    free(wd);
    free(cd);
    adm_oracle_free(o);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
    return 0;
}
