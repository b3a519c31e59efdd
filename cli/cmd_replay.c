/* admit-kernel replay: score the candidate outputs stored in captures. */
#include "cli.h"
#include "adm_harness.h"
#include "adm_oracle.h"
#include "adm_report.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char replay_usage[] =
    "usage: admit-kernel replay CAPTURE... [--claim NAME=TIER]... [--json FILE] [--junit FILE] [--html DIR]\n"
    "\n"
    "Scores every candidate output stored in the captures against the oracle,\n"
    "relative to the stored reference output, and prints one verdict per\n"
    "candidate: exact, lossless or high, with the deciding numbers and why.\n"
    "  --claim NAME=TIER  exit 1 when candidate NAME measures looser than TIER\n"
    "  --json FILE        write the full report as JSON\n"
    "  --junit FILE       write a JUnit XML report (a failure per violated claim)\n"
    "  --mpfr-budget T    the most MPFR work of the oracle, in input terms (default 2^24; 0: no limit)\n"
    "  --html DIR         write DIR/index.html: what was run, the verdicts, each candidate's detail\n"
    ADM_CLI_BUDGET_HELP;

#define MAX_CLAIMS 64

int adm_cmd_replay(int argc, char **argv)
{
    const char *files[256], *json = NULL, *junit = NULL, *html = NULL;
    char *claim_names[MAX_CLAIMS];
    adm_tier claim_tiers[MAX_CLAIMS];
    int claim_used[MAX_CLAIMS] = {0};
    int nf = 0, ncl = 0, rc = ADM_EXIT_OK, failed = 0;
    adm_report *rep = NULL;
    adm_plan plan;
    {
        static const struct option lo[] = {{"json", required_argument, 0, 'j'}, {"junit", required_argument, 0, 'u'},
                                           {"html", required_argument, 0, 'H'}, {"claim", required_argument, 0, 'c'},
                                           {"mpfr-budget", required_argument, 0, 'B'}, {"help", no_argument, 0, 'h'},
                                           {"max-memory", required_argument, 0, 'M'}, {"max-work", required_argument, 0, 'W'},
                                           {0, 0, 0, 0}};
        const char *v;
        int ch, first = argc;
        while ((ch = adm_cli_getopt(argc, argv, "replay", lo, &v, &first)) != -1) {
            switch (ch) {
            case -2: rc = ADM_EXIT_INPUT; goto done;
            case 'h': fputs(replay_usage, stdout); rc = ADM_EXIT_OK; goto done;
            case 'j': json = v; break;
            case 'u': junit = v; break;
            case 'H': html = v; break;
            case 'B': if ((rc = adm_cli_set_mpfr_budget(v)) != ADM_EXIT_OK) goto done; break;
            case 'M': if ((rc = adm_cli_set_budget("--max-memory", v)) != ADM_EXIT_OK) goto done; break;
            case 'W': if ((rc = adm_cli_set_budget("--max-work", v)) != ADM_EXIT_OK) goto done; break;
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
    if (nf == 0) { fputs(replay_usage, stderr); rc = adm_cli_usage_error("replay: expected at least one CAPTURE"); goto done; }
    if (adm_plan_init(&plan, ADM_PLAN_REPLAY) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    if (adm_report_create("admit-kernel replay", &rep) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    {
        char list[2048] = "";
        for (int f = 0; f < nf; f++) {
            strncat(list, f ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, files[f], sizeof list - strlen(list) - 1);
        }
        adm_cli_report_context(rep, "captures", list);
    }
    /* Every capture is read and judged before anything is written. */
    for (int f = 0; f < nf; f++) {
        adm_capture *cap = NULL;
        adm_replay_result res;
        adm_cli_progress(f + 1, nf, files[f]);
        adm_status st;
        if ((st = adm_capture_read_sandboxed_plan(files[f], NULL, adm_plan_check, &plan, &cap)) != ADM_OK ||
            (st = adm_capture_validate(cap)) != ADM_OK ||
            (st = adm_harness_replay(cap, NULL, NULL, &res)) != ADM_OK) {
            /* This capture fails alone: its row says why, the others are
             * still judged, and the command exits 2 after the reports. */
            adm_cli_progress_done();
            fprintf(stderr, "admit-kernel: %s\n", adm_error_message());
            failed++;
            if (adm_report_add_error(rep, files[f], cap ? adm_capture_op(cap) : NULL, NULL, st, adm_error_message(),
                                     NULL) != ADM_OK) {
                rc = adm_cli_fail();
                adm_capture_free(cap);
                goto done;
            }
            adm_capture_free(cap);
            continue;
        }
        for (int k = 0; k < res.n; k++) {
            const adm_tier *claim = NULL;
            for (int c = 0; c < ncl; c++)
                if (!strcmp(claim_names[c], res.names[k])) {
                    claim = &claim_tiers[c];
                    claim_used[c] = 1;
                }
            if (adm_report_add(rep, files[f], adm_capture_op(cap), res.names[k], &res.verdicts[k],
                               res.mpfr_refined, claim) != ADM_OK) {
                rc = adm_cli_fail();
                adm_replay_result_free(&res);
                adm_capture_free(cap);
                goto done;
            }
        }
        adm_replay_result_free(&res);
        adm_capture_free(cap);
    }
    for (int c = 0; c < ncl && !failed; c++) /* a failed capture's candidates are unknown */
        if (!claim_used[c]) {
            rc = adm_cli_usage_error("--claim: no candidate named '%s' in the captures", claim_names[c]);
            goto done;
        }
    rc = adm_cli_finish_report(rep, json, junit, html);
done:
    for (int c = 0; c < ncl; c++) free(claim_names[c]);
    adm_report_free(rep);
    return rc;
}
