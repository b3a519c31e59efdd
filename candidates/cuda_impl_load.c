/* The CUDA implementations (cuBLASLt, the twins of the emulations): the
 * CUDA module's (core/cuda_load.c loads it on first use), or
 * ADM_ERR_NO_DEVICE. */
#include "adm_candidates.h"
#include "adm_cuda_module.h"
#include "adm_fpenv.h"
#include "cuda_twins.h"

adm_status adm_cuda_linear_gelu(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias, int mode,
                                adm_tensor *out)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->linear_gelu(x, w, bias, mode, out);
}

/* The host's side of a twin reads its inputs into fp32 as the emulation
 * does, and picks the build of expf the host's libm runs: both in the
 * default environment, as the emulation's. */
ADM_FPENV_BODY
static adm_status cuda_twin_body(adm_twin which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->twin((int)which, p, in, out);
}

adm_status adm_cuda_twin(adm_twin which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = cuda_twin_body(which, p, in, out);
    adm_fpenv_leave(&fe);
    return rv;
}
