/* admit-kernel run (implementations on a capture) and table (a runtime's
 * fusion table, every entry measured). */
#include "cli.h"
#include "adm_candidates.h"
#include "adm_harness.h"
#include "adm_oracle.h"
#include "adm_report.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    ADM_CLI_BUDGET_HELP;

static const char table_usage[] =
    "usage: admit-kernel table FILE [--strict] [--json F] [--junit F] [--html DIR] [--mpfr-budget T]\n"
    "\n"
    "Measures every entry of a fusion table (JSON, fusions/FORMAT.md) on its\n"
    "captures and compares the measured tier with the declared one: exit 1 when a\n"
    "declared tier is looser than measured (unsafe), and with --strict also when\n"
    "it is stricter (promotable). The whole table is checked before anything is\n"
    "measured; captures and plugins resolve from the table's folder.\n"
    ADM_CLI_REPORT_USAGE
    "  --mpfr-budget T    the most MPFR work of the oracle, in input terms (default 2^24; 0: no limit)\n"
    ADM_CLI_BUDGET_HELP;

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
    int nc = 0, ncl = 0, rc = ADM_EXIT_OK, strict = 0, who[32];
    adm_reader reader;
    adm_report *rep = NULL;
    {
        static const struct option lo[] = {{"reference", required_argument, 0, 'r'}, {"candidate", required_argument, 0, 'c'},
                                           {"reader", required_argument, 0, 'R'}, {"json", required_argument, 0, 'j'},
                                           {"junit", required_argument, 0, 'u'}, {"claim", required_argument, 0, 'C'},
                                           {"list", no_argument, 0, 'l'}, {"mpfr-budget", required_argument, 0, 'B'},
                                           {"html", required_argument, 0, 'H'}, {"strict", no_argument, 0, 's'},
                                           {"max-memory", required_argument, 0, 'M'}, {"max-work", required_argument, 0, 'W'},
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
        ms = adm_harness_measure(capture, NULL, caps, 1, NULL, ref, cands[k], &reader, &mr);
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
    rc = adm_cli_finish_report(rep, json, junit, html);
done:
    for (int c = 0; c < ncl; c++) free(claim_names[c]);
    adm_report_free(rep);
    return rc;
}

/* ------------------------------------------------------------ the fusion table */

static void table_progress(int k, int n, const char *name, void *user)
{
    (void)user;
    adm_cli_progress(k, n, name);
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
                                           {0, 0, 0, 0}};
        const char *v;
        int ch, first = argc;
        while ((ch = adm_cli_getopt(argc, argv, "table", lo, &v, &first)) != -1) {
            switch (ch) {
            case -2: return ADM_EXIT_INPUT;
            case 'h': fputs(table_usage, stdout); return ADM_EXIT_OK;
            case 's': strict = 1; break;
            case 'j': json_out = v; break;
            case 'u': junit = v; break;
            case 'H': html = v; break;
            case 'B': if ((rc = adm_cli_set_mpfr_budget(v)) != ADM_EXIT_OK) return rc; break;
            case 'M': if ((rc = adm_cli_set_budget("--max-memory", v)) != ADM_EXIT_OK) return rc; break;
            case 'W': if ((rc = adm_cli_set_budget("--max-work", v)) != ADM_EXIT_OK) return rc; break;
            default: return adm_cli_usage_error("table: unknown option");
            }
        }
        for (int i = first; i < argc; i++) {
            if (file) return adm_cli_usage_error("table: expected one FILE, got '%s' too", argv[i]);
            file = argv[i];
        }
    }
    if (!file) { fputs(table_usage, stderr); return adm_cli_usage_error("table: expected a FILE"); }
    {
        adm_plan budget; /* ADM_MAX_MEMORY and ADM_MAX_WORK, before anything is measured */
        if (adm_plan_init(&budget, ADM_PLAN_RUN) != ADM_OK) return adm_cli_fail();
    }
    if (adm_harness_table(file, table_progress, NULL, &tr) != ADM_OK)
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
