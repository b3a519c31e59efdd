/* The GPU oracle's entry points when libadmit is built without CUDA. */
#include "oracle_internal.h"

#ifndef ADM_HAVE_CUDA
int adm_o_cuda_usable(void) { return 0; }

adm_status adm_o_cuda_gemm(const adm_o_ctx *c, double *val, double *bnd)
{
    (void)c; (void)val; (void)bnd;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_o_cuda_elementwise(const adm_o_ctx *c, double *val, double *bnd)
{
    (void)c; (void)val; (void)bnd;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_o_cuda_bench_gemm(int64_t M, int64_t K, int64_t N, int reps, double *ms)
{
    (void)M; (void)K; (void)N; (void)reps; (void)ms;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}
#else
typedef int adm_oracle_cuda_absent_unused;
#endif
