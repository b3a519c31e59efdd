/* Gates 1 and 2's raw sums for the candidates of one capture in one pass
 * over the outputs (replay's statistics on the CPU): per chunk of a row,
 * the oracle's and the reference's terms once (decode, error, rounding,
 * ulp at the condition scale, skip rule, histogram bins), then each
 * candidate's update. Each candidate's accumulators see the same elements
 * in the same order, with the same rows, blocks and stripes, as
 * adm_h_measure_raw's (harness/evidence.c), so its sums are the same bits
 * at any thread count (check_harness case StatsBatch compares them). */
#include "harness_internal.h"
#include "adm_fpenv.h"

#include <stdlib.h>

/* Candidates measured in one pass: at most BATCH_MAX, and at most
 * BATCH_BYTES of raw sums held at once (a candidate's channel stripes
 * alone reach 64 MiB: CHAN_STRIPE_BYTES), so that the batch adds at most
 * that much to the outputs and the oracle result. */
#define BATCH_MAX 8
#define BATCH_BYTES ((double)(192 << 20))
/* Elements of a row whose shared terms are computed before the candidates
 * read them: about 26 KB of terms per thread, held in L1/L2. */
#define BATCH_CHUNK 256

static int group_cap; /* adm_h_stats_batch_cap's; 0: none */

void adm_h_stats_batch_cap(int g) { group_cap = g; }

struct adm_h_stats_batch {
    const adm_tensor *oracle, *cond, *ref, **cands;
    int nc, G;
    int64_t R, N;
    double *colrms;                    /* without a condition scale: per channel */
    adm_h_stats_raw slot[BATCH_MAX];   /* allocated on first use, then reused */
    int held[BATCH_MAX];               /* the candidate whose sums a slot holds; -1: none */
};

static int batch_format(adm_dtype dt) { return dt == ADM_BF16 || dt == ADM_FP16 || dt == ADM_FP32 || dt == ADM_FP64; }

static int same_shape(const adm_tensor *a, const adm_tensor *b)
{
    return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
}

static int cand_served(const adm_tensor *ref, const adm_tensor *c)
{
    return c && batch_format(c->dtype) && adm_tensor_is_contiguous(c) && same_shape(c, ref);
}

/* The candidate's index in the batch, or -1 when the batch does not hold it. */
static int cand_index(const adm_h_stats_batch *b, const adm_judge_input *in)
{
    if (!b || in->oracle != b->oracle || in->cond != b->cond || in->ref != b->ref) return -1;
    for (int k = 0; k < b->nc; k++)
        if (b->cands[k] == in->cand && cand_served(b->ref, in->cand)) return k;
    return -1;
}

/* Candidates measured at once: at most BATCH_MAX and BATCH_BYTES of raw
 * sums, at least one. */
static int group_size(int64_t R, int64_t N, int served)
{
    return (int)fmin(fmin(BATCH_MAX, served), fmax(1.0, floor(BATCH_BYTES / adm_h_stats_raw_bytes(R, N))));
}

double adm_h_stats_batch_bytes(int64_t R, int64_t N, int nc)
{
    return (nc > 0 ? group_size(R, N, nc) : 1) * adm_h_stats_raw_bytes(R, N);
}

double adm_h_stats_batch_held(const adm_h_stats_batch *b)
{
    double s = b && b->colrms ? 8.0 * (double)(b->N + 1) : 0;
    for (int k = 0; b && k < BATCH_MAX; k++)
        if (b->slot[k].rows) s += b->slot[k].bytes;
    return s;
}

int adm_h_stats_batch_serves(const adm_h_stats_batch *b, const adm_judge_input *in) { return cand_index(b, in) >= 0; }

void adm_h_stats_batch_free(adm_h_stats_batch *b)
{
    if (!b) return;
    for (int s = 0; s < BATCH_MAX; s++) adm_h_stats_free(&b->slot[s]);
    free(b->colrms);
    free(b->cands);
    free(b);
}

adm_status adm_h_stats_batch_open(const adm_tensor *oracle, const adm_tensor *cond, const adm_tensor *ref,
                                  const adm_tensor *const *cands, int nc, adm_h_stats_batch **out)
{
    adm_h_stats_batch *b;
    int64_t n;
    int served = 0;
    *out = NULL;
    /* anything else is adm_judge's to refuse or measure alone */
    if (!oracle || !ref || oracle->dtype != ADM_FP64 || !adm_tensor_is_contiguous(oracle) || oracle->offset != 0 ||
        !same_shape(ref, oracle) || !batch_format(ref->dtype) || !adm_tensor_is_contiguous(ref))
        return ADM_OK;
    if (cond && (cond->dtype != ADM_FP64 || !adm_tensor_is_contiguous(cond) || !same_shape(cond, oracle)))
        return ADM_OK;
    for (int k = 0; k < nc; k++) served += cand_served(ref, cands[k]);
    if (served < 2 || (n = adm_tensor_numel(oracle)) == 0) return ADM_OK; /* one candidate: nothing shared */
    if (!(b = calloc(1, sizeof *b)) || !(b->cands = calloc((size_t)nc, sizeof *b->cands))) {
        free(b);
        return ADM_FAIL(ADM_ERR_NOMEM, "judge: out of memory for the statistics' batch");
    }
    b->oracle = oracle;
    b->cond = cond;
    b->ref = ref;
    b->nc = nc;
    memcpy(b->cands, cands, sizeof *b->cands * (size_t)nc);
    b->N = oracle->ndim ? oracle->shape[oracle->ndim - 1] : 1;
    b->R = b->N ? n / b->N : 0;
    for (int s = 0; s < BATCH_MAX; s++) b->held[s] = -1;
    b->G = group_size(b->R, b->N, served);
    if (group_cap > 0 && b->G > group_cap) b->G = group_cap;
    if (!cond) {
        /* adm_h_measure_raw's column RMS, the same loop */
        const double *o = oracle->data;
        if (!(b->colrms = adm_h_calloc((size_t)(b->N + 1), sizeof(double)))) {
            int64_t R = b->R, N = b->N;
            adm_h_stats_batch_free(b);
            return ADM_FAIL(ADM_ERR_NOMEM, "judge: out of memory for the statistics of %lld rows x %lld channels",
                            (long long)R, (long long)N);
        }
        for (int64_t row = 0; row < b->R; row++)
            for (int64_t j = 0; j < b->N; j++) {
                double x = o[row * b->N + j];
                if (isfinite(x)) b->colrms[j] += x * x;
            }
        for (int64_t j = 0; j < b->N; j++) b->colrms[j] = sqrt(b->colrms[j] / (double)(b->R ? b->R : 1));
    }
    *out = b;
    return ADM_OK;
}

/* n elements of a contiguous output of a batch format from element i0,
 * as adm_h_at reads them (the format's switch once per chunk) */
static void decode(const void *base, adm_dtype dt, int64_t i0, int64_t n, double *x)
{
    switch (dt) {
    case ADM_BF16:
        for (int64_t t = 0; t < n; t++) x[t] = adm_bf16_to_f32(((const uint16_t *)base)[i0 + t]);
        break;
    case ADM_FP16:
        for (int64_t t = 0; t < n; t++) x[t] = adm_fp16_to_f32(((const uint16_t *)base)[i0 + t]);
        break;
    case ADM_FP32:
        for (int64_t t = 0; t < n; t++) x[t] = ((const float *)base)[i0 + t];
        break;
    default:
        for (int64_t t = 0; t < n; t++) x[t] = ((const double *)base)[i0 + t];
        break;
    }
}

static const void *first_elem(const adm_tensor *t)
{
    return (const char *)t->data + (size_t)t->offset * (size_t)adm_format_get(t->dtype)->storage_bytes;
}

/* One element's terms shared by every candidate: adm_se_measure's with
 * the candidate's two (ec, cu) left to fill, the reference's histogram
 * slots and the element's non-triviality. */
typedef struct shared_elem { adm_se_elem e; double oi, r, nt; int j, h0, h2; } shared_elem;

/* One candidate's update over a chunk's nv shared terms, cv its values
 * over the chunk: adm_h_measure_raw's per element, in element order.
 * Flattened: the updates inlined (called once per candidate, GCC would
 * otherwise keep them calls, a third of the pass). */
#if defined(__GNUC__)
__attribute__((flatten))
#endif
static void cand_chunk(const shared_elem *se, int nv, const double *cv, adm_se_mag *m, int64_t *H, double *g,
                       double *C)
{
    for (int t = 0; t < nv; t++) {
        const shared_elem *x = &se[t];
        double c = cv[x->j];
        adm_se_elem e = x->e;
        if (!isfinite(c)) continue;
        e.ec = c - x->oi;
        e.cu = e.ec * e.u;
        adm_se_mag_add(m, &e, x->oi, c - x->r, x->nt);
        H[x->h0]++;
        H[ADM_HIST_BINS + adm_se_hist_bin(e.cu)]++;
        H[x->h2]++;
        H[2 * ADM_HIST_BINS + ADM_HIST_LOG_BINS + adm_se_hist_log_bin(e.cu)]++;
        raw_add2(g, C + x->j * RAW_NS, x->oi, e.u, c - x->r, e.er, e.ec);
    }
}

/* The raw sums of the G candidates cs into the zeroed ss, in one pass:
 * adm_h_measure_raw's partition and, per candidate, its element order. */
static void batch_pass(const adm_h_stats_batch *b, int G, const adm_tensor *const *cs, adm_h_stats_raw *const *ss)
{
    const double *o = b->oracle->data, *colrms = b->colrms;
    const double *cnd = b->cond ? (const double *)b->cond->data + b->cond->offset : NULL;
    const void *rbase = first_elem(b->ref);
    adm_dtype fmt = b->ref->dtype;
    int64_t R = b->R, N = b->N, nb = ss[0]->nb, ns = ss[0]->ns;
#pragma omp parallel
    {
    adm_fpenv fe;
    adm_fpenv_enter(&fe);
#pragma omp for schedule(dynamic, 1)
    for (int64_t st = 0; st < ns; st++) {
        for (int64_t bk = st * nb / ns; bk < (st + 1) * nb / ns; bk++) {
            adm_se_mag m[BATCH_MAX], mr[BATCH_MAX];
            memset(m, 0, sizeof m);
            for (int64_t row = bk * ADM_SE_RB; row < R && row < (bk + 1) * ADM_SE_RB; row++) {
                double g[BATCH_MAX][RAW_NS], rr = 0, floor_ = 0, rv[BATCH_CHUNK], cv[BATCH_CHUNK];
                shared_elem se[BATCH_CHUNK];
                memset(mr, 0, sizeof mr);
                for (int k = 0; k < G; k++) memcpy(g[k], ss[k]->rows + row * RAW_NS, sizeof g[k]);
                for (int64_t j = 0; j < N && !cnd; j++) {
                    double x = o[row * N + j];
                    if (isfinite(x)) rr += x * x;
                }
                if (!cnd) floor_ = sqrt(rr / (double)N);
                for (int64_t j0 = 0; j0 < N; j0 += BATCH_CHUNK) {
                    int64_t len = N - j0 < BATCH_CHUNK ? N - j0 : BATCH_CHUNK, i0 = row * N + j0;
                    int nv = 0;
                    decode(rbase, b->ref->dtype, i0, len, rv);
                    for (int t = 0; t < len; t++) {
                        shared_elem *x = &se[nv];
                        int64_t i = i0 + t;
                        double oi = o[i];
                        /* c = oi: finite exactly when oi is, so the skip is the oracle's and the reference's */
                        if (!adm_se_measure(fmt, oi, rv[t], oi, cnd != NULL, cnd ? cnd[i] : 0, floor_,
                                            cnd ? 0 : colrms[j0 + t], &x->e))
                            continue;
                        x->oi = oi;
                        x->r = rv[t];
                        x->nt = adm_se_nontrivial(cnd != NULL, oi, cnd ? cnd[i] : 0);
                        x->j = t;
                        x->h0 = adm_se_hist_bin(x->e.eu);
                        x->h2 = 2 * ADM_HIST_BINS + adm_se_hist_log_bin(x->e.eu);
                        nv++;
                    }
                    for (int k = 0; k < G; k++) {
                        decode(first_elem(cs[k]), cs[k]->dtype, i0, len, cv);
                        cand_chunk(se, nv, cv, &mr[k], ss[k]->ph + bk * HIST_BLOCK, g[k],
                                   ss[k]->chans + st * N * RAW_NS + j0 * RAW_NS);
                    }
                }
                for (int k = 0; k < G; k++) {
                    memcpy(ss[k]->rows + row * RAW_NS, g[k], sizeof g[k]);
                    adm_se_mag_fold(&m[k], &mr[k]);
                }
            }
            for (int k = 0; k < G; k++) adm_se_mag_store(&m[k], ss[k]->mg + bk * MG_NS);
        }
    }
    adm_fpenv_leave(&fe);
    }
}

/* The slot holding candidate k's sums, measuring k and the served
 * candidates after it (up to G) in one pass when none does. */
static adm_status slot_of(adm_h_stats_batch *b, int k, int *slot)
{
    const adm_tensor *cs[BATCH_MAX];
    adm_h_stats_raw *ss[BATCH_MAX];
    int G = 0;
    for (int s = 0; s < b->G; s++)
        if (b->held[s] == k) {
            *slot = s;
            return ADM_OK;
        }
    for (int j = k; j < b->nc && G < b->G; j++) {
        adm_h_stats_raw *r = &b->slot[G];
        if (!cand_served(b->ref, b->cands[j])) continue;
        if (!r->rows) {
            ADM_TRY(adm_h_stats_alloc(r, b->R, b->N));
        } else {
            memset(r->rows, 0, sizeof(double) * (size_t)(r->R * RAW_NS));
            memset(r->chans, 0, sizeof(double) * (size_t)(r->ns * r->N * RAW_NS));
            memset(r->mg, 0, sizeof(double) * (size_t)(r->nb * MG_NS));
            memset(r->ph, 0, sizeof(int64_t) * (size_t)(r->nb * HIST_BLOCK));
            r->merged = 0; /* the stripes apart again */
        }
        b->held[G] = -1;
        cs[G] = b->cands[j];
        ss[G] = r;
        G++;
    }
    batch_pass(b, G, cs, ss);
    for (int s = 0, j = k; s < G; j++)
        if (cand_served(b->ref, b->cands[j])) b->held[s++] = j;
    *slot = 0;
    return ADM_OK;
}

adm_status adm_h_stats_batch_raw(adm_h_stats_batch *b, const adm_judge_input *in, adm_h_stats_raw *s)
{
    int k = cand_index(b, in), slot;
    const adm_h_stats_raw *r;
    if (k < 0 || s->R != b->R || s->N != b->N)
        return ADM_FAIL(ADM_ERR_INVALID, "statistics' batch: the output is not one of the batch's");
    ADM_TRY(slot_of(b, k, &slot));
    r = &b->slot[slot];
    memcpy(s->rows, r->rows, sizeof(double) * (size_t)(r->R * RAW_NS));
    memcpy(s->chans, r->chans, sizeof(double) * (size_t)(r->ns * r->N * RAW_NS));
    memcpy(s->mg, r->mg, sizeof(double) * (size_t)(r->nb * MG_NS));
    memcpy(s->ph, r->ph, sizeof(int64_t) * (size_t)(r->nb * HIST_BLOCK));
    return ADM_OK;
}

adm_status adm_h_measure_numeric_batch(adm_h_stats_batch *b, const adm_judge_input *in, adm_verdict *v)
{
    int k = cand_index(b, in), slot;
    if (k < 0) return ADM_FAIL(ADM_ERR_INVALID, "statistics' batch: the output is not one of the batch's");
    ADM_TRY(slot_of(b, k, &slot));
    /* finishing merges the stripes in place: the slot's sums are spent */
    adm_h_stats_finish(&b->slot[slot], b->ref->dtype, b->cond != NULL, v);
    b->held[slot] = -1;
    return ADM_OK;
}
