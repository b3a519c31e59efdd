/* admit-kernel run (implementations on a capture) and table (a runtime's
 * fusion table, every entry measured). */
#include "cli.h"
#include "dist.h"
#include "adm_candidates.h"
#include "adm_harness.h"
#include "adm_trace.h"
#include "adm_cuda.h"
#include "adm_oracle.h"
#include "adm_report.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char run_usage[] =
    "usage: admit-kernel run CAPTURE --reference IMPL --candidate IMPL... [options]\n"
    "\n"
    "Runs the implementations on the capture's inputs, on special-value probes\n"
    "(NaN element and row, +-Inf, +-0, subnormals, near overflow, M = 0) and on\n"
    "transposed, strided, offset and broadcast views, then scores as replay does.\n"
    "IMPL: a registered implementation of the capture's op (admit-kernel run --list)\n"
    "or path.so:name, a kernel of a plugin (candidates/plugin.h).\n"
    "  --reader R         a downstream reader: fp8_e4m3, threshold:T, topk:K\n"
    "  --claim NAME=TIER  exit 1 when candidate NAME measures looser than TIER; NAME is a\n"
    "                     --candidate as spelled, or a plugin kernel's name (k of path.so:k)\n"
    ADM_CLI_REPORT_USAGE
    "  --list             the registered implementations\n"
    "  --mpfr-budget T    the most MPFR work of the oracle, in input terms (default 2^24; 0: no limit)\n"
    "  --device D         where the oracle and gates 1 and 2's statistics run: auto (default: the GPU\n"
    "                     where admit was built with CUDA and one is usable, else the CPU), cpu, cuda or\n"
    "                     cuda:N (without a usable GPU: exit 2), as replay's\n"
    ADM_CLI_BUDGET_HELP;

static const char table_usage[] =
    "usage: admit-kernel table FILE [--strict] [--json F] [--junit F] [--html DIR] [--mpfr-budget T]\n"
    "                            [--max-memory B] [--max-work W] [--unit-timeout S]\n"
    "\n"
    "Measures every entry of a fusion table (JSON, fusions/FORMAT.md) on its\n"
    "captures and compares the measured tier with the declared one: exit 1 when a\n"
    "declared tier is looser than measured (unsafe), and with --strict also when\n"
    "it is stricter (promotable). The whole table is checked before anything is\n"
    "measured; captures and plugins resolve from the table's folder. Under mpirun or\n"
    "srun the captures are measured over the ranks and rank 0 writes the reports one\n"
    "process would (README: running on a cluster).\n"
    ADM_CLI_REPORT_USAGE
    "  --mpfr-budget T    the most MPFR work of the oracle, in input terms (default 2^24; 0: no limit)\n"
    ADM_CLI_BUDGET_HELP
    ADM_CLI_MPI_HELP;

static void list_impls(void)
{
    const char *op = "";
    for (int i = 0; i < adm_impl_count(); i++) {
        const adm_impl *im = adm_impl_at(i);
        if (strcmp(op, im->op)) printf("%s\n", im->op);
        op = im->op;
        printf("  %-22s %s%s\n", im->name, im->what, strcmp(adm_impl_reference(im->op)->name, im->name) ? "" : "  [reference]");
    }
}

/* A plugin kernel's short name: what follows the last ':' of path.so:name
 * (adm_impl_resolve's spelling of a plugin); NULL for a registry name. */
static const char *short_name(const char *spec)
{
    const char *colon = strrchr(spec, ':');
    return colon && strstr(spec, ".so") ? colon + 1 : NULL;
}

/* Which candidate each claim names, before anything is measured: the
 * candidates spelled as the claim (--candidate given twice counts once),
 * else the plugin kernels whose short name it is. A claim that names no
 * candidate, or plugin kernels of two spellings, or a candidate that
 * already has a claim, is refused: a gate built on run must check what it
 * says it checks. who[k] is the claim of candidate k, or -1. */
static int match_claims(char *const *names, int ncl, const char *const *cands, int nc, int *who)
{
    for (int k = 0; k < nc; k++) who[k] = -1;
    for (int c = 0; c < ncl; c++) {
        int full = 0, first = -1;
        for (int k = 0; k < nc; k++) full += !strcmp(names[c], cands[k]);
        for (int k = 0; k < nc; k++) {
            const char *sn = short_name(cands[k]);
            if (full ? strcmp(names[c], cands[k]) != 0 : !sn || strcmp(names[c], sn) != 0) continue;
            if (first >= 0 && strcmp(cands[first], cands[k]) != 0)
                return adm_cli_usage_error("--claim %s: ambiguous, both '%s' and '%s' are kernels of that name; "
                                           "claim one by its full spelling", names[c],
                                           cands[first], cands[k]);
            if (who[k] >= 0 && who[k] != c)
                return adm_cli_usage_error("--claim %s: candidate '%s' already has a claim", names[c],
                                           cands[k]);
            if (first < 0) first = k;
            who[k] = c;
        }
        if (first < 0)
            return adm_cli_usage_error("--claim: no candidate named '%s' (the --candidate spellings, or a plugin "
                                       "kernel's name)", names[c]);
    }
    return ADM_EXIT_OK;
}

int adm_cmd_run(int argc, char **argv)
{
    const char *capture = NULL, *ref = NULL, *cands[32], *json = NULL, *junit = NULL, *html = NULL, *reader_text = NULL;
    char *claim_names[32];
    adm_tier claim_tiers[32];
    int nc = 0, ncl = 0, rc = ADM_EXIT_OK, strict = 0, who[32], device = -2, use_gpu = 0, on_gpu = 0, deferred = 0;
    double secs[ADM_RUN_PHASES] = {0};
    char why[256] = "";
    adm_reader reader;
    adm_oracle_config ocfg;
    adm_report *rep = NULL;
    {
        static const struct option lo[] = {{"reference", required_argument, 0, 'r'}, {"candidate", required_argument, 0, 'c'},
                                           {"reader", required_argument, 0, 'R'}, {"json", required_argument, 0, 'j'},
                                           {"junit", required_argument, 0, 'u'}, {"claim", required_argument, 0, 'C'},
                                           {"list", no_argument, 0, 'l'}, {"mpfr-budget", required_argument, 0, 'B'},
                                           {"html", required_argument, 0, 'H'}, {"strict", no_argument, 0, 's'},
                                           {"max-memory", required_argument, 0, 'M'}, {"max-work", required_argument, 0, 'W'},
                                           {"device", required_argument, 0, 'D'},
                                           {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
        const char *v;
        int ch, first = argc;
        while ((ch = adm_cli_getopt(argc, argv, "run", lo, &v, &first)) != -1) {
            switch (ch) {
            case -2: rc = ADM_EXIT_INPUT; goto done;
            case 'h': fputs(run_usage, stdout); rc = ADM_EXIT_OK; goto done;
            case 'l': list_impls(); rc = ADM_EXIT_OK; goto done;
            case 'r': ref = v; break;
            case 'c':
                if (nc == 32) { rc = adm_cli_usage_error("run: at most 32 candidates"); goto done; }
                cands[nc++] = v;
                break;
            case 'R': reader_text = v; break;
            case 'j': json = v; break;
            case 'u': junit = v; break;
            case 'H': html = v; break;
            case 's': strict = 1; break;
            case 'B': if ((rc = adm_cli_set_mpfr_budget(v)) != ADM_EXIT_OK) goto done; break;
            case 'M': if ((rc = adm_cli_set_budget("--max-memory", v)) != ADM_EXIT_OK) goto done; break;
            case 'W': if ((rc = adm_cli_set_budget("--max-work", v)) != ADM_EXIT_OK) goto done; break;
            case 'D': if ((rc = adm_cli_parse_device(v, &device)) != ADM_EXIT_OK) goto done; break;
            case 'C':
                if (ncl == 32) { rc = adm_cli_usage_error("--claim: at most 32 claims"); goto done; }
                if ((rc = adm_cli_parse_claim(v, &claim_names[ncl], &claim_tiers[ncl])) != ADM_EXIT_OK) goto done;
                ncl++;
                break;
            default: rc = adm_cli_usage_error("run: unknown option"); goto done;
            }
        }
        for (int i = first; i < argc; i++) {
            if (capture) { rc = adm_cli_usage_error("run: expected one CAPTURE, got '%s' too", argv[i]); goto done; }
            capture = argv[i];
        }
    }
    if (!capture || !ref || nc == 0) {
        fputs(run_usage, stderr);
        rc = adm_cli_usage_error("run: expected CAPTURE, --reference and at least one --candidate");
        goto done;
    }
    if ((rc = match_claims(claim_names, ncl, cands, nc, who)) != ADM_EXIT_OK) goto done;
    if (adm_reader_parse(reader_text, &reader) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    /* Where the oracle may run on the GPU, the CUDA module, the driver,
     * the device's context and the cuBLAS(Lt) handles (hundreds of ms) are
     * made on a thread beside the capture's read. --device auto (the
     * default) needs no answer before the oracle runs: the oracle and the
     * statistics take the GPU where one is usable and the CPU otherwise,
     * auto's own rule (adm_o_cuda_usable, adm_h_stats_dev_try), so it is
     * resolved for the report once the candidates are measured. A GPU asked
     * for is resolved at once (absent: refused, exit 2, before anything
     * runs); --device cpu: nothing. */
    deferred = device == -2 && adm_cuda_built();
    if (device != -1 && adm_cuda_built())
        adm_cuda_warm_start(device >= 0 ? device : -1, ADM_CUDA_WARM_IMPL | ADM_CUDA_WARM_ORACLE);
    if (deferred) use_gpu = 1;
    else {
        double tt = adm_trace_ms();
        if ((rc = adm_cli_resolve_device("run", device, &use_gpu, why, sizeof why)) != ADM_EXIT_OK) goto done;
        adm_trace_part("run.resolve_device", tt, -1);
    }
    adm_oracle_config_default(&ocfg);
    ocfg.use_gpu = use_gpu;
    {
        adm_plan budget; /* ADM_MAX_MEMORY and ADM_MAX_WORK, before anything runs */
        if (adm_plan_init(&budget, ADM_PLAN_RUN) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    }
    if (adm_report_create("admit-kernel run", &rep) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    adm_report_set_strict(rep, strict);
    adm_cli_report_context(rep, "capture", capture);
    adm_report_set_context(rep, "reference", ref);
    for (int k = 0; k < nc; k++) {
        const adm_tier *claim = who[k] >= 0 ? &claim_tiers[who[k]] : NULL;
        const char *caps[1] = {capture};
        adm_measure_result mr;
        adm_status ms;
        adm_cli_progress(k + 1, nc, cands[k]);
        ms = adm_harness_measure_on(capture, NULL, caps, 1, NULL, ref, cands[k], &reader, &ocfg, &mr);
        on_gpu += ms == ADM_OK && mr.stats_device > 0;
        for (int ph = 0; ph < ADM_RUN_PHASES && ms == ADM_OK; ph++) secs[ph] += mr.seconds[ph];
        adm_measure_result_free(&mr);
        if (ms != ADM_OK) {
            if (mr.in_run) { /* this candidate fails alone (a crashed plugin): the others still run */
                adm_cli_progress_done();
                fprintf(stderr, "admit-kernel: %s\n", adm_error_message());
                if (adm_report_add_error(rep, capture, "run", cands[k], ms, adm_error_message(), claim) == ADM_OK)
                    continue;
            }
            if (mr.field && !strcmp(mr.field, "reference")) adm_error_prefix("--reference: ");
            else if (mr.field && !strcmp(mr.field, "candidate")) adm_error_prefix("--candidate: ");
            rc = adm_cli_fail();
            goto done;
        }
        if (adm_report_add(rep, capture, "run", cands[k], &mr.verdict, mr.mpfr_refined, claim) != ADM_OK ||
            (reader_text && adm_report_set_entry(rep, NULL, NULL, reader_text) != ADM_OK)) {
            rc = adm_cli_fail();
            goto done;
        }
    }
    if (deferred) {
        adm_cuda_warm_wait();
        if ((rc = adm_cli_resolve_device("run", device, &use_gpu, why, sizeof why)) != ADM_EXIT_OK) goto done;
    }
    {
        char line[768];
        if (use_gpu)
            snprintf(line, sizeof line, "oracle: the GPU (cuBLAS DGEMM + CUDA) for every op; "
                     "statistics (gates 1 and 2), the scans of special values and exactness and a quantize or "
                     "threshold reader's flips: the GPU for %d of %d candidates, the CPU for the others; "
                     "implementations, probes, views and the other gates: where each runs", on_gpu, nc);
        else
            snprintf(line, sizeof line, "oracle and gates: the CPU%s", why);
        adm_cli_report_context(rep, "device", line);
        /* where the time went, over the candidates (each reads the capture
         * and runs the reference again) */
        for (int ph = 0; ph < ADM_RUN_PHASES; ph++)
            if (adm_report_add_timing(rep, adm_run_phase_name(ph), secs[ph]) != ADM_OK) {
                rc = adm_cli_fail();
                goto done;
            }
    }
    {
        double tt = adm_trace_ms();
        rc = adm_cli_finish_report(rep, json, junit, html);
        adm_trace_part("run.report", tt, -1);
    }
done:
    adm_cuda_warm_wait();
    for (int c = 0; c < ncl; c++) free(claim_names[c]);
    adm_report_free(rep);
    adm_trace_part("run.end", 0, -1);
    return rc;
}

/* ------------------------------------------------------------ the fusion table */

static void table_progress(int k, int n, const char *name, void *user)
{
    (void)user;
    adm_cli_progress(k, n, name);
}

static void units_progress(int done, int n, const char *name) { adm_cli_progress(done, n, name); }

/* Over the ranks of an MPI job (cli/dist.h): a unit is one capture of one
 * entry; its description travels to the rank that measures it, and its
 * result (the capture's own verdict, or why it failed) back to rank 0,
 * which pools each entry's captures in their order, as one process does. */
static const char *const unit_fields[] = {NULL, "captures", "params", "reference", "candidate"};

static void put_unit_result(adm_dist_buf *b, const adm_unit_result *r)
{
    int64_t f = 0;
    for (int i = 1; i < 5; i++)
        if (r->field && !strcmp(r->field, unit_fields[i])) f = i;
    adm_dist_put_i64(b, r->status);
    adm_dist_put_i64(b, f);
    adm_dist_put_i64(b, r->in_run);
    adm_dist_put_i64(b, r->mpfr_refined);
    adm_dist_put_str(b, r->error);
    if (r->status == ADM_OK) adm_dist_put_verdict(b, &r->verdict);
}

/* The unit's result, or 0 when the bytes are not one (r then says so). */
static int get_unit_result(adm_dist_buf *b, adm_unit_result *r)
{
    int64_t f;
    const char *err;
    memset(r, 0, sizeof *r);
    r->status = (adm_status)adm_dist_get_i64(b);
    f = adm_dist_get_i64(b);
    r->in_run = (int)adm_dist_get_i64(b);
    r->mpfr_refined = adm_dist_get_i64(b);
    err = adm_dist_get_str(b);
    if (r->status == ADM_OK) adm_dist_get_verdict(b, &r->verdict);
    r->field = f >= 0 && f < 5 ? unit_fields[f] : NULL;
    if (b->failed) {
        memset(r, 0, sizeof *r);
        r->status = ADM_ERR_INTERNAL;
        r->field = "captures";
        r->error = adm_strdup("its result did not come back whole from the rank that measured it");
        return 0;
    }
    if (r->status != ADM_OK) r->error = adm_strdup(err ? err : adm_strerror(r->status));
    return 1;
}

static void table_unit_run(const unsigned char *desc, size_t len, adm_dist_buf *out)
{
    adm_dist_buf in = {(unsigned char *)desc, len, len, 0, 0, 0};
    adm_measure_unit u;
    adm_unit_result r;
    memset(&u, 0, sizeof u);
    u.source = adm_dist_get_str(&in);
    u.op = adm_dist_get_str(&in);
    u.capture = adm_dist_get_str(&in);
    u.params = adm_dist_get_str(&in);
    u.ref_spec = adm_dist_get_str(&in);
    u.cand_spec = adm_dist_get_str(&in);
    adm_dist_get(&in, &u.reader, sizeof u.reader);
    if (in.failed || !u.source || !u.capture || !u.ref_spec || !u.cand_spec) {
        memset(&r, 0, sizeof r);
        r.status = ADM_ERR_INTERNAL;
        r.field = "captures";
        r.error = "its description did not arrive whole at the rank that was to measure it";
        put_unit_result(out, &r);
        return;
    }
    adm_harness_measure_unit(&u, &r);
    put_unit_result(out, &r);
    adm_unit_result_free(&r);
}

typedef struct table_job {
    adm_table_plan *plan;
    adm_table_result *tr;
    int nunits;
    int *entry, *cap;       /* unit -> entry, capture */
    int *first;             /* entry -> its first unit (an entry's units are consecutive) */
    int *next;              /* entry -> the next capture to pool */
    int *failed_at;         /* entry -> the first capture known to have failed (its count: none) */
    adm_dist_buf *held;     /* unit -> its result's bytes, until the captures before it are pooled */
    int nomem;
} table_job;

static void table_unit_describe(void *ctx, int u, adm_dist_buf *out)
{
    table_job *j = ctx;
    adm_measure_unit m;
    adm_table_plan_unit(j->plan, j->entry[u], j->cap[u], &m);
    adm_dist_put_str(out, m.source);
    adm_dist_put_str(out, m.op);
    adm_dist_put_str(out, m.capture);
    adm_dist_put_str(out, m.params);
    adm_dist_put_str(out, m.ref_spec);
    adm_dist_put_str(out, m.cand_spec);
    adm_dist_put(out, &m.reader, sizeof m.reader);
}

/* Pools entry e's captures whose results are in, in order. */
static void table_pool(table_job *j, int e)
{
    adm_table_entry *te = &j->tr->entries[e];
    int n = adm_table_plan_units(j->plan, e);
    while (j->next[e] < n && !te->error) {
        adm_dist_buf *h = &j->held[j->first[e] + j->next[e]];
        adm_unit_result r;
        if (!h->p) break;
        h->pos = 0;
        get_unit_result(h, &r);
        if (adm_table_plan_add(j->plan, e, j->next[e], &r, te) != ADM_OK) j->nomem = 1;
        adm_unit_result_free(&r);
        adm_dist_buf_free(h);
        j->next[e]++;
    }
    if (te->error) /* the later captures do not count (one process would not have measured them) */
        for (int k = j->next[e]; k < n; k++) adm_dist_buf_free(&j->held[j->first[e] + k]);
}

static void table_unit_keep(table_job *j, int u, const unsigned char *p, size_t len, int failed)
{
    int e = j->entry[u];
    adm_dist_put(&j->held[u], p, len);
    if (j->held[u].failed) j->nomem = 1;
    if (failed && j->cap[u] < j->failed_at[e]) j->failed_at[e] = j->cap[u];
    table_pool(j, e);
}

static void table_unit_done(void *ctx, int u, adm_dist_buf *b)
{
    table_job *j = ctx;
    size_t at = b->pos;
    adm_unit_result r;
    int whole = get_unit_result(b, &r);
    if (!whole) { /* kept as the failure get_unit_result made of it */
        adm_dist_buf fixed = {0};
        put_unit_result(&fixed, &r);
        table_unit_keep(j, u, fixed.p, fixed.len, 1);
        adm_dist_buf_free(&fixed);
    } else {
        table_unit_keep(j, u, b->p + at, b->len - at, r.status != ADM_OK);
    }
    adm_unit_result_free(&r);
}

static int table_unit_lost(void *ctx, int u, const char *why)
{
    table_job *j = ctx;
    adm_unit_result r;
    adm_dist_buf b = {0};
    memset(&r, 0, sizeof r);
    r.status = ADM_ERR_IO;
    r.field = "captures";
    r.error = (char *)why;
    put_unit_result(&b, &r);
    table_unit_keep(j, u, b.p, b.len, 1);
    adm_dist_buf_free(&b);
    return 0;
}

static int table_unit_needed(void *ctx, int u)
{
    table_job *j = ctx;
    return j->cap[u] < j->failed_at[j->entry[u]];
}

static void table_unit_name(void *ctx, int u, char *buf, size_t n)
{
    table_job *j = ctx;
    snprintf(buf, n, "entry '%s' captures[%d]", adm_cli_text(j->tr->entries[j->entry[u]].name), j->cap[u]);
}

static const adm_dist_ops table_ops = {table_unit_describe, table_unit_run, table_unit_done, table_unit_lost,
                                       table_unit_needed, table_unit_name, NULL};

/* Rank 0 of an MPI job: the table read and checked here, its units
 * measured over the ranks, each entry assembled in capture order. */
static adm_status table_distributed(const char *file, adm_table_result *tr)
{
    table_job j;
    adm_status st = ADM_OK;
    int ne;
    int64_t *size = NULL;
    memset(&j, 0, sizeof j);
    memset(tr, 0, sizeof *tr);
    ADM_TRY(adm_table_plan_read(file, &j.plan));
    ne = adm_table_plan_count(j.plan);
    j.tr = tr;
    tr->entries = calloc((size_t)ne, sizeof *tr->entries);
    j.first = calloc((size_t)ne, sizeof *j.first);
    j.next = calloc((size_t)ne, sizeof *j.next);
    j.failed_at = calloc((size_t)ne, sizeof *j.failed_at);
    if (!tr->entries || !j.first || !j.next || !j.failed_at) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int e = 0; e < ne; e++) {
        j.first[e] = j.nunits;
        j.failed_at[e] = adm_table_plan_units(j.plan, e);
        j.nunits += adm_table_plan_units(j.plan, e);
        if ((st = adm_table_plan_begin(j.plan, e, &tr->entries[e])) != ADM_OK) goto done;
        tr->n++;
    }
    j.entry = calloc((size_t)j.nunits + 1, sizeof *j.entry);
    j.cap = calloc((size_t)j.nunits + 1, sizeof *j.cap);
    j.held = calloc((size_t)j.nunits + 1, sizeof *j.held);
    size = calloc((size_t)j.nunits + 1, sizeof *size);
    if (!j.entry || !j.cap || !j.held || !size) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int e = 0, u = 0; e < ne; e++)
        for (int k = 0; k < adm_table_plan_units(j.plan, e); k++, u++) {
            adm_measure_unit m;
            struct stat sb;
            j.entry[u] = e;
            j.cap[u] = k;
            /* largest first: the capture's bytes stand for its work */
            adm_table_plan_unit(j.plan, e, k, &m);
            size[u] = stat(m.capture, &sb) == 0 ? (int64_t)sb.st_size : 0;
        }
    adm_dist_run(&table_ops, &j, j.nunits, size, units_progress);
    for (int e = 0; e < ne; e++) {
        if (!tr->entries[e].error && j.next[e] < adm_table_plan_units(j.plan, e)) j.nomem = 1;
        adm_table_plan_end(j.plan, e, &tr->entries[e]);
    }
    if (j.nomem) st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory while gathering the units' results");
done:
    for (int u = 0; j.held && u < j.nunits; u++) adm_dist_buf_free(&j.held[u]);
    free(j.held);
    free(j.entry);
    free(j.cap);
    free(j.first);
    free(j.next);
    free(j.failed_at);
    free(size);
    adm_table_plan_free(j.plan);
    if (st != ADM_OK) adm_table_result_free(tr);
    return st;
}

/* The table is read, checked and measured by the library
 * (adm_harness_table, harness/table.c); this reports it. */
int adm_cmd_table(int argc, char **argv)
{
    const char *file = NULL, *json_out = NULL, *junit = NULL, *html = NULL;
    int strict = 0, rc = ADM_EXIT_OK;
    adm_table_result tr;
    adm_report *rep = NULL;
    {
        static const struct option lo[] = {{"json", required_argument, 0, 'j'}, {"junit", required_argument, 0, 'u'},
                                           {"html", required_argument, 0, 'H'}, {"strict", no_argument, 0, 's'},
                                           {"mpfr-budget", required_argument, 0, 'B'}, {"help", no_argument, 0, 'h'},
                                           {"max-memory", required_argument, 0, 'M'}, {"max-work", required_argument, 0, 'W'},
                                           {"unit-timeout", required_argument, 0, 'T'}, {0, 0, 0, 0}};
        const char *v;
        int ch, first = argc;
        while ((ch = adm_cli_getopt(argc, argv, "table", lo, &v, &first)) != -1) {
            switch (ch) {
            case -2: return ADM_EXIT_INPUT;
            case 'h': if (adm_dist_rank() == 0) fputs(table_usage, stdout); return ADM_EXIT_OK;
            case 's': strict = 1; break;
            case 'j': json_out = v; break;
            case 'u': junit = v; break;
            case 'H': html = v; break;
            case 'B': if ((rc = adm_cli_set_mpfr_budget(v)) != ADM_EXIT_OK) return rc; break;
            case 'M': if ((rc = adm_cli_set_budget("--max-memory", v)) != ADM_EXIT_OK) return rc; break;
            case 'W': if ((rc = adm_cli_set_budget("--max-work", v)) != ADM_EXIT_OK) return rc; break;
            case 'T': if ((rc = adm_cli_set_unit_timeout(v)) != ADM_EXIT_OK) return rc; break;
            default: return adm_cli_usage_error("table: unknown option");
            }
        }
        for (int i = first; i < argc; i++) {
            if (file) return adm_cli_usage_error("table: expected one FILE, got '%s' too", argv[i]);
            file = argv[i];
        }
    }
    if (!file) {
        if (adm_dist_rank() == 0) fputs(table_usage, stderr);
        return adm_cli_usage_error("table: expected a FILE");
    }
    {
        adm_plan budget; /* ADM_MAX_MEMORY and ADM_MAX_WORK, before anything is measured */
        if (adm_plan_init(&budget, ADM_PLAN_RUN) != ADM_OK) return adm_cli_fail();
    }
    /* the other ranks of an MPI job measure what rank 0 hands them */
    if (adm_dist_rank() > 0) return adm_dist_serve(&table_ops);
    if ((adm_dist_active() ? table_distributed(file, &tr) : adm_harness_table(file, table_progress, NULL, &tr)) !=
        ADM_OK)
        return adm_cli_usage_error("%s", adm_error_message());
    if (adm_report_create("admit-kernel table", &rep) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    adm_report_set_strict(rep, strict);
    adm_report_set_labels(rep, "entry", "declared");
    adm_cli_report_context(rep, "table", file);
    {
        char t[64];
        snprintf(t, sizeof t, "those of its %d entries, relative to its folder", tr.n);
        adm_report_set_context(rep, "captures", t);
    }
    adm_cli_report_dist_note(rep);
    for (int i = 0; i < tr.n; i++) /* a capture or plugin that failed this entry alone */
        if (tr.entries[i].error) fprintf(stderr, "admit-kernel: %s\n", tr.entries[i].error);
    if (adm_report_add_table(rep, &tr) != ADM_OK) {
        rc = adm_cli_fail();
        goto done;
    }
    rc = adm_cli_finish_report(rep, json_out, junit, html);
done:
    adm_table_result_free(&tr);
    adm_report_free(rep);
    return rc;
}
