/* Internal: the candidates' part of the CUDA module
 * (core/adm_cuda_module.h): the cuBLASLt implementations
 * (candidates/cuda_impl.cu) and the CUDA twins of the emulations with the
 * port of glibc's float functions they compute with
 * (candidates/cuda_twins.cu), with the contracts of adm_candidates.h's
 * adm_cuda_linear_gelu, cuda_twins.h's adm_cuda_twin and adm_cuda.h's
 * adm_cuda_libm_f32_range. Its table is defined beside them
 * (candidates/candidates_cuda_part.c); libadmit's
 * candidates/cuda_impl_load.c reaches it by the part's name. */
#ifndef ADM_CANDIDATES_CUDA_H
#define ADM_CANDIDATES_CUDA_H

#include "adm_cuda_module.h"
#include "adm_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ADM_CAND_CUDA_PART "candidates"
/* Raise on any change to either table or to a structure that crosses. */
#define ADM_CAND_CUDA_ABI 1

/* The part calls nothing of the candidates' host code; its host table
 * carries the size of the structure that crosses into the twins. */
typedef struct adm_cand_cuda_host {
    adm_cuda_part_head head;
    uint32_t op_params_size;
} adm_cand_cuda_host;

/* twin: adm_cuda_twin, its enum as an int; warm: the implementations'
 * side of adm_cuda_warm_start (adm_cuda_impl_warm). */
typedef struct adm_cand_cuda_part {
    adm_cuda_part_head head;
    adm_status (*linear_gelu)(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias, int mode,
                              adm_tensor *out);
    adm_status (*twin)(int which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out);
    adm_status (*libm_f32_range)(int fn, uint32_t first, uint32_t *out, size_t n);
    adm_status (*warm)(void);
} adm_cand_cuda_part;

/* The cuBLASLt implementations' handle and their first matmul of each
 * epilogue (candidates/cuda_impl.cu), on the calling thread's device:
 * adm_cuda_warm_start's ADM_CUDA_WARM_IMPL. */
adm_status adm_cuda_impl_warm(void);

#ifdef __cplusplus
}
#endif
#endif
