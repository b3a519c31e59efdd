/* The seven gates and the verdict. Formulas, thresholds and the reasons
 * behind them: harness/GATES.md. */
#include "harness_internal.h"
#include "adm_trace.h"
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
                                                 "flip rate", "static", "exact", "evidence"};

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
    c->bias_alpha = 1e-3;
    c->magnitude_z = 3.0;
    c->magnitude_alpha = 1e-3;
    c->flip_limit = 1.5;
    c->sharpness = 1e-3;
    c->min_elements = 32;
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

#include <stdarg.h>
void adm_h_fail_gate(adm_verdict *v, int g, const char *fmt, ...)
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

void adm_h_note_gate(adm_verdict *v, int g, const char *note)
{
    v->gate[g].applicable = 0;
    v->gate[g].passed = 1;
    snprintf(v->gate[g].reason, sizeof v->gate[g].reason, "%s", note);
}

/* ------------------------------------------------------------ the error scale */

/* Sums in fixed blocks merged in order: the same bits at any thread count
 * and on the GPU (harness/stat_elem.h, adm_se_scale_add). */
static void scale_block(const double *o, const adm_tensor *ref, int64_t n, int64_t b, double *out)
{
    out[0] = out[1] = 0;
    for (int64_t i = b * ADM_SE_SCALE_BLK; i < n && i < (b + 1) * ADM_SE_SCALE_BLK; i++)
        adm_se_scale_add(o[i], adm_tensor_get(ref, i), out);
}

/* One block's sums added to the running ones (acc: s, m), in block order. */
static void scale_acc(double *acc, const double *pb)
{
    acc[0] += pb[0];
    acc[1] += (double)(int64_t)pb[1];
}

static double scale_of(const double *acc)
{
    double m = acc[1];
    return m > 0 ? sqrt(acc[0] / m) : 0;
}

double adm_h_scale_from_blocks(const double *part, int64_t nb)
{
    double acc[2] = {0, 0};
    for (int64_t b = 0; b < nb; b++) scale_acc(acc, part + 2 * b);
    return scale_of(acc);
}

ADM_FPENV_BODY
static double judge_resolve_scale_body(const adm_tensor *oracle, const adm_tensor *ref)
{
    int64_t n = adm_tensor_numel(oracle), nb = (n + ADM_SE_SCALE_BLK - 1) / ADM_SE_SCALE_BLK;
    const double *o = oracle->data;
    double rv, *part = malloc(sizeof *part * (size_t)(2 * nb + 1));
    if (!part) { /* without memory for the partials: serially, in the same order */
        double acc[2] = {0, 0}, one[2];
        for (int64_t b = 0; b < nb; b++) {
            scale_block(o, ref, n, b, one);
            scale_acc(acc, one);
        }
        return scale_of(acc);
    }
#pragma omp parallel
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
        for (int64_t b = 0; b < nb; b++) scale_block(o, ref, n, b, part + 2 * b);
        adm_fpenv_leave(&fe);
    }
    rv = adm_h_scale_from_blocks(part, nb);
    free(part);
    return rv;
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

int64_t adm_h_first_kind_diff(const adm_h_reader *rd, const adm_h_reader *cd, int64_t n)
{
    int64_t first = n;
#pragma omp parallel reduction(min : first)
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++)
            if (i < first && kind_of(adm_h_at(rd, i)) != kind_of(adm_h_at(cd, i))) first = i;
        adm_fpenv_leave(&fe);
    }
    return first;
}

/* first_dev: the GPU's scan (adm_h_first_kind_diff's result), -1: scan here */
static void gate_special(const adm_judge_input *in, const adm_h_reader *rd, const adm_h_reader *cd, adm_verdict *v,
                         int64_t first_dev)
{
    char why[300];
    int64_t n = adm_tensor_numel(in->ref), first = first_dev >= 0 ? first_dev : adm_h_first_kind_diff(rd, cd, n);
    if (first < n && !ADM_MUTANT("special"))
        adm_h_fail_gate(v, ADM_GATE_SPECIAL, "On the capture's inputs, element %lld is %s where the reference has %s.",
                  (long long)first, kind_names[kind_of(adm_h_at(cd, first))], kind_names[kind_of(adm_h_at(rd, first))]);
    for (int s = 0; s < in->n_special; s++) {
        const adm_special_outcome *so = &in->special[s];
        if (so->cand_status == ADM_ERR_NOT_FOUND) continue; /* not run on this case */
        if (so->ref_status != ADM_OK || so->cand_status != ADM_OK) {
            if (so->ref_status != so->cand_status)
                adm_h_fail_gate(v, ADM_GATE_SPECIAL, "Case '%s': the candidate %s%s where the reference %s%s.", so->name,
                          so->cand_status == ADM_OK ? "returns an output" : "refuses with ",
                          so->cand_status == ADM_OK ? "" : adm_status_name(so->cand_status),
                          so->ref_status == ADM_OK ? "returns one" : "refuses with ",
                          so->ref_status == ADM_OK ? "" : adm_status_name(so->ref_status));
            continue;
        }
        if (so->ref && so->cand && !special_positions(so->ref, so->cand, why, sizeof why) && !ADM_MUTANT("special_case"))
            adm_h_fail_gate(v, ADM_GATE_SPECIAL, "Case '%s': %s.", so->name, why);
    }
}

/* ------------------------------------------------------------ gate 5 */

/* The reader's decisions: harness/stat_elem.h (adm_se_decide, adm_se_flip),
 * shared with the GPU; ties where the oracle is within its rounding
 * distance (half an ulp of the output format) of a boundary. */
adm_se_reader adm_h_se_reader(const adm_reader *rd, double scale)
{
    adm_se_reader s;
    const adm_format_info *f = rd->kind == ADM_READER_QUANTIZE ? adm_format_get(rd->format) : NULL;
    memset(&s, 0, sizeof s);
    s.kind = rd->kind;
    s.fmt = rd->format;
    s.has_nan = f ? f->has_nan : 0;
    s.maxf = f ? f->max_finite : 0;
    s.threshold = rd->threshold;
    s.scale = scale;
    return s;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

static adm_status gate_flip(const adm_judge_input *in, const adm_h_reader *rd, const adm_h_reader *cd,
                            const adm_gate_config *cfg, adm_verdict *v)
{
    const adm_reader *rdr = in->reader;
    const double *o = in->oracle->data;
    int64_t n = adm_tensor_numel(in->oracle);
    double scale = 1, amax = 0;
    if (!rdr || rdr->kind == ADM_READER_NONE) {
        adm_h_note_gate(v, ADM_GATE_FLIP, "no downstream reader declared");
        return ADM_OK;
    }
    if (rdr->kind != ADM_READER_TOPK) {
        int64_t cnt[4] = {0, 0, 0, 0};
        adm_status st = adm_h_stats_dev_flip(in->stats_dev, in, rdr, cnt);
        if (st == ADM_ERR_UNSUPPORTED) { /* no error set: the session cannot, the host counts */
            if (n > 0 && adm_o_cuda_stale(o))
                return ADM_FAIL(ADM_ERR_INTERNAL, "judge: the flip rate reads the oracle's values on the host, "
                                "which are on the device only (adm_oracle_result_fetch)");
            for (int64_t i = 0; i < n; i++)
                if (isfinite(o[i])) amax = fmax(amax, fabs(o[i]));
            if (rdr->kind == ADM_READER_QUANTIZE)
                scale = amax > 0 ? amax / adm_format_get(rdr->format)->max_finite : 1;
            {
                adm_se_reader sr = adm_h_se_reader(rdr, scale);
                adm_dtype rdt = in->ref->dtype;
                for (int64_t i = 0; i < n; i++) adm_se_flip(&sr, rdt, o[i], adm_h_at(rd, i), adm_h_at(cd, i), cnt);
            }
        } else if (st != ADM_OK) {
            return st;
        }
        v->ties = cnt[0];
        v->decisions = cnt[1];
        v->flips_r = cnt[2];
        v->flips_c = cnt[3];
    } else {
        int64_t N = in->oracle->shape[in->oracle->ndim - 1], R = N ? n / N : 0, k = rdr->k < N ? rdr->k : N;
        double *buf;
        if (n > 0 && adm_o_cuda_stale(o))
            return ADM_FAIL(ADM_ERR_INTERNAL, "judge: the top-k reader reads the oracle's values on the host, "
                            "which are on the device only (adm_oracle_result_fetch)");
        if (!(buf = adm_h_calloc((size_t)(N + 1), sizeof *buf)))
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
            for (int64_t j = 0; j < N; j++) buf[j] = adm_h_at(rd, base + j);
            qsort(buf, (size_t)N, sizeof *buf, cmp_desc);
            thr = buf[k - 1];
            for (int64_t j = 0; j < N; j++) buf[j] = adm_h_at(cd, base + j);
            qsort(buf, (size_t)N, sizeof *buf, cmp_desc);
            thc = buf[k - 1];
            for (int64_t j = 0; j < N; j++) {
                int dO = orow[j] >= tho, dR = adm_h_at(rd, base + j) >= thr, dC = adm_h_at(cd, base + j) >= thc;
                if (fabs(orow[j] - tho) <= dist && orow[j] != tho) { v->ties++; continue; }
                v->decisions++;
                v->flips_r += dR != dO;
                v->flips_c += dC != dO;
            }
        }
        free(buf);
    }
    v->gate[ADM_GATE_FLIP].applicable = rdr->declared;
    v->ev.flips_r = (double)v->flips_r;
    v->ev.flips_c = (double)v->flips_c;
    v->ev.ties = (double)v->ties;
    v->ev.decisions = (double)v->decisions;
    adm_h_decide_flip(v, cfg);
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
        adm_h_note_gate(v, ADM_GATE_STATIC, "no static declarations (stored outputs)");
        return;
    }
    for (int k = 0; k < 3; k++) {
        adm_dtype a = k == 0 ? r->accumulator : k == 1 ? r->operand : r->intermediate;
        adm_dtype b = k == 0 ? c->accumulator : k == 1 ? c->operand : c->intermediate;
        if (a != ADM_DTYPE_INVALID && b == ADM_DTYPE_INVALID)
            adm_h_fail_gate(v, ADM_GATE_STATIC, "The %s precision is not declared (the reference declares %s).", names[k],
                      adm_dtype_name(a));
        else if (a != ADM_DTYPE_INVALID && narrower(b, a) && !ADM_MUTANT("static_precision"))
            adm_h_fail_gate(v, ADM_GATE_STATIC, "The %s precision is %s, below the reference's %s: approximate by "
                      "construction.", names[k], adm_dtype_name(b), adm_dtype_name(a));
    }
    if (r->transcendental_ulps >= 0 && c->transcendental_ulps > r->transcendental_ulps && !ADM_MUTANT("static_ulps"))
        adm_h_fail_gate(v, ADM_GATE_STATIC, "Transcendentals are accurate to %.3g ulps, the reference's to %.3g.",
                  c->transcendental_ulps, r->transcendental_ulps);
    if (r->stable == 1 && c->stable != 1 && !ADM_MUTANT("static_stable"))
        adm_h_fail_gate(v, ADM_GATE_STATIC, "The formulation is not the stable one the reference uses (two-pass or "
                  "Welford variance, max-subtracted softmax).");
}

static void gate_strides(const adm_judge_input *in, adm_verdict *v)
{
    if (in->n_views < 0) {
        adm_h_note_gate(v, ADM_GATE_STRIDES, "not runnable (stored outputs)");
        return;
    }
    for (int i = 0; i < in->n_views; i++) {
        const adm_view_outcome *w = &in->views[i];
        if (w->cand_status != ADM_OK) {
            if (w->ref_status == ADM_OK)
                adm_h_fail_gate(v, ADM_GATE_STRIDES, "View '%s': the candidate refuses (%s) where the reference runs.",
                          w->name, adm_status_name(w->cand_status));
            continue;
        }
        if (!w->cand_identical && !ADM_MUTANT("strides"))
            adm_h_fail_gate(v, ADM_GATE_STRIDES, "View '%s': the output is not bit-identical to the candidate's own "
                      "contiguous result (a stride, offset or broadcast ignored).", w->name);
    }
}

int adm_h_bits_identical(const adm_tensor *a, const adm_tensor *b, int64_t *where)
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

/* where_dev: the GPU's scan of the outputs (the first element whose bits
 * differ, the element count where none), -1: compare them here */
static void gate_exact(const adm_judge_input *in, adm_verdict *v, int64_t where_dev)
{
    int64_t where = -1;
    int same;
    if (in->ref->dtype != in->cand->dtype) {
        adm_h_fail_gate(v, ADM_GATE_EXACT, "The output is %s, the reference's %s.", adm_dtype_name(in->cand->dtype),
                  adm_dtype_name(in->ref->dtype));
        return;
    }
    if (where_dev >= 0) {
        same = where_dev >= adm_tensor_numel(in->ref);
        where = where_dev;
    } else {
        same = adm_h_bits_identical(in->ref, in->cand, &where);
    }
    if (!same && !ADM_MUTANT("exact")) {
        adm_h_fail_gate(v, ADM_GATE_EXACT, "Element %lld differs from the reference bit for bit.", (long long)where);
        return;
    }
    for (int s = 0; s < in->n_special; s++) {
        const adm_special_outcome *so = &in->special[s];
        if (so->cand_status == ADM_ERR_NOT_FOUND) continue;
        if ((so->ref_status != so->cand_status ||
             (so->ref && so->cand && !adm_h_bits_identical(so->ref, so->cand, &where))) && !ADM_MUTANT("exact_case")) {
            adm_h_fail_gate(v, ADM_GATE_EXACT, "Case '%s' differs from the reference.", so->name);
            return;
        }
    }
}

ADM_FPENV_BODY
static adm_status judge_body(const adm_judge_input *in, const adm_gate_config *cfg, adm_verdict *v)
{
    adm_gate_config d;
    double scale, maxb = 0, t0, t1 = 0, t1_ms = 0;
    adm_h_reader rd, cd;
    int64_t first[2] = {-1, -1}; /* gates 3 and 7's scans where the GPU measured */
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
    /* the same for every candidate of a GPU session: taken once there */
    if (!adm_h_stats_dev_max_bound(in->stats_dev, in, &maxb)) {
        if (n > 0 && adm_o_cuda_stale(in->oracle->data))
            return ADM_FAIL(ADM_ERR_INTERNAL, "judge: the oracle's result is on the device only and no max bound "
                            "was kept (adm_oracle_result_fetch)");
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
        adm_h_stats_dev_keep_max_bound(in->stats_dev, in, maxb);
    }
    v->max_bound = maxb;
    if (in->cand->ndim != in->ref->ndim ||
        memcmp(in->cand->shape, in->ref->shape, sizeof(int64_t) * (size_t)in->ref->ndim)) {
        adm_h_fail_gate(v, ADM_GATE_SPECIAL, "The output has shape %s, the reference %s.",
                  adm_shape_str(in->cand->ndim, in->cand->shape, a, sizeof a),
                  adm_shape_str(in->ref->ndim, in->ref->shape, b, sizeof b));
        adm_h_fail_gate(v, ADM_GATE_MAGNITUDE, "The output's shape differs from the reference's.");
        adm_h_fail_gate(v, ADM_GATE_EXACT, "The output's shape differs from the reference's.");
        v->tier = ADM_TIER_HIGH;
        return ADM_OK;
    }
    rd = adm_h_reader_of(in->ref);
    cd = adm_h_reader_of(in->cand);
    t0 = in->seconds ? adm_h_now() : 0;
    if (adm_h_stats_dev_serves(in->stats_dev, in))
        st = adm_h_measure_numeric_dev(in->stats_dev, in, v, first);
    else if (adm_h_stats_batch_serves(in->stats_batch, in))
        st = adm_h_measure_numeric_batch(in->stats_batch, in, v);
    else if (n > 0 && adm_o_cuda_stale(in->oracle->data))
        st = ADM_FAIL(ADM_ERR_INTERNAL, "judge: the oracle's result is on the device only and the statistics of "
                      "this candidate (%s) run on the host (adm_oracle_result_fetch)", adm_dtype_name(in->cand->dtype));
    else
        st = adm_h_measure_numeric(in, &rd, &cd, v);
    if (in->seconds) {
        t1 = adm_h_now();
        t1_ms = adm_trace_ms();
        in->seconds[0] += t1 - t0;
    }
    if (st != ADM_OK) goto error;
    scale = v->rms_expected;
    if (in->oracle_certified && scale > 0 && maxb > cfg->sharpness * scale)
        return ADM_FAIL(ADM_ERR_RANGE, "judge: the oracle's max bound %.3g is above %.2g of the reference error "
                        "%.3g; refine it first (adm_oracle_refine)", maxb, cfg->sharpness, scale);
    adm_h_decide_numeric(v, cfg);
    gate_special(in, &rd, &cd, v, first[0]);
    gate_strides(in, v);
    if ((st = gate_flip(in, &rd, &cd, cfg, v)) != ADM_OK) goto error;
    gate_static(in, v);
    gate_exact(in, v, first[1]);
    adm_h_decide_tier(v);
    if (in->seconds) in->seconds[1] += adm_h_now() - t1;
    if (in->stats_dev && in->seconds) adm_trace_part("stats.other_gates", t1_ms, -1);
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
