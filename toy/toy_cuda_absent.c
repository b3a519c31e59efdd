/* The toy's GPU surface when libadmit is built without CUDA. */
#include "adm_toy.h"

#ifndef ADM_HAVE_CUDA
adm_status adm_toy_cuda_select(int device)
{
    (void)device;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}
adm_status adm_toy_cuda_gemm_bf16(const uint16_t *x, const uint16_t *w, int64_t M, int64_t K, int64_t N, uint16_t *y)
{
    (void)x; (void)w; (void)M; (void)K; (void)N; (void)y;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}
adm_status adm_toy_nccl_unique_id(unsigned char id[ADM_TOY_NCCL_ID_BYTES])
{
    (void)id;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}
adm_status adm_toy_nccl_init(const unsigned char id[ADM_TOY_NCCL_ID_BYTES], int rank, int world, void **comm)
{
    (void)id; (void)rank; (void)world; (void)comm;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}
adm_status adm_toy_nccl_allreduce_bf16(void *comm, uint16_t *buf, int64_t n)
{
    (void)comm; (void)buf; (void)n;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}
void adm_toy_nccl_free(void *comm) { (void)comm; }
#else
typedef int adm_toy_cuda_absent_unused;
#endif
