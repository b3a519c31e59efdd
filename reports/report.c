/* The verdict table, JSON and JUnit XML. */
#include "adm_report.h"
#include "adm_capture.h"
#include "adm_fpenv.h"
#include "text_buf.h"
#include "adm_commit.h" /* ADM_GIT_COMMIT, written at build time (cmake/commit_stamp.cmake) */

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ADM_REPORT_MAX_CONTEXT 16

struct adm_report {
    char *ctx_key[ADM_REPORT_MAX_CONTEXT], *ctx_val[ADM_REPORT_MAX_CONTEXT];
    int nctx;
    int strict;
    const char *source_label, *claim_label;
    char *title;
    adm_report_row *rows;
    int n, cap;
    char *json;     /* adm_report_json's text, until the next call */
};

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
static void run_context(const adm_report *r, int *n, const char **keys, const char **vals, char *date, char *host)
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
        st = adm_report_add(r, src, pools[p].op, pools[p].name, &pools[p].acc, pools[p].refined, NULL);
    }
    if (st != ADM_OK) truncate_rows(r, start);
out:
    for (int i = 0; res && i < done; i++) adm_replay_result_free(&res[i]);
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
                 ADM_OK)
            st = adm_report_set_evidence(r, e->per_capture, e->ncaptures, &e->required);
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

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* What the oracle's certificate rests on, in every report format. */
static const char *oracle_basis(const adm_verdict *v)
{
    if (!v->oracle_certified) return "user oracle, uncertified";
    return v->oracle_assumption ? v->oracle_assumption : "proven bounds";
}

/* Prints text from column `indent`, wrapped at word boundaries so that no
 * line passes ADM_REPORT_WIDTH (a word longer than the line stands alone);
 * `lead` is printed first in place of the indent of the first line. */
#define ADM_REPORT_WIDTH 110
static void print_wrapped(FILE *f, const char *lead, int indent, const char *text)
{
    int col = fprintf(f, "%s", lead), bol = 0; /* bol: at the start of a continuation line */
    const char *p = text;
    while (*p == ' ') p++;
    while (*p) {
        const char *w = p;
        int len;
        while (*p && *p != ' ') p++;
        len = (int)(p - w);
        if (!bol && col + 1 + len > ADM_REPORT_WIDTH && col > indent) {
            col = fprintf(f, "\n%*s", indent, "") - 1;
            bol = 1;
        }
        if (!bol) {
            fputc(' ', f);
            col++;
        }
        col += fprintf(f, "%.*s", len, w);
        bol = 0;
        while (*p == ' ') p++;
    }
    fputc('\n', f);
}

/* What the verdict could have missed (issue 16): the smallest lean, gain,
 * per-channel and per-row bias (units of D, the reference error scale) and
 * RMS ratio its evidence would have rejected. */
static void power_sentence(const adm_verdict *v, char *buf, size_t n)
{
    const adm_power *p = &v->power;
    char pooled[48] = "";
    size_t used;
    if (v->n == 0) {
        snprintf(buf, n, "power: none (no element judged)");
        return;
    }
    if (v->ev.captures > 1) snprintf(pooled, sizeof pooled, " in %.0f captures", v->ev.captures);
    used = (size_t)snprintf(buf, n, "power: over %lld elements%s, this evidence rejects a lean of %.2g D, a gain "
                            "of %.2g D (%.2g%%)", (long long)v->n, pooled, p->lean, p->gain, 100 * p->gain_relative);
    if (used < n && p->channel > 0) used += (size_t)snprintf(buf + used, n - used, ", a per-channel bias of %.2g D",
                                                             p->channel);
    if (used < n && p->row > 0) used += (size_t)snprintf(buf + used, n - used, ", a per-row bias of %.2g D", p->row);
    if (used < n)
        used += (size_t)snprintf(buf + used, n - used, " and an RMS ratio of %.3gx; smaller ones could go unseen%s",
                                 p->rms_ratio, p->lean > 0.25 ? ": add captures" : "");
    if (used < n) snprintf(buf + used, n - used, ".");
}

void adm_report_print(const adm_report *r, FILE *f)
{
    fprintf(f, "%s\n", r->title);
    fprintf(f, "%-30s %-22s %-9s %-9s %8s %8s %8s %8s\n", r->source_label ? r->source_label : "capture",
            "candidate", r->claim_label ? r->claim_label : "claim", "verdict", "rms", "max", "ulp", "lean");
    for (int i = 0; i < r->n; i++) {
        const adm_report_row *row = &r->rows[i];
        const adm_verdict *v = &row->verdict;
        int first = 1;
        char src[256], cand[256], note[256], lead[64];
        if (row->error) {
            char msg[32768]; /* the library's longest message, whole (core/status.c) */
            adm_text_escape(src, sizeof src, base(row->source));
            adm_text_escape(cand, sizeof cand, row->candidate);
            adm_text_escape(msg, sizeof msg, row->error);
            fprintf(f, "%-30.30s %-22.22s %-9s %-9s %8s %8s %8s %8s  not measured: %s\n", src, cand,
                    row->has_claim ? adm_tier_name(row->claim) : "-", "error", "-", "-", "-", "-", msg);
            continue;
        }
        adm_text_escape(src, sizeof src, base(row->source));
        adm_text_escape(cand, sizeof cand, row->candidate);
        /* columns cut to their width at a character, never inside an escape
         * or a UTF-8 sequence: the escaped names are ASCII */
        fprintf(f, "%-30.30s %-22.22s %-9s %-9s %7.3gx %7.3gx %7.3gx %8.2g", src, cand,
                row->has_claim ? adm_tier_name(row->claim) : "-", adm_tier_name(v->tier), v->rms_ratio, v->max_ratio_judged,
                v->ulp_ratio, v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN].diff);
        if (adm_report_claim_violated(row))
            fprintf(f, row->verdict.tier > row->claim ? "  << looser than %s (unsafe)" : "  << stricter than %s (promotable)",
                    r->claim_label ? "declared" : "the claim");
        fputc('\n', f);
        for (int g = 1; g < ADM_GATE_COUNT; g++) {
            if (g == ADM_GATE_EXACT && v->tier != ADM_TIER_EXACT) continue;
            if (v->gate[g].passed) continue;
            snprintf(lead, sizeof lead, "    %s:", adm_gate_name(g));
            print_wrapped(f, lead, 6, v->gate[g].reason);
            first = 0;
        }
        snprintf(note, sizeof note, "%s[%s%s]%s", first ? (v->tier == ADM_TIER_EXACT ? "bit-identical " : "all gates of its tier hold ") : "",
                 v->oracle_certified ? "certified, " : "", oracle_basis(v),
                 !v->ulp_gated && v->n > 0 ? " [ulp form at the token/channel scale, not gated: no condition scale]" : "");
        print_wrapped(f, "   ", 6, note);
        {
            char pw[512];
            power_sentence(v, pw, sizeof pw);
            print_wrapped(f, "   ", 6, pw);
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
        run_context(r, &nk, keys, vals, date, host);
        for (int i = 0; i < nk; i++) json_object_set_new(run, keys[i], jstr(vals[i]));
        json_object_set_new(root, "run", run);
    }
    for (int i = 0; i < r->n; i++) {
        const adm_report_row *row = &r->rows[i];
        const adm_verdict *v = &row->verdict;
        json_t *o = json_object(), *nums = json_object(), *gates = json_array(), *orc = json_object();
        json_object_set_new(o, "source", jstr(row->source));
        json_object_set_new(o, "op", jstr(row->op));
        json_object_set_new(o, "candidate", jstr(row->candidate));
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
                    json_object_set_new(ko, "reference_credited", num(bt->credited_ref));
                    json_object_set_new(ko, "excess", num(bt->excess));
                    json_object_set_new(ko, "floor", num(bt->floor));
                    json_object_set_new(ko, "t", num(bt->t));
                    json_object_set_new(ko, "dof", num(bt->dof));
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
            char pw[512];
            power_sentence(v, pw, sizeof pw);
            snprintf(tmp, sizeof tmp, "      <system-out>verdict %s; rms %.4gx, max %.4gx, ulp %.4gx; oracle: %s; ",
                     adm_tier_name(v->tier), v->rms_ratio, v->max_ratio_judged, v->ulp_ratio, oracle_basis(v));
            adm_buf_puts(&b, tmp);
            adm_buf_xml(&b, pw);
            adm_buf_puts(&b, "</system-out>\n");
        }
        if (adm_report_claim_violated(row)) {
            snprintf(tmp, sizeof tmp, "      <failure message=\"claimed %s, measured %s\">", adm_tier_name(row->claim),
                     adm_tier_name(v->tier));
            adm_buf_puts(&b, tmp);
            for (int g = 1; g < ADM_GATE_COUNT; g++)
                if (!v->gate[g].passed && g != ADM_GATE_EXACT) {
                    adm_buf_xml(&b, adm_gate_name(g));
                    adm_buf_puts(&b, ": ");
                    adm_buf_xml(&b, v->gate[g].reason);
                    adm_buf_puts(&b, "\n");
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

/* An inline SVG: the error histograms (in ulps) of the reference path
 * (grey) and the candidate (blue), log-scaled counts. */
static void svg_hist(adm_buf *b, const adm_verdict *v)
{
    char t[256];
    const int W = 340, H = 90, bw = W / ADM_HIST_BINS;
    double top = 1;
    for (int i = 0; i < ADM_HIST_BINS; i++) top = fmax(top, (double)(v->hist_r[i] > v->hist_c[i] ? v->hist_r[i] : v->hist_c[i]));
    snprintf(t, sizeof t, "<svg width=\"%d\" height=\"%d\" role=\"img\"><title>error in ulps, -%g..%g, outside at the ends</title>",
             W, H + 12, ADM_HIST_RANGE, ADM_HIST_RANGE);
    adm_buf_puts(b, t);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < ADM_HIST_BINS; i++) {
            int64_t c = s ? v->hist_c[i] : v->hist_r[i];
            double h = c > 0 ? (double)H * log10(1.0 + (double)c) / log10(1.0 + top) : 0;
            snprintf(t, sizeof t, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\" opacity=\"%s\"/>",
                     i * bw + (s ? bw / 3 : 0), H - h, s ? bw / 2 : bw - 1, h, s ? "#2060c0" : "#999", s ? "0.9" : "0.7");
            adm_buf_puts(b, t);
        }
    snprintf(t, sizeof t, "<text x=\"0\" y=\"%d\" font-size=\"9\">-%g ulp</text><text x=\"%d\" y=\"%d\" "
             "font-size=\"9\">0</text><text x=\"%d\" y=\"%d\" font-size=\"9\">+%g</text></svg>",
             H + 10, ADM_HIST_RANGE, W / 2 - 3, H + 10, W - 22, H + 10, ADM_HIST_RANGE);
    adm_buf_puts(b, t);
}

static void put_num_row(adm_buf *b, const char *what, double ref, double cand)
{
    char t[256];
    snprintf(t, sizeof t, "<tr><th>%s</th><td class=\"num\">%.4g</td><td class=\"num\">%.4g</td></tr>", what, ref, cand);
    adm_buf_puts(b, t);
}

static adm_status render_html(const adm_report *r, char **out, size_t *len)
{
    adm_buf b = {0};
    char tmp[512], date[32], host[256];
    const char *keys[ADM_REPORT_MAX_CONTEXT + 4], *vals[ADM_REPORT_MAX_CONTEXT + 4];
    int nk;
    adm_buf_puts(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    adm_buf_xml(&b, r->title);
    /* fits a laptop's width: the summary holds only short cells, long text
     * (reasons) lives in the per-entry details and wraps anywhere */
    adm_buf_puts(&b, "</title><style>"
              "body{font-family:system-ui,sans-serif;font-size:14px;margin:16px auto;max-width:1280px;padding:0 16px;"
              "color:#222}h1{font-size:22px}h2{font-size:17px;margin:24px 0 6px}"
              "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 7px;vertical-align:top;"
              "text-align:left}.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}"
              "table.sum{width:100%}table.sum td{overflow-wrap:anywhere}dl.run{display:grid;"
              "grid-template-columns:max-content 1fr;gap:2px 12px;margin:0 0 12px}dl.run dt{font-weight:600}"
              "dl.run dd{margin:0;overflow-wrap:anywhere}.exact{background:#d8f0d8}.lossless{background:#e8f4e8}"
              ".high{background:#f8e0d8}.bad{outline:3px solid #c00}section{border-top:1px solid #ccc;margin-top:16px}"
              ".reasons p{margin:4px 0;max-width:110ch;overflow-wrap:anywhere}.detail{display:flex;flex-wrap:wrap;"
              "gap:16px;align-items:flex-start}"
              "</style></head><body>\n<h1>");
    adm_buf_xml(&b, r->title);
    adm_buf_puts(&b, "</h1>\n<dl class=\"run\">");
    run_context(r, &nk, keys, vals, date, host);
    for (int i = 0; i < nk; i++) {
        adm_buf_puts(&b, "<dt>");
        adm_buf_xml(&b, keys[i]);
        adm_buf_puts(&b, "</dt><dd>");
        adm_buf_xml(&b, vals[i]);
        adm_buf_puts(&b, "</dd>");
    }
    adm_buf_puts(&b, "</dl>\n<table class=\"sum\">\n<tr><th>");
    adm_buf_xml(&b, r->source_label ? r->source_label : "capture");
    adm_buf_puts(&b, "</th><th>candidate</th><th>");
    adm_buf_xml(&b, r->claim_label ? r->claim_label : "claim");
    adm_buf_puts(&b, "</th><th>measured</th><th class=\"num\">RMS</th><th class=\"num\">max</th><th class=\"num\">ulp RMS</th>"
              "<th class=\"num\">lean (D)</th><th>failed gates</th></tr>\n");
    for (int i = 0; i < r->n; i++) {
        const adm_report_row *row = &r->rows[i];
        const adm_verdict *v = &row->verdict;
        if (row->error) {
            adm_buf_puts(&b, "<tr class=\"error bad\"><td>");
            adm_buf_xml(&b, row->source);
            adm_buf_puts(&b, "</td><td>");
            adm_buf_xml(&b, row->candidate);
            snprintf(tmp, sizeof tmp, "</td><td>%s</td><td>error</td><td colspan=\"5\">not measured</td><td>",
                     row->has_claim ? adm_tier_name(row->claim) : "-");
            adm_buf_puts(&b, tmp);
            adm_buf_xml(&b, row->error);
            adm_buf_puts(&b, "</td></tr>\n");
            continue;
        }
        int any = 0;
        snprintf(tmp, sizeof tmp, "<tr class=\"%s%s\"><td><a href=\"#e%d\">", adm_tier_name(v->tier),
                 adm_report_claim_violated(row) ? " bad" : "", i + 1);
        adm_buf_puts(&b, tmp);
        adm_buf_xml(&b, base(row->source));
        adm_buf_puts(&b, "</a></td><td>");
        adm_buf_xml(&b, row->candidate);
        snprintf(tmp, sizeof tmp, "</td><td>%s</td><td>%s</td><td class=\"num\">%.3gx</td><td class=\"num\">%.3gx</td>"
                 "<td class=\"num\">%.3gx%s</td><td class=\"num\">%.3g</td><td>",
                 row->has_claim ? adm_tier_name(row->claim) : "-", adm_tier_name(v->tier), v->rms_ratio, v->max_ratio_judged,
                 v->ulp_ratio, v->ulp_gated ? "" : " (not gated)", v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN].diff);
        adm_buf_puts(&b, tmp);
        for (int g = 1; g < ADM_GATE_COUNT; g++)
            if (!v->gate[g].passed && (g != ADM_GATE_EXACT || v->tier == ADM_TIER_EXACT)) {
                adm_buf_puts(&b, any ? ", " : "");
                adm_buf_xml(&b, adm_gate_name(g));
                any = 1;
            }
        if (!any) adm_buf_puts(&b, v->tier == ADM_TIER_EXACT ? "none: bit-identical" : "none");
        if (adm_report_claim_violated(row))
            adm_buf_puts(&b, row->verdict.tier > row->claim ? " <b>(unsafe)</b>" : " <b>(promotable)</b>");
        adm_buf_puts(&b, "</td></tr>\n");
    }
    adm_buf_puts(&b, "</table>\n");
    for (int i = 0; i < r->n; i++) {
        const adm_report_row *row = &r->rows[i];
        const adm_verdict *v = &row->verdict;
        if (row->error) continue; /* no verdict to detail: its row says why */
        snprintf(tmp, sizeof tmp, "<section id=\"e%d\"><h2>", i + 1);
        adm_buf_puts(&b, tmp);
        adm_buf_xml(&b, base(row->source));
        adm_buf_puts(&b, " &middot; ");
        adm_buf_xml(&b, row->candidate);
        snprintf(tmp, sizeof tmp, ": <span class=\"%s\">%s</span>%s</h2>\n<p>", adm_tier_name(v->tier),
                 adm_tier_name(v->tier), row->has_claim ? "" : "");
        adm_buf_puts(&b, tmp);
        adm_buf_xml(&b, row->source);
        adm_buf_puts(&b, " &middot; op ");
        adm_buf_xml(&b, row->op);
        adm_buf_puts(&b, " &middot; oracle: ");
        adm_buf_xml(&b, oracle_basis(v));
        snprintf(tmp, sizeof tmp, " &middot; %lld elements compared &middot; %lld refined with MPFR</p>\n"
                 "<div class=\"detail\"><table><tr><th></th><th>reference path</th><th>candidate</th></tr>",
                 (long long)v->n, (long long)row->mpfr_refined);
        adm_buf_puts(&b, tmp);
        put_num_row(&b, "RMS error", v->rms_r, v->rms_c);
        put_num_row(&b, "max error", v->max_r, v->max_c);
        put_num_row(&b, "RMS error (ulps)", v->ulp_rms_r, v->ulp_rms_c);
        {
            static const char *lab[ADM_BIAS_SCOPES][ADM_BIAS_KINDS] = {
                {"mean error (D)", "mean along sign(o) (D)", "gain (D)"},
                {"per-channel mean (D)", "per-channel sign (D)", "per-channel gain (D)"},
                {"per-row mean (D)", "per-row sign (D)", "per-row gain (D)"}};
            for (int sc = 0; sc < ADM_BIAS_SCOPES; sc++)
                for (int k = 0; k < ADM_BIAS_KINDS; k++)
                    if (v->bias[sc][k].applicable) put_num_row(&b, lab[sc][k], v->bias[sc][k].ref, v->bias[sc][k].cand);
        }
        adm_buf_puts(&b, "</table><figure style=\"margin:0\">");
        svg_hist(&b, v);
        adm_buf_puts(&b, "<figcaption>error in ulps: reference path grey, candidate blue</figcaption></figure></div>\n"
                  "<div class=\"reasons\">");
        for (int g = 1; g < ADM_GATE_COUNT; g++) {
            if (v->gate[g].passed && v->gate[g].applicable) continue;
            if (g == ADM_GATE_EXACT && v->tier != ADM_TIER_EXACT) continue;
            adm_buf_puts(&b, "<p><b>");
            adm_buf_xml(&b, adm_gate_name(g));
            adm_buf_puts(&b, v->gate[g].passed ? "</b> (not applicable): " : "</b>: ");
            adm_buf_xml(&b, v->gate[g].reason);
            adm_buf_puts(&b, "</p>");
        }
        {
            char pw[512];
            power_sentence(v, pw, sizeof pw);
            adm_buf_puts(&b, "<p class=\"power\">");
            adm_buf_xml(&b, pw);
            adm_buf_puts(&b, "</p>");
        }
        adm_buf_puts(&b, "</div><p><a href=\"#\">back to the summary</a></p></section>\n");
    }
    adm_buf_puts(&b, "<p>Gates and thresholds: harness/GATES.md. Generated by admit " ADM_VERSION_STRING ".</p>\n"
              "</body></html>\n");
    if (b.oom) {
        free(b.p);
        return ADM_FAIL(ADM_ERR_NOMEM, "HTML report: out of memory");
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
            st = stage(r, render_html, hpath, &sg[n++]);
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
