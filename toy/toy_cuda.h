/* Internal: the toy's part of the CUDA module (core/adm_cuda_module.h):
 * the GPU surface of adm_toy.h (toy/toy_cuda.cu) with its contracts. Its
 * table is defined beside it (toy/toy_cuda_part.c); libadmit's
 * toy/toy_cuda_load.c reaches it by the part's name. */
#ifndef ADM_TOY_CUDA_H
#define ADM_TOY_CUDA_H

#include "adm_cuda_module.h"

#define ADM_TOY_CUDA_PART "toy"
/* Raise on any change to the table. */
#define ADM_TOY_CUDA_ABI 1
#define ADM_TOY_CUDA_NCCL_ID_BYTES 128

typedef struct adm_toy_cuda_part {
    adm_cuda_part_head head;
    adm_status (*select)(int device);
    adm_status (*gemm_bf16)(const uint16_t *x, const uint16_t *w, int64_t M, int64_t K, int64_t N, uint16_t *y);
    adm_status (*nccl_unique_id)(unsigned char id[ADM_TOY_CUDA_NCCL_ID_BYTES]);
    adm_status (*nccl_init)(const unsigned char id[ADM_TOY_CUDA_NCCL_ID_BYTES], int rank, int world, void **comm);
    adm_status (*nccl_allreduce_bf16)(void *comm, uint16_t *buf, int64_t n);
    void (*nccl_free)(void *comm);
} adm_toy_cuda_part;

#endif
