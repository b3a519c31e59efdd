/* admit-kernel replay: score the candidate outputs stored in captures. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "adm_cuda.h"
#include "dist.h"
#include "adm_harness.h"
#include "adm_oracle.h"
#include "adm_report.h"
#include "adm_trace.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char replay_usage[] =
    "usage: admit-kernel replay CAPTURE... [--claim NAME=TIER]... [--json FILE] [--junit FILE] [--html DIR]\n"
    "                                      [--strict] [--mpfr-budget T] [--device auto|cpu|cuda[:N]]\n"
    "\n"
    "Scores every candidate output stored in the captures against the oracle,\n"
    "relative to the stored reference output, and prints one verdict per\n"
    "candidate: exact, lossless or high, with the deciding numbers and why.\n"
    "A candidate found in several captures of one op is also judged on their\n"
    "pooled evidence (a \"pooled\" row); its claim is judged there.\n"
    "  --claim NAME=TIER  exit 1 when candidate NAME measures looser than TIER\n"
    "Under mpirun or srun the captures are judged over the ranks and rank 0 writes\n"
    "the reports one process would (README: running on a cluster).\n"
    ADM_CLI_REPORT_USAGE
    "  --mpfr-budget T    the most MPFR work of the oracle, in input terms (default 2^24; 0: no limit)\n"
    "  --device D         where the oracle's fp64 pass and gates 1 and 2's statistics run: auto\n"
    "                     (default: the GPU where admit was built with CUDA and one is usable, else\n"
    "                     the CPU), cpu, cuda or cuda:N (GPU N of the visible ones; without a usable\n"
    "                     GPU: exit 2); every op has its oracle on the GPU\n"
    ADM_CLI_BUDGET_HELP
    ADM_CLI_MPI_HELP;

#define MAX_CLAIMS 64
#define MAX_POOLS 256

/* One capture's outcome, kept until every capture is judged. */
typedef struct judged_capture {
    int ok;
    adm_replay_result res;
    char *op, *error;
    adm_status status;
    double read_s; /* reading and validating the capture */
} judged_capture;

/* A candidate's verdicts pooled over the captures of one op. */
typedef struct pool {
    const char *op, *name;
    adm_verdict acc;
    int count;
    int64_t refined;
    adm_capture_summary *caps; /* each capture's verdict in brief, for the pooled row's detail */
} pool;

/* The oracle's configuration (--device, --mpfr-budget), the same on every
 * rank: each parses the same arguments. */
static adm_oracle_config replay_ocfg;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One capture read and checked into *cap (NULL where it cannot be read)
 * and *st; where it fails, why is kept in j at once (the device's
 * resolution may come between the read and the judging). 0, or -1 when
 * memory ran out. */
static int read_capture(const char *file, adm_plan *plan, judged_capture *j, adm_capture **cap, adm_status *st)
{
    double t0 = now(), tt = adm_trace_ms();
    memset(j, 0, sizeof *j);
    *cap = NULL;
    if ((*st = adm_capture_read_sandboxed_plan(file, NULL, adm_plan_check, plan, cap)) == ADM_OK)
        *st = adm_capture_validate(*cap);
    j->read_s = now() - t0;
    adm_trace_part("replay.read", tt, -1);
    if (*st != ADM_OK && !(j->error = adm_strdup(adm_error_message()))) {
        adm_capture_free(*cap);
        *cap = NULL;
        return -1;
    }
    return 0;
}

/* The capture read_capture read (cap, st) judged into *j, cap freed; 0,
 * or -1 when memory ran out (the last error says so). */
static int judge_read(adm_capture *cap, adm_status st, judged_capture *j)
{
    adm_replay_result res;
    double tt = adm_trace_ms();
    if (st != ADM_OK || (st = adm_harness_replay(cap, &replay_ocfg, NULL, &res)) != ADM_OK) {
        /* This capture fails alone: its row says why, the others are still
         * judged, and the command exits 2 after the reports. */
        j->status = st;
        if ((!j->error && !(j->error = adm_strdup(adm_error_message()))) ||
            (cap && !(j->op = adm_strdup(adm_capture_op(cap))))) {
            adm_capture_free(cap);
            return -1;
        }
        adm_capture_free(cap);
        return 0;
    }
    adm_trace_part("replay.judge_capture", tt, -1);
    j->res = res;
    j->ok = 1;
    j->op = adm_strdup(adm_capture_op(cap));
    adm_capture_free(cap);
    return j->op ? 0 : -1;
}

/* One capture read, checked and judged into *j; 0, or -1 when memory ran
 * out (the last error says so). */
static int judge_capture(const char *file, adm_plan *plan, judged_capture *j)
{
    adm_capture *cap;
    adm_status st;
    if (read_capture(file, plan, j, &cap, &st) != 0) return -1;
    return judge_read(cap, st, j);
}

static void judged_free(judged_capture *j)
{
    if (j->ok) adm_replay_result_free(&j->res);
    free(j->op);
    free(j->error);
    memset(j, 0, sizeof *j);
}

/* Over the ranks of an MPI job (cli/dist.h): a unit is one capture; its
 * path travels to the rank that judges it, and the verdicts (never the
 * tensors) come back to rank 0. */
static void put_judged(adm_dist_buf *b, const judged_capture *j)
{
    adm_dist_put_i64(b, j->ok);
    adm_dist_put_str(b, j->op);
    adm_dist_put_str(b, j->error);
    adm_dist_put_i64(b, j->status);
    if (!j->ok) return;
    adm_dist_put_i64(b, j->res.n);
    for (int k = 0; k < j->res.n; k++) {
        adm_dist_put_str(b, j->res.names[k]);
        adm_dist_put_verdict(b, &j->res.verdicts[k]);
    }
    adm_dist_put_i64(b, j->res.mpfr_refined);
    adm_dist_put_i64(b, j->res.certified);
    adm_dist_put_i64(b, j->res.stats_device);
    adm_dist_put_i64(b, (int64_t)(j->read_s * 1e9));
    for (int t = 0; t < 3; t++) adm_dist_put_i64(b, (int64_t)(j->res.seconds[t] * 1e9));
    adm_dist_put_str(b, j->res.assumption);
}

static int get_judged(adm_dist_buf *b, judged_capture *j)
{
    const char *op, *err;
    int64_t n;
    memset(j, 0, sizeof *j);
    j->ok = (int)adm_dist_get_i64(b);
    op = adm_dist_get_str(b);
    err = adm_dist_get_str(b);
    j->status = (adm_status)adm_dist_get_i64(b);
    if (op && !(j->op = adm_strdup(op))) return -1;
    if (err && !(j->error = adm_strdup(err))) return -1;
    if (!j->ok) return b->failed ? -1 : 0;
    n = adm_dist_get_i64(b);
    if (b->failed || n < 0 || n > 4096) return -1;
    j->res.names = calloc((size_t)n + 1, sizeof *j->res.names);
    j->res.verdicts = calloc((size_t)n + 1, sizeof *j->res.verdicts);
    if (!j->res.names || !j->res.verdicts) return -1;
    for (int k = 0; k < n; k++) {
        const char *nm = adm_dist_get_str(b);
        if (!nm || !(j->res.names[k] = adm_strdup(nm))) return -1;
        j->res.n = k + 1;
        adm_dist_get_verdict(b, &j->res.verdicts[k]);
    }
    j->res.mpfr_refined = adm_dist_get_i64(b);
    j->res.certified = (int)adm_dist_get_i64(b);
    j->res.stats_device = (int)adm_dist_get_i64(b);
    j->read_s = 1e-9 * (double)adm_dist_get_i64(b);
    for (int t = 0; t < 3; t++) j->res.seconds[t] = 1e-9 * (double)adm_dist_get_i64(b);
    j->res.assumption = adm_dist_intern(adm_dist_get_str(b));
    return b->failed ? -1 : 0;
}

static void replay_unit_run(const unsigned char *desc, size_t len, adm_dist_buf *out)
{
    adm_dist_buf in = {(unsigned char *)desc, len, len, 0, 0, 0};
    const char *file = adm_dist_get_str(&in);
    judged_capture j;
    adm_plan plan;
    memset(&j, 0, sizeof j);
    if (!file || adm_plan_init(&plan, ADM_PLAN_REPLAY) != ADM_OK || judge_capture(file, &plan, &j) != 0) {
        judged_free(&j);
        j.status = file ? adm_error_code() : ADM_ERR_INTERNAL;
        if (j.status == ADM_OK) j.status = ADM_ERR_INTERNAL;
        j.error = adm_strdup(file ? adm_error_message() : "its path did not arrive whole at the rank that was to judge it");
    }
    put_judged(out, &j);
    judged_free(&j);
}

typedef struct replay_job {
    const char *const *files;
    judged_capture *judged;
    int nomem;
} replay_job;

static void replay_unit_describe(void *ctx, int u, adm_dist_buf *out)
{
    replay_job *j = ctx;
    adm_dist_put_str(out, j->files[u]);
}

static void replay_unit_done(void *ctx, int u, adm_dist_buf *b)
{
    replay_job *j = ctx;
    if (get_judged(b, &j->judged[u]) != 0) {
        judged_free(&j->judged[u]);
        j->judged[u].status = ADM_ERR_INTERNAL;
        if (!(j->judged[u].error = adm_strdup("its verdicts did not come back whole from the rank that judged it")))
            j->nomem = 1;
    }
}

static int replay_unit_lost(void *ctx, int u, const char *why)
{
    replay_job *j = ctx;
    char msg[1200];
    judged_free(&j->judged[u]);
    snprintf(msg, sizeof msg, "%s: %s", j->files[u], why);
    j->judged[u].status = ADM_ERR_IO;
    if (!(j->judged[u].error = adm_strdup(msg))) j->nomem = 1;
    return 0;
}

static void replay_unit_name(void *ctx, int u, char *buf, size_t n)
{
    replay_job *j = ctx;
    snprintf(buf, n, "capture %s", adm_cli_text(j->files[u]));
}

static void replay_progress(int done, int n, const char *name) { adm_cli_progress(done, n, name); }

/* Without the GPU, where it ran says so at once; with it, the line is
 * written once the candidates are judged (how many had their statistics
 * there). */
static void device_line(adm_report *rep, int use_gpu, const char *why)
{
    char line[400];
    if (use_gpu) return;
    snprintf(line, sizeof line, "oracle and gates: the CPU%s", why);
    adm_cli_report_context(rep, "device", line);
}

static const adm_dist_ops replay_ops = {replay_unit_describe, replay_unit_run, replay_unit_done, replay_unit_lost, NULL,
                                        replay_unit_name, NULL};

int adm_cmd_replay(int argc, char **argv)
{
    const char *files[256], *json = NULL, *junit = NULL, *html = NULL;
    char *claim_names[MAX_CLAIMS];
    adm_tier claim_tiers[MAX_CLAIMS];
    int claim_used[MAX_CLAIMS] = {0};
    int nf = 0, ncl = 0, rc = ADM_EXIT_OK, failed = 0, strict = 0, npool = 0, use_gpu = 0, deferred = 0;
    /* --device: -2 auto (the default), -1 cpu, >= 0 cuda:N (plain cuda: the current GPU, -3) */
    int device = -2;
    char auto_why[256] = "";
    adm_report *rep = NULL;
    judged_capture *judged = NULL;
    pool *pools = NULL;
    adm_plan plan;
    {
        static const struct option lo[] = {{"json", required_argument, 0, 'j'}, {"junit", required_argument, 0, 'u'},
                                           {"html", required_argument, 0, 'H'}, {"claim", required_argument, 0, 'c'},
                                           {"mpfr-budget", required_argument, 0, 'B'}, {"strict", no_argument, 0, 's'},
                                           {"help", no_argument, 0, 'h'}, {"max-memory", required_argument, 0, 'M'},
                                           {"max-work", required_argument, 0, 'W'},
                                           {"device", required_argument, 0, 'D'},
                                           {"unit-timeout", required_argument, 0, 'T'}, {0, 0, 0, 0}};
        const char *v;
        int ch, first = argc;
        while ((ch = adm_cli_getopt(argc, argv, "replay", lo, &v, &first)) != -1) {
            switch (ch) {
            case -2: rc = ADM_EXIT_INPUT; goto done;
            case 'h': if (adm_dist_rank() == 0) fputs(replay_usage, stdout); rc = ADM_EXIT_OK; goto done;
            case 'j': json = v; break;
            case 'u': junit = v; break;
            case 'H': html = v; break;
            case 's': strict = 1; break;
            case 'D': if ((rc = adm_cli_parse_device(v, &device)) != ADM_EXIT_OK) goto done; break;
            case 'B': if ((rc = adm_cli_set_mpfr_budget(v)) != ADM_EXIT_OK) goto done; break;
            case 'M': if ((rc = adm_cli_set_budget("--max-memory", v)) != ADM_EXIT_OK) goto done; break;
            case 'W': if ((rc = adm_cli_set_budget("--max-work", v)) != ADM_EXIT_OK) goto done; break;
            case 'T': if ((rc = adm_cli_set_unit_timeout(v)) != ADM_EXIT_OK) goto done; break;
            case 'c':
                if (ncl == MAX_CLAIMS) { rc = adm_cli_usage_error("--claim: at most %d claims", MAX_CLAIMS); goto done; }
                if ((rc = adm_cli_parse_claim(v, &claim_names[ncl], &claim_tiers[ncl])) != ADM_EXIT_OK) goto done;
                ncl++;
                if (adm_name_check("--claim: candidate name", claim_names[ncl - 1]) != ADM_OK) {
                    rc = adm_cli_fail();
                    goto done;
                }
                break;
            default: rc = adm_cli_usage_error("replay: unknown option"); goto done;
            }
        }
        for (int i = first; i < argc; i++) {
            if (nf == 256) { rc = adm_cli_usage_error("replay: at most 256 captures"); goto done; }
            files[nf++] = argv[i];
        }
    }
    if (nf == 0) {
        if (adm_dist_rank() == 0) fputs(replay_usage, stderr);
        rc = adm_cli_usage_error("replay: expected at least one CAPTURE");
        goto done;
    }
    /* Where the GPU may judge and one process reads the captures, its
     * start-up (the CUDA module, the driver, the device's context, the
     * cuBLAS(Lt) handles: hundreds of ms) runs on a thread beside the
     * first capture's read (started once the reader's child is forked:
     * core/adm_child.h), and --device is resolved (a GPU asked for and
     * absent refused, exit 2) once that read is done. */
    deferred = device != -1 && !adm_dist_active() && adm_cuda_built();
    /* replay runs no implementation: the oracle's part alone */
    if (deferred) adm_cuda_warm_start_after_fork(device >= 0 ? device : -1, ADM_CUDA_WARM_ORACLE);
    else if ((rc = adm_cli_resolve_device("replay", device, &use_gpu, auto_why, sizeof auto_why)) != ADM_EXIT_OK)
        goto done;
    /* after the options: --mpfr-budget sets what the default reads */
    adm_oracle_config_default(&replay_ocfg);
    replay_ocfg.use_gpu = use_gpu;
    if (adm_plan_init(&plan, ADM_PLAN_REPLAY) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    /* the other ranks of an MPI job judge what rank 0 hands them */
    if (adm_dist_rank() > 0) { rc = adm_dist_serve(&replay_ops); goto done; }
    if (adm_report_create("admit-kernel replay", &rep) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    adm_report_set_strict(rep, strict);
    judged = calloc((size_t)nf, sizeof *judged);
    pools = calloc(MAX_POOLS, sizeof *pools);
    if (!judged || !pools) {
        rc = adm_cli_usage_error("replay: out of memory");
        goto done;
    }
    {
        char list[2048] = "";
        for (int f = 0; f < nf; f++) {
            strncat(list, f ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, files[f], sizeof list - strlen(list) - 1);
        }
        adm_cli_report_context(rep, "captures", list);
    }
    if (!deferred) device_line(rep, use_gpu, auto_why);
    /* Every capture is read and judged before anything is written (under
     * MPI, over the ranks); a candidate (one op, one name) found in several
     * captures is judged again on their pooled evidence, in the captures'
     * order, and its claim is judged there. */
    if (adm_dist_active()) {
        replay_job job = {files, judged, 0};
        int64_t size[256];
        for (int f = 0; f < nf; f++) {
            struct stat sb;
            size[f] = stat(files[f], &sb) == 0 ? (int64_t)sb.st_size : 0;
        }
        adm_dist_run(&replay_ops, &job, nf, size, replay_progress);
        if (job.nomem) { rc = adm_cli_usage_error("replay: out of memory"); goto done; }
    } else {
        for (int f = 0; f < nf; f++) {
            adm_capture *cap;
            adm_status st;
            adm_cli_progress(f + 1, nf, files[f]);
            if (read_capture(files[f], &plan, &judged[f], &cap, &st) != 0) { rc = adm_cli_fail(); goto done; }
            if (deferred) {
                double tt = adm_trace_ms();
                adm_cuda_warm_wait();
                deferred = 0;
                adm_cli_progress_done(); /* a refusal's line stands alone */
                rc = adm_cli_resolve_device("replay", device, &use_gpu, auto_why, sizeof auto_why);
                adm_trace_part("replay.resolve_device", tt, -1);
                if (rc != ADM_EXIT_OK) {
                    adm_capture_free(cap);
                    goto done;
                }
                adm_cli_progress(f + 1, nf, files[f]);
                replay_ocfg.use_gpu = use_gpu;
                device_line(rep, use_gpu, auto_why);
            }
            if (judge_read(cap, st, &judged[f]) != 0) { rc = adm_cli_fail(); goto done; }
        }
    }
    for (int f = 0; f < nf; f++) {
        if (!judged[f].ok) {
            adm_cli_progress_done();
            fprintf(stderr, "admit-kernel: %s\n", judged[f].error);
            failed++;
            continue;
        }
        for (int k = 0; k < judged[f].res.n; k++) {
            int p = 0;
            while (p < npool && (strcmp(pools[p].op, judged[f].op) || strcmp(pools[p].name, judged[f].res.names[k]))) p++;
            if (p == npool) {
                if (npool == MAX_POOLS) { rc = adm_cli_usage_error("replay: at most %d candidates", MAX_POOLS); goto done; }
                memset(&pools[p], 0, sizeof pools[p]);
                pools[p].op = judged[f].op;
                pools[p].name = judged[f].res.names[k];
                npool++;
            }
            if (!pools[p].caps && !(pools[p].caps = calloc((size_t)nf, sizeof *pools[p].caps))) {
                rc = adm_cli_usage_error("replay: out of memory");
                goto done;
            }
            adm_capture_summary_of(&judged[f].res.verdicts[k], &pools[p].caps[pools[p].count]);
            adm_verdict_pool_add(&pools[p].acc, &judged[f].res.verdicts[k], files[f]);
            pools[p].count++;
            pools[p].refined += judged[f].res.mpfr_refined;
        }
    }
    for (int p = 0; p < npool; p++)
        if (pools[p].count > 1) adm_verdict_pool_finish(&pools[p].acc, NULL);
    {
        /* where each part ran, and how long each phase took */
        int on_gpu = 0, judged_n = 0;
        double t[4] = {0, 0, 0, 0};
        for (int f = 0; f < nf; f++) {
            t[0] += judged[f].read_s;
            if (!judged[f].ok) continue;
            for (int k = 0; k < 3; k++) t[k + 1] += judged[f].res.seconds[k];
            on_gpu += judged[f].res.stats_device;
            judged_n += judged[f].res.n;
        }
        if (use_gpu) {
            char where[768];
            snprintf(where, sizeof where, "oracle: the GPU (cuBLAS DGEMM + CUDA) for every op; "
                     "statistics (gates 1 and 2) and the scans of special values and exactness: the GPU for %d of "
                     "%d candidates (contiguous bf16, fp16, fp32 and fp64 outputs), the CPU for the others; "
                     "strides: the CPU", on_gpu, judged_n);
            adm_cli_report_context(rep, "device", where);
        }
        if (adm_report_add_timing(rep, "read", t[0]) != ADM_OK || adm_report_add_timing(rep, "oracle", t[1]) != ADM_OK ||
            adm_report_add_timing(rep, "statistics", t[2]) != ADM_OK ||
            adm_report_add_timing(rep, "other_gates", t[3]) != ADM_OK) {
            rc = adm_cli_fail();
            goto done;
        }
    }
    for (int f = 0; f < nf; f++) {
        if (!judged[f].ok) {
            if (adm_report_add_error(rep, files[f], judged[f].op, NULL, judged[f].status, judged[f].error, NULL) != ADM_OK) {
                rc = adm_cli_fail();
                goto done;
            }
            continue;
        }
        for (int k = 0; k < judged[f].res.n; k++) {
            const char *nm = judged[f].res.names[k];
            const adm_tier *claim = NULL;
            int p = 0;
            while (p < npool && (strcmp(pools[p].op, judged[f].op) || strcmp(pools[p].name, nm))) p++;
            for (int c = 0; c < ncl; c++)
                if (!strcmp(claim_names[c], nm)) {
                    claim_used[c] = 1;
                    if (pools[p].count == 1) claim = &claim_tiers[c]; /* else the pooled row's */
                }
            if (adm_report_add(rep, files[f], judged[f].op, nm, &judged[f].res.verdicts[k], judged[f].res.mpfr_refined,
                               claim) != ADM_OK) {
                rc = adm_cli_fail();
                goto done;
            }
        }
    }
    for (int p = 0; p < npool; p++) {
        char src[64];
        const adm_tier *claim = NULL;
        if (pools[p].count < 2) continue;
        for (int c = 0; c < ncl; c++)
            if (!strcmp(claim_names[c], pools[p].name)) claim = &claim_tiers[c];
        snprintf(src, sizeof src, "pooled (%d captures)", pools[p].count);
        if (adm_report_add(rep, src, pools[p].op, pools[p].name, &pools[p].acc, pools[p].refined, claim) != ADM_OK ||
            adm_report_set_evidence(rep, pools[p].caps, pools[p].count, NULL) != ADM_OK) {
            rc = adm_cli_fail();
            goto done;
        }
    }
    for (int c = 0; c < ncl && !failed; c++) /* a failed capture's candidates are unknown */
        if (!claim_used[c]) {
            rc = adm_cli_usage_error("--claim: no candidate named '%s' in the captures", claim_names[c]);
            goto done;
        }
    adm_cli_report_dist_note(rep);
    {
        double tt = adm_trace_ms();
        rc = adm_cli_finish_report(rep, json, junit, html);
        adm_trace_part("replay.report", tt, -1);
    }
done:
    adm_cuda_warm_wait();
    for (int c = 0; c < ncl; c++) free(claim_names[c]);
    for (int f = 0; judged && f < nf; f++) judged_free(&judged[f]);
    free(judged);
    for (int p = 0; pools && p < npool; p++) free(pools[p].caps);
    free(pools);
    adm_report_free(rep);
    adm_trace_part("replay.end", 0, -1);
    return rc;
}
