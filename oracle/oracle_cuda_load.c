/* The GPU oracle's entry points: the CUDA module's (core/cuda_load.c
 * loads it on first use), or ADM_ERR_NO_DEVICE. */
#include "oracle_internal.h"
#include "adm_cuda_module.h"

int adm_o_cuda_usable(void)
{
    const adm_cuda_module *m;
    if (adm_cuda_module_get(&m) != ADM_OK) {
        adm_error_clear(); /* a predicate: no GPU is not an error here */
        return 0;
    }
    return m->o_usable();
}

void adm_o_cuda_forget(const double *val)
{
    const adm_cuda_module *m = adm_cuda_module_loaded();
    if (m) m->o_forget(val);
}

int adm_o_cuda_stale(const double *val)
{
    const adm_cuda_module *m = adm_cuda_module_loaded();
    return m ? m->o_stale(val) : 0;
}

adm_status adm_o_cuda_fetch(const double *val)
{
    const adm_cuda_module *m = adm_cuda_module_loaded();
    return m ? m->o_fetch(val) : ADM_OK;
}

adm_status adm_o_cuda_scan(const double *val, double thr, int64_t *blunt, double *maxb)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->o_scan(val, thr, blunt, maxb);
}

adm_status adm_o_cuda_gemm(const adm_o_ctx *c, double *val, double *bnd)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->o_gemm(c, val, bnd);
}

adm_status adm_o_cuda_elementwise(const adm_o_ctx *c, double *val, double *bnd)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->o_elementwise(c, val, bnd);
}

adm_status adm_o_cuda_reduce(const struct adm_o_reduce_job *j, int64_t total, const double *x, double *val,
                             double *bnd, double *cond)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->o_reduce(j, total, x, val, bnd, cond);
}

adm_status adm_o_cuda_norm(const struct adm_o_norm_job *j, int64_t total, const double *x, const double *w,
                           const double *b, const double *shift, const double *scale, double *val, double *bnd,
                           double *cond)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->o_norm(j, total, x, w, b, shift, scale, val, bnd, cond);
}

adm_status adm_o_cuda_attention(const struct adm_o_attn_job *j, const double *q, const double *k, const double *v,
                                double *val, double *bnd, double *cond)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->o_attention(j, q, k, v, val, bnd, cond);
}

adm_status adm_o_cuda_quantize(int scheme, int64_t n, int64_t N, double g, const double *x, double *val)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->o_quantize(scheme, n, N, g, x, val);
}

adm_status adm_o_cuda_linattn(const struct adm_o_linattn_job *j, const double *q, const double *k, const double *v,
                              double *val, double *bnd, double *cond)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->o_linattn(j, q, k, v, val, bnd, cond);
}

adm_status adm_o_cuda_bench_gemm(int64_t M, int64_t K, int64_t N, int reps, double *ms)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->o_bench_gemm(M, K, N, reps, ms);
}
