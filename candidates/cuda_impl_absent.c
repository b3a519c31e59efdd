/* The cuBLASLt implementations when libadmit is built without CUDA. */
#include "adm_candidates.h"

#ifndef ADM_HAVE_CUDA
adm_status adm_cuda_linear_gelu(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias, int mode,
                                adm_tensor *out)
{
    (void)x; (void)w; (void)bias; (void)mode; (void)out;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}
#else
typedef int adm_cuda_impl_absent_unused;
#endif
