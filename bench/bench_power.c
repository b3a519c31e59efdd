/* The power of the bias gate (issue 16): for each op, lean and output
 * size, the smallest realized lean the gates reject in 50% and 90% of the
 * seeds, on one capture and on four pooled; and the false alarms of
 * lossless reassociations. The sglang admission template (|mean e| <=
 * 0.25 rms e, RMS and max within 1.5x of the reference's) is judged on the
 * same candidates, side by side, in the same run.
 *
 * A candidate with a lean is a lossless path plus an injected lean of
 * controlled size. For the bf16 outputs the lossless path is the fused
 * one-rounding path (the oracle rounded to fp32, then to bf16); the lean
 * is added before its last rounding, as a kernel's would be. For the
 * fp32 row sum it is the warp-order sum (a reassociation of the
 * reference's pairwise tree, weakly paired with it): its value before the
 * last rounding is its fp32 result plus a uniform position inside that
 * rounding's interval, and the lean is added there. Leans: shift (a constant), nudge (+k
 * of an output ulp before rounding), round-up (a fraction of the elements
 * rounded toward +inf), gain (x (1 + eps)), channel (+-eps on alternate
 * channels: zero global mean) and token gain (x (1 +- eps) on alternate
 * rows). The realized lean is what the reports call it: the candidate's
 * statistic less the reference's, in units of D (the reference's RMS
 * error floored at the correctly rounded output's).
 *
 * Usage: bench_power [--quick] [--seeds S] [--fa-seeds F] [--min-n N] [--max-n N] [--only OP,KIND] [--no-fa]
 *                    [--fa-only] [--limit] [--grid LO:HI:K] [--out FILE.md] [--json FILE.json]
 * (--limit: beside admit and the template, the known-variance detector of
 * each lean on the same candidates, at admit's share of the false-alarm
 * rate and at the whole rate, its spreads from 40 other seeds without a
 * lean: the 50% point the best test could reach; for the global leans the
 * same detector with each candidate's own spread too: the best test that
 * estimates its spread from the capture)
 * (the sizes 64, 256, 1024, 16384 and 10^6 between min-n and max-n; --only
 * one row of the table, KIND -1 for all of the op's, which also keeps the
 * false alarms to that op: bench/run_power.sh runs the rows as separate
 * processes and bench/power_merge.py joins their JSON into one report)
 */
#include "adm_candidates.h"
#include "adm_capture.h"
#include "adm_harness.h"
#include "adm_oracle.h"
#include "bench_util.h"

#include <gsl/gsl_cdf.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_ROW_SUM, OP_LINEAR, OP_GELU, OP_RMSNORM, OP_LAYERNORM, OP_GATED, OP_COUNT };
static const char *op_label[OP_COUNT] = {"row_sum fp32", "linear bf16", "gelu bf16", "rmsnorm bf16",
                                         "layernorm bf16", "gated_residual bf16"};
static const char *op_name[OP_COUNT] = {"row_sum", "linear", "gelu", "rmsnorm", "layernorm", "gated_residual"};
static const char *op_params[OP_COUNT] = {"{}", "{}", "{\"approximate\":\"tanh\"}", "{\"eps\":1e-6}",
                                          "{\"eps\":1e-5}", "{}"};
/* lossless implementations judged for false alarms (besides the fused
 * one-rounding path), NULL-terminated */
static const char *op_lossless[OP_COUNT][3] = {{"warp", NULL}, {"splitk_fp32", "bias_epilogue", NULL},
                                               {NULL}, {"fused_fp32", NULL}, {"fused_affine_folded", NULL},
                                               {"early_round", NULL}};

enum { L_SHIFT, L_NUDGE, L_ROUNDUP, L_GAIN, L_CHANNEL, L_TOKEN, L_COUNT };
static const char *lean_label[L_COUNT] = {"shift", "nudge", "round-up", "gain", "channel", "token gain"};

/* The lean grid: the injected size in units of D (shift, channel), of an
 * output ulp (nudge), as a fraction of elements (round-up), and as D /
 * rms(o) (gain, token gain). */
#define NGRID_STD 29
#define NGRID_MAX 64
/* The grid in use: by default 0.01 to 3.5 in steps of 1.2-1.4x (until
 * 2026-12-02 every other point of it, steps of 1.4-2x: a 50% point is
 * interpolated linearly between the two points that straddle it, and a
 * detection curve that rises from 10% to 90% over a factor of about 2 of
 * the lean is not linear over such a step; on the fp32 row sum's shift
 * on four pooled captures of 64 the coarse grid read 0.265 D where 23
 * points from 0.1 to 1.2 and 200 seeds read 0.246), or --grid LO:HI:K
 * (K points spaced geometrically from LO to HI). */
static int ngrid = NGRID_STD;
static double grid[NGRID_MAX] = {0.01,  0.014, 0.02, 0.026, 0.035, 0.042, 0.05, 0.059, 0.07, 0.084,
                                 0.1,   0.118, 0.14, 0.167, 0.2,   0.245, 0.3,  0.367, 0.45, 0.56,
                                 0.7,   0.88,  1.1,  1.33,  1.6,   1.96,  2.4,  2.9,   3.5};

typedef struct sample {
    const adm_op *op;
    adm_op_params p;
    adm_tensor in[5];
    int nin;
    adm_tensor ref;                 /* the reference path's output */
    adm_oracle_result orc;
    double D, orms;
    adm_tensor base;                /* the lossless path the leans are added to */
    int64_t R, N;                   /* rows, channels of the output */
} sample;

static void die(const char *what)
{
    fprintf(stderr, "bench_power: %s: %s\n", what, adm_error_message());
    exit(2);
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The output's rows and channels for n elements. */
static void shape_for(int op, int64_t n, int64_t *R, int64_t *N)
{
    if (op == OP_ROW_SUM) { *R = 1; *N = n; return; }
    *N = n <= 64 ? 16 : n <= 256 ? 32 : n <= 1024 ? 64 : 256;
    *R = n / *N;
}

/* DiT-like activations [tokens, channels]: made 256 channels wide and cut
 * to the first `channels` where that is fewer (the generator calibrates
 * its outlier channels to max/p99 = 8, which a handful of values cannot
 * carry: 4 x 16 values gave outliers of 10^7). Where there are 2^20
 * values or more the calibration has data enough at the width asked for,
 * and the wide detour (a quarter kept) would cost most of the bench's time
 * at 10^6 rows of 64. */
static adm_status synth_cols(const adm_synth_config *sc, adm_tensor *x)
{
    adm_synth_config wide = *sc;
    adm_tensor full;
    int64_t shape[2] = {sc->tokens, sc->channels};
    if (sc->channels >= 256 || sc->tokens * sc->channels >= ((int64_t)1 << 20)) return adm_synth_activations(sc, x);
    wide.channels = 256;
    ADM_TRY(adm_synth_activations(&wide, &full));
    if (adm_tensor_alloc(x, full.dtype, 2, shape) != ADM_OK) {
        adm_tensor_free(&full);
        return adm_error_code();
    }
    for (int64_t t = 0; t < sc->tokens; t++)
        for (int64_t c = 0; c < sc->channels; c++) adm_tensor_set_bits(x, t * sc->channels + c, adm_tensor_bits(&full, t * 256 + c));
    adm_tensor_free(&full);
    return ADM_OK;
}

static void make_sample(int op, int64_t n, uint64_t seed, sample *s)
{
    adm_synth_config sc;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
    const adm_impl *ref, *base = NULL;
    adm_oracle *o;
    memset(s, 0, sizeof *s);
    s->op = adm_op_find(op_name[op]);
    if (adm_op_params_parse(s->op, op_params[op], &s->p) != ADM_OK) die("params");
    shape_for(op, n, &s->R, &s->N);
    adm_synth_config_default(&sc);
    sc.seed = seed;
    if (op == OP_ROW_SUM) {
        sc.tokens = n;
        sc.channels = 64;
        sc.dtype = ADM_FP32;
    } else if (op == OP_LINEAR) {
        sc.tokens = s->R;
        sc.channels = 64;
    } else {
        sc.tokens = s->R;
        sc.channels = s->N;
    }
    if (synth_cols(&sc, &s->in[0]) != ADM_OK) die("activations");
    s->nin = 1;
    if (op == OP_LINEAR) {
        int64_t ws[2] = {s->N, 64}, bs[1] = {s->N};
        if (adm_synth_gaussian(mix(seed) | 1, 1.0 / 8.0, ADM_BF16, 2, ws, &s->in[1]) != ADM_OK ||
            adm_synth_gaussian(mix(seed + 1) | 1, 0.02, ADM_BF16, 1, bs, &s->in[2]) != ADM_OK)
            die("weights");
        s->nin = 3;
    } else if (op == OP_RMSNORM || op == OP_LAYERNORM) {
        int64_t ws[1] = {s->N};
        if (adm_tensor_alloc(&s->in[1], ADM_BF16, 1, ws) != ADM_OK) die("weight");
        for (int64_t j = 0; j < s->N; j++) { /* weights around 1 */
            uint64_t b;
            adm_format_encode(ADM_BF16, 1.0 + 0.2 * sin((double)(seed * 31 + (uint64_t)j)), ADM_RNE, 0, &b);
            adm_tensor_set_bits(&s->in[1], j, b);
        }
        s->nin = 2;
        if (op == OP_LAYERNORM) {
            if (adm_synth_gaussian(mix(seed + 3) | 1, 0.05, ADM_BF16, 1, ws, &s->in[2]) != ADM_OK) die("bias");
            s->nin = 3;
        }
    } else if (op == OP_GATED) {
        int64_t gs[2] = {s->R, 1};
        adm_synth_config sy = sc;
        if (adm_synth_gaussian(mix(seed + 4) | 1, 0.5, ADM_BF16, 2, gs, &s->in[1]) != ADM_OK) die("gate");
        sy.seed = mix(seed + 5);
        if (synth_cols(&sy, &s->in[2]) != ADM_OK) die("y");
        s->nin = 3;
    }
    for (int i = 0; i < s->nin; i++) in[i] = &s->in[i];
    if (op == OP_GELU) {
        /* the eager path: GELU in fp32, rounded to bf16 */
        int64_t m = adm_tensor_numel(&s->in[0]);
        if (adm_tensor_alloc(&s->ref, ADM_BF16, 2, s->in[0].shape) != ADM_OK) die("alloc");
        for (int64_t i = 0; i < m; i++) {
            uint64_t b;
            float y = adm_emu_gelu_f32((float)adm_tensor_get(&s->in[0], i), ADM_GELU_TANH);
            adm_format_encode(ADM_BF16, y, ADM_RNE, 0, &b);
            adm_tensor_set_bits(&s->ref, i, b);
        }
    } else {
        ref = NULL; /* the reference path: the op's first registered implementation */
        for (int i = 0; i < adm_impl_count() && !ref; i++)
            if (!strcmp(adm_impl_at(i)->op, op_name[op])) ref = adm_impl_at(i);
        if (!ref) die("no reference");
        if (ref->run(ref, &s->p, in, &s->ref) != ADM_OK) die("reference");
    }
    if (adm_oracle_create(NULL, &o) != ADM_OK || adm_oracle_eval(o, s->op, &s->p, in, &s->orc) != ADM_OK) die("oracle");
    if (adm_oracle_refine(o, s->op, &s->p, in, &s->orc, adm_judge_resolve_scale(&s->orc.value, &s->ref)) != ADM_OK)
        die("refine");
    adm_oracle_free(o);
    s->D = adm_judge_resolve_scale(&s->orc.value, &s->ref);
    {
        double o2 = 0;
        int64_t m = adm_tensor_numel(&s->orc.value);
        for (int64_t i = 0; i < m; i++) o2 += ((double *)s->orc.value.data)[i] * ((double *)s->orc.value.data)[i];
        s->orms = sqrt(o2 / (double)m);
    }
    if (op == OP_ROW_SUM) {
        if (!(base = adm_impl_find("row_sum", "warp")) || base->run(base, &s->p, in, &s->base) != ADM_OK) die("warp");
    }
}

static void free_sample(sample *s)
{
    for (int i = 0; i < s->nin; i++) adm_tensor_free(&s->in[i]);
    adm_tensor_free(&s->ref);
    adm_tensor_free(&s->base);
    adm_oracle_result_free(&s->orc);
}

/* The candidate: the lossless path with lean `kind` of size g. */
static void make_candidate(const sample *s, int op, int kind, double g, uint64_t seed, adm_tensor *c)
{
    int64_t m = adm_tensor_numel(&s->orc.value);
    adm_dtype dt = s->ref.dtype;
    const double *o = s->orc.value.data;
    if (adm_tensor_alloc(c, dt, s->ref.ndim, s->ref.shape) != ADM_OK) die("alloc");
    for (int64_t i = 0; i < m; i++) {
        int64_t row = i / s->N, ch = i % s->N;
        double pre, y;
        adm_round mode = ADM_RNE;
        if (op == OP_ROW_SUM) {
            /* the warp-order sum before its last rounding: its fp32 result
             * plus where in that rounding's interval it fell (uniform,
             * from the seed), so that a lean below half an ulp moves the
             * rounding as it would in the kernel */
            double w = adm_tensor_get(&s->base, i), u = adm_format_ulp(dt, w);
            pre = w + ((double)(mix(seed * 7777 + (uint64_t)i + 5) >> 11) * 0x1p-53 - 0.5) * u;
        } else {
            pre = (double)(float)o[i];
        }
        y = pre;
        switch (kind) {
        case L_SHIFT: y = pre + g * s->D; break;
        case L_NUDGE: y = pre + g * adm_format_ulp(dt, pre); break;
        case L_ROUNDUP:
            if ((double)(mix(seed * 1000003u + (uint64_t)i) >> 11) * 0x1p-53 < g) mode = ADM_RUP;
            break;
        case L_GAIN: y = pre * (1.0 + g * s->D / s->orms); break;
        case L_CHANNEL: y = pre + (ch % 2 ? -1.0 : 1.0) * g * s->D; break;
        case L_TOKEN: y = pre * (1.0 + (row % 2 ? -1.0 : 1.0) * g * s->D / s->orms); break;
        default: break;
        }
        {
            uint64_t b;
            adm_format_encode(dt, y, mode, 0, &b);
            adm_tensor_set_bits(c, i, b);
        }
    }
}

static void judge_one(const sample *s, const adm_tensor *cand, adm_verdict *v)
{
    adm_judge_input in;
    memset(&in, 0, sizeof in);
    in.n_views = -1;
    in.oracle = &s->orc.value;
    in.bound = &s->orc.bound;
    in.cond = s->orc.has_cond ? &s->orc.cond : NULL;
    in.oracle_certified = 1;
    in.ref = &s->ref;
    in.cand = cand;
    if (adm_judge(&in, NULL, v) != ADM_OK) die("judge");
}

/* The sglang template on one capture: 1 when it rejects. */
static int template_rejects(const sample *s, const adm_tensor *cand)
{
    int64_t m = adm_tensor_numel(&s->orc.value);
    double sc = 0, sc2 = 0, sr2 = 0, mc = 0, mr = 0;
    for (int64_t i = 0; i < m; i++) {
        double o = ((double *)s->orc.value.data)[i], ec = adm_tensor_get(cand, i) - o, er = adm_tensor_get(&s->ref, i) - o;
        sc += ec;
        sc2 += ec * ec;
        sr2 += er * er;
        mc = fmax(mc, fabs(ec));
        mr = fmax(mr, fabs(er));
    }
    return fabs(sc / (double)m) > 0.25 * sqrt(sc2 / (double)m) || sqrt(sc2) > 1.5 * sqrt(sr2) || mc > 1.5 * mr;
}

/* The realized lean of `kind` (units of D): the candidate's statistic less
 * the reference's, as the reports call it. */
static double realized(const adm_verdict *v, int kind)
{
    const adm_bias_test *b;
    switch (kind) {
    case L_GAIN: b = &v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_GAIN]; break;
    case L_CHANNEL: b = &v->bias[ADM_BIAS_CHANNEL][ADM_BIAS_MEAN]; return b->cand - b->ref;
    case L_TOKEN: b = &v->bias[ADM_BIAS_ROW][ADM_BIAS_GAIN]; return b->cand - b->ref;
    default: b = &v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN]; break;
    }
    return fabs(b->cand) - fabs(b->ref);
}

/* The lean of realized size at which the detection fraction crosses q,
 * interpolated between grid points; NAN when it never does. */
static double crossing(const double *frac, const double *lean, int n, double q)
{
    for (int g = 0; g < n; g++)
        if (frac[g] >= q) {
            if (g == 0) return lean[0];
            return lean[g - 1] + (lean[g] - lean[g - 1]) * (q - frac[g - 1]) / (frac[g] - frac[g - 1]);
        }
    return NAN;
}

/* A detection point for the table: "-" when never reached on the grid,
 * "<= x" when reached at its first point already (x: the realized lean
 * there, at least 0: the smallest lean of the grid was caught). */
static void fmt_cross(char *buf, size_t n, double x, int at_first, double first)
{
    if (at_first) snprintf(buf, n, "<= %.2g", fmax(0.0, first));
    else if (isfinite(x)) snprintf(buf, n, "%.3g", x);
    else snprintf(buf, n, "-");
}

/* ------------------------------------------------------------ the limit */

/* The 50% point of the best test at a given false-alarm rate, on the
 * same candidates (GATES.md, gate 2, "What the best test could reach"): a
 * detector that knows the spread of the paired difference d = c - r of
 * the lossless path against the reference (estimated beforehand from 40
 * seeds without a lean that the sweep does not use) and tests the lean's
 * own statistic with it, one-sided (the lean's sign known): a z-test
 * (global) or a chi-square test over the groups (per channel, per row),
 * a group's variance from the ulp model (each element's d spreads as the
 * null's spread in ulps times its ulp at the condition scale). Its detection
 * fraction is counted on the sweep's candidates, so its 50% point is on
 * the same realized-lean axis as admit's. */

/* One sample's spreads, in units of D (d = c - r, u = D / ulp at the
 * condition scale, as gate 1's yardstick), summed over seeds by the caller. */
typedef struct lim_acc {
    double n, var_d, var_ud, mean_ulp, mean_u, var_gain;   /* global, per element */
    double G_ch, v_ch;                                      /* channels: count, mean variance of a group's mean */
    double G_row, v_row, a_row;                             /* rows' gains: count, mean variance, sum (rms_g / rms)^2 */
    double seeds;
    double null_rejects[L_COUNT];                           /* the detector's, at 1e-3, on lossless captures */
} lim_acc;

static double var_of(const double *x, int64_t n)
{
    double m = 0, s = 0;
    for (int64_t i = 0; i < n; i++) m += x[i];
    m /= (double)n;
    for (int64_t i = 0; i < n; i++) s += (x[i] - m) * (x[i] - m);
    return n > 1 ? s / (double)(n - 1) : 0;
}

static void lim_measure(const sample *s, int op, const adm_tensor *c, lim_acc *a)
{
    int64_t m = adm_tensor_numel(&s->orc.value), R = s->R, N = s->N;
    const double *o = s->orc.value.data, *cnd = s->orc.has_cond ? s->orc.cond.data : NULL;
    double *d = malloc(sizeof *d * (size_t)m), *ud = malloc(sizeof *ud * (size_t)m), *wd = malloc(sizeof *wd * (size_t)m);
    double *u = malloc(sizeof *u * (size_t)m), ou2 = 0, o2 = 0, mu = 0, mulp = 0;
    if (!d || !ud || !wd || !u) die("memory");
    for (int64_t i = 0; i < m; i++) {
        double ul = adm_format_ulp(s->ref.dtype, fmax(fabs(o[i]), cnd ? cnd[i] : 0)) / s->D;
        d[i] = (adm_tensor_get(c, i) - adm_tensor_get(&s->ref, i)) / s->D;
        u[i] = 1 / ul;
        ud[i] = u[i] * d[i];
        mulp += ul / (double)m;
        mu += u[i] / (double)m;
        ou2 += o[i] * o[i] * u[i] * u[i];
        o2 += o[i] * o[i];
    }
    for (int64_t i = 0; i < m; i++) wd[i] = (double)m * o[i] * u[i] * u[i] * sqrt(o2 / (double)m) / ou2 * d[i];
    a->n = (double)m;
    a->var_d += var_of(d, m);
    a->var_ud += var_of(ud, m);
    a->var_gain += var_of(wd, m);
    a->mean_ulp += mulp;
    a->mean_u += mu;
    if (op != OP_ROW_SUM) {
        double *g = malloc(sizeof *g * (size_t)(R > N ? R : N)), vs = 0, vr = 0, ar = 0;
        if (!g) die("memory");
        for (int64_t j = 0; j < N; j++) { /* a channel's mean of d over its R rows */
            for (int64_t r = 0; r < R; r++) g[r] = d[r * N + j];
            vs += var_of(g, R) / (double)R;
        }
        for (int64_t r = 0; r < R; r++) { /* a row's gain, its own weights */
            double q = 0, p2 = 0;
            for (int64_t j = 0; j < N; j++) {
                double oo = o[r * N + j], uu = u[r * N + j];
                q += oo * oo * uu * uu;
                p2 += oo * oo;
            }
            for (int64_t j = 0; j < N; j++) {
                double oo = o[r * N + j], uu = u[r * N + j];
                g[j] = q > 0 ? (double)N * oo * uu * uu * sqrt(p2 / (double)N) / q * d[r * N + j] : 0;
            }
            vr += var_of(g, N) / (double)N;
            ar += p2 / (double)N / (s->orms * s->orms);
        }
        a->G_ch = (double)N;
        a->v_ch += vs / (double)N;
        a->G_row = (double)R;
        a->v_row += vr / (double)R;
        a->a_row += ar;
        free(g);
    }
    a->seeds += 1;
    free(d);
    free(ud);
    free(wd);
    free(u);
}

/* The known-variance detector's statistics of one candidate, summed over
 * the captures of a pool: the sums of d, u d and the gain's w d over the
 * elements (the global leans; the groups' limit is analytic, g_limit). */
typedef struct kv_sums {
    double n, sd, sud, swd, s2d, s2ud, s2wd;
} kv_sums;

static void kv_add(const lim_acc *A, const sample *s, int op, const adm_tensor *c, kv_sums *k)
{
    int64_t m = adm_tensor_numel(&s->orc.value);
    const double *o = s->orc.value.data, *cnd = s->orc.has_cond ? s->orc.cond.data : NULL;
    double *d = malloc(sizeof *d * (size_t)m), *u = malloc(sizeof *u * (size_t)m), ou2 = 0, o2 = 0;
    (void)op;
    (void)A;
    if (!d || !u) die("memory");
    for (int64_t i = 0; i < m; i++) {
        u[i] = s->D / adm_format_ulp(s->ref.dtype, fmax(fabs(o[i]), cnd ? cnd[i] : 0));
        d[i] = (adm_tensor_get(c, i) - adm_tensor_get(&s->ref, i)) / s->D;
        ou2 += o[i] * o[i] * u[i] * u[i];
        o2 += o[i] * o[i];
    }
    for (int64_t i = 0; i < m; i++) {
        double wd = (double)m * o[i] * u[i] * u[i] * sqrt(o2 / (double)m) / ou2 * d[i];
        k->sd += d[i];
        k->sud += u[i] * d[i];
        k->swd += wd;
        k->s2d += d[i] * d[i];
        k->s2ud += u[i] * d[i] * u[i] * d[i];
        k->s2wd += wd * wd;
    }
    k->n += (double)m;
    free(d);
    free(u);
}

/* The sample variance of a sum's terms from their sum and sum of squares. */
static double kv_var(double n, double s, double s2) { return n > 1 ? fmax(0.0, (s2 - s * s / n) / (n - 1)) : 0; }

/* Whether the known-variance detector rejects, one-sided (the lean's sign
 * known) at rate a: the lean's own statistic against its null spread.
 * For a lean of the mean two z-tests, on d and on u d, each at a / 2.
 * With `est` the same tests with the spread of the candidate's own d (as
 * a test that does not know the null's must: a lean that moves roundings
 * spreads d beyond the null's, 1.2-1.3x its variance on the fp32 row sum
 * at the 50% points), still z and one-sided: the limit of any test that
 * estimates its spread from the capture. The global leans only: for the
 * groups the natural such test (the ratio of the groups' squared leans to
 * their variances from each group's own values, against F(G, sum (n_g -
 * 1)), the lean's pattern unknown) was measured and detects less than
 * admit's four tests (linear's per-token gain at 64 outputs: 2.02 D at
 * admit's share against admit's 1.12), so it bounds nothing. */
static int kv_rejects(const lim_acc *A, const kv_sums *k, int kind, double a, int est)
{
    double S = A->seeds, n = k->n;
    switch (kind) {
    case L_SHIFT:
    case L_NUDGE:
    case L_ROUNDUP: {
        double z = gsl_cdf_ugaussian_Qinv(a / 2);
        double vd = est ? kv_var(n, k->sd, k->s2d) : A->var_d / S, vu = est ? kv_var(n, k->sud, k->s2ud) : A->var_ud / S;
        return k->sd / n > z * sqrt(vd / n) || k->sud / n > z * sqrt(vu / n);
    }
    case L_GAIN:
        return k->swd / n > gsl_cdf_ugaussian_Qinv(a) * sqrt((est ? kv_var(n, k->swd, k->s2wd) : A->var_gain / S) / n);
    default: return 0;
    }
}

/* The median of the noncentral chi^2(G, lam), Patnaik's two-moment fit
 * c chi^2(h), c = (G + 2 lam) / (G + lam), h = (G + lam)^2 / (G + 2 lam). */
static double ncx2_median(double G, double lam)
{
    double c = (G + 2 * lam) / (G + lam), h = (G + lam) * (G + lam) / (G + 2 * lam);
    return c * gsl_cdf_chisq_Pinv(0.5, h);
}

/* The group leans' limit, analytic: the chi^2 test over G groups of known,
 * equal variance v (the null's mean) at rate a rejects half the time where
 * the noncentrality lam = sum_g lean_g^2 / v lifts the median of
 * chi^2(G, lam) to the quantile. Returned in the grid's unit (injected):
 * a channel's lean is +-g D (lam = G g^2 / v); a token's gain 1 +- g D /
 * rms(o), a row gain of g rms_row / rms(o) D (lam = g^2 sum (rms_row /
 * rms)^2 / v). With unequal known variances the chi^2 test weighted by
 * each group's own reaches further (lam = g^2 sum 1 / v_g >= G g^2 /
 * mean v): this is an upper bound on that limit. */
static double g_limit(const lim_acc *A, int kind, int pooled, double a)
{
    double S = A->seeds, G = (kind == L_CHANNEL ? A->G_ch : A->G_row) * pooled, q, lo = 0, hi, lam;
    if (!(G >= 1)) return NAN;
    q = gsl_cdf_chisq_Qinv(a, G);
    hi = 10 * q + 100;
    for (int it = 0; it < 200; it++) {
        double mid = (lo + hi) / 2;
        if (ncx2_median(G, mid) < q) lo = mid;
        else hi = mid;
    }
    lam = (lo + hi) / 2;
    if (kind == L_CHANNEL) return sqrt(lam * (A->v_ch / S) / G);
    return sqrt(lam * (A->v_row / S) / (A->a_row / S * pooled));
}

/* The realized lean at injected size x, interpolated over the grid's
 * realized leans (linearly from 0 below its first point). */
static double realized_at(const double *lean, int g0, int g1, double x)
{
    if (!isfinite(x)) return NAN;
    if (x <= grid[g0]) return lean[g0] * x / grid[g0];
    for (int g = g0 + 1; g < g1; g++)
        if (x <= grid[g]) return lean[g - 1] + (lean[g] - lean[g - 1]) * (x - grid[g - 1]) / (grid[g] - grid[g - 1]);
    return NAN;
}

/* The null's spreads of a cell, from seeds the sweep does not use. */
static void lim_null(int op, int64_t n, int seeds, lim_acc *A)
{
    memset(A, 0, sizeof *A);
    for (int sd = 0; sd < seeds; sd++) {
        sample smp;
        adm_tensor c;
        make_sample(op, n, mix((uint64_t)(op * 1000 + sd) + 900001), &smp);
        make_candidate(&smp, op, L_SHIFT, 0.0, (uint64_t)(sd + 100000), &c);
        lim_measure(&smp, op, &c, A);
        adm_tensor_free(&c);
        free_sample(&smp);
    }
    /* the detector on 40 further lossless captures: its false alarms at
     * the whole rate (a limit that rejects lossless paths is none) */
    for (int sd = 0; sd < seeds; sd++) {
        sample smp;
        adm_tensor c;
        make_sample(op, n, mix((uint64_t)(op * 1000 + sd) + 700001), &smp);
        make_candidate(&smp, op, L_SHIFT, 0.0, (uint64_t)(sd + 200000), &c);
        for (int kind = 0; kind < L_COUNT; kind++) {
            kv_sums K;
            memset(&K, 0, sizeof K);
            kv_add(A, &smp, op, &c, &K);
            A->null_rejects[kind] += kv_rejects(A, &K, kind, 1e-3, 0);
        }
        adm_tensor_free(&c);
        free_sample(&smp);
    }
}

int main(int argc, char **argv)
{
    int seeds = 20, fa_seeds = 100, quick = 0, limit = 0, only_op = -1, only_kind = -1, do_leans = 1, do_fa = 1;
    int64_t max_n = 1000000, min_n = 0;
    const char *out_md = NULL, *out_json = NULL;
    static const int64_t sizes[] = {64, 256, 1024, 16384, 1000000};
    FILE *md = stdout, *js = NULL;
    double t0 = bench_now();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fa-seeds") && i + 1 < argc) fa_seeds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-n") && i + 1 < argc) max_n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--min-n") && i + 1 < argc) min_n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            if (sscanf(argv[++i], "%d,%d", &only_op, &only_kind) != 2 || only_op < 0 || only_op >= OP_COUNT ||
                only_kind < -1 || only_kind >= L_COUNT) {
                fprintf(stderr, "bench_power: --only OP,KIND: OP 0..%d, KIND -1..%d\n", OP_COUNT - 1, L_COUNT - 1);
                return 2;
            }
        } else if (!strcmp(argv[i], "--no-fa")) do_fa = 0;
        else if (!strcmp(argv[i], "--fa-only")) do_leans = 0;
        else if (!strcmp(argv[i], "--limit")) limit = 1;
        else if (!strcmp(argv[i], "--grid") && i + 1 < argc) {
            double lo, hi;
            int k;
            if (sscanf(argv[++i], "%lf:%lf:%d", &lo, &hi, &k) != 3 || !(lo > 0) || !(hi > lo) || k < 2 || k > NGRID_MAX) {
                fprintf(stderr, "bench_power: --grid LO:HI:K: 0 < LO < HI, K from 2 to %d\n", NGRID_MAX);
                return 2;
            }
            for (int g = 0; g < k; g++) grid[g] = lo * pow(hi / lo, (double)g / (k - 1));
            ngrid = k;
        }
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out_md = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) out_json = argv[++i];
        else if (getenv("BENCH_POWER_DEBUG")) break;
        else {
            fprintf(stderr, "usage: bench_power [--quick] [--seeds S] [--fa-seeds F] [--min-n N] [--max-n N] "
                    "[--only OP,KIND] [--no-fa] [--fa-only] [--limit] [--grid LO:HI:K] [--out F.md] [--json F]\n");
            return 2;
        }
    }
    if (quick) { seeds = 6; fa_seeds = 10; max_n = 16384; }
    if (getenv("BENCH_POWER_DEBUG")) { /* one candidate's verdict: OP KIND GRID N */
        int op = atoi(argv[argc - 4]), kind = atoi(argv[argc - 3]);
        double g = atof(argv[argc - 2]);
        int64_t n = atoll(argv[argc - 1]);
        sample smp;
        adm_tensor c;
        adm_verdict v;
        make_sample(op, n, mix((uint64_t)(op * 1000)) + 77, &smp);
        make_candidate(&smp, op, kind, g, 1, &c);
        judge_one(&smp, &c, &v);
        {
            double sdo = 0, so2 = 0;
            int64_t m = adm_tensor_numel(&c), changed = 0;
            for (int64_t i = 0; i < m; i++) {
                double oo = ((double *)smp.orc.value.data)[i], dd = adm_tensor_get(&c, i) - adm_tensor_get(&smp.ref, i);
                sdo += dd * oo;
                so2 += oo * oo;
                changed += dd != 0;
                if (i < 4) printf("o %.9g ref %.9g cand %.9g\n", oo, adm_tensor_get(&smp.ref, i), adm_tensor_get(&c, i));
            }
            printf("direct gain diff %g (relative %g), %lld of %lld changed\n", sdo / so2 * smp.orms / smp.D, sdo / so2,
                   (long long)changed, (long long)m);
        }
        printf("tier %s D %g orms %g\n", adm_tier_name(v.tier), smp.D, smp.orms);
        for (int sc2 = 0; sc2 < 3; sc2++)
            for (int k2 = 0; k2 < 3; k2++) {
                const adm_bias_test *b = &v.bias[sc2][k2];
                if (b->applicable)
                    printf("  %s %s ref %.4g cand %.4g diff %.4g se %.3g excess %.3g floor %.3g t %.3g detect %.3g%s\n",
                           adm_bias_scope_name(sc2), adm_bias_kind_name(k2), b->ref, b->cand, b->diff, b->se, b->excess,
                           b->floor, b->t, b->detect, b->failed ? " FAIL" : "");
            }
        for (int gg = 1; gg < ADM_GATE_COUNT; gg++)
            if (!v.gate[gg].passed) printf("[%s] %s\n", adm_gate_name(gg), v.gate[gg].reason);
        return 0;
    }
    if (out_md && !(md = fopen(out_md, "w"))) { perror(out_md); return 2; }
    if (out_json && !(js = fopen(out_json, "w"))) { perror(out_json); return 2; }
    if (js) fprintf(js, "{\"bench\": \"bench_power\", \"seeds\": %d, \"fa_seeds\": %d, \"grid\": [", seeds, fa_seeds);
    if (js) {
        for (int g = 0; g < ngrid; g++) fprintf(js, "%s%.5g", g ? ", " : "", grid[g]);
        fprintf(js, "], \"cells\": [\n");
    }
    fprintf(md, "# Power of the bias gate: detection points and false alarms\n\n"
            "Realized lean at 50%% and 90%% detection, in units of D (the reference's RMS error floored at the "
            "correctly rounded output's), over %d seeds per grid point; 1 capture and 4 pooled captures; admit "
            "against the sglang template (|mean e| <= 0.25 rms e, RMS and max within 1.5x; pooled: any capture "
            "rejects). '-': not reached on the grid (up to %.2g of the grid unit); '<= x': reached at the grid's "
            "smallest lean already; '(magnitude)': most of the rejections at the 50%% point came from gate 1 "
            "(the RMS, max or ulp form), not the bias gate. 'injected': admit's and the template's 50%% points "
            "in the grid's unit (D for shift, channel, gain and token gain; an output ulp for nudge; a fraction of "
            "the elements for round-up), read where the realized axis is not monotone in the injected size (GELU's "
            "gains: its realized 50%% point can be negative).\n\n", seeds, grid[ngrid - 1]);
    if (limit)
        fprintf(md, "| op | lean | n | pooled | admit 50%% | admit 90%% | template 50%% | template 90%% | injected 50%%: "
                "admit, template | limit 50%% at admit's share | limit 50%% at 1e-3 | spread estimated: at the share, at 1e-3 |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    else
        fprintf(md, "| op | lean | n | pooled | admit 50%% | admit 90%% | template 50%% | template 90%% | injected 50%%: "
                "admit, template |\n|---|---|---|---|---|---|---|---|---|\n");
    if (do_leans) {
        int first_cell = 1;
        for (int op = 0; op < OP_COUNT; op++)
            for (int kind = 0; kind < L_COUNT; kind++) {
                if (op == OP_ROW_SUM && (kind == L_CHANNEL || kind == L_TOKEN)) continue; /* a 1-D output */
                if (only_op >= 0 && (op != only_op || (only_kind >= 0 && kind != only_kind))) continue;
                for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
                    for (int pooled = 1; pooled <= 4; pooled += 3) {
                        int64_t n = sizes[si];
                        double frac[NGRID_MAX], tfrac[NGRID_MAX], lean[NGRID_MAX], tlean[NGRID_MAX], bymag[NGRID_MAX], c50, c90, t50, t90, i50, ti50;
                        double lfs[NGRID_MAX], lfw[NGRID_MAX], les[NGRID_MAX], lew[NGRID_MAX], l50s = NAN, l50w = NAN;
                        double l50es = NAN, l50ew = NAN;
                        /* admit's statistics on this output share the rate: 5 on a 1-D one, 17 on a 2-D one
                         * (the group statistics' tests in ulps counted) */
                        double share = 1e-3 / (op == OP_ROW_SUM ? 5 : 17);
                        lim_acc A;
                        int S = n >= 1000000 ? (seeds < 20 ? seeds : 20) : seeds;
                        /* pooling is for small captures; at 10^6 elements detection sits near the
                         * floor, so the grid's middle (0.035 to 0.45) brackets it */
                        int g0 = 0, g1 = ngrid;
                        if (n >= 100000) {
                            while (g0 < ngrid - 1 && grid[g0] < 0.035 * 0.999) g0++;
                            while (g1 > g0 + 1 && grid[g1 - 1] > 0.45 * 1.001) g1--;
                        }
                        if (n > max_n || n < min_n || (pooled > 1 && n > 1024)) continue;
                        for (int g = 0; g < ngrid; g++) frac[g] = tfrac[g] = lean[g] = bymag[g] = lfs[g] = lfw[g] = les[g] = lew[g] = 0;
                        if (limit) lim_null(op, n, 40, &A);
                        for (int sd = 0; sd < S; sd++) {
                            sample smp[4];
                            for (int k = 0; k < pooled; k++)
                                make_sample(op, n, mix((uint64_t)(op * 1000 + sd * 10 + k) + 77), &smp[k]);
                            for (int g = g0; g < g1; g++) {
                                adm_verdict acc, v;
                                kv_sums K;
                                int trej = 0;
                                memset(&acc, 0, sizeof acc);
                                memset(&K, 0, sizeof K);
                                for (int k = 0; k < pooled; k++) {
                                    adm_tensor c;
                                    make_candidate(&smp[k], op, kind, grid[g], (uint64_t)(sd * 7 + k), &c);
                                    judge_one(&smp[k], &c, &v);
                                    trej |= template_rejects(&smp[k], &c);
                                    if (limit) kv_add(&A, &smp[k], op, &c, &K);
                                    adm_verdict_pool_add(&acc, &v, NULL);
                                    adm_tensor_free(&c);
                                }
                                if (pooled > 1) adm_verdict_pool_finish(&acc, NULL);
                                frac[g] += acc.tier == ADM_TIER_HIGH;
                                bymag[g] += acc.tier == ADM_TIER_HIGH && acc.gate[ADM_GATE_BIAS].passed;
                                tfrac[g] += trej;
                                if (limit) {
                                    lfs[g] += kv_rejects(&A, &K, kind, share, 0);
                                    lfw[g] += kv_rejects(&A, &K, kind, 1e-3, 0);
                                    les[g] += kv_rejects(&A, &K, kind, share, 1);
                                    lew[g] += kv_rejects(&A, &K, kind, 1e-3, 1);
                                }
                                lean[g] += realized(&acc, kind);
                            }
                            for (int k = 0; k < pooled; k++) free_sample(&smp[k]);
                        }
                        for (int g = 0; g < ngrid; g++) {
                            if (g < g0 || g >= g1) continue;
                            bymag[g] = frac[g] > 0 ? bymag[g] / frac[g] : 0; /* share caught without the bias gate */
                            frac[g] /= S;
                            tfrac[g] /= S;
                            lfs[g] /= S;
                            lfw[g] /= S;
                            les[g] /= S;
                            lew[g] /= S;
                            lean[g] /= S;
                            tlean[g] = lean[g];
                        }
                        c50 = crossing(frac + g0, lean + g0, g1 - g0, 0.5);
                        c90 = crossing(frac + g0, lean + g0, g1 - g0, 0.9);
                        t50 = crossing(tfrac + g0, tlean + g0, g1 - g0, 0.5);
                        t90 = crossing(tfrac + g0, tlean + g0, g1 - g0, 0.9);
                        /* the same points on the injected axis (the grid) */
                        i50 = crossing(frac + g0, grid + g0, g1 - g0, 0.5);
                        ti50 = crossing(tfrac + g0, grid + g0, g1 - g0, 0.5);
                        if (limit && (kind == L_CHANNEL || kind == L_TOKEN)) {
                            l50s = realized_at(lean, g0, g1, g_limit(&A, kind, pooled, share));
                            l50w = realized_at(lean, g0, g1, g_limit(&A, kind, pooled, 1e-3));
                        } else if (limit) {
                            l50s = crossing(lfs + g0, lean + g0, g1 - g0, 0.5);
                            l50w = crossing(lfw + g0, lean + g0, g1 - g0, 0.5);
                            if (lfs[g0] >= 0.5) l50s = fmax(0.0, lean[g0]);
                            if (lfw[g0] >= 0.5) l50w = fmax(0.0, lean[g0]);
                            l50es = crossing(les + g0, lean + g0, g1 - g0, 0.5);
                            l50ew = crossing(lew + g0, lean + g0, g1 - g0, 0.5);
                            if (les[g0] >= 0.5) l50es = fmax(0.0, lean[g0]);
                            if (lew[g0] >= 0.5) l50ew = fmax(0.0, lean[g0]);
                        }
#define CELL(x) (isfinite(x) ? x : -1.0)
                        {
                            char a5[32], a9[32], b5[32], b9[32], ia[32], it[32];
                            const char *by = "";
                            for (int g = g0; g < g1; g++)
                                if (frac[g] >= 0.5) {
                                    by = bymag[g] > 0.5 ? " (magnitude)" : "";
                                    break;
                                }
                            fmt_cross(a5, sizeof a5, c50, frac[g0] >= 0.5, lean[g0]);
                            fmt_cross(a9, sizeof a9, c90, frac[g0] >= 0.9, lean[g0]);
                            fmt_cross(b5, sizeof b5, t50, tfrac[g0] >= 0.5, tlean[g0]);
                            fmt_cross(b9, sizeof b9, t90, tfrac[g0] >= 0.9, tlean[g0]);
                            fmt_cross(ia, sizeof ia, i50, frac[g0] >= 0.5, grid[g0]);
                            fmt_cross(it, sizeof it, ti50, tfrac[g0] >= 0.5, grid[g0]);
                            fprintf(md, "| %s | %s | %lld | %d | %s%s | %s | %s | %s | %s, %s |", op_label[op],
                                    lean_label[kind], (long long)n, pooled, a5, by, a9, b5, b9, ia, it);
                            if (limit) fprintf(md, " %.3g | %.3g | %.3g, %.3g |", l50s, l50w, l50es, l50ew);
                            fprintf(md, "\n");
                            fflush(md);
                        }
                        if (js) {
                            fprintf(js, "%s  {\"op\": \"%s\", \"lean\": \"%s\", \"n\": %lld, \"pooled\": %d, "
                                    "\"admit_50\": %.4g, \"admit_90\": %.4g, \"template_50\": %.4g, \"template_90\": %.4g, "
                                    "\"admit_50_injected\": %.4g, \"template_50_injected\": %.4g, "
                                    "\"op_index\": %d, \"lean_index\": %d, \"seeds\": %d, \"g0\": %d, \"g1\": %d, \"frac\": [",
                                    first_cell ? "" : ",\n", op_label[op], lean_label[kind], (long long)n, pooled, CELL(c50),
                                    CELL(c90), CELL(t50), CELL(t90), CELL(i50), CELL(ti50), op, kind, S, g0, g1);
                            for (int g = 0; g < ngrid; g++) fprintf(js, "%s%.3g", g ? ", " : "", frac[g]);
                            fprintf(js, "], \"template_frac\": [");
                            for (int g = 0; g < ngrid; g++) fprintf(js, "%s%.3g", g ? ", " : "", tfrac[g]);
                            fprintf(js, "], \"realized\": [");
                            for (int g = 0; g < ngrid; g++) fprintf(js, "%s%.4g", g ? ", " : "", lean[g]);
                            if (limit) {
                                fprintf(js, "], \"limit_null_rejects\": %.0f, \"limit_null_samples\": 40", A.null_rejects[kind]);
                                fprintf(js, ", \"limit_share_50\": %.4g, \"limit_whole_50\": %.4g, \"limit_share\": %.4g, "
                                        "\"limit_frac_share\": [", CELL(l50s), CELL(l50w), share);
                                for (int g = 0; g < ngrid; g++) fprintf(js, "%s%.3g", g ? ", " : "", lfs[g]);
                                fprintf(js, "], \"limit_frac_whole\": [");
                                for (int g = 0; g < ngrid; g++) fprintf(js, "%s%.3g", g ? ", " : "", lfw[g]);
                                fprintf(js, "], \"limit_est_share_50\": %.4g, \"limit_est_whole_50\": %.4g, "
                                        "\"limit_frac_est_share\": [", CELL(l50es), CELL(l50ew));
                                for (int g = 0; g < ngrid; g++) fprintf(js, "%s%.3g", g ? ", " : "", les[g]);
                                fprintf(js, "], \"limit_frac_est_whole\": [");
                                for (int g = 0; g < ngrid; g++) fprintf(js, "%s%.3g", g ? ", " : "", lew[g]);
                            }
                            fprintf(js, "], \"by_magnitude\": [");
                            for (int g = 0; g < ngrid; g++) fprintf(js, "%s%.3g", g ? ", " : "", bymag[g]);
                            fprintf(js, "]}");
                            fflush(js);
                        }
                        first_cell = 0;
                        fprintf(stderr, "%-20s %-10s n=%-8lld pooled=%d  admit %.3g / %.3g  template %.3g / %.3g  limit %.3g "
                                "(1e-3: %.3g; spread estimated %.3g, %.3g; null %.0f/40)  (%.0f s)\n", op_label[op], lean_label[kind],
                                (long long)n, pooled, c50, c90, t50, t90, l50s, l50w, l50es, l50ew,
                                limit ? A.null_rejects[kind] : 0.0, bench_now() - t0);
                    }
            }
    }
    /* ---- false alarms: lossless paths, no lean */
    if (do_fa) {
        long tot = 0, rej = 0, trej = 0;
        fprintf(md, "\n## False alarms of lossless paths\n\n| op | path | n | samples | admit rejects | template "
                "rejects |\n|---|---|---|---|---|---|\n");
        if (js) fprintf(js, "\n], \"false_alarm_rows\": [\n");
        for (int op = 0; op < OP_COUNT; op++)
            for (int b = -1; b < 3; b++) {
                const char *bn = b < 0 ? "fused one-rounding" : op_lossless[op][b];
                if (!bn) break;
                if (only_op >= 0 && op != only_op) continue;
                for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                    int64_t n = sizes[si];
                    int S = n >= 1000000 ? 4 : n >= 16384 ? fa_seeds / 4 : fa_seeds, r = 0, tr = 0;
                    if (n > max_n || n < min_n) continue;
                    if (S < 2) S = 2;
                    for (int sd = 0; sd < S; sd++) {
                        sample smp;
                        adm_tensor c;
                        adm_verdict v;
                        make_sample(op, n, mix((uint64_t)(op * 7919 + sd) + 99991), &smp);
                        if (b < 0) {
                            make_candidate(&smp, op, L_SHIFT, 0.0, 0, &c);
                        } else {
                            const adm_impl *im = adm_impl_find(op_name[op], bn);
                            const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
                            for (int i = 0; i < smp.nin; i++) in[i] = &smp.in[i];
                            if (!im || im->run(im, &smp.p, in, &c) != ADM_OK) die(bn);
                        }
                        judge_one(&smp, &c, &v);
                        if (v.tier == ADM_TIER_HIGH) {
                            r++;
                            fprintf(stderr, "false alarm: %s %s n=%lld seed %d:", op_label[op], bn, (long long)n, sd);
                            for (int gg = 1; gg < ADM_GATE_COUNT; gg++)
                                if (!v.gate[gg].passed) fprintf(stderr, " [%s] %s", adm_gate_name(gg), v.gate[gg].reason);
                            fprintf(stderr, "\n");
                        }
                        tr += template_rejects(&smp, &c);
                        adm_tensor_free(&c);
                        free_sample(&smp);
                    }
                    tot += S;
                    rej += r;
                    trej += tr;
                    fprintf(md, "| %s | %s | %lld | %d | %d | %d |\n", op_label[op], bn, (long long)n, S, r, tr);
                    fflush(md);
                    if (js)
                        fprintf(js, "%s  {\"op\": \"%s\", \"path\": \"%s\", \"n\": %lld, \"samples\": %d, \"admit\": %d, "
                                "\"template\": %d, \"op_index\": %d, \"path_index\": %d}", tot == S ? "" : ",\n", op_label[op], bn,
                                (long long)n, S, r, tr, op, b);
                }
            }
        fprintf(md, "| all | | | %ld | %ld | %ld |\n", tot, rej, trej);
        if (js) fprintf(js, "\n], \"false_alarms\": {\"samples\": %ld, \"admit\": %ld, \"template\": %ld}", tot, rej, trej);
        fprintf(stderr, "false alarms: admit %ld, template %ld of %ld lossless samples (%.0f s)\n", rej, trej, tot,
                bench_now() - t0);
    }
    if (js) fprintf(js, "%s, \"seconds\": %.1f}\n", do_fa ? "" : "\n]", bench_now() - t0);
    if (md != stdout) fclose(md);
    if (js) fclose(js);
    return 0;
}
