/* The toy's GPU surface: the toy's part of the CUDA module
 * (toy/toy_cuda.h; core/cuda_load.c loads the module on first use and
 * finds the part by name), or ADM_ERR_NO_DEVICE. */
#include "adm_toy.h"
#include "toy_cuda.h"

static adm_status part(const adm_toy_cuda_part **p)
{
    const adm_cuda_part_head *h;
    ADM_TRY(adm_cuda_module_part(ADM_TOY_CUDA_PART, ADM_TOY_CUDA_ABI, sizeof **p, NULL, &h));
    *p = (const adm_toy_cuda_part *)h;
    return ADM_OK;
}

adm_status adm_toy_cuda_select(int device)
{
    const adm_toy_cuda_part *m;
    ADM_TRY(part(&m));
    return m->select(device);
}

adm_status adm_toy_cuda_gemm_bf16(const uint16_t *x, const uint16_t *w, int64_t M, int64_t K, int64_t N, uint16_t *y)
{
    const adm_toy_cuda_part *m;
    ADM_TRY(part(&m));
    return m->gemm_bf16(x, w, M, K, N, y);
}

adm_status adm_toy_nccl_unique_id(unsigned char id[ADM_TOY_NCCL_ID_BYTES])
{
    const adm_toy_cuda_part *m;
    ADM_TRY(part(&m));
    return m->nccl_unique_id(id);
}

adm_status adm_toy_nccl_init(const unsigned char id[ADM_TOY_NCCL_ID_BYTES], int rank, int world, void **comm)
{
    const adm_toy_cuda_part *m;
    ADM_TRY(part(&m));
    return m->nccl_init(id, rank, world, comm);
}

adm_status adm_toy_nccl_allreduce_bf16(void *comm, uint16_t *buf, int64_t n)
{
    const adm_toy_cuda_part *m;
    ADM_TRY(part(&m));
    return m->nccl_allreduce_bf16(comm, buf, n);
}

/* A communicator exists only where the module made it. */
void adm_toy_nccl_free(void *comm)
{
    const adm_toy_cuda_part *m;
    if (comm && part(&m) == ADM_OK) m->nccl_free(comm);
}
