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

#include <stdlib.h>

typedef struct norm_set {
    int64_t n;
    const double *x;       /* gathered values */
    const int64_t *chan;   /* channel of each, for weight and bias */
    const double *shift, *scale; /* modulate, gathered; NULL when none */
} norm_set;

typedef struct norm_cfg {
    int rms, silu;
    double eps;
    const double *w, *b;   /* per channel; NULL when absent */
} norm_cfg;

static void normalize(const norm_cfg *cfg, const norm_set *s, double *y, double *bd, double *cd)
{
    int64_t n = s->n;
    const double u = ADM_U;
    double sum = 0, asum = 0, mu = 0, dmu = 0, var = 0, dv, t, dt, sd, dsd, gk;
    /* mean (rmsnorm: 0, exact) */
    if (!cfg->rms) {
        for (int64_t k = 0; k < n; k++) {
            sum += s->x[k];
            asum = adm_add_up(asum, fabs(s->x[k]));
        }
        mu = sum / (double)n;
        dmu = adm_add_up(adm_div_up(adm_mul_up(adm_gamma_up((double)(n - 1)), asum), (double)n),
                         adm_mul_up(u, fabs(mu)));
    }
    for (int64_t k = 0; k < n; k++) {
        double d = s->x[k] - mu;
        var += d * d;
    }
    var /= (double)n;
    /* |var - V| <= gamma_k var / (1 - gamma_k) + dmu^2 + n 2^-1074 */
    gk = adm_gamma_up((double)(cfg->rms ? n + 1 : n + 3));
    dv = adm_add_up(adm_add_up(adm_div_up(adm_mul_up(gk, var), adm_sub_dn(1.0, gk)), adm_mul_up(dmu, dmu)),
                    adm_mul_up((double)n, ADM_TINY));
    t = var + cfg->eps;
    dt = adm_add_up(adm_mul_up(u, t), dv);
    sd = sqrt(t);
    dsd = t > dt ? adm_add_up(adm_mul_up(u, sd), adm_div_up(dt, 2.0 * adm_sqrt_dn(adm_sub_dn(t, dt)))) : INFINITY;
    for (int64_t k = 0; k < n; k++) {
        double d = s->x[k] - mu, nk = d / sd, v, e, w = 1, cv;
        double dd = cfg->rms ? 0.0 : adm_add_up(adm_mul_up(u, fabs(d)), dmu);
        double den = adm_mul_up(sd, adm_sub_dn(sd, dsd));
        e = sd > dsd ? adm_add_up(adm_add_up(adm_rn_err(nk), adm_div_up(dd, sd)),
                                  adm_div_up(adm_mul_up(adm_add_up(fabs(d), dd), dsd), den))
                     : INFINITY;
        if (cfg->w) w = cfg->w[s->chan[k]];
        v = nk * w;
        if (cfg->w) e = adm_add_up(adm_mul_up(fabs(w), e), adm_rn_err(v));
        cv = cfg->rms ? fabs(v) : (fabs(s->x[k]) + fabs(mu)) / sd * fabs(w);
        if (cfg->b) {
            v = v + cfg->b[s->chan[k]];
            e = adm_add_up(e, adm_mul_up(u, fabs(v)));
            cv += fabs(cfg->b[s->chan[k]]);
        }
        if (s->scale) {
            /* g = RN(1 + scale) within u|g|; z1 = RN(v g), z = RN(z1 + shift) */
            double g = 1.0 + s->scale[k], z1 = v * g, z = z1 + s->shift[k];
            e = adm_add_up(adm_mul_up(fabs(g), e), adm_mul_up(adm_add_up(fabs(v), e), adm_mul_up(u, fabs(g))));
            e = adm_add_up(adm_add_up(e, adm_rn_err(z1)), adm_mul_up(u, fabs(z)));
            cv = cv * (1.0 + fabs(s->scale[k])) + fabs(s->shift[k]);
            v = z;
        }
        if (cfg->silu) {
            double se, o = adm_o_silu(v, &se);
            e = adm_add_up(adm_mul_up(ADM_SILU_LIPSCHITZ, e), se);
            cv = adm_o_cond_chain(o, adm_fn_silu_d(v), cv);
            v = o;
        }
        y[k] = v;
        bd[k] = e;
        cd[k] = cv;
    }
}

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
    int64_t total = c->numel, C, sets, n, B = 1, L = 1, G = 1, cpg = 1;
    norm_cfg cfg;
    double *xd = NULL, *w = NULL, *b = NULL, *shd = NULL, *scd = NULL;
    adm_tensor shv, scv;
    adm_status st = ADM_OK;
    memset(&cfg, 0, sizeof cfg);
    cfg.rms = id == OP_RMSNORM;
    cfg.eps = c->p->eps;
    cfg.silu = (id == OP_GROUPNORM || id == OP_RMSNORM) && c->p->silu;
    if (id == OP_GROUPNORM) {
        B = x->shape[0];
        C = c->p->channels_last ? x->shape[2] : x->shape[1];
        L = c->p->channels_last ? x->shape[1] : x->shape[2];
        G = c->p->groups;
        cpg = C / G;
        sets = B * G;
        n = cpg * L;
    } else {
        C = x->shape[x->ndim - 1];
        n = C;
        sets = C ? total / C : 0;
    }
    if (n == 0 || sets == 0) return ADM_OK;
    xd = malloc(sizeof *xd * (size_t)total);
    if (!xd) return ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
    adm_tensor_to_f64(x, xd);
    if ((st = per_channel(c->in[1], C, &w)) != ADM_OK) goto done;
    if ((st = per_channel(c->in[2], C, &b)) != ADM_OK) goto done;
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
    cfg.w = w;
    cfg.b = b;
    {
        double *gx = malloc(sizeof *gx * (size_t)n * 6);
        int64_t *ch = malloc(sizeof *ch * (size_t)n), *off = malloc(sizeof *off * (size_t)n);
        if (!gx || !ch || !off) st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
        for (int64_t s = 0; st == ADM_OK && s < sets; s++) {
            norm_set set;
            double *gy = gx + n, *gb = gx + 2 * n, *gsh = gx + 3 * n, *gsc = gx + 4 * n, *gc = gx + 5 * n;
            for (int64_t k = 0; k < n; k++) {
                if (id != OP_GROUPNORM) {
                    off[k] = s * n + k;
                    ch[k] = k;
                } else {
                    int64_t bb = s / G, g = s % G, cc = g * cpg + (c->p->channels_last ? k % cpg : k / L);
                    int64_t l = c->p->channels_last ? k / cpg : k % L;
                    off[k] = c->p->channels_last ? (bb * L + l) * C + cc : (bb * C + cc) * L + l;
                    ch[k] = cc;
                }
                gx[k] = xd[off[k]];
                if (shd) { gsh[k] = shd[off[k]]; gsc[k] = scd[off[k]]; }
            }
            set.n = n;
            set.x = gx;
            set.chan = ch;
            set.shift = shd ? gsh : NULL;
            set.scale = shd ? gsc : NULL;
            normalize(&cfg, &set, gy, gb, gc);
            for (int64_t k = 0; k < n; k++) {
                val[off[k]] = gy[k];
                bnd[off[k]] = gb[k];
                if (c->cond) c->cond[off[k]] = gc[k];
            }
        }
        free(gx);
        free(ch);
        free(off);
    }
done:
    free(xd);
    free(w);
    free(b);
    free(shd);
    free(scd);
    return st;
}
