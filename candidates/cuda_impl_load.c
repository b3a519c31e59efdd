/* The CUDA implementations (cuBLASLt, the twins of the emulations, the
 * port of glibc's float functions): the candidates' part of the CUDA
 * module (candidates/candidates_cuda.h; core/cuda_load.c loads the module
 * on first use and finds the part by name), or ADM_ERR_NO_DEVICE. */
#include "adm_candidates.h"
#include "adm_cuda.h"
#include "adm_fpenv.h"
#include "candidates_cuda.h"
#include "cuda_twins.h"

static const adm_cand_cuda_host host = {
    .head = {ADM_CAND_CUDA_ABI, sizeof(adm_cand_cuda_host)},
    .op_params_size = sizeof(adm_op_params),
};

static adm_status part(const adm_cand_cuda_part **p)
{
    const adm_cuda_part_head *h;
    ADM_TRY(adm_cuda_module_part(ADM_CAND_CUDA_PART, ADM_CAND_CUDA_ABI, sizeof **p, &host.head, &h));
    *p = (const adm_cand_cuda_part *)h;
    return ADM_OK;
}

adm_status adm_cuda_linear_gelu(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias, int mode,
                                adm_tensor *out)
{
    const adm_cand_cuda_part *m;
    ADM_TRY(part(&m));
    return m->linear_gelu(x, w, bias, mode, out);
}

adm_status adm_cuda_libm_f32_range(int fn, uint32_t first, uint32_t *out, size_t n)
{
    const adm_cand_cuda_part *m;
    ADM_TRY(part(&m));
    return m->libm_f32_range(fn, first, out, n);
}

adm_status adm_cuda_impl_warm(void)
{
    const adm_cand_cuda_part *m;
    ADM_TRY(part(&m));
    return m->warm();
}

/* The host's side of a twin reads its inputs into fp32 as the emulation
 * does, and picks the build of expf the host's libm runs: both in the
 * default environment, as the emulation's. */
ADM_FPENV_BODY
static adm_status cuda_twin_body(adm_twin which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    const adm_cand_cuda_part *m;
    ADM_TRY(part(&m));
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
