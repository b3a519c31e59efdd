/* Budgets: what a command will hold and compute for a capture, from the
 * shapes the file declares, judged before its data is read (the capture
 * reader calls adm_plan_check between its two passes, in the sandbox's
 * child and again in the caller: adm_capture_read_sandboxed_plan).
 *
 * The model counts what the commands allocate for a capture's tensors, as
 * harness/run.c, harness/replay.c, oracle/ and candidates/ do it today:
 *   the capture           every dataset, at its storage size
 *   the oracle            value, bound and condition scale (3 fp64 per output
 *                         element) and its workspace: fp64 copies of the
 *                         inputs and fp32 |x| for a GEMM's scale (12 bytes per
 *                         input element), a layernorm's broadcast modulation
 *                         (16 per element of x), a norm's per-set buffers
 *   run                   per implementation its output on the inputs, at
 *                         impl_out_bytes per element; the probes and views run
 *                         on the first ADM_PROBE_ROWS rows (a fraction f of x,
 *                         adm_harness_probe_inputs) and, for the GEMM family,
 *                         the first ADM_PROBE_COLS output channels (fc of the
 *                         weight; fo = f fc of the output): per implementation
 *                         the 8 probes' outputs (kept until the gates), the
 *                         candidate's output on that cut, 3 view outputs, at
 *                         fo of full size; the view storage at a time and 8
 *                         probe inputs at f; the cut inputs; the emulations'
 *                         fp32 copies of the inputs
 *   the gates             gates 1 and 2's raw sums (adm_h_stats_raw_bytes: per
 *                         row, per channel in at most 64 MiB of stripes, per
 *                         block of rows); replay's, for as many candidates as
 *                         it measures at once (adm_h_stats_batch_bytes: at
 *                         most 192 MiB past one)
 * and the arithmetic in multiply-adds: a GEMM's M N K, attention's
 * B S T (D + E), linear attention's B (S + T) D E, one per element read or
 * written for the other ops; the oracle counts three times the op (value,
 * bound, condition scale), run the op once per implementation on the
 * inputs and, at fo of its size, 24 times on the probes' cut (7 probes and
 * 4 views of each implementation, the candidate on the rows where they are
 * a cut, the broadcast view's twin), and every judgement ten per output
 * element. The MPFR
 * refinement has its own budget (--mpfr-budget). */
#include "adm_capture.h"
#include "harness_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MIB ((double)(1 << 20))

static const char *kind_name(adm_plan_kind k)
{
    return k == ADM_PLAN_ORACLE ? "oracle" : k == ADM_PLAN_REPLAY ? "replay" : "run";
}

adm_status adm_plan_parse_limit(const char *what, const char *text, int bytes, int64_t *out)
{
    static const char units[] = "KMGT";
    const char *p = text;
    char *end;
    double v, scale = 1;
    errno = 0;
    /* a plain decimal number: digits first (no sign, no inf or nan), and
     * none of strtod's hexadecimal */
    if (!text || !(*p >= '0' && *p <= '9') || strpbrk(text, "xX")) goto bad;
    v = strtod(p, &end);
    if (errno || !isfinite(v) || (end[0] && end[1])) goto bad;
    if (*end) {
        const char *u = strchr(units, *end >= 'a' && *end <= 'z' ? *end - 'a' + 'A' : *end);
        if (!u || !*u) goto bad;
        for (const char *q = units; q <= u; q++) scale *= bytes ? 1024.0 : 1000.0;
    }
    v *= scale;
    if (!(v >= 0) || v >= 9.2e18) goto bad;
    *out = (int64_t)v;
    return ADM_OK;
bad:
    return ADM_FAIL(ADM_ERR_INVALID, "%s: expected %s with an optional K, M, G or T suffix (%s; 0: no limit), "
                    "got '%.64s'", what, bytes ? "a number of bytes" : "a number of multiply-adds",
                    bytes ? "powers of 1024" : "powers of 1000", text ? text : "");
}

static adm_status env_limit(const char *name, int bytes, int64_t *v)
{
    const char *e = getenv(name);
    if (!e || !*e) return ADM_OK;
    return adm_plan_parse_limit(name, e, bytes, v);
}

adm_status adm_plan_init(adm_plan *p, adm_plan_kind kind)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->impls = 2;
    p->impl_out_bytes = 4;
    /* Half the machine: the FLUX.1 MLP capture's run (x 4096 x 3072,
     * w 12288 x 3072) is modelled at 6.7 GB, within it on 16 GiB. */
    p->max_memory = pages > 0 && psz > 0 ? (int64_t)pages * psz / 2 : (int64_t)8 << 30;
    p->max_work = ADM_PLAN_DEFAULT_WORK;
    ADM_TRY(env_limit("ADM_MAX_MEMORY", 1, &p->max_memory));
    ADM_TRY(env_limit("ADM_MAX_WORK", 0, &p->max_work));
    return ADM_OK;
}

/* ------------------------------------------------------------ the model */

static double bytes_of(const adm_tensor *t)
{
    return t ? (double)adm_tensor_numel(t) * adm_format_get(t->dtype)->storage_bytes : 0;
}

static double capture_bytes(const adm_capture *c)
{
    double b = bytes_of(adm_capture_reference(c)) + bytes_of(adm_capture_oracle(c)) +
               bytes_of(adm_capture_oracle_bound(c));
    for (int i = 0; i < adm_capture_input_count(c); i++) b += bytes_of(adm_capture_input(c, i).tensor);
    for (int i = 0; i < adm_capture_candidate_count(c); i++) b += bytes_of(adm_capture_candidate(c, i).tensor);
    for (int s = 0; s < adm_capture_special_count(c); s++) {
        b += bytes_of(adm_capture_special_reference(c, s));
        for (int i = 0; i < adm_capture_special_input_count(c, s); i++)
            b += bytes_of(adm_capture_special_input(c, s, i).tensor);
        for (int i = 0; i < adm_capture_special_candidate_count(c, s); i++)
            b += bytes_of(adm_capture_special_candidate(c, s, i).tensor);
    }
    return b;
}

/* The process itself beside its tensors: its libraries, OpenMP's and
 * OpenBLAS's per-thread buffers (15-40 MB measured on the bundled
 * captures), so that the estimate bounds the peak resident size. */
#define PROCESS_BYTES (64 * MIB)

/* Gates 1 and 2's raw sums for an output of rows x last (declared: a
 * bomb's extents are clamped before they meet int64_t; its estimate is
 * past any budget anyway). */
static double gates_bytes(adm_plan_kind kind, double rows, double last, int nc)
{
    int64_t R = (int64_t)fmin(rows, 1e15), N = (int64_t)fmin(last, 1e15);
    if (kind == ADM_PLAN_REPLAY) return adm_h_stats_batch_bytes(R, N, nc);
    if (kind == ADM_PLAN_RUN) return adm_h_stats_raw_bytes(R, N);
    return 0;
}

typedef struct cost {
    double capture, oracle_out, oracle_ws, impls, gates; /* bytes */
    double op_work, oracle_work, runs, probe_runs, work;   /* multiply-adds; runs: implementation runs at full
                                                              size, probe_runs: on the probes' cut */
    double frac;                                           /* the probes' cut: the fraction of the op */
} cost;

static double dim(const adm_tensor *t, int i) { return t && i >= 0 && i < t->ndim ? (double)t->shape[i] : 0; }
static double numel(const adm_tensor *t) { return t ? (double)adm_tensor_numel(t) : 0; }

/* The op's share of the model; 0 and the shapes left to the checks that
 * follow the read when the op, its parameters or its inputs do not fit. */
static int op_cost(const adm_plan *pl, const adm_capture *c, const adm_op *op, cost *k)
{
    adm_op_params p;
    adm_op_shapes sh;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
    int nd = 0, r;
    int64_t oshape[ADM_MAX_DIMS];
    double O = 1, sin = 0, x0, last, rows;
    const char *name = adm_op_name(op);
    if (adm_op_params_parse(op, pl->params ? pl->params : adm_capture_params(c), &p) != ADM_OK) {
        adm_error_clear();
        return 0;
    }
    memset(&sh, 0, sizeof sh);
    for (int i = 0; i < adm_op_input_count(op); i++) {
        in[i] = adm_capture_find_input(c, adm_op_input_name(op, i));
        if (!in[i]) continue;
        sh.present[i] = 1;
        sh.ndim[i] = in[i]->ndim;
        memcpy(sh.shape[i], in[i]->shape, sizeof(int64_t) * (size_t)in[i]->ndim);
        sin += numel(in[i]);
    }
    if (adm_op_output_shape(op, &p, &sh, &nd, oshape) != ADM_OK) {
        adm_error_clear();
        return 0;
    }
    for (int i = 0; i < nd; i++) O *= (double)oshape[i];
    x0 = numel(in[0]);
    r = in[0] ? in[0]->ndim : 0;
    /* the op's multiply-adds */
    if (!strcmp(name, "matmul")) {
        k->op_work = dim(in[0], 0) * dim(in[0], 1) * dim(in[1], 1);
    } else if (!strcmp(name, "linear") || !strcmp(name, "linear+gelu")) {
        k->op_work = x0 * dim(in[1], 0);
    } else if (!strcmp(name, "attention") || !strcmp(name, "linear_attention")) {
        double S = dim(in[0], r - 2), D = dim(in[0], r - 1), T = dim(in[1], r - 2), E = dim(in[2], r - 1);
        double batch = S * D > 0 ? x0 / (S * D) : 0;
        k->op_work = !strcmp(name, "attention") ? batch * S * T * (D + E) : batch * (S + T) * D * E;
    } else {
        k->op_work = sin + O;
    }
    k->oracle_out = 24 * O;
    k->oracle_ws = 12 * sin;
    if (!strcmp(name, "layernorm") && p.modulate) k->oracle_ws += 16 * x0;
    if (!strcmp(name, "rmsnorm") || !strcmp(name, "layernorm")) k->oracle_ws += 80 * dim(in[0], r - 1);
    if (!strcmp(name, "groupnorm") && dim(in[0], 0) > 0 && p.groups > 0) k->oracle_ws += 80 * x0 / (dim(in[0], 0) * p.groups);
    k->oracle_work = 3 * k->op_work;
    /* the gates' raw sums */
    last = nd ? (double)oshape[nd - 1] : 1;
    rows = last > 0 ? O / last : 0;
    k->gates = gates_bytes(pl->kind, rows, last, adm_capture_candidate_count(c));
    if (pl->kind == ADM_PLAN_RUN) {
        double ob = pl->impl_out_bytes > 0 ? pl->impl_out_bytes : 8, f = 1, fc = 1, fo;
        double x0b = x0 * (in[0] ? adm_format_get(in[0]->dtype)->storage_bytes : 0);
        int ax = in[0] ? adm_h_probe_axis(op, &p, in[0]->ndim, in[0]->shape) : -1, cut;
        if (ax >= 0) f = (double)ADM_PROBE_ROWS / (double)in[0]->shape[ax];
        /* the output channels run's probes keep (adm_h_probe_col_axis):
         * a fraction fc of the output and of the op's work */
        for (int i = 1; i < adm_op_input_count(op); i++) {
            int ca = adm_h_probe_col_axis(op, i);
            if (ca >= 0 && dim(in[i], ca) > ADM_PROBE_COLS) fc = fmin(fc, ADM_PROBE_COLS / dim(in[i], ca));
        }
        fo = f * fc;
        cut = ax >= 0 || fc < 1;
        /* outputs on the inputs; on the probes' cut (fo of the output):
         * the 8 probes' outputs (kept) and the candidate's, 3 view
         * outputs; the view's storage (twice x, strided) and its twin at a
         * time and 8 probe inputs (f of x); the cut inputs (at most f + fc
         * of every input, twice); the emulations' fp32 copies of the
         * inputs */
        k->impls = pl->impls * ob * O + fo * (pl->impls * 8 + cut + 3) * ob * O + f * (4 * x0b + 8 * x0b) +
                   cut * ((ax >= 0) * f + (fc < 1) * fc) * 2 * sin + 4 * sin;
        k->runs = pl->impls;
        k->probe_runs = pl->impls * (7 + 4) + 1 + cut;
        k->frac = fo;
        k->work = k->oracle_work + (k->runs + fo * k->probe_runs) * k->op_work + 10 * O;
    } else if (pl->kind == ADM_PLAN_REPLAY) {
        k->work = k->oracle_work + 10 * O * adm_capture_candidate_count(c);
    } else {
        if (pl->write) k->impls = 16 * O; /* value and bound copied into the capture to write */
        k->work = k->oracle_work;
    }
    return 1;
}

static void estimate(const adm_plan *pl, const adm_capture *c, cost *k)
{
    const adm_op *op = adm_op_find(adm_capture_op(c));
    memset(k, 0, sizeof *k);
    k->capture = capture_bytes(c);
    if (op) {
        op_cost(pl, c, op, k);
    } else if (pl->kind == ADM_PLAN_REPLAY && adm_capture_oracle(c)) {
        /* a user's oracle: a zero bound beside it, and the judgements */
        const adm_tensor *o = adm_capture_oracle(c);
        double N = o->ndim ? (double)o->shape[o->ndim - 1] : 1;
        k->oracle_out = 8 * numel(o);
        k->gates = gates_bytes(pl->kind, N > 0 ? numel(o) / N : 0, N, adm_capture_candidate_count(c));
        k->work = 10 * numel(o) * adm_capture_candidate_count(c);
    }
}

static int64_t clamp(double v) { return v >= 9.2e18 ? INT64_MAX : (int64_t)v; }

static void totals(adm_plan *p, const adm_capture *declared, cost *k)
{
    estimate(p, declared, k);
    p->memory = clamp(PROCESS_BYTES + k->capture + k->oracle_out + k->oracle_ws + k->impls + k->gates);
    p->work = clamp(k->work);
}

adm_status adm_plan_estimate(adm_plan *p, const adm_capture *declared)
{
    cost k;
    totals(p, declared, &k);
    return ADM_OK;
}

static const char *human(double b, char *buf, size_t n)
{
    if (b >= 1024 * MIB) snprintf(buf, n, "%.1f GiB", b / (1024 * MIB));
    else if (b >= MIB) snprintf(buf, n, "%.0f MiB", ceil(b / MIB));
    else snprintf(buf, n, "%.0f bytes", b);
    return buf;
}

adm_status adm_plan_check(const adm_capture *declared, void *plan)
{
    adm_plan *p = plan;
    const char *path = adm_capture_path(declared) ? adm_capture_path(declared) : "(capture)";
    cost k;
    char a[32], b[32], cc[32], d[32], e[32], f[32];
    totals(p, declared, &k);
    if (p->max_memory > 0 && p->memory > p->max_memory) {
        char impls[160] = "";
        if (p->kind == ADM_PLAN_RUN)
            snprintf(impls, sizeof impls, ", %d implementations' outputs on the inputs, probes and views %s",
                     p->impls, human(k.impls, e, sizeof e));
        return ADM_FAIL(ADM_ERR_RANGE, "%s: %s would hold about %s of memory (the capture %s, the oracle's value, "
                        "bound and scale %s and its workspace %s%s, the process 64 MiB), above the memory budget of %s "
                        "(--max-memory, ADM_MAX_MEMORY; 0: no limit)", path, kind_name(p->kind),
                        human((double)p->memory, a, sizeof a), human(k.capture, b, sizeof b),
                        human(k.oracle_out, cc, sizeof cc), human(k.oracle_ws, d, sizeof d), impls,
                        human((double)p->max_memory, f, sizeof f));
    }
    if (p->max_work > 0 && p->work > p->max_work) {
        char runs[160] = "";
        if (p->kind == ADM_PLAN_RUN)
            snprintf(runs, sizeof runs, ", %.0f runs of the implementations at %.3g each and %.0f on the probes' "
                     "cut at %.3g", k.runs, k.op_work, k.probe_runs, k.frac * k.op_work);
        return ADM_FAIL(ADM_ERR_RANGE, "%s: %s would take about %.3g multiply-adds (the oracle %.3g%s), above the "
                        "work budget of %.3g (--max-work, ADM_MAX_WORK; 0: no limit)", path, kind_name(p->kind),
                        (double)p->work, k.oracle_work, runs, (double)p->max_work);
    }
    return ADM_OK;
}
