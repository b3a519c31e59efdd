/* The seven gates and the verdict. Formulas, thresholds and the reasons
 * behind them: harness/GATES.md. */
#include "harness_internal.h"
#include "adm_fpenv.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_int alloc_countdown, alloc_fired;

void adm_h_inject_alloc_failure(int nth)
{
    if (nth > 0) atomic_store(&alloc_fired, 0);
    atomic_store(&alloc_countdown, nth > 0 ? nth : 0);
}

int adm_h_injected(void) { return atomic_load(&alloc_fired); }

void *adm_h_calloc(size_t n, size_t size)
{
    if (atomic_load(&alloc_countdown) > 0 && atomic_fetch_sub(&alloc_countdown, 1) == 1) {
        atomic_fetch_add(&alloc_fired, 1);
        return NULL;
    }
    return calloc(n, size);
}

static const char *tier_names[3] = {"exact", "lossless", "high"};
static const char *gate_names[ADM_GATE_COUNT] = {"", "magnitude", "bias", "special values", "non-contiguous",
                                                 "flip rate", "static", "exact"};

const char *adm_tier_name(adm_tier t) { return (t >= 0 && t <= 2) ? tier_names[t] : "invalid"; }
const char *adm_gate_name(int g) { return (g >= 1 && g < ADM_GATE_COUNT) ? gate_names[g] : "invalid"; }

adm_status adm_tier_from_name(const char *name, adm_tier *out)
{
    for (int t = 0; t < 3; t++)
        if (name && strcmp(name, tier_names[t]) == 0) {
            *out = (adm_tier)t;
            return ADM_OK;
        }
    return ADM_FAIL(ADM_ERR_INVALID, "unknown tier '%s' (expected exact, lossless or high)", name ? name : "");
}

void adm_decl_undeclared(adm_decl *d)
{
    d->accumulator = d->operand = d->intermediate = ADM_DTYPE_INVALID;
    d->transcendental_ulps = -1;
    d->stable = -1;
}

void adm_gate_config_default(adm_gate_config *c)
{
    c->magnitude_limit = 1.5;
    c->bias_material = 0.1;
    c->bias_z = 5.0;
    c->magnitude_z = 3.0;
    c->flip_limit = 1.5;
    c->sharpness = 1e-3;
}

adm_status adm_reader_parse(const char *text, adm_reader *r)
{
    char *end;
    memset(r, 0, sizeof *r);
    if (!text || !*text || !strcmp(text, "none")) return ADM_OK;
    r->declared = 1;
    if (!strncmp(text, "threshold:", 10)) {
        r->kind = ADM_READER_THRESHOLD;
        r->threshold = strtod(text + 10, &end);
        if (end == text + 10 || *end || !isfinite(r->threshold))
            return ADM_FAIL(ADM_ERR_INVALID, "reader '%s': expected threshold:NUMBER", text);
        return ADM_OK;
    }
    if (!strncmp(text, "topk:", 5)) {
        long k = strtol(text + 5, &end, 10);
        r->kind = ADM_READER_TOPK;
        if (end == text + 5 || *end || k < 1 || k > 1 << 20)
            return ADM_FAIL(ADM_ERR_INVALID, "reader '%s': expected topk:K with K >= 1", text);
        r->k = (int)k;
        return ADM_OK;
    }
    r->kind = ADM_READER_QUANTIZE;
    if (adm_dtype_from_name(text, &r->format) != ADM_OK || r->format == ADM_FP64)
        return ADM_FAIL(ADM_ERR_INVALID, "reader '%s': expected a format to quantize into (fp8_e4m3, fp4_e2m1, "
                        "...), threshold:T or topk:K", text);
    return ADM_OK;
}

static void fail_gate(adm_verdict *v, int g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#include <stdarg.h>
static void fail_gate(adm_verdict *v, int g, const char *fmt, ...)
{
    static const char more[] = " More findings of this gate are left out.";
    char sent[sizeof v->gate[g].reason];
    char *r = v->gate[g].reason;
    size_t used, n, room;
    va_list ap;
    if (v->gate[g].passed) {
        v->gate[g].passed = 0;
        r[0] = '\0';
    }
    va_start(ap, fmt);
    vsnprintf(sent, sizeof sent, fmt, ap);
    va_end(ap);
    used = strlen(r);
    n = strlen(sent);
    /* whole sentences only, never a word cut: a sentence that does not fit
     * is left out and the reason says so (room is kept for that note) */
    room = sizeof v->gate[g].reason - sizeof more;
    if (strstr(r, more)) return;
    if (used + (used ? 1 : 0) + n < room) {
        if (used) r[used++] = ' ';
        memcpy(r + used, sent, n + 1);
    } else if (used == 0) {
        /* one sentence longer than the room: up to its last whole word */
        while (n > 0 && (n >= room || sent[n] != ' ')) n--;
        memcpy(r, sent, n);
        memcpy(r + n, more, sizeof more);
    } else {
        memcpy(r + used, more, sizeof more);
    }
}

static void note_gate(adm_verdict *v, int g, const char *note)
{
    v->gate[g].applicable = 0;
    v->gate[g].passed = 1;
    snprintf(v->gate[g].reason, sizeof v->gate[g].reason, "%s", note);
}

/* ------------------------------------------------------------ gates 1 and 2 */

/* Element i of an output, exactly; contiguous tensors of the common
 * formats without the generic index arithmetic. */
typedef struct reader_ { const void *base; adm_dtype dt; int contig; const adm_tensor *t; } reader_;

static reader_ reader_of(const adm_tensor *t)
{
    reader_ r;
    r.t = t;
    r.dt = t->dtype;
    r.contig = adm_tensor_is_contiguous(t);
    r.base = (const char *)t->data + (size_t)t->offset * (size_t)adm_format_get(t->dtype)->storage_bytes;
    return r;
}

static inline double at(const reader_ *r, int64_t i)
{
    if (r->contig) {
        switch (r->dt) {
        case ADM_BF16: return adm_bf16_to_f32(((const uint16_t *)r->base)[i]);
        case ADM_FP16: return adm_fp16_to_f32(((const uint16_t *)r->base)[i]);
        case ADM_FP32: return ((const float *)r->base)[i];
        case ADM_FP64: return ((const double *)r->base)[i];
        default: break;
        }
    }
    return adm_tensor_get(r->t, i);
}

/* x rounded to nearest even in dt and dt's ulp at x, fast for bf16 and
 * fp16 in their normal range (bit arithmetic on the double: the rounding
 * increment carries into the exponent as IEEE requires), the generic
 * encoder elsewhere. Equal to adm_format_round / adm_format_ulp. */
static inline double round_fast(adm_dtype dt, double x)
{
    int man = dt == ADM_BF16 ? 7 : dt == ADM_FP16 ? 10 : -1;
    double lo = dt == ADM_BF16 ? 0x1p-126 : 0x1p-14, hi = dt == ADM_BF16 ? 0x1p127 : 32768.0;
    if (man > 0 && fabs(x) >= lo && fabs(x) < hi) {
        uint64_t b = adm_f64_bits(x);
        int sh = 52 - man;
        b += ((1ull << (sh - 1)) - 1) + ((b >> sh) & 1);
        b &= ~((1ull << sh) - 1);
        return adm_f64_from_bits(b);
    }
    return adm_format_round(dt, x, ADM_RNE, ADM_CVT_SATFINITE);
}

static inline double ulp_fast(adm_dtype dt, double x)
{
    int man = dt == ADM_BF16 ? 7 : dt == ADM_FP16 ? 10 : -1;
    double lo = dt == ADM_BF16 ? 0x1p-126 : 0x1p-14, hi = dt == ADM_BF16 ? 0x1p127 : 32768.0;
    if (man > 0 && fabs(x) >= lo && fabs(x) < hi)
        return adm_f64_from_bits(((adm_f64_bits(x) >> 52 & 0x7ff) - (uint64_t)man) << 52);
    return adm_format_ulp(dt, x);
}

/* Sums in fixed blocks merged in order: the same bits at any thread count
 * (the scale decides which elements the oracle refines). */
enum { SCALE_BLK = 4096 };

static void scale_block(const double *o, const adm_tensor *ref, int64_t n, int64_t b, double *out)
{
    double bs = 0, bq = 0, bm = 0;
    for (int64_t i = b * SCALE_BLK; i < n && i < (b + 1) * SCALE_BLK; i++) {
        double r = adm_tensor_get(ref, i), rr;
        if (!isfinite(o[i]) || !isfinite(r)) continue;
        rr = round_fast(ref->dtype, o[i]);
        bs += (r - o[i]) * (r - o[i]);
        if (isfinite(rr)) bq += (rr - o[i]) * (rr - o[i]);
        bm += 1;
    }
    out[0] = bs;
    out[1] = bq;
    out[2] = bm;
}

ADM_FPENV_BODY
static double judge_resolve_scale_body(const adm_tensor *oracle, const adm_tensor *ref)
{
    int64_t n = adm_tensor_numel(oracle), m = 0, nb = (n + SCALE_BLK - 1) / SCALE_BLK;
    const double *o = oracle->data;
    double s = 0, q = 0, one[3], *part = malloc(sizeof *part * (size_t)(3 * nb + 1));
    if (part) {
#pragma omp parallel
        {
            adm_fpenv fe;
            adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
            for (int64_t b = 0; b < nb; b++) scale_block(o, ref, n, b, part + 3 * b);
            adm_fpenv_leave(&fe);
        }
    }
    for (int64_t b = 0; b < nb; b++) { /* without memory for the partials: serially, in the same order */
        const double *pb = part ? part + 3 * b : (scale_block(o, ref, n, b, one), one);
        s += pb[0];
        q += pb[1];
        m += (int64_t)pb[2];
    }
    free(part);
    return m ? fmax(sqrt(s / (double)m), sqrt(q / (double)m)) : 0;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
double adm_judge_resolve_scale(const adm_tensor *oracle, const adm_tensor *ref)
{
    adm_fpenv fe;
    double rv;
    adm_fpenv_enter(&fe);
    rv = judge_resolve_scale_body(oracle, ref);
    adm_fpenv_leave(&fe);
    return rv;
}

static inline int hist_bin(double ulps)
{
    double w = 2 * ADM_HIST_RANGE / (ADM_HIST_BINS - 2);
    if (!(ulps >= -ADM_HIST_RANGE)) return 0;
    if (ulps >= ADM_HIST_RANGE) return ADM_HIST_BINS - 1;
    return 1 + (int)floor((ulps + ADM_HIST_RANGE) / w);
}

/* The error statistics of gates 1 and 2, from one pass over the outputs. */
typedef struct err_stats {
    int64_t m, N, R;   /* elements where o, r and c are finite; channels; rows */
    double er2, ec2, q2, ur2, uc2, uq2, sr, sc, tr, tc, tr2, tc2, gr, gc, o2, maxr, maxc, maxq;
    double umr, umc, umq; /* max |e| and |round(o) - o| in ulps at the condition scale */
    double *chs, *rws; /* per channel, per row: the sums of e_r and e_c */
    int64_t *chn, *rwn;
} err_stats;

static void err_stats_free(err_stats *s)
{
    free(s->chs);
    free(s->rws);
    free(s->chn);
    free(s->rwn);
    memset(s, 0, sizeof *s);
}

/* The pass: sums of errors, squares, ulps, signs, gains, per channel and
 * per row, and the histograms. ADM_ERR_NOMEM when they cannot be
 * allocated: an error, never a verdict. */
static adm_status error_pass(const adm_judge_input *in, const reader_ *rd, const reader_ *cd, adm_verdict *v,
                             err_stats *s)
{
    const double *o = in->oracle->data;
    int64_t n = adm_tensor_numel(in->oracle);
    int64_t N = in->oracle->ndim ? in->oracle->shape[in->oracle->ndim - 1] : 1, R = N ? n / N : 0;
    adm_dtype fmt = in->ref->dtype;
    /* ulps are measured at the element's condition scale max(|o|, cond):
     * the magnitude of the terms it is computed from, the scale every
     * path's rounding errors follow (GATES.md, gate 1). Without one (an
     * op with no sound scale, a user oracle) at max(|o|, min(rms of o over
     * its row, over its channel) / 4), reported and not gated. */
    const double *cnd = in->cond ? (const double *)in->cond->data + in->cond->offset : NULL;
    double *chs, *rws, *colrms = NULL;
    int64_t *chn, *rwn;
    memset(s, 0, sizeof *s);
    s->N = N;
    s->R = R;
    chs = s->chs = adm_h_calloc((size_t)(2 * N + 1), sizeof(double));
    rws = s->rws = adm_h_calloc((size_t)(2 * R + 1), sizeof(double));
    chn = s->chn = adm_h_calloc((size_t)(N + 1), sizeof(int64_t));
    rwn = s->rwn = adm_h_calloc((size_t)(R + 1), sizeof(int64_t));
    if (!chs || !rws || !chn || !rwn) goto nomem;
    if (!(colrms = adm_h_calloc((size_t)(N + 1), sizeof(double)))) goto nomem;
    v->ulp_gated = cnd != NULL;
    for (int64_t row = 0; row < R && !cnd; row++)
        for (int64_t j = 0; j < N; j++) {
            double x = o[row * N + j];
            if (isfinite(x)) colrms[j] += x * x;
        }
    for (int64_t j = 0; j < N; j++) colrms[j] = sqrt(colrms[j] / (double)(R ? R : 1));
    /* One pass in fixed blocks of RB rows, whatever the thread count: each
     * block keeps its own partial sums (scalars, channels, histogram), and
     * the partials are merged in block order, so the same inputs give the
     * same bits with 1 or 16 threads (floating-point addition is not
     * associative; OpenMP's reduction order follows the thread count). */
    {
        enum { RB = 64, NS = 22 };
        int64_t nb = (R + RB - 1) / RB;
        double *ps = adm_h_calloc((size_t)(nb * NS + 1), sizeof(double));
        double *pc = adm_h_calloc((size_t)(nb * 3 * N + 1), sizeof(double));
        int64_t *ph = adm_h_calloc((size_t)(nb * 2 * ADM_HIST_BINS + 1), sizeof(int64_t));
        if (!ps || !pc || !ph) {
            free(ps); free(pc); free(ph);
            goto nomem;
        }
#pragma omp parallel
        {
            adm_fpenv fe;
            adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
            for (int64_t bk = 0; bk < nb; bk++) {
                double *S = ps + bk * NS, *C = pc + bk * 3 * N;
                int64_t *H = ph + bk * 2 * ADM_HIST_BINS;
                for (int64_t row = bk * RB; row < R && row < (bk + 1) * RB; row++) {
                    double rr = 0, floor_;
                    for (int64_t j = 0; j < N && !cnd; j++) {
                        double x = o[row * N + j];
                        if (isfinite(x)) rr += x * x;
                    }
                    floor_ = sqrt(rr / (double)N);
                    for (int64_t j = 0; j < N; j++) {
                        int64_t i = row * N + j;
                        double r = at(rd, i), c = at(cd, i), er, ec, q, u, sg, oi = o[i];
                        if (!isfinite(oi) || !isfinite(r) || !isfinite(c)) continue;
                        er = r - oi;
                        ec = c - oi;
                        q = round_fast(fmt, oi) - oi;
                        if (cnd) /* a non-finite scale (an overflowed sum of |terms|): the element's own */
                            u = 1.0 / ulp_fast(fmt, isfinite(cnd[i]) ? fmax(fabs(oi), cnd[i]) : fabs(oi));
                        else
                            u = 1.0 / ulp_fast(fmt, fmax(fabs(oi), fmin(floor_, colrms[j]) / 4)); /* a power of two */
                        sg = oi > 0 ? 1.0 : (oi < 0 ? -1.0 : 0.0);
                        S[0] += er * er;
                        S[1] += ec * ec;
                        S[2] += q * q;
                        S[3] += (er * u) * (er * u);
                        S[4] += (ec * u) * (ec * u);
                        S[5] += (q * u) * (q * u);
                        S[6] += er;
                        S[7] += ec;
                        S[8] += er * sg;
                        S[9] += ec * sg;
                        S[10] += er * er * sg * sg;
                        S[11] += ec * ec * sg * sg;
                        S[12] += er * oi;
                        S[13] += ec * oi;
                        S[14] += oi * oi;
                        S[15] = fmax(S[15], fabs(er));
                        S[16] = fmax(S[16], fabs(ec));
                        S[17] = fmax(S[17], fabs(q));
                        S[18] += 1;
                        S[19] = fmax(S[19], fabs(er * u));
                        S[20] = fmax(S[20], fabs(ec * u));
                        S[21] = fmax(S[21], fabs(q * u));
                        H[hist_bin(er * u)]++;
                        H[ADM_HIST_BINS + hist_bin(ec * u)]++;
                        C[3 * j] += er;
                        C[3 * j + 1] += ec;
                        C[3 * j + 2] += 1;
                        rws[2 * row] += er;
                        rws[2 * row + 1] += ec;
                        rwn[row]++;
                    }
                }
            }
            adm_fpenv_leave(&fe);
        }
        for (int64_t bk = 0; bk < nb; bk++) {
            const double *S = ps + bk * NS;
            s->er2 += S[0]; s->ec2 += S[1]; s->q2 += S[2]; s->ur2 += S[3]; s->uc2 += S[4]; s->uq2 += S[5];
            s->sr += S[6]; s->sc += S[7]; s->tr += S[8]; s->tc += S[9]; s->tr2 += S[10]; s->tc2 += S[11];
            s->gr += S[12]; s->gc += S[13]; s->o2 += S[14];
            s->maxr = fmax(s->maxr, S[15]); s->maxc = fmax(s->maxc, S[16]); s->maxq = fmax(s->maxq, S[17]);
            s->m += (int64_t)S[18];
            s->umr = fmax(s->umr, S[19]); s->umc = fmax(s->umc, S[20]); s->umq = fmax(s->umq, S[21]);
            for (int k = 0; k < ADM_HIST_BINS; k++) {
                v->hist_r[k] += ph[bk * 2 * ADM_HIST_BINS + k];
                v->hist_c[k] += ph[bk * 2 * ADM_HIST_BINS + ADM_HIST_BINS + k];
            }
        }
#pragma omp parallel
        {
            adm_fpenv fe;
            adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
            for (int64_t j = 0; j < N; j++)
                for (int64_t bk = 0; bk < nb; bk++) {
                    chs[2 * j] += pc[bk * 3 * N + 3 * j];
                    chs[2 * j + 1] += pc[bk * 3 * N + 3 * j + 1];
                    chn[j] += (int64_t)pc[bk * 3 * N + 3 * j + 2];
                }
            adm_fpenv_leave(&fe);
        }
        free(ps);
        free(pc);
        free(ph);
    }
    free(colrms);
    return ADM_OK;
nomem:
    free(colrms);
    err_stats_free(s);
    return ADM_FAIL(ADM_ERR_NOMEM, "judge: out of memory for the statistics of %lld rows x %lld channels",
                    (long long)R, (long long)N);
}

/* Gate 1: RMS, max and ulp errors against the reference path's. */
static void gate_magnitude(const err_stats *s, const adm_gate_config *cfg, adm_dtype fmt, adm_verdict *v)
{
    int64_t m = s->m;
    double D, Dmax, Du;
    v->rms_r = sqrt(s->er2 / (double)m);
    v->rms_c = sqrt(s->ec2 / (double)m);
    v->max_r = s->maxr;
    v->max_c = s->maxc;
    v->rms_round = sqrt(s->q2 / (double)m);
    v->max_round = s->maxq;
    v->ulp_rms_r = sqrt(s->ur2 / (double)m);
    v->ulp_rms_c = sqrt(s->uc2 / (double)m);
    v->ulp_rms_round = sqrt(s->uq2 / (double)m);
    D = v->rms_expected = fmax(v->rms_r, v->rms_round);
    /* Sampling allowances (GATES.md, gate 1). The ratio of two sample RMS
     * over n elements scatters by about 1/sqrt(n) in log space: the limit
     * is magnitude_limit exp(z / sqrt(n)) (z = 3: 1.017 at 32768 elements,
     * 1.78 at 27, where the real corpus's fp32 row sums of equally good
     * paths measured up to 1.59x). The reference's maximum is one draw
     * from its error distribution: the max's yardstick is never below
     * rms sqrt(2 ln(n / alpha)), alpha = 1e-3, which n Gaussian draws of
     * that RMS exceed with probability below alpha (union bound); a
     * heavier tail than the reference's (a wrong tile, a few elements
     * off) still exceeds it. Where the oracle has a condition scale, the
     * max is also measured in ulps at that scale: at the output's own
     * scale a cancelling element (causal attention's first rows, a sum of
     * both signs) makes the path with bf16 probabilities look far worse
     * than one with fp32 probabilities while both are equally good at the
     * element's condition (SDPA flash against math on the H200: 1.58x
     * absolute); at the condition scale, the reference's error is bounded
     * by half an output ulp where the candidate's rounded probabilities
     * spread up to an ulp of the condition (SDPA memory-efficient against
     * math: 1.56x there, 1.0x absolute). An element far off is far off in
     * both: the max fails only when it exceeds the limit in both
     * yardsticks (where there is a condition scale; else in the absolute
     * one alone). */
    {
        double md = (double)m, nf = m > 1 ? sqrt(2.0 * log(md / 1e-3)) : 0.0, Dum;
        v->magnitude_limit_n = cfg->magnitude_limit * exp(cfg->magnitude_z / sqrt(md));
        Dmax = fmax(fmax(v->max_r, v->max_round), D * nf);
        v->max_expected = Dmax;
        Du = fmax(v->ulp_rms_r, v->ulp_rms_round);
        Dum = fmax(fmax(s->umr, s->umq), Du * nf);
        v->ulp_max_r = s->umr;
        v->ulp_max_c = s->umc;
        v->rms_ratio = D > 0 ? v->rms_c / D : (v->rms_c > 0 ? INFINITY : 0);
        v->max_ratio = Dmax > 0 ? v->max_c / Dmax : (v->max_c > 0 ? INFINITY : 0);
        v->ulp_ratio = Du > 0 ? v->ulp_rms_c / Du : (v->ulp_rms_c > 0 ? INFINITY : 0);
        v->ulp_max_ratio = Dum > 0 ? s->umc / Dum : (s->umc > 0 ? INFINITY : 0);
        v->max_ratio_judged = v->ulp_gated ? fmin(v->max_ratio, v->ulp_max_ratio) : v->max_ratio;
    }
    {
        double lim = v->magnitude_limit_n;
        if (v->rms_ratio > lim)
            fail_gate(v, ADM_GATE_MAGNITUDE, "RMS error %.3g is %.3gx the reference path's %.3g (limit %.3gx over %lld "
                      "elements).", v->rms_c, v->rms_ratio, D, lim, (long long)m);
        if (v->max_ratio_judged > lim)
            fail_gate(v, ADM_GATE_MAGNITUDE, "Max error %.3g is %.3gx the reference path's %s %.3g%s (limit %.3gx).",
                      v->max_c, v->max_ratio, Dmax > fmax(v->max_r, v->max_round) ? "expected maximum" : "maximum",
                      Dmax, v->ulp_gated ? ", and as far off in ulps at the condition scale" : "", lim);
        if (v->ulp_gated && v->ulp_ratio > lim)
            fail_gate(v, ADM_GATE_MAGNITUDE, "RMS error in %s ulps at the condition scale %.3g is %.3gx the reference "
                      "path's %.3g (limit %.3gx): the elements of small magnitude carry larger errors.",
                      adm_dtype_name(fmt), v->ulp_rms_c, v->ulp_ratio, Du, lim);
    }
}

/* Gate 2: each statistic as an error component in output units, judged
 * against the reference's own, with a materiality floor (bias_material x
 * the reference RMS error) and a significance floor (bias_z standard
 * errors). */
static void gate_bias(const err_stats *s, const adm_gate_config *cfg, adm_dtype fmt, adm_verdict *v)
{
    double D = v->rms_expected;
    {
        double md = (double)s->m, mr = s->sr / md, mc = s->sc / md, sdr = sqrt(fmax(0, s->er2 / md - mr * mr)),
               sdc = sqrt(fmax(0, s->ec2 / md - mc * mc)), se_m = sqrt((sdr * sdr + sdc * sdc) / md);
        double smr = s->tr / md, smc = s->tc / md, se_s = sqrt((fmax(0, s->tr2 / md - smr * smr) + fmax(0, s->tc2 / md - smc * smc)) / md);
        double orms = sqrt(s->o2 / md), g_r = s->o2 > 0 ? s->gr / s->o2 : 0, g_c = s->o2 > 0 ? s->gc / s->o2 : 0;
        double se_g = s->o2 > 0 ? sqrt((sdr * sdr + sdc * sdc) / s->o2) : 0;
        /* A scalar constant rounded once in the working precision (a
         * reciprocal 1/K, a scale folded into a constant) moves every
         * output by a relative u_w at most: a rounding moved, which the
         * lossless tier admits (torch.compile's fp32 mean of squares
         * against eager's on the H200: a common gain of 0.3-1 D). u_w is
         * fp32's unit roundoff for outputs of fp32 and narrower: it
         * matters only where the output is fp32. */
        double uw = fmt == ADM_FP64 ? 0x1p-53 : 0x1p-24;
        double floor = fmax(cfg->bias_material * D, uw * orms);
        v->mean_r = mr;
        v->mean_c = mc;
        v->sign_r = smr;
        v->sign_c = smc;
        v->gain_r = g_r;
        v->gain_c = g_c;
        v->out_rms = orms;
        if (fabs(mc) - fabs(mr) > floor && fabs(mc - mr) > cfg->bias_z * se_m)
            fail_gate(v, ADM_GATE_BIAS, "Signed mean error %.3g (%.2g of the reference RMS error) against the "
                      "reference path's %.3g: a rounding that leans one way.", mc, mc / D, mr);
        if (fabs(smc) - fabs(smr) > floor && fabs(smc - smr) > cfg->bias_z * se_s)
            fail_gate(v, ADM_GATE_BIAS, "Mean error along sign(oracle) %.3g against the reference path's %.3g: "
                      "values pulled %s zero (truncation-like).", smc, smr, smc < 0 ? "toward" : "away from");
        if ((fabs(g_c) - fabs(g_r)) * orms > floor && fabs(g_c - g_r) > cfg->bias_z * se_g)
            fail_gate(v, ADM_GATE_BIAS, "Gain (slope of error on the oracle) %.3g against the reference path's %.3g: "
                      "a scale error of %.3g%%, worth %.2g of the reference RMS error.", g_c, g_r, 100 * g_c,
                      fabs(g_c) * orms / D);
        /* per channel and per row: the RMS of the group means, less the
         * part pure noise explains (rms / sqrt(group size)) */
        {
            double cr = 0, cc = 0, rr = 0, rc = 0;
            int64_t nc = 0, nr = 0;
            for (int64_t j = 0; j < s->N; j++)
                if (s->chn[j]) {
                    double a = s->chs[2 * j] / (double)s->chn[j], b = s->chs[2 * j + 1] / (double)s->chn[j];
                    cr += a * a - v->rms_r * v->rms_r / (double)s->chn[j];
                    cc += b * b - v->rms_c * v->rms_c / (double)s->chn[j];
                    nc++;
                }
            for (int64_t i = 0; i < s->R; i++)
                if (s->rwn[i]) {
                    double a = s->rws[2 * i] / (double)s->rwn[i], b = s->rws[2 * i + 1] / (double)s->rwn[i];
                    rr += a * a - v->rms_r * v->rms_r / (double)s->rwn[i];
                    rc += b * b - v->rms_c * v->rms_c / (double)s->rwn[i];
                    nr++;
                }
            v->chan_r = nc ? sqrt(fmax(0, cr / (double)nc)) : 0;
            v->chan_c = nc ? sqrt(fmax(0, cc / (double)nc)) : 0;
            v->row_r = nr ? sqrt(fmax(0, rr / (double)nr)) : 0;
            v->row_c = nr ? sqrt(fmax(0, rc / (double)nr)) : 0;
            /* The RMS across G groups of n_g still scatters under pure noise
             * by sqrt(2/G) rms^2/n_g in its square: the excess must also
             * exceed bias_z of those (errors within a channel of causal
             * attention are correlated through V: SDPA flash against math,
             * 64 channels of 128 rows, measured 0.11 D beyond independent
             * noise). A statistic of one group, or of groups of one
             * element, says nothing the global mean does not. */
            double v2 = v->rms_r * v->rms_r + v->rms_c * v->rms_c;
            double nz_c = nc > 1 && nr > 1 ? cfg->bias_z * sqrt(2.0 / (double)nc) * v2 / (md / (double)nc) : INFINITY;
            double nz_r = nr > 1 && nc > 1 ? cfg->bias_z * sqrt(2.0 / (double)nr) * v2 / (md / (double)nr) : INFINITY;
            if (nr > 1 && nc > 1 && v->chan_c - v->chan_r > floor &&
                v->chan_c * v->chan_c - v->chan_r * v->chan_r > nz_c)
                fail_gate(v, ADM_GATE_BIAS, "Per-channel mean error has RMS %.3g beyond noise against the reference "
                          "path's %.3g: a bias confined to channels (a shifted bias vector, a channel scale).",
                          v->chan_c, v->chan_r);
            if (nr > 1 && nc > 1 && v->row_c - v->row_r > floor && v->row_c * v->row_c - v->row_r * v->row_r > nz_r)
                fail_gate(v, ADM_GATE_BIAS, "Per-row mean error has RMS %.3g beyond noise against the reference "
                          "path's %.3g: a bias confined to tokens.", v->row_c, v->row_r);
        }
    }
}

/* Gates 1 and 2. */
static adm_status gates_numeric(const adm_judge_input *in, const reader_ *rd, const reader_ *cd,
                                const adm_gate_config *cfg, adm_verdict *v)
{
    err_stats s;
    ADM_TRY(error_pass(in, rd, cd, v, &s));
    v->n = s.m;
    if (s.m == 0) {
        note_gate(v, ADM_GATE_MAGNITUDE, "no element where the oracle, the reference and the candidate are all finite");
        note_gate(v, ADM_GATE_BIAS, "no finite elements to judge");
    } else {
        gate_magnitude(&s, cfg, in->ref->dtype, v);
        gate_bias(&s, cfg, in->ref->dtype, v);
    }
    err_stats_free(&s);
    return ADM_OK;
}

/* ------------------------------------------------------------ gate 3 */

static int kind_of(double x) { return isnan(x) ? 1 : (isinf(x) ? (x > 0 ? 2 : 3) : 0); }
static const char *kind_names[4] = {"a finite value", "NaN", "+Inf", "-Inf"};

/* Compares NaN, +Inf, -Inf positions and shapes; returns 1 when equal. */
static int special_positions(const adm_tensor *r, const adm_tensor *c, char *why, size_t n)
{
    char a[160], b[160];
    int64_t k;
    if (r->ndim != c->ndim || memcmp(r->shape, c->shape, sizeof(int64_t) * (size_t)r->ndim) != 0) {
        snprintf(why, n, "shape %s against the reference's %s", adm_shape_str(c->ndim, c->shape, a, sizeof a),
                 adm_shape_str(r->ndim, r->shape, b, sizeof b));
        return 0;
    }
    k = adm_tensor_numel(r);
    for (int64_t i = 0; i < k; i++) {
        int kx = kind_of(adm_tensor_get(r, i)), ky = kind_of(adm_tensor_get(c, i));
        if (kx != ky) {
            snprintf(why, n, "element %lld is %s where the reference has %s", (long long)i, kind_names[ky],
                     kind_names[kx]);
            return 0;
        }
    }
    return 1;
}

static void gate_special(const adm_judge_input *in, const reader_ *rd, const reader_ *cd, adm_verdict *v)
{
    char why[300];
    int64_t n = adm_tensor_numel(in->ref), first = n;
#pragma omp parallel reduction(min : first)
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++)
            if (i < first && kind_of(at(rd, i)) != kind_of(at(cd, i))) first = i;
        adm_fpenv_leave(&fe);
    }
    if (first < n)
        fail_gate(v, ADM_GATE_SPECIAL, "On the capture's inputs, element %lld is %s where the reference has %s.",
                  (long long)first, kind_names[kind_of(at(cd, first))], kind_names[kind_of(at(rd, first))]);
    for (int s = 0; s < in->n_special; s++) {
        const adm_special_outcome *so = &in->special[s];
        if (so->cand_status == ADM_ERR_NOT_FOUND) continue; /* not run on this case */
        if (so->ref_status != ADM_OK || so->cand_status != ADM_OK) {
            if (so->ref_status != so->cand_status)
                fail_gate(v, ADM_GATE_SPECIAL, "Case '%s': the candidate %s%s where the reference %s%s.", so->name,
                          so->cand_status == ADM_OK ? "returns an output" : "refuses with ",
                          so->cand_status == ADM_OK ? "" : adm_status_name(so->cand_status),
                          so->ref_status == ADM_OK ? "returns one" : "refuses with ",
                          so->ref_status == ADM_OK ? "" : adm_status_name(so->ref_status));
            continue;
        }
        if (so->ref && so->cand && !special_positions(so->ref, so->cand, why, sizeof why))
            fail_gate(v, ADM_GATE_SPECIAL, "Case '%s': %s.", so->name, why);
    }
}

/* ------------------------------------------------------------ gate 5 */

/* Decisions of the reader on x; ties where the oracle is within its
 * rounding distance (half an ulp of the output format) of a boundary. */
static int decide(const adm_reader *rd, double x, double scale)
{
    if (rd->kind == ADM_READER_THRESHOLD) return x > rd->threshold;
    {
        uint64_t b = 0;
        adm_format_encode(rd->format, x / scale, ADM_RNE, ADM_CVT_SATFINITE, &b);
        return (int)b;
    }
}

static int near_boundary(const adm_reader *rd, double o, double scale, double dist)
{
    if (rd->kind == ADM_READER_THRESHOLD) return fabs(o - rd->threshold) <= dist;
    return decide(rd, o - dist, scale) != decide(rd, o + dist, scale);
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

static adm_status gate_flip(const adm_judge_input *in, const reader_ *rd, const reader_ *cd,
                            const adm_gate_config *cfg, adm_verdict *v)
{
    const adm_reader *rdr = in->reader;
    const double *o = in->oracle->data;
    int64_t n = adm_tensor_numel(in->oracle);
    double scale = 1, amax = 0;
    if (!rdr || rdr->kind == ADM_READER_NONE) {
        note_gate(v, ADM_GATE_FLIP, "no downstream reader declared");
        return ADM_OK;
    }
    for (int64_t i = 0; i < n; i++)
        if (isfinite(o[i])) amax = fmax(amax, fabs(o[i]));
    if (rdr->kind == ADM_READER_QUANTIZE) scale = amax > 0 ? amax / adm_format_get(rdr->format)->max_finite : 1;
    if (rdr->kind == ADM_READER_TOPK) {
        int64_t N = in->oracle->shape[in->oracle->ndim - 1], R = N ? n / N : 0, k = rdr->k < N ? rdr->k : N;
        double *buf = adm_h_calloc((size_t)(N + 1), sizeof *buf);
        if (!buf)
            return ADM_FAIL(ADM_ERR_NOMEM, "judge: out of memory for the top-%d reader over rows of %lld", rdr->k,
                            (long long)N);
        for (int64_t r = 0; r < R; r++) {
            double tho, thr, thc;
            const double *orow = o + r * N;
            int64_t base = r * N;
            double dist;
            for (int64_t j = 0; j < N; j++) buf[j] = orow[j];
            qsort(buf, (size_t)N, sizeof *buf, cmp_desc);
            tho = buf[k - 1];
            dist = adm_format_ulp(in->ref->dtype, tho) / 2;
            for (int64_t j = 0; j < N; j++) buf[j] = at(rd, base + j);
            qsort(buf, (size_t)N, sizeof *buf, cmp_desc);
            thr = buf[k - 1];
            for (int64_t j = 0; j < N; j++) buf[j] = at(cd, base + j);
            qsort(buf, (size_t)N, sizeof *buf, cmp_desc);
            thc = buf[k - 1];
            for (int64_t j = 0; j < N; j++) {
                int dO = orow[j] >= tho, dR = at(rd, base + j) >= thr, dC = at(cd, base + j) >= thc;
                if (fabs(orow[j] - tho) <= dist && orow[j] != tho) { v->ties++; continue; }
                v->decisions++;
                v->flips_r += dR != dO;
                v->flips_c += dC != dO;
            }
        }
        free(buf);
    } else {
        for (int64_t i = 0; i < n; i++) {
            double r = at(rd, i), c = at(cd, i);
            double dist = adm_format_ulp(in->ref->dtype, o[i]) / 2;
            if (!isfinite(o[i])) continue;
            if (near_boundary(rdr, o[i], scale, dist)) { v->ties++; continue; }
            v->decisions++;
            v->flips_r += decide(rdr, r, scale) != decide(rdr, o[i], scale);
            v->flips_c += decide(rdr, c, scale) != decide(rdr, o[i], scale);
        }
    }
    v->gate[ADM_GATE_FLIP].applicable = rdr->declared;
    /* allowance for counting noise: 3 sqrt(flips_r + 1) */
    if ((double)v->flips_c > cfg->flip_limit * (double)v->flips_r + 3.0 * sqrt((double)v->flips_r + 1.0)) {
        if (rdr->declared)
            fail_gate(v, ADM_GATE_FLIP, "The downstream reader's decisions flip %lld times against the reference "
                      "path's %lld (of %lld, %lld ties counted apart).", (long long)v->flips_c,
                      (long long)v->flips_r, (long long)v->decisions, (long long)v->ties);
    }
    return ADM_OK;
}

/* ------------------------------------------------------------ gates 4, 6, 7 */

static int narrower(adm_dtype a, adm_dtype b)
{
    const adm_format_info *fa = adm_format_get(a), *fb = adm_format_get(b);
    return fa && fb && (fa->man_bits < fb->man_bits || fa->exp_bits < fb->exp_bits);
}

static void gate_static(const adm_judge_input *in, adm_verdict *v)
{
    const adm_decl *r = in->ref_decl, *c = in->cand_decl;
    static const char *names[3] = {"accumulator", "operand", "intermediate"};
    if (!r || !c) {
        note_gate(v, ADM_GATE_STATIC, "no static declarations (stored outputs)");
        return;
    }
    for (int k = 0; k < 3; k++) {
        adm_dtype a = k == 0 ? r->accumulator : k == 1 ? r->operand : r->intermediate;
        adm_dtype b = k == 0 ? c->accumulator : k == 1 ? c->operand : c->intermediate;
        if (a != ADM_DTYPE_INVALID && b == ADM_DTYPE_INVALID)
            fail_gate(v, ADM_GATE_STATIC, "The %s precision is not declared (the reference declares %s).", names[k],
                      adm_dtype_name(a));
        else if (a != ADM_DTYPE_INVALID && narrower(b, a))
            fail_gate(v, ADM_GATE_STATIC, "The %s precision is %s, below the reference's %s: approximate by "
                      "construction.", names[k], adm_dtype_name(b), adm_dtype_name(a));
    }
    if (r->transcendental_ulps >= 0 && c->transcendental_ulps > r->transcendental_ulps)
        fail_gate(v, ADM_GATE_STATIC, "Transcendentals are accurate to %.3g ulps, the reference's to %.3g.",
                  c->transcendental_ulps, r->transcendental_ulps);
    if (r->stable == 1 && c->stable != 1)
        fail_gate(v, ADM_GATE_STATIC, "The formulation is not the stable one the reference uses (two-pass or "
                  "Welford variance, max-subtracted softmax).");
}

static void gate_strides(const adm_judge_input *in, adm_verdict *v)
{
    if (in->n_views < 0) {
        note_gate(v, ADM_GATE_STRIDES, "not runnable (stored outputs)");
        return;
    }
    for (int i = 0; i < in->n_views; i++) {
        const adm_view_outcome *w = &in->views[i];
        if (w->cand_status != ADM_OK) {
            if (w->ref_status == ADM_OK)
                fail_gate(v, ADM_GATE_STRIDES, "View '%s': the candidate refuses (%s) where the reference runs.",
                          w->name, adm_status_name(w->cand_status));
            continue;
        }
        if (!w->cand_identical)
            fail_gate(v, ADM_GATE_STRIDES, "View '%s': the output is not bit-identical to the candidate's own "
                      "contiguous result (a stride, offset or broadcast ignored).", w->name);
    }
}

static int bits_identical(const adm_tensor *a, const adm_tensor *b, int64_t *where)
{
    int64_t n;
    if (a->dtype != b->dtype || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
        return 0;
    n = adm_tensor_numel(a);
    if (adm_tensor_is_contiguous(a) && adm_tensor_is_contiguous(b)) {
        size_t es = (size_t)adm_format_get(a->dtype)->storage_bytes;
        if (!memcmp((const char *)a->data + (size_t)a->offset * es, (const char *)b->data + (size_t)b->offset * es,
                    (size_t)n * es))
            return 1;
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = adm_tensor_bits(a, i), y = adm_tensor_bits(b, i);
        if (x == y) continue;
        if (adm_format_isnan(a->dtype, x) && adm_format_isnan(a->dtype, y)) continue; /* payloads aside */
        *where = i;
        return 0;
    }
    return 1;
}

static void gate_exact(const adm_judge_input *in, adm_verdict *v)
{
    int64_t where = -1;
    if (in->ref->dtype != in->cand->dtype) {
        fail_gate(v, ADM_GATE_EXACT, "The output is %s, the reference's %s.", adm_dtype_name(in->cand->dtype),
                  adm_dtype_name(in->ref->dtype));
        return;
    }
    if (!bits_identical(in->ref, in->cand, &where)) {
        fail_gate(v, ADM_GATE_EXACT, "Element %lld differs from the reference bit for bit.", (long long)where);
        return;
    }
    for (int s = 0; s < in->n_special; s++) {
        const adm_special_outcome *so = &in->special[s];
        if (so->cand_status == ADM_ERR_NOT_FOUND) continue;
        if (so->ref_status != so->cand_status ||
            (so->ref && so->cand && !bits_identical(so->ref, so->cand, &where))) {
            fail_gate(v, ADM_GATE_EXACT, "Case '%s' differs from the reference.", so->name);
            return;
        }
    }
}

ADM_FPENV_BODY
static adm_status judge_body(const adm_judge_input *in, const adm_gate_config *cfg, adm_verdict *v)
{
    adm_gate_config d;
    double scale, maxb = 0;
    reader_ rd, cd;
    int64_t n;
    char a[160], b[160];
    adm_status st;
    if (!cfg) { adm_gate_config_default(&d); cfg = &d; }
    memset(v, 0, sizeof *v);
    for (int g = 1; g < ADM_GATE_COUNT; g++) {
        v->gate[g].applicable = 1;
        v->gate[g].passed = 1;
    }
    if (!in->oracle || !in->bound || !in->ref || !in->cand)
        return ADM_FAIL(ADM_ERR_INVALID, "judge: oracle, bound, reference and candidate are required");
    n = adm_tensor_numel(in->oracle);
    if (in->cond && (in->cond->dtype != ADM_FP64 || !adm_tensor_is_contiguous(in->cond) ||
                     in->cond->ndim != in->oracle->ndim ||
                     memcmp(in->cond->shape, in->oracle->shape, sizeof(int64_t) * (size_t)in->oracle->ndim)))
        return ADM_FAIL(ADM_ERR_SHAPE, "judge: the condition scale must be contiguous fp64 with the oracle's shape %s",
                        adm_shape_str(in->oracle->ndim, in->oracle->shape, b, sizeof b));
    if (in->ref->ndim != in->oracle->ndim || memcmp(in->ref->shape, in->oracle->shape, sizeof(int64_t) * (size_t)in->ref->ndim))
        return ADM_FAIL(ADM_ERR_SHAPE, "judge: reference %s against oracle %s",
                        adm_shape_str(in->ref->ndim, in->ref->shape, a, sizeof a),
                        adm_shape_str(in->oracle->ndim, in->oracle->shape, b, sizeof b));
    v->oracle_certified = in->oracle_certified;
    v->oracle_assumption = in->oracle_certified ? in->oracle_assumption : NULL;
#pragma omp parallel reduction(max : maxb)
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            double bb = ((const double *)in->bound->data)[i];
            if (isfinite(((const double *)in->oracle->data)[i]) && bb > maxb) maxb = bb;
        }
        adm_fpenv_leave(&fe);
    }
    v->max_bound = maxb;
    if (in->cand->ndim != in->ref->ndim ||
        memcmp(in->cand->shape, in->ref->shape, sizeof(int64_t) * (size_t)in->ref->ndim)) {
        fail_gate(v, ADM_GATE_SPECIAL, "The output has shape %s, the reference %s.",
                  adm_shape_str(in->cand->ndim, in->cand->shape, a, sizeof a),
                  adm_shape_str(in->ref->ndim, in->ref->shape, b, sizeof b));
        fail_gate(v, ADM_GATE_MAGNITUDE, "The output's shape differs from the reference's.");
        fail_gate(v, ADM_GATE_EXACT, "The output's shape differs from the reference's.");
        v->tier = ADM_TIER_HIGH;
        return ADM_OK;
    }
    rd = reader_of(in->ref);
    cd = reader_of(in->cand);
    if ((st = gates_numeric(in, &rd, &cd, cfg, v)) != ADM_OK) goto error;
    scale = v->rms_expected;
    if (in->oracle_certified && scale > 0 && maxb > cfg->sharpness * scale)
        return ADM_FAIL(ADM_ERR_RANGE, "judge: the oracle's max bound %.3g is above %.2g of the reference error "
                        "%.3g; refine it first (adm_oracle_refine)", maxb, cfg->sharpness, scale);
    gate_special(in, &rd, &cd, v);
    gate_strides(in, v);
    if ((st = gate_flip(in, &rd, &cd, cfg, v)) != ADM_OK) goto error;
    gate_static(in, v);
    gate_exact(in, v);
    if (v->gate[ADM_GATE_EXACT].passed && v->gate[ADM_GATE_STRIDES].passed && v->gate[ADM_GATE_SPECIAL].passed) {
        v->tier = ADM_TIER_EXACT;
    } else {
        v->tier = ADM_TIER_LOSSLESS;
        for (int g = ADM_GATE_MAGNITUDE; g <= ADM_GATE_STATIC; g++)
            if (!v->gate[g].passed) v->tier = ADM_TIER_HIGH;
    }
    return ADM_OK;
error:
    /* no verdict: a caller that ignores the status still admits nothing */
    v->tier = ADM_TIER_HIGH;
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_judge(const adm_judge_input *in, const adm_gate_config *cfg, adm_verdict *v)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = judge_body(in, cfg, v);
    adm_fpenv_leave(&fe);
    return rv;
}
