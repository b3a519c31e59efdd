/* rmsnorm, layernorm (with modulate), groupnorm (with SiLU): statistics in
 * the stable two-pass form, each output with a certified bound, every
 * step of it rounded upward (scalar_fns.h). rmsnorm is the same about 0.
 *   mean mu = RN(fl(sum x) / n): |mu - m| <= Dmu = gamma_(n-1) sum|x| / n
 *      + u |mu| (0 for rmsnorm).
 *   d_k = RN(x_k - mu) = D_k (1 + delta), D_k = x_k - mu exactly
 *      (rmsnorm: d_k = x_k, exact); |d_k - (x_k - m)| <= u|d_k| + Dmu.
 *   var = RN(RN-sum RN(d_k^2) / n) = (sum D_k^2 / n)(1 + theta), |theta| <=
 *      gamma_(n+3) (rmsnorm gamma_(n+1)), and sum D_k^2 = n V + n (mu - m)^2
 *      (two-pass identity), so |var - V| <= gamma var / (1 - gamma) + Dmu^2
 *      (+ n 2^-1074 for squares below the normal range).
 *   t = RN(var + eps): + u t; sd = RN(sqrt t): |sd - sqrt(V + eps)| <= u sd
 *      + Dt / (2 sqrt(t - Dt)).
 *   n_k = RN(d_k / sd): u|n_k| + Dd/sd + (|d_k| + Dd) Dsd / (sd (sd - Dsd)).
 * Then the affine (one rounding each: |w| e + u|t|, + u|v|), modulate
 * (g = RN(1 + scale) within u|g|, the product and the sum one rounding
 * each), SiLU (its Lipschitz constant and its own bound). */
#include "oracle_internal.h"
#include "adm_fpenv.h"
#include "line_fns.h"

#include <stdlib.h>

static adm_status per_channel(const adm_tensor *t, int64_t C, double **out)
{
    *out = NULL;
    if (!t) return ADM_OK;
    *out = malloc(sizeof **out * (size_t)(C ? C : 1));
    if (!*out) return ADM_FAIL(ADM_ERR_NOMEM, "oracle: out of memory");
    for (int64_t c = 0; c < C; c++) (*out)[c] = adm_tensor_get(t, c);
    return ADM_OK;
}

adm_status adm_o_eval_norm(const adm_o_ctx *c, double *val, double *bnd)
{
    adm_op_id id = adm_op_id_of(c->op);
    const adm_tensor *x = c->in[0];
    int64_t total = c->numel;
    adm_o_norm_job j;
    double *xd = NULL, *w = NULL, *b = NULL, *shd = NULL, *scd = NULL;
    adm_tensor shv, scv;
    adm_status st = ADM_OK;
    memset(&j, 0, sizeof j);
    j.rms = id == OP_RMSNORM;
    j.eps = c->p->eps;
    j.silu = (id == OP_GROUPNORM || id == OP_RMSNORM) && c->p->silu;
    if (id == OP_GROUPNORM) {
        j.group = 1;
        j.channels_last = c->p->channels_last;
        j.C = c->p->channels_last ? x->shape[2] : x->shape[1];
        j.L = c->p->channels_last ? x->shape[1] : x->shape[2];
        j.G = c->p->groups;
        j.cpg = j.C / j.G;
        j.sets = x->shape[0] * j.G;
        j.n = j.cpg * j.L;
    } else {
        j.C = x->shape[x->ndim - 1];
        j.n = j.C;
        j.sets = j.C ? total / j.C : 0;
    }
    if (j.n == 0 || j.sets == 0) return ADM_OK;
    xd = malloc(sizeof *xd * (size_t)total);
    if (!xd) return ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
    adm_tensor_to_f64(x, xd);
    if ((st = per_channel(c->in[1], j.C, &w)) != ADM_OK) goto done;
    if ((st = per_channel(c->in[2], j.C, &b)) != ADM_OK) goto done;
    if (id == OP_LAYERNORM && c->p->modulate) {
        shd = malloc(sizeof *shd * (size_t)total);
        scd = malloc(sizeof *scd * (size_t)total);
        if (!shd || !scd) { st = ADM_FAIL(ADM_ERR_NOMEM, "oracle: out of memory"); goto done; }
        if ((st = adm_tensor_broadcast(c->in[3], c->ndim, c->shape, &shv)) != ADM_OK) goto done;
        if ((st = adm_tensor_broadcast(c->in[4], c->ndim, c->shape, &scv)) != ADM_OK) goto done;
        for (int64_t i = 0; i < total; i++) {
            shd[i] = adm_tensor_get(&shv, i);
            scd[i] = adm_tensor_get(&scv, i);
        }
    }
    if (c->use_gpu) {
        st = adm_o_cuda_norm(&j, total, xd, w, b, shd, scd, val, bnd, c->cond);
        goto done;
    }
    /* every set its own, in a fixed order within it: the same bits at any
     * thread count */
#pragma omp parallel num_threads(c->threads)
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
        for (int64_t s = 0; s < j.sets; s++) adm_o_norm_set(&j, s, xd, w, b, shd, scd, val, bnd, c->cond);
        adm_fpenv_leave(&fe);
    }
done:
    free(xd);
    free(w);
    free(b);
    free(shd);
    free(scd);
    return st;
}
