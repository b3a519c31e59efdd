/* attention (scaled dot product, optional causal mask) and linear
 * attention (ReLU feature map), per batch-head, with certified bounds,
 * every step of them rounded upward (scalar_fns.h).
 *
 * attention: s_j = RN(dot^_j c), c = RN(1 / RN(sqrt D)) (or the given
 *   scale, exact): |c - 1/sqrt D| <= Dc = gamma_2 c / (1 - gamma_2) (both
 *   roundings); the dot is exact products and D - 1 additions, |dot^ -
 *   dot| <= gamma_(D-1) ||q|| ||k_j|| (norms accumulated upward); so
 *   |s_j - s*_j| <= Ds_j = u|s_j| + c gamma_(D-1) ||q|| ||k_j|| +
 *   (|dot^| + gamma_(D-1) ||q|| ||k_j||) Dc. The fp64 softmax of the
 *   computed scores comes with its bound w_j (adm_o_softmax, oracle/
 *   reduce.c); softmax is shift-invariant, so scores off by at most
 *   dmax = max Ds_j move each exact probability by a factor within
 *   e^(+-2 dmax): |p_j - p*_j| <= w_j (1 + E) + p_j E, E = e^(2 dmax) - 1.
 *   out_e = fl(sum_j p_j v_je) (T products, T - 1 additions):
 *   |out^ - out| <= gamma_T sum_j p_j |v_je| + sum_j |p_j - p*_j| |v_je|.
 * linear attention: phi = relu (exact); KV = sum_j phi(k_j)^T v_j (exact
 *   products, T - 1 additions): |KV^ - KV| <= gamma_(T-1) KA, KA = sum_j
 *   phi(k_j)^T |v_j|; num = phi(q) KV^ (D products, D - 1 additions):
 *   |num^ - num| <= gamma_D phi(q) |KV^| + gamma_(T-1) phi(q) KA;
 *   den = phi(q) ks^ + eps (positive terms, ks^ within gamma_(T-1)):
 *   relative gamma_(D+T); out = RN(num^ / den^): u|out| + Dnum / den^ +
 *   (|num^| + Dnum) Dden / (den^ (den^ - Dden)).
 * Condition scale (adm_oracle_result.cond): attention sum_j p_j |v_je| (the
 * scale of every path's error: probabilities rounded to bf16, sums
 * reordered, rescaled by an online softmax); linear attention
 * phi(q) A / den, the same with the unnormalized weights. */
#include "oracle_internal.h"
#include "adm_fpenv.h"
#include "line_fns.h"

#include <stdlib.h>

adm_status adm_o_eval_attention(const adm_o_ctx *c, double *val, double *bnd)
{
    adm_op_id id = adm_op_id_of(c->op);
    const adm_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
    int r = q->ndim;
    int64_t S = q->shape[r - 2], D = q->shape[r - 1], T = k->shape[r - 2], E = v->shape[r - 1];
    int64_t H = (S > 0 && D > 0) ? adm_tensor_numel(q) / (S * D) : 1;
    double *qd, *kd, *vd;
    adm_status st = ADM_OK;
    for (int i = 0; i < 3; i++) ADM_TRY(adm_o_need_narrow(c->in[i], adm_op_name(c->op), adm_op_input_name(c->op, i)));
    if (c->numel == 0) return ADM_OK;
    qd = malloc(sizeof *qd * (size_t)(adm_tensor_numel(q) + 1));
    kd = malloc(sizeof *kd * (size_t)(adm_tensor_numel(k) + 1));
    vd = malloc(sizeof *vd * (size_t)(adm_tensor_numel(v) + 1));
    if (!qd || !kd || !vd) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
        goto done;
    }
    adm_tensor_to_f64(q, qd);
    adm_tensor_to_f64(k, kd);
    adm_tensor_to_f64(v, vd);
    if (id == OP_ATTENTION) {
        /* c = RN(1 / RN(sqrt D)): two roundings, |c - 1/sqrt D| <= gamma_2 c
         * / (1 - gamma_2); a given scale is the scale, exact */
        adm_o_attn_job j = {H, S, D, T, E, c->p->causal, 0, 0, 0, 0};
        double g2 = adm_gamma_up(2.0), *sc;
        j.scale = c->p->attn_scale > 0 ? c->p->attn_scale : 1.0 / sqrt((double)D);
        j.dc = c->p->attn_scale > 0 ? 0.0 : adm_div_up(adm_mul_up(g2, j.scale), adm_sub_dn(1.0, g2));
        j.gd = adm_gamma_up((double)(D - 1));
        j.gt = adm_gamma_up((double)T);
        if (c->use_gpu) {
            st = adm_o_cuda_attention(&j, qd, kd, vd, val, bnd, c->cond);
            goto done;
        }
        sc = malloc(sizeof *sc * (size_t)(4 * T + 1));
        if (!sc) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
            goto done;
        }
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < S; i++) adm_o_attention_line(&j, qd, kd, vd, h, i, sc, val, bnd, c->cond);
        free(sc);
    } else {
        adm_o_linattn_job j = {H, S, D, T, E, c->p->eps, adm_gamma_up((double)(T - 1)), adm_gamma_up((double)D),
                               adm_gamma_up((double)(D + T))};
        double *kv;
        if (c->use_gpu) {
            st = adm_o_cuda_linattn(&j, qd, kd, vd, val, bnd, c->cond);
            goto done;
        }
        kv = malloc(sizeof *kv * (size_t)(3 * D * E + D + 1));
        if (!kv) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
            goto done;
        }
        for (int64_t h = 0; h < H; h++) {
            double *ka = kv + D * E, *ks = kv + 2 * D * E;
            memset(kv, 0, sizeof *kv * (size_t)(3 * D * E + D));
            /* KV = sum_j f_j v_j (exact products): |KV^ - KV| <= gamma_(T-1) KA,
             * KA = sum_j f_j |v_j| accumulated upward */
            for (int64_t t = 0; t < T; t++)
                for (int64_t d = 0; d < D; d++) {
                    double f = fmax(kd[(h * T + t) * D + d], 0.0);
                    ks[d] += f;
                    for (int64_t e = 0; e < E; e++)
                        adm_o_linattn_add(f, vd[(h * T + t) * E + e], &kv[d * E + e], &ka[d * E + e]);
                }
#pragma omp parallel num_threads(c->threads)
            {
                adm_fpenv fe;
                adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
                for (int64_t i = 0; i < S; i++) adm_o_linattn_line(&j, qd, kv, ka, ks, h, i, val, bnd, c->cond);
                adm_fpenv_leave(&fe);
            }
        }
        free(kv);
    }
done:
    free(qd);
    free(kd);
    free(vd);
    return st;
}
