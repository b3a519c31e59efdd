/* The cuBLASLt implementations: the CUDA module's (core/cuda_load.c
 * loads it on first use), or ADM_ERR_NO_DEVICE. */
#include "adm_candidates.h"
#include "adm_cuda_module.h"

adm_status adm_cuda_linear_gelu(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias, int mode,
                                adm_tensor *out)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->linear_gelu(x, w, bias, mode, out);
}
