/* The verdict report's model, its summary, the terminal table, JSON and
 * JUnit XML, and writing them all or nothing (the HTML page:
 * report_html.c). */
#include "report_internal.h"
#include "adm_capture.h"
#include "adm_fpenv.h"
#include "adm_commit.h" /* ADM_GIT_COMMIT, written at build time (cmake/commit_stamp.cmake) */

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The longest message a row may carry, whole (core/status.c: two paths of
 * PATH_MAX bytes with the field and the reason). */
#define ADM_REPORT_TEXT_MAX 32768

adm_status adm_report_create(const char *title, adm_report **out)
{
    adm_report *r = calloc(1, sizeof *r);
    if (!r || !(r->title = adm_strdup(title))) {
        free(r);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    *out = r;
    return ADM_OK;
}

/* Drops the rows from the n-th on. */
static void truncate_rows(adm_report *r, int n)
{
    for (int i = n; i < r->n; i++) {
        free(r->rows[i].source);
        free(r->rows[i].op);
        free(r->rows[i].candidate);
        free(r->rows[i].error);
        free(r->rows[i].per_capture);
        free(r->rows[i].description);
        free(r->rows[i].static_decl);
        free(r->rows[i].reader);
    }
    if (n < r->n) r->n = n;
}

void adm_report_free(adm_report *r)
{
    if (!r) return;
    truncate_rows(r, 0);
    free(r->rows);
    free(r->title);
    free(r->json);
    for (int i = 0; i < r->nctx; i++) {
        free(r->ctx_key[i]);
        free(r->ctx_val[i]);
    }
    free(r);
}

adm_status adm_report_set_evidence(adm_report *r, const adm_capture_summary *per_capture, int n,
                                   const adm_power *required)
{
    adm_report_row *row;
    if (r->n == 0) return ADM_FAIL(ADM_ERR_INVALID, "report: no row to set the evidence of");
    row = &r->rows[r->n - 1];
    free(row->per_capture);
    row->per_capture = NULL;
    row->ncaptures = 0;
    if (n > 0 && per_capture) {
        if (!(row->per_capture = malloc(sizeof *row->per_capture * (size_t)n)))
            return ADM_FAIL(ADM_ERR_NOMEM, "report: out of memory for %d captures", n);
        memcpy(row->per_capture, per_capture, sizeof *row->per_capture * (size_t)n);
        row->ncaptures = n;
    }
    if (required) row->required = *required;
    else memset(&row->required, 0, sizeof row->required);
    return ADM_OK;
}

adm_status adm_report_set_entry(adm_report *r, const char *description, const char *static_json, const char *reader)
{
    adm_report_row *row;
    char *d = NULL, *st = NULL, *rd = NULL;
    if (r->n == 0) return ADM_FAIL(ADM_ERR_INVALID, "report: no row to describe");
    row = &r->rows[r->n - 1];
    if ((description && !(d = adm_strdup(description))) || (static_json && !(st = adm_strdup(static_json))) ||
        (reader && !(rd = adm_strdup(reader)))) {
        free(d);
        free(st);
        free(rd);
        return ADM_FAIL(ADM_ERR_NOMEM, "report: out of memory");
    }
    free(row->description);
    free(row->static_decl);
    free(row->reader);
    row->description = d;
    row->static_decl = st;
    row->reader = rd;
    return ADM_OK;
}

void adm_report_set_terminal(adm_report *r, int width, int color)
{
    r->width = width > 0 ? width : 0;
    r->color = color != 0;
}

adm_status adm_report_add(adm_report *r, const char *source, const char *op, const char *candidate,
                          const adm_verdict *v, int64_t mpfr_refined, const adm_tier *claim)
{
    adm_report_row *row;
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 8;
        adm_report_row *nr = realloc(r->rows, sizeof *nr * (size_t)cap);
        if (!nr) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        r->rows = nr;
        r->cap = cap;
    }
    row = &r->rows[r->n];
    memset(row, 0, sizeof *row);
    row->source = adm_strdup(source);
    row->op = adm_strdup(op);
    row->candidate = adm_strdup(candidate);
    if (!row->source || !row->op || !row->candidate) {
        free(row->source);
        free(row->op);
        free(row->candidate);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    row->verdict = *v;
    row->mpfr_refined = mpfr_refined;
    row->strict = r->strict;
    if (claim) {
        row->has_claim = 1;
        row->claim = *claim;
    }
    r->n++;
    return ADM_OK;
}

adm_status adm_report_set_context(adm_report *r, const char *key, const char *value)
{
    int i;
    for (i = 0; i < r->nctx; i++)
        if (!strcmp(r->ctx_key[i], key)) break;
    if (i == ADM_REPORT_MAX_CONTEXT) return ADM_FAIL(ADM_ERR_INVALID, "report: at most %d context entries", i);
    if (i == r->nctx) {
        if (!(r->ctx_key[i] = adm_strdup(key))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        r->ctx_val[i] = NULL;
        r->nctx++;
    }
    free(r->ctx_val[i]);
    if (!(r->ctx_val[i] = adm_strdup(value))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    return ADM_OK;
}

adm_status adm_report_add_timing(adm_report *r, const char *phase, double seconds)
{
    int i;
    if (strlen(phase) >= sizeof r->timing_key[0])
        return ADM_FAIL(ADM_ERR_INVALID, "report: a timing's name of at most %d characters",
                        (int)sizeof r->timing_key[0] - 1);
    for (i = 0; i < r->ntiming; i++)
        if (!strcmp(r->timing_key[i], phase)) break;
    if (i == (int)(sizeof r->timing_s / sizeof r->timing_s[0]))
        return ADM_FAIL(ADM_ERR_INVALID, "report: at most %d timings", i);
    if (i == r->ntiming) {
        strcpy(r->timing_key[i], phase);
        r->timing_s[i] = 0;
        r->ntiming++;
    }
    r->timing_s[i] += seconds;
    return ADM_OK;
}

/* The run's date: SOURCE_DATE_EPOCH when set (reproducible builds'
 * convention, so a test can fix it), else now; ISO 8601, UTC. */
static void run_date(char *buf, size_t n)
{
    const char *e = getenv("SOURCE_DATE_EPOCH");
    time_t t = time(NULL);
    struct tm tm;
    if (e && *e) {
        char *end;
        long long v = strtoll(e, &end, 10);
        if (!*end && v >= 0) t = (time_t)v;
    }
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* What was run: date, commit, host, then what the caller set. */
void adm_report_run_context(const adm_report *r, int *n, const char **keys, const char **vals, char *date, char *host)
{
    const char *commit = getenv("ADMIT_COMMIT");
    int k = 0;
    run_date(date, 32);
    if (gethostname(host, 256) != 0) snprintf(host, 256, "unknown");
    host[255] = '\0';
    keys[k] = "date", vals[k++] = date;
    keys[k] = "admit", vals[k++] = ADM_VERSION_STRING;
#ifdef ADM_GIT_COMMIT
    keys[k] = "commit", vals[k++] = commit && *commit ? commit : ADM_GIT_COMMIT;
#else
    keys[k] = "commit", vals[k++] = commit && *commit ? commit : "unknown (set ADMIT_COMMIT)";
#endif
    keys[k] = "host", vals[k++] = host;
    for (int i = 0; i < r->nctx; i++) keys[k] = r->ctx_key[i], vals[k++] = r->ctx_val[i];
    *n = k;
}

adm_status adm_report_add_error(adm_report *r, const char *source, const char *op, const char *candidate,
                                adm_status status, const char *message, const adm_tier *claim)
{
    adm_verdict none;
    char *msg = adm_strdup(message && *message ? message : adm_strerror(status));
    if (!msg) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    memset(&none, 0, sizeof none);
    none.tier = ADM_TIER_HIGH;
    if (adm_report_add(r, source, op ? op : "-", candidate ? candidate : "-", &none, 0, claim) != ADM_OK) {
        free(msg);
        return ADM_ERR_NOMEM;
    }
    r->rows[r->n - 1].error = msg;
    r->rows[r->n - 1].error_status = status == ADM_OK ? ADM_ERR_INTERNAL : status;
    return ADM_OK;
}

/* ------------------------------------------------------------ in memory */

/* One candidate (one op, one name) pooled over the captures it is in. */
typedef struct replay_pool {
    const char *op, *name;
    adm_verdict acc;
    int count;
    int64_t refined;
    adm_capture_summary *caps; /* each capture's verdict in brief, for the pooled row's detail */
} replay_pool;

ADM_FPENV_BODY
static adm_status add_replay_body(adm_report *r, const adm_capture *const *captures, const char *const *labels, int n,
                                  char (*dflt)[32])
{
    adm_replay_result *res = NULL;
    replay_pool *pools = NULL;
    adm_plan plan;
    adm_status st = ADM_OK;
    int npool = 0, maxpool = 0, done = 0, start = r->n;
    if (n < 1 || !captures) return ADM_FAIL(ADM_ERR_INVALID, "replay: no captures to judge");
    ADM_TRY(adm_env_check());
    ADM_TRY(adm_plan_init(&plan, ADM_PLAN_REPLAY));
    for (int i = 0; i < n; i++) {
        if (!captures[i]) return ADM_FAIL(ADM_ERR_INVALID, "replay: capture %d is NULL", i + 1);
        maxpool += adm_capture_candidate_count(captures[i]);
    }
    res = calloc((size_t)n, sizeof *res);
    pools = calloc((size_t)(maxpool ? maxpool : 1), sizeof *pools);
    if (!res || !pools) { st = ADM_FAIL(ADM_ERR_NOMEM, "replay: out of memory for %d captures", n); goto out; }
    /* as admit-kernel replay does with each capture it has read */
    for (int i = 0; i < n; i++) {
        const adm_capture *c = captures[i];
        const char *label = labels && labels[i] ? labels[i] : dflt[i];
        if ((st = adm_capture_validate(c)) != ADM_OK || (st = adm_plan_check(c, &plan)) != ADM_OK ||
            (st = adm_harness_replay(c, NULL, NULL, &res[i])) != ADM_OK) {
            adm_error_prefix("%s: ", label);
            goto out;
        }
        done = i + 1;
        for (int k = 0; k < res[i].n; k++) {
            int p = 0;
            while (p < npool && (strcmp(pools[p].op, adm_capture_op(c)) || strcmp(pools[p].name, res[i].names[k]))) p++;
            if (p == npool) {
                pools[p].op = adm_capture_op(c);
                pools[p].name = res[i].names[k];
                npool++;
            }
            if (!pools[p].caps && !(pools[p].caps = calloc((size_t)n, sizeof *pools[p].caps))) {
                st = ADM_FAIL(ADM_ERR_NOMEM, "replay: out of memory for %d captures", n);
                goto out;
            }
            adm_capture_summary_of(&res[i].verdicts[k], &pools[p].caps[pools[p].count]);
            adm_verdict_pool_add(&pools[p].acc, &res[i].verdicts[k], label);
            pools[p].count++;
            pools[p].refined += res[i].mpfr_refined;
        }
    }
    for (int p = 0; p < npool; p++)
        if (pools[p].count > 1) adm_verdict_pool_finish(&pools[p].acc, NULL);
    /* the rows: each capture's verdicts, then the pooled ones */
    for (int i = 0; i < n && st == ADM_OK; i++)
        for (int k = 0; k < res[i].n && st == ADM_OK; k++)
            st = adm_report_add(r, labels && labels[i] ? labels[i] : dflt[i], adm_capture_op(captures[i]),
                                res[i].names[k], &res[i].verdicts[k], res[i].mpfr_refined, NULL);
    for (int p = 0; p < npool && st == ADM_OK; p++) {
        char src[64];
        if (pools[p].count < 2) continue;
        snprintf(src, sizeof src, "pooled (%d captures)", pools[p].count);
        if ((st = adm_report_add(r, src, pools[p].op, pools[p].name, &pools[p].acc, pools[p].refined, NULL)) == ADM_OK)
            st = adm_report_set_evidence(r, pools[p].caps, pools[p].count, NULL);
    }
    if (st != ADM_OK) truncate_rows(r, start);
out:
    for (int i = 0; res && i < done; i++) adm_replay_result_free(&res[i]);
    for (int p = 0; pools && p < npool; p++) free(pools[p].caps);
    free(res);
    free(pools);
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_report_add_replay(adm_report *r, const adm_capture *const *captures, const char *const *labels, int n)
{
    adm_fpenv fe;
    adm_status rv;
    char (*dflt)[32] = NULL;
    if (n > 0 && !(dflt = calloc((size_t)n, sizeof *dflt))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) snprintf(dflt[i], sizeof dflt[i], "capture %d", i + 1);
    adm_fpenv_enter(&fe);
    rv = add_replay_body(r, captures, labels, n, dflt);
    adm_fpenv_leave(&fe);
    free(dflt);
    return rv;
}

adm_status adm_report_add_table(adm_report *r, const adm_table_result *t)
{
    int start = r->n;
    adm_status st = ADM_OK;
    for (int i = 0; i < t->n && st == ADM_OK; i++) {
        const adm_table_entry *e = &t->entries[i];
        if (e->error) /* a capture or plugin that failed this entry alone */
            st = adm_report_add_error(r, e->name, e->op, e->candidate, e->error_status, e->error, &e->declared);
        else if ((st = adm_report_add(r, e->name, e->op, e->candidate, &e->verdict, e->mpfr_refined, &e->declared)) ==
                     ADM_OK &&
                 (st = adm_report_set_evidence(r, e->per_capture, e->ncaptures, &e->required)) == ADM_OK)
            st = adm_report_set_entry(r, e->description, e->static_decl, e->reader);
    }
    if (st != ADM_OK) truncate_rows(r, start);
    return st;
}

int adm_report_any_error(const adm_report *r)
{
    for (int i = 0; i < r->n; i++)
        if (r->rows[i].error) return 1;
    return 0;
}

int adm_report_count(const adm_report *r) { return r->n; }
const adm_report_row *adm_report_row_at(const adm_report *r, int i) { return (i >= 0 && i < r->n) ? &r->rows[i] : NULL; }
void adm_report_set_strict(adm_report *r, int strict) { r->strict = strict; }

void adm_report_set_labels(adm_report *r, const char *source, const char *claim)
{
    r->source_label = source;
    r->claim_label = claim;
}

int adm_report_claim_violated(const adm_report_row *row)
{
    if (!row->has_claim || row->error) return 0;
    return row->verdict.tier > row->claim || (row->strict && row->verdict.tier < row->claim);
}

int adm_report_any_violation(const adm_report *r)
{
    for (int i = 0; i < r->n; i++)
        if (adm_report_claim_violated(&r->rows[i])) return 1;
    return 0;
}

adm_claim_status adm_report_claim_status(const adm_report_row *row)
{
    if (row->error) return ADM_CLAIM_ERROR;
    if (!row->has_claim) return ADM_CLAIM_NONE;
    if (row->verdict.tier > row->claim) return ADM_CLAIM_UNSAFE;
    if (row->verdict.tier < row->claim) return ADM_CLAIM_PROMOTABLE;
    return ADM_CLAIM_HOLDS;
}

const char *adm_claim_status_name(adm_claim_status s)
{
    static const char *const names[] = {"none", "holds", "promotable", "unsafe", "error"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "none";
}

int adm_report_insufficient(const adm_report_row *row)
{
    return !row->error && (!row->verdict.evidence_ok || !row->verdict.gate[ADM_GATE_EVIDENCE].passed);
}

int adm_report_is_table(const adm_report *r) { return r->source_label && !strcmp(r->source_label, "entry"); }

void adm_report_summarize(const adm_report *r, adm_report_summary *s)
{
    memset(s, 0, sizeof *s);
    s->rows = r->n;
    s->strict = r->strict;
    for (int i = 0; i < r->n; i++) {
        const adm_report_row *row = &r->rows[i];
        switch (adm_report_claim_status(row)) {
        case ADM_CLAIM_NONE: s->no_claim++; break;
        case ADM_CLAIM_HOLDS: s->holds++; break;
        case ADM_CLAIM_PROMOTABLE: s->promotable++; break;
        case ADM_CLAIM_UNSAFE: s->unsafe++; break;
        case ADM_CLAIM_ERROR: s->errors++; break;
        }
        s->insufficient += adm_report_insufficient(row);
        s->violations += adm_report_claim_violated(row);
    }
}

void adm_report_summary_text(const adm_report *r, int headline_only, char *buf, size_t n)
{
    adm_report_summary s;
    int table = adm_report_is_table(r);
    size_t used = 0;
    adm_report_summarize(r, &s);
#define PUT(...) (used += used < n ? (size_t)snprintf(buf + used, n - used, __VA_ARGS__) : 0)
    if (n == 0) return;
    buf[0] = '\0';
    if (headline_only) {
        if (s.errors) PUT("error: %d of %d %s not measured", s.errors, s.rows, table ? "entries" : "results");
        else if (s.violations && s.unsafe) PUT("FAIL: %d unsafe", s.unsafe);
        else if (s.violations) PUT("FAIL: %d promotable (--strict)", s.promotable);
        else if (s.holds + s.promotable == 0) PUT("no claims checked");
        else PUT("pass: every claim holds");
        return;
    }
    PUT("%d %s: %d %s, %d promotable, %d unsafe, %d error%s", s.rows,
        table ? (s.rows == 1 ? "entry" : "entries") : (s.rows == 1 ? "result" : "results"), s.holds,
        s.holds == 1 ? "holds" : "hold", s.promotable, s.unsafe, s.errors, s.errors == 1 ? "" : "s");
    if (s.no_claim) PUT(", %d without a claim", s.no_claim);
    if (s.insufficient) PUT("; %d with insufficient evidence", s.insufficient);
    PUT(". ");
    if (s.errors) PUT("%d could not be measured.", s.errors);
    else if (s.violations)
        PUT("%d %s violated%s.", s.violations, s.violations == 1 ? "claim is" : "claims are",
            s.strict && s.promotable ? " (--strict: promotable counts)" : "");
    else if (s.holds + s.promotable == 0) PUT("No claim was checked%s.", table ? "" : " (--claim NAME=TIER)");
    else PUT("Every claim holds.");
#undef PUT
}

const char *adm_report_base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* What the oracle's certificate rests on, in every report format. */
const char *adm_report_oracle_basis(const adm_verdict *v)
{
    if (!v->oracle_certified) return "user oracle, uncertified";
    return v->oracle_assumption ? v->oracle_assumption : "proven bounds";
}

/* What the verdict could have missed (issue 16): the smallest lean, gain,
 * per-channel and per-row bias (units of D, the reference error scale) and
 * RMS ratio its evidence would have rejected. */
void adm_report_power_sentence(const adm_verdict *v, char *buf, size_t n)
{
    const adm_power *p = &v->power;
    size_t used;
    char caps[64] = "";
    if (v->n == 0) {
        snprintf(buf, n, "Power: none (no element judged).");
        return;
    }
    if (v->ev.captures > 1) snprintf(caps, sizeof caps, " in %.0f captures", v->ev.captures);
    used = (size_t)snprintf(buf, n, "Power: over %lld elements%s, this evidence rejects a lean of %.2g D, a gain "
                            "of %.2g D (%.2g%%)", (long long)v->n, caps, p->lean, p->gain, 100 * p->gain_relative);
    if (used < n && p->channel > 0) used += (size_t)snprintf(buf + used, n - used, ", a per-channel bias of %.2g D",
                                                             p->channel);
    if (used < n && p->row > 0) used += (size_t)snprintf(buf + used, n - used, ", a per-row bias of %.2g D", p->row);
    if (used < n)
        used += (size_t)snprintf(buf + used, n - used, " and an RMS ratio of %.3gx; smaller ones could go unseen%s",
                                 p->rms_ratio, p->lean > 0.25 ? ": add captures" : "");
    if (used < n) snprintf(buf + used, n - used, ".");
}

/* Which of a group statistic's tests is significant, as the gate decides
 * them (harness/evidence.c test_group): U above t of its standard errors,
 * F above its quantile, in D and in ulps. A spread's z is U over its
 * standard error: 0 where both are 0 (a candidate identical to its
 * reference), so that it is over t exactly where U > t se holds. */
static double spread_z(double diff, double se) { return se > 0 ? diff / se : diff > 0 ? INFINITY : 0; }

int adm_report_group_tests(const adm_bias_test *b, double *z, double *zu)
{
    int sig = (b->diff > b->t * b->se ? 1 : 0) | (b->f > b->f_quantile ? 2 : 0);
    *z = spread_z(b->diff, b->se);
    *zu = 0;
    if (b->ulps_applicable) {
        *zu = spread_z(b->u_diff, b->u_se);
        sig |= (b->u_diff > b->u_t * b->u_se ? 4 : 0) | (b->u_f > b->u_f_quantile ? 8 : 0);
    }
    return sig;
}

void adm_report_group_outcome(const adm_bias_test *b, char *buf, size_t n)
{
    static const char *const names[4] = {"the spread", "the variance ratio", "the spread in ulps",
                                         "the variance ratio in ulps"};
    double z, zu;
    int sig = adm_report_group_tests(b, &z, &zu), left = 0;
    size_t used;
    if (!b->failed) {
        snprintf(buf, n, "%s", sig ? "significant, within its floor" : "passed");
        return;
    }
    for (int k = 0; k < 4; k++) left += sig >> k & 1;
    used = (size_t)snprintf(buf, n, "failed%s", left ? " by" : "");
    for (int k = 0, done = 0; k < 4 && used < n; k++) {
        if (!(sig >> k & 1)) continue;
        done++;
        used += (size_t)snprintf(buf + used, n - used, "%s %s", done == 1 ? "" : done == left ? (left > 2 ? ", and" : " and") : ",",
                                 names[k]);
    }
}

/* Every applicable group statistic's tests, each value against its
 * threshold, and which decided a failure (failed_only: the failed ones
 * alone); empty where none applies (a 1-D output). */
void adm_report_group_sentence(const adm_verdict *v, int failed_only, char *buf, size_t n)
{
    size_t used = 0;
    if (n) buf[0] = '\0';
    for (int sc = ADM_BIAS_CHANNEL; sc <= ADM_BIAS_ROW; sc++)
        for (int k = 0; k < ADM_BIAS_KINDS; k++) {
            const adm_bias_test *b = &v->bias[sc][k];
            double z, zu;
            char outcome[128], ulps[128] = "";
            if (!b->applicable || (failed_only && !b->failed)) continue;
            adm_report_group_tests(b, &z, &zu);
            adm_report_group_outcome(b, outcome, sizeof outcome);
            if (b->ulps_applicable)
                snprintf(ulps, sizeof ulps, "in ulps spread %.3g against %.3g, variance ratio %.3g against %.3g, ", zu,
                         b->u_t, b->u_f, b->u_f_quantile);
            if (used < n)
                used += (size_t)snprintf(buf + used, n - used, "%sper-%s %s: spread %.3g against %.3g standard errors, "
                                         "variance ratio %.3g against %.3g, %s%s", used ? "; " : "Group tests: ",
                                         adm_bias_scope_name(sc), adm_bias_kind_name(k), z, b->t, b->f, b->f_quantile,
                                         ulps, outcome);
        }
    if (used && used < n) snprintf(buf + used, n - used, ".");
}

void adm_report_static_text(const char *text, char *buf, size_t n)
{
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    const char *k;
    json_t *v;
    size_t used = 0;
    if (n) buf[0] = '\0';
    if (!json_is_object(o)) {
        json_decref(o);
        return;
    }
    json_object_foreach(o, k, v) {
        char val[64];
        if (json_is_string(v)) snprintf(val, sizeof val, "%s", json_string_value(v));
        else if (json_is_boolean(v)) snprintf(val, sizeof val, "%s", json_is_true(v) ? "true" : "false");
        else if (json_is_number(v)) snprintf(val, sizeof val, "%g", json_number_value(v));
        else snprintf(val, sizeof val, "?");
        if (used < n) used += (size_t)snprintf(buf + used, n - used, "%s%s %s", used ? ", " : "", k, val);
    }
    json_decref(o);
}

/* ------------------------------------------------------------ the terminal */

/* A ratio as the table prints it; "-" when not finite. */
static const char *ratio_text(double x, char *b, size_t n)
{
    if (!isfinite(x)) snprintf(b, n, "-");
    else snprintf(b, n, "%.3gx", x);
    return b;
}

/* The claim column's word and colour. */
static const char *status_word(const adm_report_row *row, int color, const char **sgr)
{
    adm_claim_status cs = adm_report_claim_status(row);
    *sgr = "";
    switch (cs) {
    case ADM_CLAIM_HOLDS: *sgr = adm_sgr(color, ADM_SGR_GREEN); return "holds";
    case ADM_CLAIM_PROMOTABLE:
        *sgr = adm_sgr(color, row->strict ? ADM_SGR_RED : ADM_SGR_PURPLE);
        return "promotable";
    case ADM_CLAIM_UNSAFE: *sgr = adm_sgr(color, ADM_SGR_RED); return "unsafe";
    case ADM_CLAIM_ERROR: *sgr = adm_sgr(color, ADM_SGR_RED); return "error";
    case ADM_CLAIM_NONE: break;
    }
    return "-";
}

/* The columns after the names: claimed tier, verdict, claim, and (when
 * nums) the four numbers; ADM_REPORT_TAIL columns in all. */
#define TAIL_TIERS 31 /* 9 + 1 + 9 + 1 + 10 + 1 */
#define TAIL_NUMS 33  /* " %7s" three times and " %8s" */
static void print_tail(FILE *f, const adm_report_row *row, int color, int nums)
{
    const adm_verdict *v = &row->verdict;
    const char *sgr, *word = status_word(row, color, &sgr);
    char a[32], b[32], c[32], d[32];
    adm_text_pad(f, row->has_claim ? adm_tier_name(row->claim) : "-", 9);
    fputc(' ', f);
    adm_text_pad(f, row->error ? "error" : adm_tier_name(v->tier), 9);
    fputc(' ', f);
    fputs(sgr, f);
    fputs(word, f);
    fputs(*sgr ? ADM_SGR_RESET : "", f);
    if (!nums) return;
    for (int k = adm_text_cols(word); k < 10; k++) fputc(' ', f);
    if (row->error) {
        fprintf(f, " %7s %7s %7s %8s", "-", "-", "-", "-");
        return;
    }
    snprintf(d, sizeof d, "%.2g", v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN].diff);
    fprintf(f, " %7s %7s %7s %8s", ratio_text(v->rms_ratio, a, sizeof a), ratio_text(v->max_ratio_judged, b, sizeof b),
            ratio_text(v->ulp_ratio, c, sizeof c), isfinite(v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN].diff) ? d : "-");
}

void adm_report_print(const adm_report *r, FILE *f)
{
    const int width = r->width ? r->width : ADM_REPORT_DEFAULT_WIDTH, color = r->color;
    const char *slab = r->source_label ? r->source_label : "capture", *clab = r->claim_label ? r->claim_label : "claimed";
    const char *against = adm_report_is_table(r) ? "declared" : "the claim";
    int ws = adm_text_cols(slab), wc = 9, one_line, split_nums;
    char src[4096], cand[4096], lead[64];
    for (int i = 0; i < r->n; i++) {
        adm_text_escape(src, sizeof src, adm_report_base(r->rows[i].source));
        adm_text_escape(cand, sizeof cand, r->rows[i].candidate);
        if (adm_text_cols(src) > ws) ws = adm_text_cols(src);
        if (adm_text_cols(cand) > wc) wc = adm_text_cols(cand);
    }
    /* one line a row when the whole row fits (the name columns at least
     * 30 and 22 wide when that fits too, so that short names line up from
     * one report to the next), else the names on a line of their own; on
     * a very narrow terminal the numbers on a third */
    one_line = ws + 1 + wc + 1 + TAIL_TIERS + TAIL_NUMS - 1 <= width;
    if (one_line && (ws < 30 || wc < 22) &&
        (ws > 30 ? ws : 30) + 1 + (wc > 22 ? wc : 22) + 1 + TAIL_TIERS + TAIL_NUMS - 1 <= width) {
        ws = ws > 30 ? ws : 30;
        wc = wc > 22 ? wc : 22;
    }
    split_nums = !one_line && 4 + TAIL_TIERS + TAIL_NUMS - 1 > width;
    adm_text_escape(src, sizeof src, r->title);
    fprintf(f, "%s\n", src);
    if (one_line) {
        adm_text_pad(f, slab, ws);
        fputc(' ', f);
        adm_text_pad(f, "candidate", wc);
        fputc(' ', f);
    } else {
        fprintf(f, "%s  candidate\n    ", slab);
    }
    adm_text_pad(f, clab, 9);
    fputc(' ', f);
    adm_text_pad(f, "verdict", 9);
    fputc(' ', f);
    if (split_nums) fputs("claim\n", f);
    else fprintf(f, "%-10s %7s %7s %7s %8s\n", "claim", "rms", "max", "ulp", "lean (D)");
    for (int i = 0; i < r->n; i++) {
        const adm_report_row *row = &r->rows[i];
        const adm_verdict *v = &row->verdict;
        int first = 1;
        char note[512];
        adm_text_escape(src, sizeof src, adm_report_base(row->source));
        adm_text_escape(cand, sizeof cand, row->candidate);
        if (one_line) {
            adm_text_pad(f, src, ws);
            fputc(' ', f);
            adm_text_pad(f, cand, wc);
            fputc(' ', f);
        } else {
            if (adm_text_cols(src) + 2 + adm_text_cols(cand) <= width) fprintf(f, "%s  %s\n    ", src, cand);
            else fprintf(f, "%s\n  %s\n    ", src, cand);
        }
        print_tail(f, row, color, !split_nums);
        fputc('\n', f);
        if (split_nums && !row->error) {
            char a[32], b[32], c[32], t[160];
            snprintf(t, sizeof t, "rms %s, max %s, ulp %s, lean %.2g D", ratio_text(v->rms_ratio, a, sizeof a),
                     ratio_text(v->max_ratio_judged, b, sizeof b), ratio_text(v->ulp_ratio, c, sizeof c),
                     v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN].diff);
            adm_text_wrap(f, "   ", 6, width, t);
        }
        if (row->error) {
            char *msg = malloc(ADM_REPORT_TEXT_MAX); /* the library's longest message, whole (core/status.c) */
            if (msg) adm_text_escape(msg, ADM_REPORT_TEXT_MAX, row->error);
            fputs(adm_sgr(color, ADM_SGR_RED), f);
            adm_text_wrap(f, "    not measured:", 6, width, msg ? msg : "(out of memory)");
            fputs(adm_sgr(color, ADM_SGR_RESET), f);
            free(msg);
            continue;
        }
        if (row->has_claim && v->tier != row->claim) {
            int unsafe = v->tier > row->claim;
            snprintf(note, sizeof note, "measured %s, %s than %s %s%s", adm_tier_name(v->tier),
                     unsafe ? "looser" : "stricter", against, unsafe ? "(unsafe)" : "(promotable)",
                     unsafe ? "." : row->strict ? ": --strict counts it." : ": it could be claimed stricter.");
            fputs(adm_sgr(color, unsafe || row->strict ? ADM_SGR_RED : ADM_SGR_PURPLE), f);
            adm_text_wrap(f, "    claim:", 6, width, note);
            fputs(adm_sgr(color, ADM_SGR_RESET), f);
        }
        for (int g = 1; g < ADM_GATE_COUNT; g++) {
            if (g == ADM_GATE_EXACT && v->tier != ADM_TIER_EXACT) continue;
            if (v->gate[g].passed) continue;
            snprintf(lead, sizeof lead, "    %s:", adm_gate_name(g));
            adm_text_wrap(f, lead, 6, width, v->gate[g].reason);
            first = 0;
        }
        snprintf(note, sizeof note, "%s[%s%s]%s", first ? (v->tier == ADM_TIER_EXACT ? "bit-identical " : "all gates of its tier hold ") : "",
                 v->oracle_certified ? "certified, " : "", adm_report_oracle_basis(v),
                 !v->ulp_gated && v->n > 0 ? " [ulp form at the token/channel scale, not gated: no condition scale]" : "");
        adm_text_wrap(f, "   ", 6, width, note);
        if (v->decisions > 0 || v->gate[ADM_GATE_FLIP].applicable) {
            snprintf(note, sizeof note, "flips: %lld of %lld decisions for the candidate, %lld for the reference path "
                     "(%lld ties)%s.", (long long)v->flips_c, (long long)v->decisions, (long long)v->flips_r,
                     (long long)v->ties, v->gate[ADM_GATE_FLIP].applicable ? "" : "; the reader is not declared, not gated");
            adm_text_wrap(f, "   ", 6, width, note);
        }
        {
            char pw[2048];
            adm_report_power_sentence(v, pw, sizeof pw);
            adm_text_wrap(f, "   ", 6, width, pw);
            adm_report_group_sentence(v, 0, pw, sizeof pw);
            if (pw[0]) adm_text_wrap(f, "   ", 6, width, pw);
        }
    }
    {
        char t[1024];
        fputc('\n', f);
        snprintf(t, sizeof t, "rms, max and ulp are the candidate's RMS error, maximum error (the figure gate 1 "
                 "judged) and RMS error in ulps, as multiples of the reference path's; lean is the mean of candidate "
                 "- reference in units of D, the reference path's RMS error (0: no lean); claim: holds, unsafe "
                 "(measured looser than %s) or promotable (measured stricter).", against);
        adm_text_wrap(f, "columns:", 9, width, t);
        adm_report_summary_text(r, 0, t, sizeof t);
        {
            adm_report_summary s;
            adm_report_summarize(r, &s);
            fputs(adm_sgr(color, s.errors || s.violations ? ADM_SGR_RED : s.holds + s.promotable ? ADM_SGR_GREEN : ""), f);
            adm_text_wrap(f, "summary:", 9, width, t);
            fputs(adm_sgr(color, s.errors || s.violations || s.holds + s.promotable ? ADM_SGR_RESET : ""), f);
        }
    }
}

adm_status adm_write_atomic(const char *path, const char *data, size_t len)
{
    char *tmp;
    int fd;
    FILE *f;
    adm_status st = ADM_OK;
    ADM_TRY(adm_temp_beside(path, &tmp, &fd));
    f = fdopen(fd, "wb");
    if (!f || fwrite(data, 1, len, f) != len) st = ADM_FAIL(ADM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (f && fclose(f) != 0 && st == ADM_OK) st = ADM_FAIL(ADM_ERR_IO, "%s: cannot finish writing", path);
    if (!f) close(fd);
    if (st == ADM_OK && rename(tmp, path) != 0)
        st = ADM_FAIL(ADM_ERR_IO, "%s: cannot move the report into place: %s", path, strerror(errno));
    if (st != ADM_OK) unlink(tmp);
    free(tmp);
    return st;
}

static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* A JSON string for any text: jansson refuses malformed UTF-8 (json_string
 * returns NULL and the field would silently vanish), so such text goes in
 * escaped (adm_text_escape); control characters are JSON-escaped by jansson. */
static json_t *jstr(const char *s)
{
    json_t *j = json_string(s ? s : "");
    char *buf;
    size_t need;
    if (j) return j;
    need = adm_text_escape(NULL, 0, s);
    if (!(buf = malloc(need + 1))) return NULL;
    adm_text_escape(buf, need + 1, s);
    j = json_string(buf);
    free(buf);
    return j;
}

static adm_status render_json(const adm_report *r, char **out, size_t *len)
{
    json_t *root = json_object(), *arr = json_array();
    char *text;
    json_object_set_new(root, "admit_version", json_string(ADM_VERSION_STRING));
    json_object_set_new(root, "title", jstr(r->title));
    {
        const char *keys[ADM_REPORT_MAX_CONTEXT + 4], *vals[ADM_REPORT_MAX_CONTEXT + 4];
        char date[32], host[256];
        int nk;
        json_t *run = json_object();
        adm_report_run_context(r, &nk, keys, vals, date, host);
        for (int i = 0; i < nk; i++) json_object_set_new(run, keys[i], jstr(vals[i]));
        json_object_set_new(root, "run", run);
    }
    if (r->ntiming) {
        json_t *t = json_object();
        for (int i = 0; i < r->ntiming; i++) json_object_set_new(t, r->timing_key[i], json_real(r->timing_s[i]));
        json_object_set_new(root, "timings", t);
    }
    {
        adm_report_summary sm;
        char text[512], head[128];
        adm_report_summarize(r, &sm);
        adm_report_summary_text(r, 0, text, sizeof text);
        adm_report_summary_text(r, 1, head, sizeof head);
        json_object_set_new(root, "summary",
                            json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b,s:b,s:s,s:s}", "results", sm.rows, "holds",
                                      sm.holds, "promotable", sm.promotable, "unsafe", sm.unsafe, "errors", sm.errors,
                                      "without_claim", sm.no_claim, "insufficient_evidence", sm.insufficient,
                                      "violations", sm.violations, "strict", sm.strict,
                                      "passed", !sm.violations && !sm.errors, "headline", head, "text", text));
    }
    for (int i = 0; i < r->n; i++) {
        const adm_report_row *row = &r->rows[i];
        const adm_verdict *v = &row->verdict;
        json_t *o = json_object(), *nums = json_object(), *gates = json_array(), *orc = json_object();
        json_object_set_new(o, "source", jstr(row->source));
        json_object_set_new(o, "op", jstr(row->op));
        json_object_set_new(o, "candidate", jstr(row->candidate));
        json_object_set_new(o, "claim_status", json_string(adm_claim_status_name(adm_report_claim_status(row))));
        json_object_set_new(o, "description", row->description ? jstr(row->description) : json_null());
        {
            json_t *sj = row->static_decl ? json_loads(row->static_decl, 0, NULL) : NULL;
            json_object_set_new(o, "static", sj ? sj : json_null());
        }
        json_object_set_new(o, "reader", row->reader ? jstr(row->reader) : json_null());
        if (row->error) {
            json_t *err = json_object();
            json_object_set_new(o, "verdict", json_string("error"));
            json_object_set_new(o, "claim", row->has_claim ? json_string(adm_tier_name(row->claim)) : json_null());
            json_object_set_new(o, "claim_holds", json_null());
            json_object_set_new(err, "status", json_string(adm_status_name(row->error_status)));
            json_object_set_new(err, "message", jstr(row->error));
            json_object_set_new(o, "error", err);
            json_array_append_new(arr, o);
            json_decref(nums);
            json_decref(gates);
            json_decref(orc);
            continue;
        }
        json_object_set_new(o, "verdict", json_string(adm_tier_name(v->tier)));
        json_object_set_new(o, "claim", row->has_claim ? json_string(adm_tier_name(row->claim)) : json_null());
        json_object_set_new(o, "claim_holds", json_boolean(!adm_report_claim_violated(row)));
        json_object_set_new(orc, "certified", json_boolean(v->oracle_certified));
        json_object_set_new(orc, "bounds", json_string(!v->oracle_certified ? "none"
                                                       : v->oracle_assumption ? "assumed" : "proven"));
        json_object_set_new(orc, "assumption", v->oracle_assumption ? json_string(v->oracle_assumption) : json_null());
        json_object_set_new(orc, "max_bound", num(v->max_bound));
        json_object_set_new(orc, "mpfr_refined", json_integer(row->mpfr_refined));
        json_object_set_new(o, "oracle", orc);
        json_object_set_new(nums, "elements", json_integer(v->n));
        json_object_set_new(nums, "rms_error_reference", num(v->rms_r));
        json_object_set_new(nums, "rms_error_candidate", num(v->rms_c));
        json_object_set_new(nums, "rms_error_rounded", num(v->rms_round));
        json_object_set_new(nums, "rms_ratio", num(v->rms_ratio));
        json_object_set_new(nums, "max_error_reference", num(v->max_r));
        json_object_set_new(nums, "max_error_candidate", num(v->max_c));
        json_object_set_new(nums, "max_ratio", num(v->max_ratio));
        json_object_set_new(nums, "ulp_rms_reference", num(v->ulp_rms_r));
        json_object_set_new(nums, "ulp_rms_candidate", num(v->ulp_rms_c));
        json_object_set_new(nums, "ulp_ratio", num(v->ulp_ratio));
        json_object_set_new(nums, "ulp_max_ratio", num(v->ulp_max_ratio));
        json_object_set_new(nums, "max_ratio_judged", num(v->max_ratio_judged));
        json_object_set_new(nums, "magnitude_limit", num(v->magnitude_limit_n));
        json_object_set_new(nums, "rms_limit", num(v->rms_limit_n));
        json_object_set_new(nums, "ulp_limit", num(v->ulp_limit_n));
        json_object_set_new(nums, "ulp_gated", json_boolean(v->ulp_gated));
        json_object_set_new(nums, "rms_oracle", num(v->out_rms)); /* turns a gain into its error component */
        json_object_set_new(nums, "error_scale", num(v->rms_expected)); /* D: the bias numbers' unit */
        {
            json_t *bias = json_object(), *pw = json_object(), *evj = json_object();
            for (int sc = 0; sc < ADM_BIAS_SCOPES; sc++) {
                json_t *so = json_object();
                for (int k = 0; k < ADM_BIAS_KINDS; k++) {
                    const adm_bias_test *bt = &v->bias[sc][k];
                    json_t *ko = json_object();
                    json_object_set_new(ko, "applicable", json_boolean(bt->applicable));
                    json_object_set_new(ko, "failed", json_boolean(bt->failed));
                    json_object_set_new(ko, "reference", num(bt->ref));
                    json_object_set_new(ko, "candidate", num(bt->cand));
                    json_object_set_new(ko, "difference", num(bt->diff));
                    json_object_set_new(ko, "standard_error", num(bt->se));
                    if (bt->se_ulp > 0) json_object_set_new(ko, "standard_error_ulps", num(bt->se_ulp));
                    json_object_set_new(ko, "reference_credited", num(bt->credited_ref));
                    json_object_set_new(ko, "excess", num(bt->excess));
                    json_object_set_new(ko, "floor", num(bt->floor));
                    json_object_set_new(ko, "t", num(bt->t));
                    json_object_set_new(ko, "dof", num(bt->dof));
                    if (bt->f_quantile > 0) { /* the group statistics' second test (GATES.md, gate 2) */
                        json_object_set_new(ko, "variance_ratio", num(bt->f));
                        json_object_set_new(ko, "variance_ratio_quantile", num(bt->f_quantile));
                        json_object_set_new(ko, "variance_ratio_dof",
                                            json_pack("[o,o]", num(bt->f_dof1), num(bt->f_dof2)));
                    }
                    if (bt->ulps_applicable) { /* the group statistics' tests in ulps (GATES.md, gate 2) */
                        json_t *uo = json_object();
                        json_object_set_new(uo, "difference", num(bt->u_diff));
                        json_object_set_new(uo, "standard_error", num(bt->u_se));
                        json_object_set_new(uo, "t", num(bt->u_t));
                        json_object_set_new(uo, "dof", num(bt->u_dof));
                        json_object_set_new(uo, "variance_ratio", num(bt->u_f));
                        json_object_set_new(uo, "variance_ratio_quantile", num(bt->u_f_quantile));
                        json_object_set_new(uo, "variance_ratio_dof",
                                            json_pack("[o,o]", num(bt->u_f_dof1), num(bt->u_f_dof2)));
                        json_object_set_new(ko, "ulps", uo);
                    }
                    json_object_set_new(ko, "detect", num(bt->detect));
                    json_object_set_new(so, adm_bias_kind_name(k), ko);
                }
                json_object_set_new(bias, adm_bias_scope_name(sc), so);
            }
            json_object_set_new(bias, "unit", json_string("D, the reference path's RMS error floored at the "
                                                          "correctly rounded output's"));
            json_object_set_new(o, "bias", bias);
            json_object_set_new(pw, "lean", num(v->power.lean));
            json_object_set_new(pw, "sign", num(v->power.sign));
            json_object_set_new(pw, "gain", num(v->power.gain));
            json_object_set_new(pw, "gain_relative", num(v->power.gain_relative));
            json_object_set_new(pw, "channel", num(v->power.channel));
            json_object_set_new(pw, "row", num(v->power.row));
            json_object_set_new(pw, "rms_ratio", num(v->power.rms_ratio));
            json_object_set_new(o, "power", pw);
            json_object_set_new(evj, "captures", json_integer((json_int_t)v->ev.captures));
            json_object_set_new(evj, "elements", json_integer((json_int_t)v->ev.n));
            json_object_set_new(evj, "nontrivial", json_integer((json_int_t)v->ev.nontrivial));
            json_object_set_new(evj, "sufficient", json_boolean(v->evidence_ok && v->gate[ADM_GATE_EVIDENCE].passed));
            {
                const adm_power *q = &row->required;
                if (q->lean > 0 || q->sign > 0 || q->gain > 0 || q->channel > 0 || q->row > 0 || q->rms_ratio > 0) {
                    json_t *rq = json_object();
                    if (q->lean > 0) json_object_set_new(rq, "lean", num(q->lean));
                    if (q->sign > 0) json_object_set_new(rq, "sign", num(q->sign));
                    if (q->gain > 0) json_object_set_new(rq, "gain", num(q->gain));
                    if (q->channel > 0) json_object_set_new(rq, "channel", num(q->channel));
                    if (q->row > 0) json_object_set_new(rq, "row", num(q->row));
                    if (q->rms_ratio > 0) json_object_set_new(rq, "rms_ratio", num(q->rms_ratio));
                    json_object_set_new(evj, "required", rq);
                }
            }
            if (row->ncaptures > 0) {
                json_t *caps = json_array();
                for (int k = 0; k < row->ncaptures; k++) {
                    const adm_capture_summary *cs = &row->per_capture[k];
                    json_t *co = json_object();
                    json_object_set_new(co, "index", json_integer(k));
                    json_object_set_new(co, "verdict", json_string(adm_tier_name(cs->tier)));
                    json_object_set_new(co, "elements", json_integer(cs->n));
                    json_object_set_new(co, "rms_ratio", num(cs->rms_ratio));
                    json_object_set_new(co, "max_ratio_judged", num(cs->max_ratio_judged));
                    json_object_set_new(co, "ulp_ratio", num(cs->ulp_ratio));
                    json_object_set_new(co, "lean", num(cs->lean));
                    json_object_set_new(co, "lean_detect", num(cs->lean_detect));
                    json_array_append_new(caps, co);
                }
                json_object_set_new(evj, "per_capture", caps);
            }
            json_object_set_new(o, "evidence", evj);
        }
        json_object_set_new(nums, "flips_reference", json_integer(v->flips_r));
        json_object_set_new(nums, "flips_candidate", json_integer(v->flips_c));
        json_object_set_new(nums, "flip_ties", json_integer(v->ties));
        json_object_set_new(o, "numbers", nums);
        {
            json_t *h = json_object(), *hr = json_array(), *hc = json_array();
            for (int b = 0; b < ADM_HIST_BINS; b++) {
                json_array_append_new(hr, json_integer(v->hist_r[b]));
                json_array_append_new(hc, json_integer(v->hist_c[b]));
            }
            json_object_set_new(h, "range_ulps", json_real(ADM_HIST_RANGE));
            json_object_set_new(h, "reference", hr);
            json_object_set_new(h, "candidate", hc);
            json_object_set_new(o, "ulp_error_histogram", h);
        }
        {
            json_t *h = json_object(), *hr = json_array(), *hc = json_array();
            for (int b = 0; b < ADM_HIST_LOG_BINS; b++) {
                json_array_append_new(hr, json_integer(v->hist_log_r[b]));
                json_array_append_new(hc, json_integer(v->hist_log_c[b]));
            }
            /* bin ADM_HIST_LOG_ZERO: |e| < 2^min_log2_ulps; zero +- k: 2^(min + k - 1) <= |e| < 2^(min + k),
             * signed; the two ends: larger still */
            json_object_set_new(h, "min_log2_ulps", json_integer(ADM_HIST_LOG_MIN));
            json_object_set_new(h, "octaves", json_integer(ADM_HIST_LOG_OCTAVES));
            json_object_set_new(h, "reference", hr);
            json_object_set_new(h, "candidate", hc);
            json_object_set_new(o, "ulp_error_log_histogram", h);
        }
        for (int g = 1; g < ADM_GATE_COUNT; g++) {
            json_t *go = json_object();
            json_object_set_new(go, "gate", json_string(adm_gate_name(g)));
            json_object_set_new(go, "applicable", json_boolean(v->gate[g].applicable));
            json_object_set_new(go, "passed", json_boolean(v->gate[g].passed));
            json_object_set_new(go, "reason", jstr(v->gate[g].reason));
            json_array_append_new(gates, go);
        }
        json_object_set_new(o, "gates", gates);
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "results", arr);
    text = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    if (!text) return ADM_FAIL(ADM_ERR_NOMEM, "JSON report: out of memory");
    *out = text;
    *len = strlen(text);
    return ADM_OK;
}

adm_status adm_report_json(adm_report *r, const char **text)
{
    char *t;
    size_t len;
    *text = NULL;
    ADM_TRY(render_json(r, &t, &len));
    free(r->json);
    r->json = t;
    *text = t;
    return ADM_OK;
}

static adm_status render_junit(const adm_report *r, char **out, size_t *len)
{
    adm_buf b = {0};
    char tmp[256];
    int failures = 0, errors = 0;
    for (int i = 0; i < r->n; i++) {
        failures += adm_report_claim_violated(&r->rows[i]);
        errors += r->rows[i].error != NULL;
    }
    adm_buf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"");
    adm_buf_xml(&b, r->title);
    snprintf(tmp, sizeof tmp, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\">\n", r->n, failures, errors);
    adm_buf_puts(&b, tmp);
    for (int i = 0; i < r->n; i++) {
        const adm_report_row *row = &r->rows[i];
        const adm_verdict *v = &row->verdict;
        adm_buf_puts(&b, "    <testcase classname=\"");
        adm_buf_xml(&b, row->source);
        adm_buf_puts(&b, "\" name=\"");
        adm_buf_xml(&b, row->candidate);
        adm_buf_puts(&b, "\">\n");
        if (row->error) {
            adm_buf_puts(&b, "      <error type=\"");
            adm_buf_xml(&b, adm_status_name(row->error_status));
            adm_buf_puts(&b, "\" message=\"");
            adm_buf_xml(&b, row->error);
            adm_buf_puts(&b, "\"/>\n    </testcase>\n");
            continue;
        }
        {
            char pw[2048];
            adm_report_power_sentence(v, pw, sizeof pw);
            snprintf(tmp, sizeof tmp, "      <system-out>verdict %s; rms %.4gx, max %.4gx, ulp %.4gx; oracle: %s; ",
                     adm_tier_name(v->tier), v->rms_ratio, v->max_ratio_judged, v->ulp_ratio, adm_report_oracle_basis(v));
            adm_buf_puts(&b, tmp);
            adm_buf_xml(&b, pw);
            adm_report_group_sentence(v, 0, pw, sizeof pw);
            if (pw[0]) {
                adm_buf_puts(&b, " ");
                adm_buf_xml(&b, pw);
            }
            adm_buf_puts(&b, "</system-out>\n");
        }
        if (adm_report_claim_violated(row)) {
            snprintf(tmp, sizeof tmp, "      <failure message=\"claimed %s, measured %s\">", adm_tier_name(row->claim),
                     adm_tier_name(v->tier));
            adm_buf_puts(&b, tmp);
            for (int g = 1; g < ADM_GATE_COUNT; g++)
                if (!v->gate[g].passed && g != ADM_GATE_EXACT) {
                    char gs[2048] = "";
                    adm_buf_xml(&b, adm_gate_name(g));
                    adm_buf_puts(&b, ": ");
                    adm_buf_xml(&b, v->gate[g].reason);
                    adm_buf_puts(&b, "\n");
                    /* which of a failed group statistic's two tests decided */
                    if (g == ADM_GATE_BIAS) adm_report_group_sentence(v, 1, gs, sizeof gs);
                    if (gs[0]) {
                        adm_buf_xml(&b, gs);
                        adm_buf_puts(&b, "\n");
                    }
                }
            adm_buf_puts(&b, "</failure>\n");
        }
        adm_buf_puts(&b, "    </testcase>\n");
    }
    adm_buf_puts(&b, "  </testsuite>\n</testsuites>\n");
    if (b.oom) {
        free(b.p);
        return ADM_FAIL(ADM_ERR_NOMEM, "JUnit report: out of memory");
    }
    *out = b.p;
    *len = b.n;
    return ADM_OK;
}

/* ------------------------------------------------------------ writing */

typedef adm_status (*render_fn)(const adm_report *, char **, size_t *);

/* A report staged beside its target: written completely to tmp, renamed
 * at commit. */
typedef struct staged {
    char *path, *tmp;
    int made_dir;            /* the HTML folder was created for it */
    const char *dir;
    int renamed;
} staged;

static adm_status stage(const adm_report *r, render_fn fn, const char *path, staged *sg)
{
    char *text = NULL;
    size_t len = 0;
    int fd;
    FILE *f;
    adm_status st;
    ADM_TRY(fn(r, &text, &len));
    if ((st = adm_temp_beside(path, &sg->tmp, &fd)) != ADM_OK) {
        free(text);
        return st;
    }
    f = fdopen(fd, "wb");
    if (!f || fwrite(text, 1, len, f) != len) st = ADM_FAIL(ADM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (f && fclose(f) != 0 && st == ADM_OK) st = ADM_FAIL(ADM_ERR_IO, "%s: cannot finish writing", path);
    if (!f) close(fd);
    free(text);
    if (st != ADM_OK) {
        unlink(sg->tmp);
        free(sg->tmp);
        sg->tmp = NULL;
        return st;
    }
    if (!(sg->path = adm_strdup(path))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    return ADM_OK;
}

adm_status adm_report_write_all(const adm_report *r, const char *json, const char *junit, const char *html_dir)
{
    staged sg[3];
    char hpath[4200];
    adm_status st = ADM_OK;
    int n = 0;
    memset(sg, 0, sizeof sg);
    if (json) st = stage(r, render_json, json, &sg[n++]);
    if (st == ADM_OK && junit) st = stage(r, render_junit, junit, &sg[n++]);
    if (st == ADM_OK && html_dir) {
        struct stat sb;
        int existed = stat(html_dir, &sb) == 0;
        if (!existed && mkdir(html_dir, 0777) != 0) {
            st = ADM_FAIL(ADM_ERR_IO, "%s: cannot create the report folder: %s", html_dir, strerror(errno));
        } else {
            sg[n].made_dir = !existed;
            sg[n].dir = html_dir;
            snprintf(hpath, sizeof hpath, "%s/index.html", html_dir);
            st = stage(r, adm_report_render_html, hpath, &sg[n++]);
        }
    }
    /* all written: move them into place; a failure takes back the ones
     * already moved, so no report of a failed command is left */
    for (int i = 0; st == ADM_OK && i < n; i++) {
        if (rename(sg[i].tmp, sg[i].path) != 0)
            st = ADM_FAIL(ADM_ERR_IO, "%s: cannot move the report into place: %s", sg[i].path, strerror(errno));
        else
            sg[i].renamed = 1;
    }
    for (int i = 0; i < n; i++) {
        if (st != ADM_OK) {
            if (sg[i].renamed) unlink(sg[i].path);
            else if (sg[i].tmp) unlink(sg[i].tmp);
            if (sg[i].made_dir) rmdir(sg[i].dir);
        }
        free(sg[i].tmp);
        free(sg[i].path);
    }
    return st;
}

adm_status adm_report_write_json(const adm_report *r, const char *path) { return adm_report_write_all(r, path, NULL, NULL); }
adm_status adm_report_write_junit(const adm_report *r, const char *path) { return adm_report_write_all(r, NULL, path, NULL); }
adm_status adm_report_write_html(const adm_report *r, const char *dir) { return adm_report_write_all(r, NULL, NULL, dir); }
