/* The per-line work of the oracle's reductions and norms, for the CPU (C)
 * and the GPU (CUDA) alike: one definition, one derivation. A line is a
 * row_sum's or mean_sq's n terms, a softmax's n scores, a norm's set of n
 * values (a token's channels; a group's channels and positions), an
 * attention's query; each
 * function does one line in a fixed order of operations, so on either
 * processor an op without libm calls (row_sum, mean_sq, rmsnorm,
 * layernorm without SiLU) gives the same bits, and one with them (softmax:
 * exp; SiLU) differs only by the libm's last bits, each within its stated
 * ulps (scalar_fns.h). The bounds are derived where they were:
 * oracle/reduce.c (sums, softmax), oracle/norm.c (norms) and
 * oracle/attention.c (attention, linear attention). Include after
 * oracle_internal.h. */
#ifndef ADM_LINE_FNS_H
#define ADM_LINE_FNS_H

#include "scalar_fns.h"

#include <stdint.h>

/* ---------------------------------------------------------------- reductions */

enum { ADM_O_ROW_SUM = 0, ADM_O_MEAN_SQ = 1, ADM_O_SOFTMAX = 2 };

/* A reduction along one axis of a tensor seen as [outer, n, inner]: line
 * (o, in) holds x[(o n + j) inner + in], j < n. The bound constants are
 * the host's (oracle/reduce.c): gsum = gamma_(n-1), ms_rel and ms_abs
 * mean_sq's relative and absolute parts. */
typedef struct adm_o_reduce_job {
    int kind;
    int64_t outer, n, inner;
    double gsum, ms_rel, ms_abs;
} adm_o_reduce_job;

ADM_HD double adm_o_two_diff(double a, double b, double *err)
{
    double s = a - b, bb = s - a;
    *err = (a - (s - bb)) + (-b - bb);
    return s;
}

ADM_HD double adm_o_softmax_term(double x, double m, double *e, double *delta)
{
    double r, d = adm_o_two_diff(x, m, &r), fu;
    *e = ADM_EXP(d);
    *delta = adm_libm_err(*e, ADM_LIBM_EXP_ULP, &fu);
    if (r != 0) *delta = adm_add_up(*delta, adm_mul_up(fu, adm_expm1_up(fabs(r))));
    return d;
}

/* A softmax over n doubles x[j * stride] with, for every output, a bound
 * on its distance to the exact softmax of those doubles (oracle/reduce.c). */
ADM_HD void adm_o_softmax(const double *x, int64_t n, int64_t stride, double *y, double *bnd)
{
    double m = -INFINITY, S = 0, D = 0, DS, g = adm_gamma_up((double)(n - 1)), e, de;
    for (int64_t j = 0; j < n; j++) m = fmax(m, x[j * stride]);
    for (int64_t j = 0; j < n; j++) {
        adm_o_softmax_term(x[j * stride], m, &e, &de);
        S += e;
        D = adm_add_up(D, de);
    }
    DS = adm_add_up(adm_div_up(adm_mul_up(g, S), adm_sub_dn(1.0, g)), D);
    for (int64_t j = 0; j < n; j++) {
        double v;
        adm_o_softmax_term(x[j * stride], m, &e, &de);
        v = e / S;
        y[j * stride] = v;
        bnd[j * stride] = adm_add_up(adm_add_up(adm_rn_err(v), adm_div_up(de, S)),
                                     adm_div_up(adm_mul_up(adm_add_up(e, de), DS), adm_mul_up(S, adm_sub_dn(S, DS))));
    }
}

/* Line (o, in) of job j over x (the whole tensor), its outputs written
 * where the CPU's are: row_sum and mean_sq at o inner + in, softmax in
 * place of its inputs. cond may be NULL. */
ADM_HD void adm_o_reduce_line(const adm_o_reduce_job *j, const double *x, int64_t o, int64_t in, double *val,
                              double *bnd, double *cond)
{
    int64_t n = j->n, base = o * n * j->inner + in;
    const double *p = x + base;
    if (j->kind == ADM_O_SOFTMAX) {
        adm_o_softmax(p, n, j->inner, val + base, bnd + base);
        if (cond)
            for (int64_t k = 0; k < n; k++) cond[base + k * j->inner] = fabs(val[base + k * j->inner]);
        return;
    }
    {
        double s = 0, a = 0, ac = 0, b;
        for (int64_t k = 0; k < n; k++) {
            double v = p[k * j->inner];
            if (j->kind == ADM_O_ROW_SUM) {
                s += v;
                a = adm_add_up(a, fabs(v));
                ac += fabs(v);
            } else {
                s += v * v;
            }
        }
        if (j->kind == ADM_O_MEAN_SQ) {
            s = n ? s / (double)n : NAN;
            a = ac = fabs(s);
            b = adm_add_up(adm_mul_up(j->ms_rel, a), j->ms_abs);
        } else {
            b = adm_mul_up(j->gsum, a);
        }
        val[o * j->inner + in] = s;
        if (cond) cond[o * j->inner + in] = ac;
        bnd[o * j->inner + in] = b;
    }
}

/* ---------------------------------------------------------------- norms */

/* rmsnorm, layernorm (modulated or not) and groupnorm (with SiLU or not)
 * over `sets` sets of n values each (oracle/norm.c): a set is a token's C
 * channels, or (group) batch b's group g: cpg channels by L positions,
 * channels first ([B, C, L]) or last ([B, L, C]). */
typedef struct adm_o_norm_job {
    int rms, silu, group, channels_last;
    double eps;
    int64_t sets, n, C, L, G, cpg;
} adm_o_norm_job;

/* Where the k-th value of set s lives in the tensor, and its channel. */
ADM_HD void adm_o_norm_index(const adm_o_norm_job *j, int64_t s, int64_t k, int64_t *off, int64_t *ch)
{
    if (!j->group) {
        *off = s * j->n + k;
        *ch = k;
    } else {
        int64_t bb = s / j->G, g = s % j->G, cc = g * j->cpg + (j->channels_last ? k % j->cpg : k / j->L);
        int64_t l = j->channels_last ? k / j->cpg : k % j->L;
        *off = j->channels_last ? (bb * j->L + l) * j->C + cc : (bb * j->C + cc) * j->L + l;
        *ch = cc;
    }
}

/* Set s of job j: x the whole input; w, b per channel (NULL when absent);
 * shift, scale (modulate) dense like x (NULL when none); y, bd and cd
 * (NULL: no condition scale) written at the values' places. The bound's
 * derivation: oracle/norm.c. */
ADM_HD void adm_o_norm_set(const adm_o_norm_job *j, int64_t s, const double *x, const double *w, const double *b,
                           const double *shift, const double *scale, double *y, double *bd, double *cd)
{
    int64_t n = j->n, off, ch;
    const double u = ADM_FN_U;
    double sum = 0, asum = 0, mu = 0, dmu = 0, var = 0, dv, t, dt, sd, dsd, gk;
    /* mean (rmsnorm: 0, exact) */
    if (!j->rms) {
        for (int64_t k = 0; k < n; k++) {
            adm_o_norm_index(j, s, k, &off, &ch);
            sum += x[off];
            asum = adm_add_up(asum, fabs(x[off]));
        }
        mu = sum / (double)n;
        dmu = adm_add_up(adm_div_up(adm_mul_up(adm_gamma_up((double)(n - 1)), asum), (double)n),
                         adm_mul_up(u, fabs(mu)));
    }
    for (int64_t k = 0; k < n; k++) {
        double d;
        adm_o_norm_index(j, s, k, &off, &ch);
        d = x[off] - mu;
        var += d * d;
    }
    var /= (double)n;
    /* |var - V| <= gamma_k var / (1 - gamma_k) + dmu^2 + n 2^-1074 */
    gk = adm_gamma_up((double)(j->rms ? n + 1 : n + 3));
    dv = adm_add_up(adm_add_up(adm_div_up(adm_mul_up(gk, var), adm_sub_dn(1.0, gk)), adm_mul_up(dmu, dmu)),
                    adm_mul_up((double)n, ADM_TINY));
    t = var + j->eps;
    dt = adm_add_up(adm_mul_up(u, t), dv);
    sd = sqrt(t);
    dsd = t > dt ? adm_add_up(adm_mul_up(u, sd), adm_div_up(dt, 2.0 * adm_sqrt_dn(adm_sub_dn(t, dt)))) : INFINITY;
    for (int64_t k = 0; k < n; k++) {
        double d, nk, v, e, wk = 1, cv, dd, den;
        adm_o_norm_index(j, s, k, &off, &ch);
        d = x[off] - mu;
        nk = d / sd;
        dd = j->rms ? 0.0 : adm_add_up(adm_mul_up(u, fabs(d)), dmu);
        den = adm_mul_up(sd, adm_sub_dn(sd, dsd));
        e = sd > dsd ? adm_add_up(adm_add_up(adm_rn_err(nk), adm_div_up(dd, sd)),
                                  adm_div_up(adm_mul_up(adm_add_up(fabs(d), dd), dsd), den))
                     : INFINITY;
        if (w) wk = w[ch];
        v = nk * wk;
        if (w) e = adm_add_up(adm_mul_up(fabs(wk), e), adm_rn_err(v));
        cv = j->rms ? fabs(v) : (fabs(x[off]) + fabs(mu)) / sd * fabs(wk);
        if (b) {
            v = v + b[ch];
            e = adm_add_up(e, adm_mul_up(u, fabs(v)));
            cv += fabs(b[ch]);
        }
        if (scale) {
            /* g = RN(1 + scale) within u|g|; z1 = RN(v g), z = RN(z1 + shift) */
            double g = 1.0 + scale[off], z1 = v * g, z = z1 + shift[off];
            e = adm_add_up(adm_mul_up(fabs(g), e), adm_mul_up(adm_add_up(fabs(v), e), adm_mul_up(u, fabs(g))));
            e = adm_add_up(adm_add_up(e, adm_rn_err(z1)), adm_mul_up(u, fabs(z)));
            cv = cv * (1.0 + fabs(scale[off])) + fabs(shift[off]);
            v = z;
        }
        if (j->silu) {
            double se, o = adm_fn_silu(v, &se);
            e = adm_add_up(adm_mul_up(ADM_SILU_LIPSCHITZ, e), se);
            cv = adm_fn_cond_chain(o, adm_fn_silu_d(v), cv);
            v = o;
        }
        y[off] = v;
        bd[off] = e;
        if (cd) cd[off] = cv;
    }
}

/* ---------------------------------------------------------------- attention */

/* ||p||_2, every step rounded upward: >= the exact norm */
ADM_HD double adm_o_norm2_up(const double *p, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s = adm_add_up(s, adm_mul_up(p[i], p[i]));
    return adm_sqrt_up(s);
}

/* Attention over H heads of S queries, T keys, D and E dimensions
 * (oracle/attention.c: the derivation): scale c and its error dc, gd =
 * gamma_(D-1), gt = gamma_T, the host's. */
typedef struct adm_o_attn_job {
    int64_t H, S, D, T, E;
    int causal;
    double scale, dc, gd, gt;
} adm_o_attn_job;

/* Query i of head h: scratch holds 4 T doubles. */
ADM_HD void adm_o_attention_line(const adm_o_attn_job *j, const double *qd, const double *kd, const double *vd,
                                 int64_t h, int64_t i, double *scratch, double *val, double *bnd, double *cond)
{
    int64_t T = j->T, D = j->D, E = j->E, S = j->S;
    double *sc = scratch, *ds = scratch + T, *w = scratch + 2 * T, *p = scratch + 3 * T;
    const double *qi = qd + (h * S + i) * D;
    double nq = adm_o_norm2_up(qi, D), dmax = 0, e2;
    int64_t tend = j->causal ? (i + 1 < T ? i + 1 : T) : T;
    for (int64_t t = 0; t < tend; t++) {
        const double *kt = kd + (h * T + t) * D;
        double s = 0, dd;
        for (int64_t d = 0; d < D; d++) s += qi[d] * kt[d];
        dd = adm_mul_up(adm_mul_up(j->gd, nq), adm_o_norm2_up(kt, D)); /* |s - q.k| */
        sc[t] = s * j->scale;
        ds[t] = adm_add_up(adm_add_up(adm_rn_err(sc[t]), adm_mul_up(j->scale, dd)),
                           adm_mul_up(adm_add_up(fabs(s), dd), j->dc));
        dmax = fmax(dmax, ds[t]);
    }
    /* the fp64 softmax of the computed scores, and its bound */
    adm_o_softmax(sc, tend, 1, p, w);
    /* scores off by at most dmax move each probability by a factor within
     * e^(+-2 dmax) (shift invariance) */
    e2 = adm_expm1_up(2.0 * dmax);
    for (int64_t t = 0; t < tend; t++) w[t] = adm_add_up(adm_mul_up(w[t], adm_add_up(1.0, e2)), adm_mul_up(p[t], e2));
    for (int64_t e = 0; e < E; e++) {
        double o = 0, a = 0, b = 0;
        for (int64_t t = 0; t < tend; t++) {
            double vv = vd[(h * T + t) * E + e];
            o += p[t] * vv;
            a = adm_add_up(a, adm_mul_up(p[t], fabs(vv)));
            b = adm_add_up(b, adm_mul_up(w[t], fabs(vv)));
        }
        /* T products and T - 1 additions: gamma_T sum p |v| */
        val[(h * S + i) * E + e] = o;
        bnd[(h * S + i) * E + e] = adm_add_up(adm_mul_up(j->gt, a), b);
        if (cond) cond[(h * S + i) * E + e] = a;
    }
}

/* Linear attention (ReLU features): gt = gamma_(T-1), gd = gamma_D, gden =
 * gamma_(D+T), the host's. */
typedef struct adm_o_linattn_job {
    int64_t H, S, D, T, E;
    double eps, gt, gd, gden;
} adm_o_linattn_job;

/* One key's term of head h's sums KV[d][e] (exact product, one
 * rounding), KA[d][e] (upward) and ks[d]: added in key order by both
 * processors. */
ADM_HD void adm_o_linattn_add(double f, double vv, double *kv, double *ka)
{
    *kv += f * vv;
    *ka = adm_add_up(*ka, f * fabs(vv));
}

/* Query i of head h from its head's kv, ka (D x E) and ks (D). */
ADM_HD void adm_o_linattn_line(const adm_o_linattn_job *j, const double *qd, const double *kv, const double *ka,
                               const double *ks, int64_t h, int64_t i, double *val, double *bnd, double *cond)
{
    int64_t D = j->D, E = j->E, S = j->S;
    const double *qi = qd + (h * S + i) * D;
    double den = 0, dden;
    for (int64_t d = 0; d < D; d++) den += fmax(qi[d], 0.0) * ks[d];
    den += j->eps;
    /* positive terms: D products, D additions (eps included) on ks^ within
     * gamma_(T-1): relative gamma_(D+T) */
    dden = adm_div_up(adm_mul_up(j->gden, den), adm_sub_dn(1.0, j->gden));
    for (int64_t e = 0; e < E; e++) {
        double num = 0, na = 0, nb = 0, dnum, o;
        for (int64_t d = 0; d < D; d++) {
            double f = fmax(qi[d], 0.0);
            num += f * kv[d * E + e];
            na = adm_add_up(na, adm_mul_up(f, ka[d * E + e]));
            nb = adm_add_up(nb, adm_mul_up(f, fabs(kv[d * E + e])));
        }
        /* num^ = phi(q) . KV^ (D products, D - 1 additions) */
        dnum = adm_add_up(adm_mul_up(j->gd, nb), adm_mul_up(j->gt, na));
        o = num / den;
        val[(h * S + i) * E + e] = o;
        bnd[(h * S + i) * E + e] =
            den > dden ? adm_add_up(adm_add_up(adm_rn_err(o), adm_div_up(dnum, den)),
                                    adm_div_up(adm_mul_up(adm_add_up(fabs(num), dnum), dden),
                                               adm_mul_up(den, adm_sub_dn(den, dden))))
                       : INFINITY;
        if (cond) cond[(h * S + i) * E + e] = na / den;
    }
}

#endif
