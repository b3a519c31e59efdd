/* The CUDA surface when libadmit is built without the toolkit. */
#include "adm_cuda.h"

#ifndef ADM_HAVE_CUDA
int adm_cuda_built(void) { return 0; }

adm_status adm_cuda_device_count(int *count)
{
    *count = 0;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_cuda_device_name(char *buf, size_t n, int *cc_major, int *cc_minor)
{
    if (n) buf[0] = '\0';
    *cc_major = *cc_minor = 0;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_cuda_convert_f32(adm_dtype dt, adm_round mode, unsigned flags,
                                const float *in, uint16_t *out, size_t n)
{
    (void)dt; (void)mode; (void)flags; (void)in; (void)out; (void)n;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_cuda_convert_f32_range(adm_dtype dt, adm_round mode, unsigned flags,
                                      uint32_t first, uint16_t *out, size_t n)
{
    (void)dt; (void)mode; (void)flags; (void)first; (void)out; (void)n;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}
#else
/* Built with CUDA: core/cuda.cu defines the surface. ISO C forbids an
 * empty translation unit. */
typedef int adm_cuda_absent_unused;
#endif
