/* The candidates' part of the CUDA module (candidates/candidates_cuda.h):
 * its table. */
#include "candidates_cuda.h"
#include "adm_candidates.h"
#include "adm_cuda.h"
#include "cuda_twins.h"

/* adm_cuda_twin's enum crosses as an int */
static adm_status twin(int which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    return adm_cuda_twin((adm_twin)which, p, in, out);
}

static const adm_cand_cuda_part part = {
    .head = {ADM_CAND_CUDA_ABI, sizeof(adm_cand_cuda_part)},
    .linear_gelu = adm_cuda_linear_gelu,
    .twin = twin,
    .libm_f32_range = adm_cuda_libm_f32_range,
    .warm = adm_cuda_impl_warm,
};

const adm_cuda_part_head *adm_cuda_part_candidates(const adm_cuda_part_head *h);

const adm_cuda_part_head *adm_cuda_part_candidates(const adm_cuda_part_head *h)
{
    const adm_cand_cuda_host *ch = (const adm_cand_cuda_host *)h;
    if (!ch || ch->head.abi != ADM_CAND_CUDA_ABI || ch->head.size != sizeof(adm_cand_cuda_host) ||
        ch->op_params_size != sizeof(adm_op_params))
        return NULL;
    return &part.head;
}
