/* The toy's GPU surface: the CUDA module's (core/cuda_load.c loads it on
 * first use), or ADM_ERR_NO_DEVICE. */
#include "adm_toy.h"
#include "adm_cuda_module.h"

adm_status adm_toy_cuda_select(int device)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->toy_select(device);
}

adm_status adm_toy_cuda_gemm_bf16(const uint16_t *x, const uint16_t *w, int64_t M, int64_t K, int64_t N, uint16_t *y)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->toy_gemm_bf16(x, w, M, K, N, y);
}

adm_status adm_toy_nccl_unique_id(unsigned char id[ADM_TOY_NCCL_ID_BYTES])
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->toy_nccl_unique_id(id);
}

adm_status adm_toy_nccl_init(const unsigned char id[ADM_TOY_NCCL_ID_BYTES], int rank, int world, void **comm)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->toy_nccl_init(id, rank, world, comm);
}

adm_status adm_toy_nccl_allreduce_bf16(void *comm, uint16_t *buf, int64_t n)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->toy_nccl_allreduce_bf16(comm, buf, n);
}

/* A communicator exists only where the module made it. */
void adm_toy_nccl_free(void *comm)
{
    const adm_cuda_module *m;
    if (comm && adm_cuda_module_get(&m) == ADM_OK) m->toy_nccl_free(comm);
}
