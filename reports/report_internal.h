/* Internal to the verdict report (reports/report.c, report_html.c). */
#ifndef ADM_REPORT_INTERNAL_H
#define ADM_REPORT_INTERNAL_H

#include "adm_report.h"
#include "text_buf.h"

#define ADM_REPORT_MAX_CONTEXT 16

struct adm_report {
    char *ctx_key[ADM_REPORT_MAX_CONTEXT], *ctx_val[ADM_REPORT_MAX_CONTEXT];
    int nctx;
    char timing_key[8][32];
    double timing_s[8];
    int ntiming;
    int strict;
    const char *source_label, *claim_label;
    char *title;
    adm_report_row *rows;
    int n, cap;
    int width, color; /* the terminal's */
    char *json;       /* adm_report_json's text, until the next call */
};

/* The last path component. */
const char *adm_report_base(const char *p);
/* What the oracle's certificate rests on. */
const char *adm_report_oracle_basis(const adm_verdict *v);
/* The verdict's power as one sentence ("Power: over ... could go unseen."). */
void adm_report_power_sentence(const adm_verdict *v, char *buf, size_t n);
/* Gate 2's group statistics (per channel, per row), each tested in D and
 * in ulps, twice each (GATES.md, gate 2). adm_report_group_tests: which
 * tests are significant (bit 1 the spread across the groups, bit 2 the
 * variance ratio, bits 4 and 8 the same in ulps) and each spread's
 * statistic in standard errors (z in D, zu in ulps: 0 where it does not
 * apply); adm_report_group_outcome: "passed", "failed by " the tests that
 * decided ("the spread", "the variance ratio", "the spread in ulps", "the
 * variance ratio in ulps", joined with commas and "and"), or
 * "significant, within its floor"; adm_report_group_sentence: every
 * applicable one ("Group tests: per-channel mean: spread 0.4 against 3.98
 * standard errors, variance ratio 1.02 against 1.43, in ulps spread 0.7
 * against 3.98, variance ratio 1.1 against 1.43, passed; ...."; the part in
 * ulps where those tests apply), or the failed ones alone; empty where none
 * applies. */
int adm_report_group_tests(const adm_bias_test *b, double *z, double *zu);
void adm_report_group_outcome(const adm_bias_test *b, char *buf, size_t n);
void adm_report_group_sentence(const adm_verdict *v, int failed_only, char *buf, size_t n);
/* What was run: date, admit, commit, host, then what the caller set; date
 * needs 32 bytes, host 256. */
void adm_report_run_context(const adm_report *r, int *n, const char **keys, const char **vals, char *date, char *host);
/* A table entry's static declarations (compact JSON) as text for people:
 * "accumulator fp32, operand bf16, stable true". */
void adm_report_static_text(const char *json, char *buf, size_t n);
/* The claim's name in the reports: "the claim" or "declared". */
int adm_report_is_table(const adm_report *r);
/* The gate that failed the evidence test: 1 when the row was measured and
 * its evidence gate failed. */
int adm_report_insufficient(const adm_report_row *row);

adm_status adm_report_render_html(const adm_report *r, char **out, size_t *len);

#endif
