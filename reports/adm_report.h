/* admit reports: the verdict table on a terminal, JSON, JUnit XML and an
 * HTML page. Every file is written to a temporary name beside its target
 * and renamed into place, so a crash never leaves a half-written report.
 * Every format ends (or, on a page, starts) with the same summary: how
 * many claims hold, are unsafe or promotable, how many rows are errors. */
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
    /* What a fusion table says of the entry (owned; NULL: not given): its
     * description, its static declarations (compact JSON) and its reader. */
    char *description, *static_decl, *reader;
} adm_report_row;

/* Where a row's claim stands. */
typedef enum adm_claim_status {
    ADM_CLAIM_NONE = 0,       /* no claim given */
    ADM_CLAIM_HOLDS = 1,      /* measured the claimed tier */
    ADM_CLAIM_PROMOTABLE = 2, /* measured stricter: a violation only in a strict report */
    ADM_CLAIM_UNSAFE = 3,     /* measured looser: always a violation */
    ADM_CLAIM_ERROR = 4       /* not measured */
} adm_claim_status;
/* "none", "holds", "promotable", "unsafe", "error" */
ADM_API const char *adm_claim_status_name(adm_claim_status s);

/* The counts every report format states. */
typedef struct adm_report_summary {
    int rows;
    int holds, promotable, unsafe, errors, no_claim;
    int insufficient;   /* measured rows whose evidence gate failed (not enough elements, or a "detect" not met) */
    int violations;     /* unsafe, and in a strict report promotable */
    int strict;
} adm_report_summary;

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
/* Wall time of a phase of the run in seconds ("read", "oracle",
 * "statistics", "other_gates"), in the JSON report's "timings" object (in
 * the order first set; absent when none was set); a phase set again adds
 * up. At most 8 phases; a name of at most 31 characters. */
ADM_API adm_status adm_report_add_timing(adm_report *r, const char *phase, double seconds);
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
/* Column names for the source and the claimed tier ("capture", "claimed"
 * by default; a fusion table's are "entry", "declared"). */
ADM_API void adm_report_set_labels(adm_report *r, const char *source, const char *claim);
/* 1 when a verdict is looser than its claim (unsafe), or in a strict
 * report stricter (promotable). */
ADM_API int adm_report_claim_violated(const adm_report_row *row);
ADM_API int adm_report_any_violation(const adm_report *r);
ADM_API adm_claim_status adm_report_claim_status(const adm_report_row *row);
ADM_API void adm_report_summarize(const adm_report *r, adm_report_summary *s);
/* The summary as whole sentences, e.g. "14 entries: 12 hold, 2
 * promotable, 0 unsafe, 0 errors. Every claim holds." (at most n bytes,
 * NUL-terminated); the headline alone ("pass", "FAIL: 2 unsafe", "no
 * claims") with headline_only. */
ADM_API void adm_report_summary_text(const adm_report *r, int headline_only, char *buf, size_t n);
/* The last row added is a fusion table's entry: what the table says of it
 * (each NULL: not given; copied): description, static declarations as
 * compact JSON, the reader as written. */
ADM_API adm_status adm_report_set_entry(adm_report *r, const char *description, const char *static_json,
                                        const char *reader);

/* The terminal adm_report_print writes for: its width in columns (0: the
 * default, ADM_REPORT_DEFAULT_WIDTH) and whether to colour the claims
 * (ANSI SGR; the caller decides: a TTY, and NO_COLOR unset). Rows are one
 * line when they fit the width, else the names take a line of their own;
 * names are never cut, reasons wrap at spaces within the width. */
#define ADM_REPORT_DEFAULT_WIDTH 120
ADM_API void adm_report_set_terminal(adm_report *r, int width, int color);

ADM_API void adm_report_print(const adm_report *r, FILE *f);
ADM_API adm_status adm_report_write_json(const adm_report *r, const char *path);
ADM_API adm_status adm_report_write_junit(const adm_report *r, const char *path);
/* DIR/index.html: a verdict banner, the table with each row's claim, and
 * each row's detail: its numbers, error histogram, power, reasons, flips
 * where a reader is given, and the captures a pooled verdict adds up. */
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
