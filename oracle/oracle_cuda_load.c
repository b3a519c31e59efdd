/* The GPU oracle's entry points: the oracle's part of the CUDA module
 * (oracle/oracle_cuda.h; core/cuda_load.c loads the module on first use
 * and finds the part by name), or ADM_ERR_NO_DEVICE. */
#include "oracle_internal.h"
#include "oracle_cuda.h"

static int op_id_of(const adm_op *op) { return (int)adm_op_id_of(op); }

static const adm_o_cuda_host host = {
    .head = {ADM_O_CUDA_ABI, sizeof(adm_o_cuda_host)},
    .o_ctx_size = sizeof(adm_o_ctx),
    .op_params_size = sizeof(adm_op_params),
    .op_name = adm_op_name,
    .op_input_name = adm_op_input_name,
    .op_id_of = op_id_of,
    .o_rows = adm_o_rows,
    .o_need_narrow = adm_o_need_narrow,
};

static adm_status part(const adm_o_cuda_part **p)
{
    const adm_cuda_part_head *h;
    ADM_TRY(adm_cuda_module_part(ADM_O_CUDA_PART, ADM_O_CUDA_ABI, sizeof **p, &host.head, &h));
    *p = (const adm_o_cuda_part *)h;
    return ADM_OK;
}

/* The part where the module is loaded already, else NULL (never loads
 * it): nothing can be kept on the device before. */
static const adm_o_cuda_part *part_loaded(void)
{
    const adm_o_cuda_part *p;
    if (!adm_cuda_module_loaded()) return NULL;
    if (part(&p) == ADM_OK) return p;
    adm_error_clear(); /* a part that cannot be used kept nothing */
    return NULL;
}

int adm_o_cuda_usable(void)
{
    const adm_o_cuda_part *m;
    if (part(&m) != ADM_OK) {
        adm_error_clear(); /* a predicate: no GPU is not an error here */
        return 0;
    }
    return m->usable();
}

void adm_o_cuda_forget(const double *val)
{
    const adm_o_cuda_part *m = part_loaded();
    if (m) m->forget(val);
}

int adm_o_cuda_stale(const double *val)
{
    const adm_o_cuda_part *m = part_loaded();
    return m ? m->stale(val) : 0;
}

adm_status adm_o_cuda_fetch(const double *val)
{
    const adm_o_cuda_part *m = part_loaded();
    return m ? m->fetch(val) : ADM_OK;
}

adm_status adm_o_cuda_scan(const double *val, double thr, int64_t *blunt, double *maxb)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->scan(val, thr, blunt, maxb);
}

adm_status adm_o_cuda_gemm(const adm_o_ctx *c, double *val, double *bnd)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->gemm(c, val, bnd);
}

adm_status adm_o_cuda_elementwise(const adm_o_ctx *c, double *val, double *bnd)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->elementwise(c, val, bnd);
}

adm_status adm_o_cuda_reduce(const struct adm_o_reduce_job *j, int64_t total, const double *x, double *val,
                             double *bnd, double *cond)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->reduce(j, total, x, val, bnd, cond);
}

adm_status adm_o_cuda_norm(const struct adm_o_norm_job *j, int64_t total, const double *x, const double *w,
                           const double *b, const double *shift, const double *scale, double *val, double *bnd,
                           double *cond)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->norm(j, total, x, w, b, shift, scale, val, bnd, cond);
}

adm_status adm_o_cuda_attention(const struct adm_o_attn_job *j, const double *q, const double *k, const double *v,
                                double *val, double *bnd, double *cond)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->attention(j, q, k, v, val, bnd, cond);
}

adm_status adm_o_cuda_quantize(int scheme, int64_t n, int64_t N, double g, const double *x, double *val)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->quantize(scheme, n, N, g, x, val);
}

adm_status adm_o_cuda_linattn(const struct adm_o_linattn_job *j, const double *q, const double *k, const double *v,
                              double *val, double *bnd, double *cond)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->linattn(j, q, k, v, val, bnd, cond);
}

adm_status adm_o_cuda_bench_gemm(int64_t M, int64_t K, int64_t N, int reps, double *ms)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->bench_gemm(M, K, N, reps, ms);
}

adm_status adm_o_cuda_warm(void)
{
    const adm_o_cuda_part *m;
    ADM_TRY(part(&m));
    return m->warm();
}
