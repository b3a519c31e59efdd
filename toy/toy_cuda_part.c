/* The toy's part of the CUDA module (toy/toy_cuda.h): its table. Its
 * device code calls nothing of the toy's host code. */
#include "toy_cuda.h"
#include "adm_toy.h"

_Static_assert(ADM_TOY_NCCL_ID_BYTES == ADM_TOY_CUDA_NCCL_ID_BYTES, "the toy's part: the NCCL id's size");

static const adm_toy_cuda_part part = {
    .head = {ADM_TOY_CUDA_ABI, sizeof(adm_toy_cuda_part)},
    .select = adm_toy_cuda_select,
    .gemm_bf16 = adm_toy_cuda_gemm_bf16,
    .nccl_unique_id = adm_toy_nccl_unique_id,
    .nccl_init = adm_toy_nccl_init,
    .nccl_allreduce_bf16 = adm_toy_nccl_allreduce_bf16,
    .nccl_free = adm_toy_nccl_free,
};

ADM_CUDA_PART_PLAIN(toy, part)
