/* rmsnorm, layernorm (with modulate), groupnorm (with SiLU): statistics in
 * the stable two-pass form, each output with a certified bound.
 *
 * rmsnorm: q = sum x^2 (squares exact for fp32-or-narrower inputs, n - 1
 * additions of positive terms), / n, + eps: relative gamma_(n+2); sqrt
 * halves it and adds u; the division and the weight add u each:
 *     |y^ - y| <= ((n + 2)/2 + 3) u 1.01 |y^| + ADM_TINY.
 * layernorm / groupnorm: mean mu^ = fl(sum x)/n with
 *     |mu^ - mu| <= Dmu = gamma_(n+1) sum|x| / n + u |mu^|;
 * d^_k = fl(x_k - mu^) = (x_k - mu^)(1 + delta); the two-pass variance
 * sum (x - mu^)^2 / n = V + (mu - mu^)^2, so
 *     |V^ - V| <= gamma_(n+3) 1.01 V^ + 1.01 Dmu^2,
 * and sd = sqrt(V^ + eps) has relative error rho_s <= |V^-V|/(2(V^+eps)) + 2u.
 * n^_k = d^_k / sd^: |n^_k - n_k| <= 1.01 (Dmu + u|d^_k|)/sd^ + 1.01 (rho_s + u) |n^_k|.
 * Then the affine (one rounding each), modulate ((1 + scale) and the two
 * operations: one rounding each), SiLU (its Lipschitz constant and its own
 * bound).
 * Condition scale (adm_oracle_result.cond), the magnitude of the terms:
 * rmsnorm |y| (x rstd w: nothing cancels); layernorm / groupnorm
 * (|x_k| + |mu|) / sd |w| + |b| (x - mu cancels), through modulate
 * (1 + |scale|) that + |shift|; through SiLU max(|silu(v)|, |silu'(v)| that),
 * as a path that rounds v before the SiLU errs by. */
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
    double u = ADM_U;
    if (cfg->rms) {
        double q = 0, den, rel;
        for (int64_t k = 0; k < n; k++) q += s->x[k] * s->x[k];
        den = sqrt(q / (double)n + cfg->eps);
        rel = ((double)(n + 2) / 2.0 + 3.0) * u * 1.01;
        for (int64_t k = 0; k < n; k++) {
            double v = s->x[k] / den, e;
            if (cfg->w) v *= cfg->w[s->chan[k]];
            e = rel * fabs(v);
            cd[k] = fabs(v);
            if (cfg->silu) {
                double se, o = adm_o_silu(v, &se);
                e = ADM_SILU_LIPSCHITZ * e + se;
                cd[k] = adm_o_cond_chain(o, adm_fn_silu_d(v), cd[k]);
                v = o;
            }
            y[k] = v;
            bd[k] = adm_up(e + ADM_TINY);
        }
        return;
    }
    {
        double sum = 0, asum = 0, mu, dmu, var = 0, sd, rhos, gn = adm_gamma((double)(n + 3));
        for (int64_t k = 0; k < n; k++) { sum += s->x[k]; asum += fabs(s->x[k]); }
        mu = sum / (double)n;
        dmu = adm_up(adm_gamma((double)(n + 1)) * asum * (1.0 + 2.0 * gn) / (double)n + u * fabs(mu));
        for (int64_t k = 0; k < n; k++) {
            double d = s->x[k] - mu;
            var += d * d;
        }
        var /= (double)n;
        sd = sqrt(var + cfg->eps);
        rhos = (gn * 1.01 * var + 1.01 * dmu * dmu) / (2.0 * (var + cfg->eps)) + 2.0 * u;
        for (int64_t k = 0; k < n; k++) {
            double d = s->x[k] - mu, nk = d / sd, v, dv, w = 1, t, cv;
            double dn = 1.01 * (dmu + u * fabs(d)) / sd + 1.01 * (rhos + u) * fabs(nk);
            if (cfg->w) w = cfg->w[s->chan[k]];
            t = nk * w;
            dv = fabs(w) * dn + (cfg->w ? u * fabs(t) : 0.0);
            v = t;
            cv = (fabs(s->x[k]) + fabs(mu)) / sd * fabs(w);
            if (cfg->b) {
                v = t + cfg->b[s->chan[k]];
                dv += u * fabs(v);
                cv += fabs(cfg->b[s->chan[k]]);
            }
            if (s->scale) {
                double g = 1.0 + s->scale[k], z = v * g + s->shift[k];
                dv = fabs(g) * dv * (1.0 + u) + fabs(v) * u * fabs(g) * 1.01 + u * fabs(v * g) + u * fabs(z);
                cv = cv * (1.0 + fabs(s->scale[k])) + fabs(s->shift[k]);
                v = z;
            }
            if (cfg->silu) {
                double e, o = adm_o_silu(v, &e);
                dv = ADM_SILU_LIPSCHITZ * dv + e;
                cv = adm_o_cond_chain(o, adm_fn_silu_d(v), cv);
                v = o;
            }
            y[k] = v;
            bd[k] = adm_up(dv + ADM_TINY);
            cd[k] = cv;
        }
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
