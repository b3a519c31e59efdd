/* Gates 1 and 2 and the evidence gate: one capture's error statistics as
 * evidence that pools over captures (adm_evidence), the tests decided on
 * that evidence, and the power of the verdict. Formulas, thresholds and
 * their derivation: harness/GATES.md. */
#include "harness_internal.h"
#include "adm_fpenv.h"
#include "adm_mem.h"

#include <gsl/gsl_cdf.h>
#include <stdio.h>
#include <stdlib.h>

static const char *kind_names[ADM_BIAS_KINDS] = {"mean", "sign", "gain"};
static const char *scope_names[ADM_BIAS_SCOPES] = {"global", "channel", "row"};

const char *adm_bias_kind_name(int k) { return k >= 0 && k < ADM_BIAS_KINDS ? kind_names[k] : "invalid"; }
const char *adm_bias_scope_name(int s) { return s >= 0 && s < ADM_BIAS_SCOPES ? scope_names[s] : "invalid"; }

/* ------------------------------------------------------------ one capture */

static inline void raw_merge(double *acc, const double *g)
{
    for (int t = 0; t < RAW_NS; t++) acc[t] += g[t];
}

static inline void mom_add(adm_moments *m, double x)
{
    m->n += 1;
    m->s1 += x;
    m->s2 += x * x;
}

/* u_w: the working precision's unit roundoff (fp32's for outputs of fp32
 * and narrower, fp64's for fp64 outputs). One rounding of a scale in it (a
 * reciprocal 1/K, a scale folded into a constant) moves every output by a
 * relative u_w at most: a rounding moved, which the lossless tier admits
 * (torch.compile's fp32 mean of squares against eager's on the H200: a
 * common gain of 0.3-1 D). */
static double unit_roundoff(adm_dtype fmt) { return fmt == ADM_FP64 ? 0x1p-53 : 0x1p-24; }

/* The scale that turns the gain's raw weight o u^2 into the gain's
 * component in output units: the slope sum(o u^2 x) / sum((o u)^2) times
 * rms(o), as a mean over the n elements. 0: no scale. */
static double gain_scale(const double *g)
{
    double n = g[RAW_N];
    if (!(n > 0) || !(g[RAW_OU2] > 0)) return 0;
    return sqrt(g[RAW_O2] / n) * n / g[RAW_OU2];
}

/* A group's lean and its sampling variance for series s and kind k, in
 * units of D: L, the mean of z over the group, and v = var(z) / n. 0 when
 * the group cannot say (fewer than 2 elements, or no scale for the gain). */
static int group_lean(const double *g, int s, int k, double invD, double *L, double *v)
{
    double n = g[RAW_N], sc = invD, s1, s2, var;
    if (n < 2) return 0;
    if (k == ADM_BIAS_GAIN) {
        double gs = gain_scale(g);
        if (!(gs > 0)) return 0;
        sc *= gs;
    }
    s1 = g[RAW_SER + (s * ADM_BIAS_KINDS + k) * 2] * sc;
    s2 = g[RAW_SER + (s * ADM_BIAS_KINDS + k) * 2 + 1] * sc * sc;
    *L = s1 / n;
    var = fmax(0.0, (s2 - n * *L * *L) / (n - 1));
    *v = var / n;
    return 1;
}

/* A group's lean of series s in ulps at the condition scale and its
 * sampling variance, in units of D (GATES.md, gate 2, the group tests in
 * ulps): for the mean and the sign (d only) the group's mean of u d or
 * sign(o) u d times mu, the capture's mean ulp in D; for the gain the
 * weighted slope sum(o u^2 x) / sum((o u)^2) times the group's rms(o u)
 * times cg, the capture's rms(o) / rms(o u) / D. Either is the group's
 * lean in D for a lean of a constant number of ulps (of a constant
 * relative size for the gain) where every element's ulp is the capture's
 * mean, and every element's term has the same spread in ulps where the
 * unweighted lean is carried by the groups of the largest ulps. 0 where
 * the group cannot say (fewer than 2 elements, no scale, a sum that is not
 * finite: an fp64 output's exact zero, whose inverse ulp overflows). */
static int group_lean_ulps(const double *g, int s, int k, double mu, double cg, double *L, double *v)
{
    double n = g[RAW_N], sc, s1, s2, var;
    if (n < 2) return 0;
    if (k == ADM_BIAS_GAIN) {
        if (!(g[RAW_OU2] > 0) || !isfinite(g[RAW_OU2])) return 0;
        sc = cg * sqrt(n / g[RAW_OU2]);
        s1 = g[RAW_SER + (s * ADM_BIAS_KINDS + k) * 2];
        s2 = g[RAW_SER + (s * ADM_BIAS_KINDS + k) * 2 + 1];
    } else {
        sc = mu;
        s1 = g[RAW_UW + 2 * k];
        s2 = g[RAW_UW + 2 * k + 1];
    }
    if (!(sc > 0) || !isfinite(sc)) return 0;
    s1 *= sc;
    s2 *= sc * sc;
    if (!isfinite(s1) || !isfinite(s2)) return 0;
    *L = s1 / n;
    var = fmax(0.0, (s2 - n * *L * *L) / (n - 1));
    *v = var / n;
    return 1;
}

/* Adds the groups of one scope (rows or channels) to the evidence, and the
 * materiality floor's relative part: the RMS across groups of one
 * rounding of a scale (u_w times the group's mean of o, of |o|, rms(o)).
 * mu, cg: group_lean_ulps's scales; vru: the variance of one element's
 * reference error in ulps (mean, sign), in D^2 by mu, over the whole
 * output (the reference's sums in ulps are not kept per group: under the
 * ulp model its spread is the same in every group, and it bounds only the
 * power). */
static void groups_to_evidence(adm_evidence *ev, int scope, const double *raw, int64_t G, double invD, double uw,
                               double n_elems, double mu, double cg, const double vru[2])
{
    double fl[ADM_BIAS_KINDS] = {0, 0, 0};
    int64_t used = 0;
    for (int64_t g = 0; g < G; g++) {
        const double *r = raw + g * RAW_NS;
        double n = r[RAW_N];
        if (n < 2) continue;
        used++;
        fl[ADM_BIAS_MEAN] += (r[RAW_O] / n) * (r[RAW_O] / n);
        fl[ADM_BIAS_SIGN] += (r[RAW_AO] / n) * (r[RAW_AO] / n);
        fl[ADM_BIAS_GAIN] += r[RAW_O2] / n;
        for (int k = 0; k < ADM_BIAS_KINDS; k++) {
            double L[3], v[3];
            int ok = 1;
            for (int s = 0; s < 3 && ok; s++) ok = group_lean(r, s, k, invD, &L[s], &v[s]);
            if (!ok) continue;
            mom_add(&ev->gd[scope][k], L[SER_D] * L[SER_D] - v[SER_D]);
            mom_add(&ev->gr[scope][k], L[SER_R] * L[SER_R] - v[SER_R]);
            mom_add(&ev->gc[scope][k], L[SER_C] * L[SER_C] - v[SER_C]);
            ev->gvr[scope][k] += v[SER_R];
            /* the variance ratio's Satterthwaite degrees of freedom: a
             * group's v is a sample variance of n - 1 degrees of freedom */
            ev->gvd[scope][k] += v[SER_D];
            ev->gvd2[scope][k] += v[SER_D] * v[SER_D];
            ev->gvdm[scope][k] += v[SER_D] * v[SER_D] / (n - 1);
        }
        for (int k = 0; k < ADM_BIAS_KINDS; k++) {
            double Lu, vu, Lr, vr;
            if (!group_lean_ulps(r, SER_D, k, mu, cg, &Lu, &vu)) continue;
            mom_add(&ev->gdu[scope][k], Lu * Lu - vu);
            ev->gvdu[scope][k] += vu;
            ev->gvdu2[scope][k] += vu * vu;
            ev->gvdum[scope][k] += vu * vu / (n - 1);
            if (k == ADM_BIAS_GAIN) {
                if (group_lean_ulps(r, SER_R, k, mu, cg, &Lr, &vr)) ev->gvru[scope][k] += vr;
            } else {
                ev->gvru[scope][k] += vru[k] / n;
            }
        }
    }
    for (int k = 0; k < ADM_BIAS_KINDS && used; k++)
        ev->floor_rel[scope][k] += n_elems * uw * sqrt(fl[k] / (double)used) * invD;
}

void adm_h_stats_free(adm_h_stats_raw *s)
{
    free(s->rows);
    free(s->chans);
    free(s->mg);
    free(s->ph);
    memset(s, 0, sizeof *s);
}

adm_status adm_h_stats_alloc(adm_h_stats_raw *s, int64_t R, int64_t N)
{
    memset(s, 0, sizeof *s);
    s->R = R;
    s->N = N;
    s->first_kind = s->first_bits = -1;
    s->nb = (R + ADM_SE_RB - 1) / ADM_SE_RB;
    s->ns = adm_se_stripes(N, s->nb);
    s->rows = adm_h_calloc((size_t)(R * RAW_NS + 1), sizeof(double));
    s->chans = adm_h_calloc((size_t)(s->ns * N * RAW_NS + 1), sizeof(double));
    if (s->chans) adm_mem_huge(s->chans, sizeof(double) * (size_t)(s->ns * N * RAW_NS + 1));
    s->mg = adm_h_calloc((size_t)(s->nb * MG_NS + 1), sizeof(double));
    s->ph = adm_h_calloc((size_t)(s->nb * HIST_BLOCK + 1), sizeof(int64_t));
    s->bytes = 8.0 * (double)((R * RAW_NS + 1) + (s->ns * N * RAW_NS + 1) + (s->nb * MG_NS + 1) +
                              (s->nb * HIST_BLOCK + 1));
    if (!s->rows || !s->chans || !s->mg || !s->ph) {
        adm_h_stats_free(s);
        return ADM_FAIL(ADM_ERR_NOMEM, "judge: out of memory for the statistics of %lld rows x %lld channels",
                        (long long)R, (long long)N);
    }
    return ADM_OK;
}

double adm_h_stats_raw_bytes(int64_t R, int64_t N)
{
    int64_t nb = (R + ADM_SE_RB - 1) / ADM_SE_RB, ns = adm_se_stripes(N, nb);
    /* rows, stripes, blocks and histograms (one spare element each), and
     * the per-channel RMS where there is no condition scale */
    return 8.0 * ((double)(R + ns * N) * RAW_NS + (double)nb * (MG_NS + HIST_BLOCK) + 4 + (double)(N + 1));
}

adm_status adm_h_measure_raw(const adm_judge_input *in, const adm_h_reader *rd, const adm_h_reader *cd,
                             adm_h_stats_raw *s)
{
    const double *o = in->oracle->data;
    int64_t R = s->R, N = s->N, nb = s->nb, ns = s->ns;
    adm_dtype fmt = in->ref->dtype;
    const double *cnd = in->cond ? (const double *)in->cond->data + in->cond->offset : NULL;
    double *rows = s->rows, *chans = s->chans, *mg = s->mg, *colrms;
    int64_t *ph = s->ph;
    colrms = cnd ? NULL : adm_h_calloc((size_t)(N + 1), sizeof(double));
    if (!cnd && !colrms)
        return ADM_FAIL(ADM_ERR_NOMEM, "judge: out of memory for the statistics of %lld rows x %lld channels",
                        (long long)R, (long long)N);
    for (int64_t row = 0; row < R && !cnd; row++)
        for (int64_t j = 0; j < N; j++) {
            double x = o[row * N + j];
            if (isfinite(x)) colrms[j] += x * x;
        }
    for (int64_t j = 0; j < N && !cnd; j++) colrms[j] = sqrt(colrms[j] / (double)(R ? R : 1));
    /* One pass over the output, in ns stripes of blocks of ADM_SE_RB rows:
     * each row's sums are its own (in channel order), each block's
     * magnitude sums (its rows' in row order, each row's in channel
     * order) and histograms too, each stripe's channel sums (in
     * row order) too, and they are merged in order, so the same inputs
     * give the same bits with 1 or 16 threads (floating-point addition is
     * not associative; OpenMP's reduction order follows the thread count)
     * and on the GPU (harness/stats_cuda.cu). */
#pragma omp parallel
    {
    adm_fpenv fe;
    adm_fpenv_enter(&fe);
#pragma omp for schedule(dynamic, 1)
    for (int64_t st = 0; st < ns; st++) {
        double *C = chans + st * N * RAW_NS;
        for (int64_t bk = st * nb / ns; bk < (st + 1) * nb / ns; bk++) {
            /* the block's sums and maxima in locals (no aliasing with
             * the group sums to fear): each row's from zero in channel
             * order, folded into the block's in row order */
            adm_se_mag m, mr;
            int64_t *H = ph + bk * HIST_BLOCK;
            memset(&m, 0, sizeof m);
            for (int64_t row = bk * ADM_SE_RB; row < R && row < (bk + 1) * ADM_SE_RB; row++) {
                double rr = 0, floor_ = 0, g[RAW_NS];
                memcpy(g, rows + row * RAW_NS, sizeof g);
                for (int64_t j = 0; j < N && !cnd; j++) {
                    double x = o[row * N + j];
                    if (isfinite(x)) rr += x * x;
                }
                if (!cnd) floor_ = sqrt(rr / (double)N);
                memset(&mr, 0, sizeof mr);
                for (int64_t j = 0; j < N; j++) {
                    int64_t i = row * N + j;
                    double r = adm_h_at(rd, i), c = adm_h_at(cd, i), oi = o[i];
                    adm_se_elem e;
                    int slot[4];
                    if (!adm_se_measure(fmt, oi, r, c, cnd != NULL, cnd ? cnd[i] : 0, floor_, cnd ? 0 : colrms[j],
                                        &e))
                        continue;
                    adm_se_mag_add(&mr, &e, oi, c - r, adm_se_nontrivial(cnd != NULL, oi, cnd ? cnd[i] : 0));
                    adm_se_hist_slots(&e, slot);
                    for (int k = 0; k < 4; k++) H[slot[k]]++;
                    raw_add2(g, C + j * RAW_NS, oi, e.u, c - r, e.er, e.ec);
                }
                memcpy(rows + row * RAW_NS, g, sizeof g);
                adm_se_mag_fold(&m, &mr);
            }
            adm_se_mag_store(&m, mg + bk * MG_NS);
        }
    }
    adm_fpenv_leave(&fe);
    }
    free(colrms);
    return ADM_OK;
}

void adm_h_stats_merge(adm_h_stats_raw *s)
{
    int64_t N = s->N, ns = s->ns;
    double *chans = s->chans;
    if (s->merged) return;
    for (int64_t st = 1; st < ns; st++)
        for (int64_t t = 0; t < N * RAW_NS; t++) chans[t] += chans[st * N * RAW_NS + t];
    s->merged = 1;
}

void adm_h_stats_finish(adm_h_stats_raw *s, adm_dtype fmt, int has_cnd, adm_verdict *v)
{
    int64_t R = s->R, N = s->N, nb = s->nb;
    double *rows = s->rows, *chans = s->chans, *mg = s->mg;
    const int64_t *ph = s->ph;
    double tot[RAW_NS] = {0}, m[MG_NS] = {0}, D, Du, invD, invDu, uw = unit_roundoff(fmt);
    adm_evidence *ev = &v->ev;
    memset(ev, 0, sizeof *ev);
    v->ulp_gated = has_cnd;
    adm_h_stats_merge(s);
    for (int64_t bk = 0; bk < nb; bk++) {
        const double *M = mg + bk * MG_NS;
        for (int t = MG_ER2; t <= MG_ULP; t++) m[t] += M[t];
        for (int t = MG_MAXR; t <= MG_UMAXQ; t++) m[t] = fmax(m[t], M[t]);
        m[MG_NONTRIV] += M[MG_NONTRIV];
        for (int k = 0; k < ADM_HIST_BINS; k++) {
            v->hist_r[k] += ph[bk * HIST_BLOCK + k];
            v->hist_c[k] += ph[bk * HIST_BLOCK + ADM_HIST_BINS + k];
        }
        for (int k = 0; k < ADM_HIST_LOG_BINS; k++) {
            v->hist_log_r[k] += ph[bk * HIST_BLOCK + 2 * ADM_HIST_BINS + k];
            v->hist_log_c[k] += ph[bk * HIST_BLOCK + 2 * ADM_HIST_BINS + ADM_HIST_LOG_BINS + k];
        }
    }
    for (int64_t row = 0; row < R; row++) raw_merge(tot, rows + row * RAW_NS);
    {
        double md = tot[RAW_N];
        v->n = (int64_t)md;
        ev->captures = 1;
        ev->n = md;
        ev->nontrivial = m[MG_NONTRIV];
        ev->ulp_gated = v->ulp_gated;
        if (md > 0) {
            v->rms_r = sqrt(m[MG_ER2] / md);
            v->rms_c = sqrt(m[MG_EC2] / md);
            v->rms_round = sqrt(m[MG_Q2] / md);
            v->ulp_rms_r = sqrt(m[MG_UR2] / md);
            v->ulp_rms_c = sqrt(m[MG_UC2] / md);
            v->ulp_rms_round = sqrt(m[MG_UQ2] / md);
            v->out_rms = sqrt(tot[RAW_O2] / md);
        }
        v->max_r = m[MG_MAXR];
        v->max_c = m[MG_MAXC];
        v->max_round = m[MG_MAXQ];
        v->ulp_max_r = m[MG_UMAXR];
        v->ulp_max_c = m[MG_UMAXC];
        D = v->rms_expected = fmax(v->rms_r, v->rms_round);
        Du = fmax(v->ulp_rms_r, v->ulp_rms_round);
        /* Everything in units of D. A reference and a correctly rounded
         * output without error (D = 0: relu, an exactly representable
         * result) leave no scale: such a capture contributes in output
         * units, where any error of the candidate's is infinitely many
         * D's (gate 1 fails it). */
        invD = D > 0 ? 1.0 / D : 1.0;
        invDu = Du > 0 ? 1.0 / Du : 1.0;
#define SCALED(x, inv, unit0) ((unit0) && (x) != 0 ? INFINITY : (x) * (inv))
        ev->ec2 = SCALED(m[MG_EC2], invD * invD, D == 0);
        ev->er2 = m[MG_ER2] * invD * invD;
        ev->q2 = m[MG_Q2] * invD * invD;
        ev->uc2 = SCALED(m[MG_UC2], invDu * invDu, Du == 0);
        ev->ur2 = m[MG_UR2] * invDu * invDu;
        ev->uq2 = m[MG_UQ2] * invDu * invDu;
        ev->maxc = SCALED(m[MG_MAXC], invD, D == 0);
        ev->maxr = m[MG_MAXR] * invD;
        ev->maxq = m[MG_MAXQ] * invD;
        ev->umaxc = SCALED(m[MG_UMAXC], invDu, Du == 0);
        ev->umaxr = m[MG_UMAXR] * invDu;
        ev->umaxq = m[MG_UMAXQ] * invDu;
        /* one factor at a time: invD^4 itself may overflow where D^4 sums do not */
#define SCALED4(x, inv, unit0) ((unit0) && (x) != 0 ? INFINITY : (x) * (inv) * (inv) * (inv) * (inv))
        ev->ec4 = SCALED4(m[MG_EC4], invD, D == 0);
        ev->er4 = m[MG_ER4] * invD * invD * invD * invD;
        ev->q4 = m[MG_Q4] * invD * invD * invD * invD;
        ev->ecr = SCALED4(m[MG_ECR], invD, D == 0);
        ev->ecq = SCALED4(m[MG_ECQ], invD, D == 0);
        ev->uc4 = SCALED4(m[MG_UC4], invDu, Du == 0);
        ev->ur4 = m[MG_UR4] * invDu * invDu * invDu * invDu;
        ev->uq4 = m[MG_UQ4] * invDu * invDu * invDu * invDu;
        ev->ucr = SCALED4(m[MG_UCR], invDu, Du == 0);
        ev->ucq = SCALED4(m[MG_UCQ], invDu, Du == 0);
#undef SCALED4
#undef SCALED
        if (md > 0) {
            double orms = sqrt(tot[RAW_O2] / md);
            for (int k = 0; k < ADM_BIAS_KINDS; k++) {
                double sc = invD * (k == ADM_BIAS_GAIN ? gain_scale(tot) : 1.0);
                double *dd = tot + RAW_SER + (SER_D * ADM_BIAS_KINDS + k) * 2;
                double *rr = tot + RAW_SER + (SER_R * ADM_BIAS_KINDS + k) * 2;
                ev->d[k] = (adm_moments){md, dd[0] * sc, dd[1] * sc * sc};
                ev->r[k] = (adm_moments){md, rr[0] * sc, rr[1] * sc * sc};
            }
            ev->floor_rel[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN] = md * uw * fabs(tot[RAW_O] / md) * invD;
            ev->floor_rel[ADM_BIAS_GLOBAL][ADM_BIAS_SIGN] = md * uw * (tot[RAW_AO] / md) * invD;
            ev->floor_rel[ADM_BIAS_GLOBAL][ADM_BIAS_GAIN] = md * uw * orms * invD;
            ev->o_rms_over_D = md * orms * invD;
            ev->dw[ADM_BIAS_MEAN] = (adm_moments){md, m[MG_WD1], m[MG_WD2]};
            ev->rw[ADM_BIAS_MEAN] = (adm_moments){md, m[MG_WR1], m[MG_WR2]};
            ev->dw[ADM_BIAS_SIGN] = (adm_moments){md, m[MG_SD1], m[MG_SD2]};
            ev->rw[ADM_BIAS_SIGN] = (adm_moments){md, m[MG_SR1], m[MG_SR2]};
            ev->ulp_over_D = m[MG_ULP] * invD;
            /* A 1-D output's one row is the whole output and its channels
             * are single elements: the group statistics would only repeat
             * the global ones (or say nothing). */
            if (R > 1 && N > 1) {
                double mu = m[MG_ULP] / md * invD, cg = 0, vru[2];
                if (tot[RAW_OU2] > 0 && isfinite(tot[RAW_OU2])) cg = sqrt(tot[RAW_O2] / tot[RAW_OU2]) * invD;
                for (int k = 0; k < 2; k++) {
                    const double *w = k == ADM_BIAS_MEAN ? m + MG_WR1 : m + MG_SR1;
                    double var = md >= 2 ? (w[1] - w[0] * w[0] / md) / (md - 1) : 0;
                    vru[k] = isfinite(var) && var > 0 ? var * mu * mu : 0;
                }
                groups_to_evidence(ev, ADM_BIAS_CHANNEL, chans, N, invD, uw, md, mu, cg, vru);
                groups_to_evidence(ev, ADM_BIAS_ROW, rows, R, invD, uw, md, mu, cg, vru);
            }
        }
    }
}

adm_status adm_h_measure_numeric(const adm_judge_input *in, const adm_h_reader *rd, const adm_h_reader *cd,
                                 adm_verdict *v)
{
    int64_t n = adm_tensor_numel(in->oracle);
    int64_t N = in->oracle->ndim ? in->oracle->shape[in->oracle->ndim - 1] : 1, R = N ? n / N : 0;
    adm_h_stats_raw s;
    adm_status st;
    ADM_TRY(adm_h_stats_alloc(&s, R, N));
    if ((st = adm_h_measure_raw(in, rd, cd, &s)) == ADM_OK) adm_h_stats_finish(&s, in->ref->dtype, in->cond != NULL, v);
    adm_h_stats_free(&s);
    return st;
}

#ifdef ADM_MUTATION
int adm_h_mutant(const char *name)
{
    const char *m = getenv("ADM_MUTANT");
    return m && !strcmp(m, name);
}
#endif

/* ------------------------------------------------------------ pooling */

static void mom_pool(adm_moments *a, const adm_moments *b)
{
    a->n += b->n;
    a->s1 += b->s1;
    a->s2 += b->s2;
}

static void evidence_pool(adm_evidence *a, const adm_evidence *b)
{
    int first = a->captures == 0;
    a->captures += b->captures;
    a->n += b->n;
    a->nontrivial += b->nontrivial;
    a->ec2 += b->ec2;
    a->er2 += b->er2;
    a->q2 += b->q2;
    a->uc2 += b->uc2;
    a->ur2 += b->ur2;
    a->uq2 += b->uq2;
    a->ec4 += b->ec4;
    a->er4 += b->er4;
    a->q4 += b->q4;
    a->ecr += b->ecr;
    a->ecq += b->ecq;
    a->uc4 += b->uc4;
    a->ur4 += b->ur4;
    a->uq4 += b->uq4;
    a->ucr += b->ucr;
    a->ucq += b->ucq;
    a->maxc = fmax(a->maxc, b->maxc);
    a->maxr = fmax(a->maxr, b->maxr);
    a->maxq = fmax(a->maxq, b->maxq);
    a->umaxc = fmax(a->umaxc, b->umaxc);
    a->umaxr = fmax(a->umaxr, b->umaxr);
    a->umaxq = fmax(a->umaxq, b->umaxq);
    a->ulp_gated = first ? b->ulp_gated : (a->ulp_gated && b->ulp_gated);
    for (int k = 0; k < ADM_BIAS_KINDS; k++) {
        mom_pool(&a->d[k], &b->d[k]);
        mom_pool(&a->r[k], &b->r[k]);
        if (k < 2) {
            mom_pool(&a->dw[k], &b->dw[k]);
            mom_pool(&a->rw[k], &b->rw[k]);
        }
        for (int s = 0; s < ADM_BIAS_SCOPES; s++) {
            mom_pool(&a->gd[s][k], &b->gd[s][k]);
            mom_pool(&a->gr[s][k], &b->gr[s][k]);
            mom_pool(&a->gc[s][k], &b->gc[s][k]);
            a->gvr[s][k] += b->gvr[s][k];
            a->gvd[s][k] += b->gvd[s][k];
            a->gvd2[s][k] += b->gvd2[s][k];
            a->gvdm[s][k] += b->gvdm[s][k];
            mom_pool(&a->gdu[s][k], &b->gdu[s][k]);
            a->gvdu[s][k] += b->gvdu[s][k];
            a->gvdu2[s][k] += b->gvdu2[s][k];
            a->gvdum[s][k] += b->gvdum[s][k];
            a->gvru[s][k] += b->gvru[s][k];
            a->floor_rel[s][k] += b->floor_rel[s][k];
        }
    }
    a->o_rms_over_D += b->o_rms_over_D;
    a->ulp_over_D += b->ulp_over_D;
    a->flips_r += b->flips_r;
    a->flips_c += b->flips_c;
    a->ties += b->ties;
    a->decisions += b->decisions;
}

/* ------------------------------------------------------------ the tests */

/* The upper 1 - p quantile of Student's t with dof degrees of freedom. */
static double t_quantile(double p, double dof)
{
    if (!(dof >= 1)) return INFINITY;
    return gsl_cdf_tdist_Qinv(p, dof);
}

static double mom_mean(const adm_moments *m) { return m->n > 0 ? m->s1 / m->n : 0; }

/* The paired (delta-method) standard error of log(RMS_c / RMS_y) over n
 * elements: log RMS = log(S) / 2 with S the mean square, so the log ratio
 * is to first order the mean of z_i = a_i / (2 A) - b_i / (2 B) (a = e_c^2,
 * A = mean a; b = y^2, B = mean b, y the yardstick's series), whose sample
 * variance needs only the sums of a^2, b^2 and a b. Candidate and
 * reference errors on the same elements are paired, and errors whose size
 * follows |o| (bf16) make the few largest elements carry the mean squares:
 * both are in these sums, where a fixed 1/sqrt(n) assumes independent,
 * homoscedastic errors. 0 where it cannot be estimated (fewer than 2
 * elements, a zero or non-finite sum): the caller's floor applies. */
static double log_ratio_se(double n, double a1, double a2, double b1, double b2, double ab)
{
    double A, B, var;
    if (!(n >= 2) || !(a1 > 0) || !(b1 > 0)) return 0;
    A = a1 / n;
    B = b1 / n;
    /* sum (a/A - b/B)^2 / 4, whose terms have mean 0 exactly */
    var = (a2 / (A * A) + b2 / (B * B) - 2 * ab / (A * B)) / 4 / (n - 1);
    if (!isfinite(var) || !(var > 0)) return 0;
    return sqrt(var / n);
}

/* The sample variance (n - 1 in the denominator), never negative. */
static double mom_var(const adm_moments *m)
{
    if (m->n < 2) return 0;
    return fmax(0.0, (m->s2 - m->s1 * m->s1 / m->n) / (m->n - 1));
}

/* A statistic's own value counted in proportion to its evidence: shrunk
 * toward zero by the share of its square that its noise explains (the
 * positive-part James-Stein factor), so a reference lean that is mostly
 * noise exempts nothing. */
static double credited(double x, double se)
{
    if (x == 0) return 0;
    return x * fmax(0.0, 1.0 - (se * se) / (x * x));
}

/* Whether the mean's or the sign's test in ulps applies: kinds 0 and 1,
 * sums in ulps that are finite (an fp64 output's exact zero has an inverse
 * ulp that overflows: the mean of d alone decides there). */
static int ulps_apply(const adm_evidence *ev, int k)
{
    return k != ADM_BIAS_GAIN && ev->d[k].n >= 2 && ev->ulp_over_D > 0 && isfinite(ev->dw[k].s2) &&
           isfinite(ev->rw[k].s2);
}

static void test_global(const adm_evidence *ev, int k, double mat, double alpha_k, adm_bias_test *b)
{
    const adm_moments *d = &ev->d[k], *r = &ev->r[k];
    double n = d->n, se, se_r, Sr, Sc, cr, det;
    memset(b, 0, sizeof *b);
    if (n < 2 || (k == ADM_BIAS_GAIN && !(ev->o_rms_over_D > 0))) return;
    b->applicable = 1;
    b->floor = fmax(mat, ev->floor_rel[ADM_BIAS_GLOBAL][k] / n);
    b->diff = mom_mean(d);
    se = b->se = sqrt(mom_var(d) / n);
    Sr = mom_mean(r);
    se_r = sqrt(mom_var(r) / n);
    Sc = Sr + b->diff;
    b->ref = Sr;
    b->cand = Sc;
    cr = b->credited_ref = credited(Sr, se_r);
    b->excess = fabs(cr + b->diff) - fabs(cr);
    b->dof = n - 1;
    b->t = t_quantile(alpha_k / 2, b->dof);
    b->z = se > 0 ? fabs(b->diff) / se : (b->diff != 0 ? INFINITY : 0);
    /* power: a lean moves roundings, so its paired spread is never below
     * the reference's own noise */
    det = b->t * fmax(se, se_r);
    if (ulps_apply(ev, k)) {
        /* The mean's and the sign's second test, in ulps at the condition
         * scale (GATES.md, gate 2): a rounding's error spreads in
         * proportion to the element's ulp, and a rounding that leans (a
         * nudge, rounding up, truncation) leans by a share of that ulp, so
         * the mean of u d is its matched filter, every element's term of
         * the same spread, where the mean of d is carried by the few
         * largest elements' noise. Where a path errs far beyond its ulps
         * on a few elements (an fp32 tanh-GELU's cancelling tail) the
         * mean of d is the better test: both are made, each a statistic of
         * the shared false-alarm budget. Its standard error in D is the
         * one in ulps times the mean ulp in D (exact for a lean of a
         * constant number of ulps). */
        const adm_moments *dw = &ev->dw[k], *rw = &ev->rw[k];
        double sw = sqrt(mom_var(dw) / n), swr = sqrt(mom_var(rw) / n), mu = ev->ulp_over_D / n;
        double m = mom_mean(dw), zw = sw > 0 ? fabs(m) / sw : (m != 0 ? INFINITY : 0);
        b->se_ulp = sw * mu;
        b->z = fmax(b->z, zw);
        det = fmin(det, b->t * fmax(sw, swr) * mu);
    }
    /* significance on the paired difference (the paths' errors are
     * strongly paired: independent standard errors hide a lean of 0.5 D at
     * 64 outputs), materiality on the lean beyond the reference's */
    b->failed = b->z > b->t && b->excess > b->floor && !ADM_MUTANT(kind_names[k]);
    b->detect = fmax(b->floor, det);
}

static int adm_mutant_group(int scope, int k)
{
    char name[32];
    snprintf(name, sizeof name, "%s_%s", scope_names[scope], kind_names[k]);
    (void)name;
    return ADM_MUTANT(name);
}

/* The upper 1 - p quantile of F(h1, h2) (h2 infinite: chi^2(h1) / h1),
 * by bisection on its upper tail, to 1e-12 relative: GSL's own inverse
 * gives up (and aborts through its error handler) at some fractional
 * degrees of freedom. */
static double f_quantile(double p, double h1, double h2)
{
    double lo = 0, hi = 1;
    if (!(h1 > 0) || !(h2 > 0) || !(p > 0 && p < 1)) return INFINITY;
    if (!isfinite(h2)) return gsl_cdf_chisq_Qinv(p, h1) / h1;
    while (gsl_cdf_fdist_Q(hi, h1, h2) > p) {
        lo = hi;
        hi *= 2;
        if (hi > 1e300) return INFINITY;
    }
    for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; it++) {
        double mid = (lo + hi) / 2;
        if (gsl_cdf_fdist_Q(mid, h1, h2) > p) lo = mid;
        else hi = mid;
    }
    return hi;
}

static void test_group(const adm_evidence *ev, int scope, int k, double mat, double alpha_k, adm_bias_test *b)
{
    const adm_moments *d = &ev->gd[scope][k], *r = &ev->gr[scope][k], *c = &ev->gc[scope][k];
    double G = d->n, se_d, se_r, Ur, Uc, cr, Sv = ev->gvd[scope][k], Sv2 = ev->gvd2[scope][k], Svm = ev->gvdm[scope][k];
    double SL2, h1, h2, det;
    int sig;
    memset(b, 0, sizeof *b);
    if (G < 2) return;
    b->applicable = 1;
    /* A lean confined to tokens changes with the tokens at every step and
     * averages out over layers and steps like noise, where a global lean
     * or a channel's (tied to the weights) repeats with the same sign: a
     * token's is material only at a sizable share of the error itself
     * (GATES.md, gate 2: 2.5 bias_material, a quarter of D, adds 3% to the
     * RMS error; lossless attention kernels measure up to 0.17 D beyond
     * the reference's, from P rounded to bf16 coherently across a row). */
    b->floor = fmax(scope == ADM_BIAS_ROW ? 2.5 * mat : mat, ev->floor_rel[scope][k] / ev->n);
    /* U = mean over the groups of L^2 - v: an unbiased estimate of the mean
     * square of the groups' true leans; its standard error from the
     * spread across the groups */
    b->diff = mom_mean(d);
    b->se = sqrt(mom_var(d) / G);
    Ur = mom_mean(r);
    se_r = sqrt(mom_var(r) / G);
    Uc = mom_mean(c);
    b->ref = sqrt(fmax(0.0, Ur));
    b->cand = sqrt(fmax(0.0, Uc));
    cr = credited(fmax(0.0, Ur), se_r);
    b->credited_ref = sqrt(cr);
    b->excess = b->cand - b->credited_ref;
    /* Significance, two tests sharing the statistic's share (GATES.md,
     * gate 2): (1) U of d against the spread of L^2 - v across the G
     * groups, Student-t at G - 1 degrees of freedom, robust to groups of
     * different noise but weak where the groups are few (t = 20 at 4
     * groups); (2) the variance ratio F = sum L^2 / sum v, the noise model
     * of the global tests (independent elements of unequal spread), each
     * group's own v pooled over the groups with its n_g - 1 degrees of
     * freedom: under no lean beyond noise sum L^2 is about sum(v) chi^2(h1)
     * / h1 and sum v about sum(v) chi^2(h2) / h2 (Satterthwaite), h1 =
     * (sum v)^2 / sum v^2 <= G, h2 = (sum v)^2 / sum(v^2 / (n_g - 1)): strong
     * where the groups are few and large (a capture's tokens), weak where
     * they are small (4 values a channel: a sub-ulp lean's own flips
     * inflate v). Each one-sided at half the share. */
    b->dof = G - 1;
    se_d = b->se;
    b->t = t_quantile(alpha_k / 2, b->dof);
    SL2 = d->s1 + Sv;
    h1 = Sv2 > 0 ? Sv * Sv / Sv2 : G;
    h2 = Svm > 0 ? Sv * Sv / Svm : INFINITY;
    b->f_quantile = f_quantile(alpha_k / 2, h1, h2);
    b->f = Sv > 0 ? SL2 / Sv : (SL2 > 0 ? INFINITY : 0);
    b->f_dof1 = h1;
    b->f_dof2 = h2;
    b->z = se_d > 0 ? b->diff / se_d : INFINITY;
    sig = b->diff > b->t * se_d || b->f > b->f_quantile;
    {
        /* power: the smallest of the tests' (never below the reference's
         * own noise): under pure noise U scatters by sqrt(2 / G) times the
         * mean variance of a group's lean; the variance ratio reaches its
         * quantile where sum v + G lean^2 = F sum v */
        double noise = sqrt(2.0 / G) * ev->gvr[scope][k] / G;
        double p1 = sqrt(b->t * fmax(se_d, noise));
        double p2 = sqrt(fmax(0.0, b->f_quantile - 1) * fmax(Sv, ev->gvr[scope][k]) / G);
        det = isfinite(p2) ? fmin(p1, p2) : p1;
    }
    if (ev->gdu[scope][k].n >= 2) {
        /* The same two tests in ulps at the condition scale (GATES.md,
         * gate 2), a statistic of its own in the false-alarm budget, each
         * test at half its share: every element's term has the same
         * spread in ulps, so the groups whose ulps are 8-64x the rest (the
         * outlier channels) no longer carry the tests' noise and little of
         * a lean's signal, and the groups' leans have about equal
         * variances (h1 near G). The leans are in D by the capture's mean
         * ulp (group_lean_ulps), so the power is in D too; materiality
         * stays on the excess in D above. */
        const adm_moments *du = &ev->gdu[scope][k];
        double Gu = du->n, Svu = ev->gvdu[scope][k], Sv2u = ev->gvdu2[scope][k], Svmu = ev->gvdum[scope][k];
        double SL2u = du->s1 + Svu, noise, p1, p2;
        b->ulps_applicable = 1;
        b->u_diff = mom_mean(du);
        b->u_se = sqrt(mom_var(du) / Gu);
        b->u_dof = Gu - 1;
        b->u_t = t_quantile(alpha_k / 2, b->u_dof);
        b->u_f_dof1 = Sv2u > 0 ? Svu * Svu / Sv2u : Gu;
        b->u_f_dof2 = Svmu > 0 ? Svu * Svu / Svmu : INFINITY;
        b->u_f_quantile = f_quantile(alpha_k / 2, b->u_f_dof1, b->u_f_dof2);
        b->u_f = Svu > 0 ? SL2u / Svu : (SL2u > 0 ? INFINITY : 0);
        if ((b->u_diff > b->u_t * b->u_se || b->u_f > b->u_f_quantile) && !ADM_MUTANT("group_ulps")) sig = 1;
        noise = sqrt(2.0 / Gu) * ev->gvru[scope][k] / Gu;
        p1 = sqrt(b->u_t * fmax(b->u_se, noise));
        p2 = sqrt(fmax(0.0, b->u_f_quantile - 1) * fmax(Svu, ev->gvru[scope][k]) / Gu);
        det = fmin(det, isfinite(p2) ? fmin(p1, p2) : p1);
    }
    b->failed = sig && b->excess > b->floor && !adm_mutant_group(scope, k);
    b->detect = fmax(b->floor, det);
}

static void explain_bias(adm_verdict *v, int scope, int k, const adm_bias_test *b, double Dabs, int pooled)
{
    char scale[64] = "";
    double z = b->z;
    if (!pooled && Dabs > 0) snprintf(scale, sizeof scale, "D = %.3g, ", Dabs);
    if (scope == ADM_BIAS_GLOBAL) {
        static const char *what[3] = {"Signed mean error", "Mean error along sign(oracle)", "Gain (error on the oracle)"};
        static const char *why[3] = {"a rounding that leans one way", "truncation-like",
                                     "a scale error"};
        adm_h_fail_gate(v, ADM_GATE_BIAS, "%s leans by %.3g D against the reference path's %.3g D (%sfloor %.2g D, "
                        "%.1f standard errors): %s.", what[k], b->cand, b->ref, scale, b->floor, z, why[k]);
    } else {
        char ulps[96] = "";
        if (b->ulps_applicable)
            snprintf(ulps, sizeof ulps, "; in ulps %.1f against %.2f, %.2f against %.2f",
                     b->u_se > 0 ? b->u_diff / b->u_se : (b->u_diff > 0 ? INFINITY : 0), b->u_t, b->u_f,
                     b->u_f_quantile);
        adm_h_fail_gate(v, ADM_GATE_BIAS, "Per-%s %s error has RMS %.3g D beyond noise against the reference path's "
                        "%.3g D (%sfloor %.2g D, %.1f standard errors against %.2f, variance ratio %.2f against %.2f%s): "
                        "a %s confined to %s.",
                        scope == ADM_BIAS_CHANNEL ? "channel" : "row", kind_names[k], b->cand, b->ref, scale, b->floor,
                        z, b->t, b->f, b->f_quantile, ulps, k == ADM_BIAS_GAIN ? "scale error" : "bias",
                        scope == ADM_BIAS_CHANNEL ? "channels (a shifted bias vector, a channel scale)"
                                                  : "tokens (a per-token statistic rounded)");
    }
}

void adm_h_decide_numeric(adm_verdict *v, const adm_gate_config *cfg)
{
    const adm_evidence *ev = &v->ev;
    double n = ev->n, Dabs = v->rms_expected;
    int pooled = ev->captures > 1;
    memset(v->bias, 0, sizeof v->bias);
    memset(&v->power, 0, sizeof v->power);
    v->evidence_ok = ev->nontrivial >= (double)cfg->min_elements || ADM_MUTANT("evidence");
    if (!v->evidence_ok)
        adm_h_fail_gate(v, ADM_GATE_EVIDENCE,
                        "Only %.0f of the %.0f judged elements are finite and non-trivial (at least %lld needed): "
                        "an all-zero or all-NaN capture proves nothing; add captures with real activations.",
                        ev->nontrivial, n, (long long)cfg->min_elements);
    if (n == 0) {
        adm_h_note_gate(v, ADM_GATE_MAGNITUDE, "no element where the oracle, the reference and the candidate are all "
                        "finite");
        adm_h_note_gate(v, ADM_GATE_BIAS, "no finite elements to judge");
        return;
    }
    /* ---- gate 1 */
    {
        double den = fmax(sqrt(ev->er2 / n), sqrt(ev->q2 / n)), uden = fmax(sqrt(ev->ur2 / n), sqrt(ev->uq2 / n));
        /* Sampling allowances (GATES.md, gate 1). The ratio of two sample
         * RMS over n elements scatters by about 1/sqrt(n) in log space: the
         * limit is magnitude_limit exp(z / sqrt(n)). The reference's
         * maximum is one draw from its error distribution: the max's
         * yardstick is never below rms sqrt(2 ln(n / alpha)), alpha =
         * 1e-3, which n Gaussian draws of that RMS exceed with probability
         * below alpha (union bound over every pooled element). Where the
         * oracle has a condition scale, the max fails only when it exceeds
         * the limit in ulps at that scale as well: at the output's own
         * scale a cancelling element makes two equally good paths look
         * different (GATES.md). */
        double nf = n > 1 ? sqrt(2.0 * log(n / 1e-3)) : 0.0, dmax = fmax(fmax(ev->maxr, ev->maxq), den * nf);
        double dumax = fmax(fmax(ev->umaxr, ev->umaxq), uden * nf), lim, lim_rms, lim_ulp, t1, se, seu, zf;
        v->ulp_gated = ev->ulp_gated;
        zf = cfg->magnitude_z / sqrt(n);
        lim = v->magnitude_limit_n = cfg->magnitude_limit * exp(zf);
        /* The RMS ratios' limits from the data (GATES.md, gate 1): the
         * paired standard error of the log ratio against the yardstick's
         * series (the reference's error, or the correctly rounded output's
         * where that is larger), times the one-sided Student-t quantile of
         * magnitude_alpha shared by the RMS and, where gated, the ulp
         * ratio; never below the fixed allowance zf, which the real-kernel
         * sweep was measured against. */
        t1 = n >= 2 ? t_quantile(cfg->magnitude_alpha / (ev->ulp_gated ? 2 : 1), n - 1) : 0;
        se = ev->er2 >= ev->q2 ? log_ratio_se(n, ev->ec2, ev->ec4, ev->er2, ev->er4, ev->ecr)
                               : log_ratio_se(n, ev->ec2, ev->ec4, ev->q2, ev->q4, ev->ecq);
        seu = ev->ur2 >= ev->uq2 ? log_ratio_se(n, ev->uc2, ev->uc4, ev->ur2, ev->ur4, ev->ucr)
                                 : log_ratio_se(n, ev->uc2, ev->uc4, ev->uq2, ev->uq4, ev->ucq);
        v->rms_se = se;
        v->ulp_se = seu;
        lim_rms = v->rms_limit_n = cfg->magnitude_limit * exp(fmax(zf, t1 * se));
        lim_ulp = v->ulp_limit_n = cfg->magnitude_limit * exp(fmax(zf, t1 * seu));
        v->rms_ratio = den > 0 ? sqrt(ev->ec2 / n) / den : (ev->ec2 > 0 ? INFINITY : 0);
        v->ulp_ratio = uden > 0 ? sqrt(ev->uc2 / n) / uden : (ev->uc2 > 0 ? INFINITY : 0);
        v->max_ratio = dmax > 0 ? ev->maxc / dmax : (ev->maxc > 0 ? INFINITY : 0);
        v->ulp_max_ratio = dumax > 0 ? ev->umaxc / dumax : (ev->umaxc > 0 ? INFINITY : 0);
        v->max_ratio_judged = v->ulp_gated ? fmin(v->max_ratio, v->ulp_max_ratio) : v->max_ratio;
        if (pooled) { /* the absolute numbers of a pool are in units of each capture's D */
            v->rms_r = sqrt(ev->er2 / n);
            v->rms_c = sqrt(ev->ec2 / n);
            v->rms_round = sqrt(ev->q2 / n);
            v->max_r = ev->maxr;
            v->max_c = ev->maxc;
            v->max_round = ev->maxq;
            v->ulp_rms_r = sqrt(ev->ur2 / n);
            v->ulp_rms_c = sqrt(ev->uc2 / n);
            v->ulp_rms_round = sqrt(ev->uq2 / n);
            v->ulp_max_r = ev->umaxr;
            v->ulp_max_c = ev->umaxc;
            v->rms_expected = den;
            v->out_rms = ev->o_rms_over_D / n;
        }
        v->max_expected = pooled ? dmax : dmax * Dabs;
        if (v->rms_ratio > lim_rms && !ADM_MUTANT("rms")) {
            if (pooled)
                adm_h_fail_gate(v, ADM_GATE_MAGNITUDE, "RMS error is %.3gx the reference path's over %.0f captures "
                                "(limit %.3gx over %.0f elements).", v->rms_ratio, ev->captures, lim_rms, n);
            else
                adm_h_fail_gate(v, ADM_GATE_MAGNITUDE, "RMS error %.3g is %.3gx the reference path's %.3g (limit "
                                "%.3gx over %.0f elements).", v->rms_c, v->rms_ratio, Dabs, lim_rms, n);
        }
        if (v->max_ratio_judged > lim && !ADM_MUTANT("max")) {
            /* the figure judged leads, so that it is the one the reports' max column shows */
            const char *yard = dmax > fmax(ev->maxr, ev->maxq) ? "expected maximum" : "maximum", *unit = pooled ? " D" : "";
            if (v->ulp_gated)
                adm_h_fail_gate(v, ADM_GATE_MAGNITUDE, "Max error is %.3gx the reference path's (limit %.3gx), the "
                                "smaller of two yardsticks: %.3g%s against its %s of %.3g%s is %.3gx, and in ulps at "
                                "the condition scale %.3gx.", v->max_ratio_judged, lim, v->max_c, unit, yard,
                                v->max_expected, unit, v->max_ratio, v->ulp_max_ratio);
            else
                adm_h_fail_gate(v, ADM_GATE_MAGNITUDE, "Max error %.3g%s is %.3gx the reference path's %s %.3g%s "
                                "(limit %.3gx).", v->max_c, unit, v->max_ratio, yard, v->max_expected, unit, lim);
        }
        if (v->ulp_gated && v->ulp_ratio > lim_ulp && !ADM_MUTANT("ulp"))
            adm_h_fail_gate(v, ADM_GATE_MAGNITUDE, "RMS error in ulps at the condition scale is %.3gx the reference "
                            "path's (limit %.3gx): the elements of small magnitude carry larger errors.",
                            v->ulp_ratio, lim_ulp);
        v->power.rms_ratio = lim_rms;
    }
    /* ---- gate 2 */
    {
        int napp = 0;
        double alpha_k;
        /* the number of statistics that apply shares the false-alarm rate */
        for (int k = 0; k < ADM_BIAS_KINDS; k++) {
            napp += ev->d[k].n >= 2 && (k != ADM_BIAS_GAIN || ev->o_rms_over_D > 0);
            napp += ulps_apply(ev, k); /* the mean's and the sign's second test, in ulps */
            napp += ev->gd[ADM_BIAS_CHANNEL][k].n >= 2;
            napp += ev->gd[ADM_BIAS_ROW][k].n >= 2;
            /* the group statistics' second test, in ulps */
            napp += ev->gd[ADM_BIAS_CHANNEL][k].n >= 2 && ev->gdu[ADM_BIAS_CHANNEL][k].n >= 2;
            napp += ev->gd[ADM_BIAS_ROW][k].n >= 2 && ev->gdu[ADM_BIAS_ROW][k].n >= 2;
        }
        alpha_k = cfg->bias_alpha / (napp ? napp : 1);
        for (int s = 0; s < ADM_BIAS_SCOPES; s++)
            for (int k = 0; k < ADM_BIAS_KINDS; k++) {
                adm_bias_test *b = &v->bias[s][k];
                if (s == ADM_BIAS_GLOBAL) test_global(ev, k, cfg->bias_material, alpha_k, b);
                else test_group(ev, s, k, cfg->bias_material, alpha_k, b);
                if (b->failed) explain_bias(v, s, k, b, Dabs, pooled);
            }
        v->power.lean = v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN].detect;
        v->power.sign = v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_SIGN].detect;
        v->power.gain = v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_GAIN].detect;
        v->power.channel = fmax(v->bias[ADM_BIAS_CHANNEL][ADM_BIAS_MEAN].detect,
                                v->bias[ADM_BIAS_CHANNEL][ADM_BIAS_GAIN].detect);
        v->power.row = fmax(v->bias[ADM_BIAS_ROW][ADM_BIAS_MEAN].detect, v->bias[ADM_BIAS_ROW][ADM_BIAS_GAIN].detect);
        v->power.gain_relative = ev->o_rms_over_D > 0 ? v->power.gain / (ev->o_rms_over_D / n) : 0;
    }
}

void adm_h_decide_flip(adm_verdict *v, const adm_gate_config *cfg)
{
    const adm_evidence *ev = &v->ev;
    v->flips_r = (int64_t)ev->flips_r;
    v->flips_c = (int64_t)ev->flips_c;
    v->ties = (int64_t)ev->ties;
    v->decisions = (int64_t)ev->decisions;
    if (!v->gate[ADM_GATE_FLIP].applicable) return;
    /* allowance for counting noise: 3 sqrt(flips_r + 1) */
    if (ev->flips_c > cfg->flip_limit * ev->flips_r + 3.0 * sqrt(ev->flips_r + 1.0) && !ADM_MUTANT("flip"))
        adm_h_fail_gate(v, ADM_GATE_FLIP, "The downstream reader's decisions flip %.0f times against the reference "
                        "path's %.0f (of %.0f, %.0f ties counted apart).", ev->flips_c, ev->flips_r, ev->decisions,
                        ev->ties);
}

void adm_h_decide_tier(adm_verdict *v)
{
    if (!v->gate[ADM_GATE_EVIDENCE].passed) {
        v->tier = ADM_TIER_HIGH;
    } else if (v->gate[ADM_GATE_EXACT].passed && v->gate[ADM_GATE_STRIDES].passed &&
               v->gate[ADM_GATE_SPECIAL].passed) {
        v->tier = ADM_TIER_EXACT;
    } else {
        v->tier = ADM_TIER_LOSSLESS;
        for (int g = ADM_GATE_MAGNITUDE; g <= ADM_GATE_STATIC; g++)
            if (!v->gate[g].passed) v->tier = ADM_TIER_HIGH;
    }
}

/* ------------------------------------------------------------ pooled verdicts */

ADM_FPENV_BODY
static void pool_add_body(adm_verdict *acc, const adm_verdict *one, const char *label)
{
    static const int kept[] = {ADM_GATE_SPECIAL, ADM_GATE_STRIDES, ADM_GATE_STATIC, ADM_GATE_EXACT};
    if (acc->ev.captures == 0) {
        /* the first capture's verdict whole: a pool of one is that verdict */
        *acc = *one;
        memset(&acc->ev, 0, sizeof acc->ev);
        for (size_t i = 0; i < sizeof kept / sizeof kept[0] && label; i++) {
            adm_gate_outcome *g = &acc->gate[kept[i]];
            if (g->passed) continue;
            g->passed = 1;
            adm_h_fail_gate(acc, kept[i], "%s: %s", label, one->gate[kept[i]].reason);
        }
    } else {
        for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
            int g = kept[i];
            if (!one->gate[g].applicable) continue;
            if (!acc->gate[g].applicable) { /* the first capture where it applies */
                acc->gate[g].applicable = 1;
                acc->gate[g].passed = 1;
                acc->gate[g].reason[0] = '\0';
            }
            if (!one->gate[g].passed && acc->gate[g].passed)
                adm_h_fail_gate(acc, g, "%s%s%s", label ? label : "", label ? ": " : "", one->gate[g].reason);
        }
        /* a capture the reader was declared for */
        if (one->gate[ADM_GATE_FLIP].applicable) acc->gate[ADM_GATE_FLIP].applicable = 1;
        if (!one->oracle_certified) acc->oracle_certified = 0;
        if (one->oracle_assumption && !acc->oracle_assumption) acc->oracle_assumption = one->oracle_assumption;
        acc->max_bound = fmax(acc->max_bound, one->max_bound);
        for (int k = 0; k < ADM_HIST_BINS; k++) {
            acc->hist_r[k] += one->hist_r[k];
            acc->hist_c[k] += one->hist_c[k];
        }
        for (int k = 0; k < ADM_HIST_LOG_BINS; k++) {
            acc->hist_log_r[k] += one->hist_log_r[k];
            acc->hist_log_c[k] += one->hist_log_c[k];
        }
    }
    evidence_pool(&acc->ev, &one->ev);
}

ADM_FPENV_BODY
static void pool_finish_body(adm_verdict *acc, const adm_gate_config *cfg)
{
    adm_gate_config d;
    static const int decided[] = {ADM_GATE_MAGNITUDE, ADM_GATE_BIAS, ADM_GATE_FLIP, ADM_GATE_EVIDENCE};
    if (!cfg) { adm_gate_config_default(&d); cfg = &d; }
    for (size_t i = 0; i < sizeof decided / sizeof decided[0]; i++) {
        int g = decided[i], app = g == ADM_GATE_FLIP ? acc->gate[g].applicable : 1;
        acc->gate[g].passed = 1;
        acc->gate[g].applicable = app;
        if (app) acc->gate[g].reason[0] = '\0'; /* else the first capture's note */
    }
    acc->n = (int64_t)acc->ev.n;
    adm_h_decide_numeric(acc, cfg);
    adm_h_decide_flip(acc, cfg);
    adm_h_decide_tier(acc);
}

ADM_FPENV_BODY
static void require_power_body(adm_verdict *v, const adm_power *req)
{
    struct { const char *what; double need, have; } c[] = {
        {"a lean", req->lean, v->power.lean},
        {"a lean along sign(o)", req->sign, v->power.sign},
        {"a gain", req->gain, v->power.gain},
        {"a per-channel bias", req->channel, v->power.channel},
        {"a per-row bias", req->row, v->power.row},
    };
    if (ADM_MUTANT("power")) return;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        if (!(c[i].need > 0)) continue;
        if (c[i].have > 0 && c[i].have <= c[i].need) continue;
        if (c[i].have > 0)
            adm_h_fail_gate(v, ADM_GATE_EVIDENCE, "Insufficient evidence: %s of %.3g D must be detectable, these "
                            "captures detect %.3g D and more (%.0f elements): add captures, about %.1fx as many.",
                            c[i].what, c[i].need, c[i].have, v->ev.n,
                            (c[i].have / c[i].need) * (c[i].have / c[i].need));
        else
            adm_h_fail_gate(v, ADM_GATE_EVIDENCE, "Insufficient evidence: %s of %.3g D must be detectable, and these "
                            "captures have no such statistic (a 1-D output has no channels or rows).", c[i].what,
                            c[i].need);
    }
    if (req->rms_ratio > 0 && !(v->power.rms_ratio <= req->rms_ratio))
        adm_h_fail_gate(v, ADM_GATE_EVIDENCE, "Insufficient evidence: an RMS ratio of %.3gx must be detectable, "
                        "these captures detect %.3gx and more (%.0f elements).", req->rms_ratio, v->power.rms_ratio,
                        v->ev.n);
    if (!v->gate[ADM_GATE_EVIDENCE].passed) v->tier = ADM_TIER_HIGH;
}

/* The public entry points, in the default floating-point environment
 * (core/adm_fpenv.h): the t quantiles and the tests are arithmetic too. */
void adm_verdict_pool_add(adm_verdict *acc, const adm_verdict *one, const char *label)
{
    adm_fpenv fe;
    adm_fpenv_enter(&fe);
    pool_add_body(acc, one, label);
    adm_fpenv_leave(&fe);
}

void adm_verdict_pool_finish(adm_verdict *acc, const adm_gate_config *cfg)
{
    adm_fpenv fe;
    adm_fpenv_enter(&fe);
    pool_finish_body(acc, cfg);
    adm_fpenv_leave(&fe);
}

void adm_verdict_require_power(adm_verdict *v, const adm_power *req)
{
    adm_fpenv fe;
    adm_fpenv_enter(&fe);
    require_power_body(v, req);
    adm_fpenv_leave(&fe);
}
