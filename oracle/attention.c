/* attention (scaled dot product, optional causal mask) and linear
 * attention (ReLU feature map), per batch-head, with certified bounds.
 *
 * attention: s_j = c (q . k_j), c = 1/sqrt(D) (or the given scale):
 *   the dot is exact products and D - 1 additions: gamma_D ||q|| ||k_j||;
 *   c carries u and the product u, so |s^_j - s_j| <= Ds_j = c gamma_D
 *   ||q|| ||k_j|| + 2u |s^_j|. Softmax is shift-invariant, so score errors
 *   of at most D = max Ds_j move each probability by a factor within
 *   e^(+-2D); its own fp64 evaluation adds eta_j + max eta + gamma_T + 2u
 *   (oracle/reduce.c). With rho bounding the probabilities' relative error,
 *   out_e = sum_j p_j v_je (products and sums rounded: gamma_(T+1)) is
 *   within (rho + gamma_(T+1)) 1.01 sum_j p^_j |v_je|.
 * linear attention: phi = relu (exact); KV = sum_j phi(k_j)^T v_j and
 *   ks = sum_j phi(k_j) (exact products; gamma_T against A = sum_j
 *   phi(k_j)^T |v_j| and ks itself); num = phi(q) KV (rounded products,
 *   D terms): |num^ - num| <= (gamma_T + gamma_(D+1)) 1.01 phi(q) A;
 *   den = phi(q) ks + eps (positive): relative gamma_T + gamma_(D+2);
 *   out = num / den: |dnum|/den + |out| (rel den + u).
 * Condition scale (adm_oracle_result.cond): attention sum_j p_j |v_je| (the
 * scale of every path's error: probabilities rounded to bf16, sums
 * reordered, rescaled by an online softmax); linear attention
 * phi(q) A / den, the same with the unnormalized weights. */
#include "oracle_internal.h"

#include <stdlib.h>

static double norm2_up(const double *p, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += p[i] * p[i];
    return adm_up(sqrt(s * (1.0 + 2.0 * adm_gamma((double)n))));
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
        double scale = c->p->attn_scale > 0 ? c->p->attn_scale : 1.0 / sqrt((double)D);
        double gd = adm_gamma((double)(D > 0 ? D : 1)), gt = adm_gamma((double)(T + 1));
        {
            double *sc = malloc(sizeof *sc * (size_t)(4 * T + 1)), *ds, *nk, *p;
            if (!sc) {
                st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
                goto done;
            }
            ds = sc + T;
            nk = sc + 2 * T;
            p = sc + 3 * T;
            for (int64_t h = 0; h < H; h++) {
                for (int64_t i = 0; i < S; i++) {
                    const double *qi = qd + (h * S + i) * D;
                    double nq = norm2_up(qi, D), m = -INFINITY, sum = 0, etamax = 0, dmax = 0, rho;
                    int64_t tend = c->p->causal ? (i + 1 < T ? i + 1 : T) : T;
                    for (int64_t j = 0; j < tend; j++) {
                        const double *kj = kd + (h * T + j) * D;
                        double s = 0;
                        for (int64_t d = 0; d < D; d++) s += qi[d] * kj[d];
                        nk[j] = norm2_up(kj, D);
                        sc[j] = s * scale;
                        ds[j] = scale * gd * nq * nk[j] * 1.01 + 2.0 * ADM_U * fabs(sc[j]);
                        dmax = fmax(dmax, ds[j]);
                        m = fmax(m, sc[j]);
                    }
                    for (int64_t j = 0; j < tend; j++) {
                        double d = sc[j] - m;
                        if (d >= -745.0) etamax = fmax(etamax, (1.01 * fabs(d) + ADM_LIBM_EXP_U + 1.0) * ADM_U);
                        p[j] = ADM_EXP(d);
                        sum += p[j];
                    }
                    for (int64_t j = 0; j < tend; j++) p[j] /= sum;
                    /* e^(2D) - 1 <= 2.01 D for D < 1e-3; beyond, exp itself */
                    rho = (dmax < 1e-3 ? 2.01 * dmax : expm1(2.0 * dmax) * 1.01) + 2.0 * etamax + gt + 2.0 * ADM_U;
                    for (int64_t e = 0; e < E; e++) {
                        double o = 0, a = 0;
                        for (int64_t j = 0; j < tend; j++) {
                            double vv = vd[(h * T + j) * E + e];
                            o += p[j] * vv;
                            a += p[j] * fabs(vv);
                        }
                        val[(h * S + i) * E + e] = o;
                        bnd[(h * S + i) * E + e] =
                            adm_up((rho + gt) * 1.01 * a + (double)(tend + 2) * ADM_TINY);
                        if (c->cond) c->cond[(h * S + i) * E + e] = a;
                    }
                }
            }
            free(sc);
        }
    } else {
        double gt = adm_gamma((double)(T > 0 ? T : 1)), gd1 = adm_gamma((double)(D + 1)),
               gd2 = adm_gamma((double)(D + 2));
        double *kv = malloc(sizeof *kv * (size_t)(3 * D * E + D + 1)), *ka = kv + D * E, *ks = kv + 2 * D * E;
        if (!kv) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
            goto done;
        }
        for (int64_t h = 0; h < H; h++) {
            memset(kv, 0, sizeof *kv * (size_t)(3 * D * E + D));
            for (int64_t j = 0; j < T; j++)
                for (int64_t d = 0; d < D; d++) {
                    double f = fmax(kd[(h * T + j) * D + d], 0.0);
                    ks[d] += f;
                    for (int64_t e = 0; e < E; e++) {
                        double vv = vd[(h * T + j) * E + e];
                        kv[d * E + e] += f * vv;
                        ka[d * E + e] += f * fabs(vv);
                    }
                }
#pragma omp parallel for num_threads(c->threads) schedule(static)
            for (int64_t i = 0; i < S; i++) {
                const double *qi = qd + (h * S + i) * D;
                double den = 0, relden;
                for (int64_t d = 0; d < D; d++) den += fmax(qi[d], 0.0) * ks[d];
                den += c->p->eps;
                relden = (gt + gd2) * 1.01 + ADM_U;
                for (int64_t e = 0; e < E; e++) {
                    double num = 0, na = 0, o;
                    for (int64_t d = 0; d < D; d++) {
                        double f = fmax(qi[d], 0.0);
                        num += f * kv[d * E + e];
                        na += f * ka[d * E + e];
                    }
                    o = num / den;
                    val[(h * S + i) * E + e] = o;
                    bnd[(h * S + i) * E + e] =
                        adm_up((gt + gd1) * 1.01 * na * 1.01 / den + fabs(o) * (relden + ADM_U) + ADM_TINY);
                    if (c->cond) c->cond[(h * S + i) * E + e] = na / den;
                }
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
