/* admit reports: the verdict table on a terminal, JSON, JUnit XML. Every
 * file is written to a temporary name beside its target and renamed into
 * place, so a crash never leaves a half-written report. */
#ifndef ADM_REPORT_H
#define ADM_REPORT_H

#include "adm_export.h"

#include <stdio.h>

#include "adm_harness.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct adm_report_row {
    char *source;           /* the capture (or table entry) */
    char *op;
    char *candidate;
    adm_verdict verdict;
    int has_claim;
    adm_tier claim;
    int strict;
    int64_t mpfr_refined;
    /* An entry that could not be measured (a corrupt capture, a crashed
     * plugin): the status and message; NULL and ADM_OK for a verdict. */
    char *error;
    adm_status error_status;
    /* A verdict pooled over several captures: each capture's own verdict in
     * brief (owned), and the power its claim requires (0: none). */
    int ncaptures;
    adm_capture_summary *per_capture;
    adm_power required;
} adm_report_row;

typedef struct adm_report adm_report;

ADM_API adm_status adm_report_create(const char *title, adm_report **out);
ADM_API void adm_report_free(adm_report *r);
ADM_API adm_status adm_report_add(adm_report *r, const char *source, const char *op, const char *candidate,
                                  const adm_verdict *v, int64_t mpfr_refined, const adm_tier *claim);
/* What was run, for the reports' header ("table", the table's path;
 * "captures"; "GPU"): a key is set once, a later value replaces it; at
 * most 16. Date (SOURCE_DATE_EPOCH when set, else now), commit (ADMIT_COMMIT,
 * else the build's git describe) and host are added by the writers. */
ADM_API adm_status adm_report_set_context(adm_report *r, const char *key, const char *value);
/* A row for what could not be measured, with the reason; the run goes on
 * with the next entry, and the reports say "error" for this one. */
ADM_API adm_status adm_report_add_error(adm_report *r, const char *source, const char *op, const char *candidate,
                                        adm_status status, const char *message, const adm_tier *claim);
/* The last row added pools the evidence of n captures: their verdicts in
 * brief (copied) and the power its claim requires (NULL: none), for the
 * reports (a fusion table's entries). */
ADM_API adm_status adm_report_set_evidence(adm_report *r, const adm_capture_summary *per_capture, int n,
                                           const adm_power *required);
/* What `admit-kernel replay` reports for captures already in memory (read,
 * or built over the caller's tensors with adm_capture_create_borrowed):
 * each capture checked as replay checks what it reads (adm_env_check,
 * adm_capture_validate, replay's budget: adm_plan_init(ADM_PLAN_REPLAY),
 * adm_plan_check), its candidates judged (adm_harness_replay, the default
 * oracle and gates), one row each with labels[i] as the source (NULL, or
 * labels NULL: "capture i", from 1), then for a candidate (one op, one
 * name) found in several captures a row "pooled (N captures)" judged on
 * their pooled evidence (adm_verdict_pool_add, _finish). The rows, numbers
 * and power are replay's for the same data; no claims are set. All or
 * nothing: the first capture that fails stops it with its status and
 * message (prefixed with its label), and no row is added. In the default
 * floating-point environment. */
ADM_API adm_status adm_report_add_replay(adm_report *r, const struct adm_capture *const *captures,
                                         const char *const *labels, int n);
/* The rows `admit-kernel table` reports for a measured fusion table: an
 * entry's verdict with its declared tier as the claim and its evidence
 * (adm_report_set_evidence), or its error row. All or nothing. */
ADM_API adm_status adm_report_add_table(adm_report *r, const adm_table_result *t);
/* The JSON report (what adm_report_write_json writes) as text, owned by
 * the report: valid until the next call or adm_report_free. */
ADM_API adm_status adm_report_json(adm_report *r, const char **text);
/* 1 when some row is an error: the command exits 2 after its reports. */
ADM_API int adm_report_any_error(const adm_report *r);
ADM_API int adm_report_count(const adm_report *r);
ADM_API const adm_report_row *adm_report_row_at(const adm_report *r, int i);
/* Strict: a verdict stricter than its claim (promotable) also violates. */
ADM_API void adm_report_set_strict(adm_report *r, int strict);
/* Column names for the source and the claim ("capture", "claim" by
 * default; a fusion table's are "entry", "declared"). */
ADM_API void adm_report_set_labels(adm_report *r, const char *source, const char *claim);
/* 1 when a verdict is looser than its claim (unsafe), or in a strict
 * report stricter (promotable). */
ADM_API int adm_report_claim_violated(const adm_report_row *row);
ADM_API int adm_report_any_violation(const adm_report *r);

ADM_API void adm_report_print(const adm_report *r, FILE *f);
ADM_API adm_status adm_report_write_json(const adm_report *r, const char *path);
ADM_API adm_status adm_report_write_junit(const adm_report *r, const char *path);
/* DIR/index.html: the verdict table with every gate's reason. */
ADM_API adm_status adm_report_write_html(const adm_report *r, const char *dir);

/* Every requested report (NULL: not wanted), all or nothing: each is
 * written completely to a temporary file beside its target, and only when
 * all are written are they renamed into place; on any failure none of them
 * is left (a rename that fails takes back the ones already made, and an
 * HTML folder created for the report is removed). */
ADM_API adm_status adm_report_write_all(const adm_report *r, const char *json, const char *junit, const char *html_dir);

/* Writes len bytes to path through a temporary file and a rename. */
ADM_API adm_status adm_write_atomic(const char *path, const char *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
