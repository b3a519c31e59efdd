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

/* ||p||_2, every step rounded upward: >= the exact norm */
static double norm2_up(const double *p, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s = adm_add_up(s, adm_mul_up(p[i], p[i]));
    return adm_sqrt_up(s);
}

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
        double scale = c->p->attn_scale > 0 ? c->p->attn_scale : 1.0 / sqrt((double)D);
        double g2 = adm_gamma_up(2.0), dc = c->p->attn_scale > 0 ? 0.0 : adm_div_up(adm_mul_up(g2, scale), adm_sub_dn(1.0, g2));
        double gd = adm_gamma_up((double)(D - 1)), gt = adm_gamma_up((double)T);
        {
            double *sc = malloc(sizeof *sc * (size_t)(4 * T + 1)), *ds, *w, *p;
            if (!sc) {
                st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
                goto done;
            }
            ds = sc + T;
            w = sc + 2 * T;
            p = sc + 3 * T;
            for (int64_t h = 0; h < H; h++) {
                for (int64_t i = 0; i < S; i++) {
                    const double *qi = qd + (h * S + i) * D;
                    double nq = norm2_up(qi, D), dmax = 0, e2;
                    int64_t tend = c->p->causal ? (i + 1 < T ? i + 1 : T) : T;
                    for (int64_t j = 0; j < tend; j++) {
                        const double *kj = kd + (h * T + j) * D;
                        double s = 0, dd;
                        for (int64_t d = 0; d < D; d++) s += qi[d] * kj[d];
                        dd = adm_mul_up(adm_mul_up(gd, nq), norm2_up(kj, D)); /* |s - q.k| */
                        sc[j] = s * scale;
                        ds[j] = adm_add_up(adm_add_up(adm_rn_err(sc[j]), adm_mul_up(scale, dd)),
                                           adm_mul_up(adm_add_up(fabs(s), dd), dc));
                        dmax = fmax(dmax, ds[j]);
                    }
                    /* the fp64 softmax of the computed scores, and its bound */
                    adm_o_softmax(sc, tend, 1, p, w);
                    /* scores off by at most dmax move each probability by a
                     * factor within e^(+-2 dmax) (shift invariance) */
                    e2 = adm_expm1_up(2.0 * dmax);
                    for (int64_t j = 0; j < tend; j++)
                        w[j] = adm_add_up(adm_mul_up(w[j], adm_add_up(1.0, e2)), adm_mul_up(p[j], e2));
                    for (int64_t e = 0; e < E; e++) {
                        double o = 0, a = 0, b = 0;
                        for (int64_t j = 0; j < tend; j++) {
                            double vv = vd[(h * T + j) * E + e];
                            o += p[j] * vv;
                            a = adm_add_up(a, adm_mul_up(p[j], fabs(vv)));
                            b = adm_add_up(b, adm_mul_up(w[j], fabs(vv)));
                        }
                        /* T products and T - 1 additions: gamma_T sum p |v| */
                        val[(h * S + i) * E + e] = o;
                        bnd[(h * S + i) * E + e] = adm_add_up(adm_mul_up(gt, a), b);
                        if (c->cond) c->cond[(h * S + i) * E + e] = a;
                    }
                }
            }
            free(sc);
        }
    } else {
        double gt = adm_gamma_up((double)(T - 1)), gd = adm_gamma_up((double)D), gden = adm_gamma_up((double)(D + T));
        double *kv = malloc(sizeof *kv * (size_t)(3 * D * E + D + 1)), *ka = kv + D * E, *ks = kv + 2 * D * E;
        if (!kv) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
            goto done;
        }
        for (int64_t h = 0; h < H; h++) {
            memset(kv, 0, sizeof *kv * (size_t)(3 * D * E + D));
            /* KV = sum_j f_j v_j (exact products): |KV^ - KV| <= gamma_(T-1) KA,
             * KA = sum_j f_j |v_j| accumulated upward */
            for (int64_t j = 0; j < T; j++)
                for (int64_t d = 0; d < D; d++) {
                    double f = fmax(kd[(h * T + j) * D + d], 0.0);
                    ks[d] += f;
                    for (int64_t e = 0; e < E; e++) {
                        double vv = vd[(h * T + j) * E + e];
                        kv[d * E + e] += f * vv;
                        ka[d * E + e] = adm_add_up(ka[d * E + e], f * fabs(vv));
                    }
                }
#pragma omp parallel num_threads(c->threads)
            {
                adm_fpenv fe;
                adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
                for (int64_t i = 0; i < S; i++) {
                    const double *qi = qd + (h * S + i) * D;
                    double den = 0, dden;
                    for (int64_t d = 0; d < D; d++) den += fmax(qi[d], 0.0) * ks[d];
                    den += c->p->eps;
                    /* positive terms: D products, D additions (eps included) on
                     * ks^ within gamma_(T-1): relative gamma_(D+T) */
                    dden = adm_div_up(adm_mul_up(gden, den), adm_sub_dn(1.0, gden));
                    for (int64_t e = 0; e < E; e++) {
                        double num = 0, na = 0, nb = 0, dnum, o;
                        for (int64_t d = 0; d < D; d++) {
                            double f = fmax(qi[d], 0.0);
                            num += f * kv[d * E + e];
                            na = adm_add_up(na, adm_mul_up(f, ka[d * E + e]));
                            nb = adm_add_up(nb, adm_mul_up(f, fabs(kv[d * E + e])));
                        }
                        /* num^ = phi(q) . KV^ (D products, D - 1 additions) */
                        dnum = adm_add_up(adm_mul_up(gd, nb), adm_mul_up(gt, na));
                        o = num / den;
                        val[(h * S + i) * E + e] = o;
                        bnd[(h * S + i) * E + e] =
                            den > dden ? adm_add_up(adm_add_up(adm_rn_err(o), adm_div_up(dnum, den)),
                                                    adm_div_up(adm_mul_up(adm_add_up(fabs(num), dnum), dden),
                                                               adm_mul_up(den, adm_sub_dn(den, dden))))
                                       : INFINITY;
                        if (c->cond) c->cond[(h * S + i) * E + e] = na / den;
                    }
                }
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
