/* The fusion table (fusions/dit.json) and the measuring behind it: a
 * reference and a candidate judged on captures with adm_harness_run, and a
 * runtime's table read, checked against its schema (errors name the file,
 * line, column and field) and every entry measured. The library's, so a
 * runtime can call it; admit-kernel table is a thin wrapper. */
#include "adm_capture.h"
#include "adm_harness.h"
#include "harness_internal.h"
#include "adm_oracle.h"
#include "adm_fpenv.h"
#include "adm_trace.h"
#include "plugin_sandbox.h"

#include <jansson.h>
#include <math.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ measuring */

void adm_capture_summary_of(const adm_verdict *v, adm_capture_summary *s)
{
    s->tier = v->tier;
    s->n = v->n;
    s->rms_ratio = v->rms_ratio;
    s->max_ratio_judged = v->max_ratio_judged;
    s->ulp_ratio = v->ulp_ratio;
    s->lean = v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN].diff;
    s->lean_detect = v->power.lean;
}

void adm_measure_result_free(adm_measure_result *r)
{
    if (!r) return;
    free(r->per_capture);
    r->per_capture = NULL;
    r->ncaptures = 0;
}

/* One capture measured: its own verdict in *rr, or the failure (the last
 * error) with *field the input at fault and *in_run set where it failed
 * while the implementations ran or a plugin could not be loaded. */
static adm_status measure_one(const char *capture, const char *want_op, const char *params_override,
                              const char *ref_spec, const char *cand_spec, const adm_reader *reader,
                              const adm_oracle_config *ocfg, adm_plan *plan, adm_run_result *rr, const char **field,
                              int *in_run)
{
    adm_capture *cap = NULL;
    const adm_op *op;
    adm_op_params p;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
    const adm_impl *ref = NULL, *cand = NULL;
    adm_status st;
    double t0 = adm_h_now(), read_s = 0, tt = adm_trace_ms();
    *field = "captures";
    *in_run = 0;
    if ((st = adm_capture_read_sandboxed_plan(capture, NULL, adm_plan_check, plan, &cap)) != ADM_OK ||
        (st = adm_capture_validate(cap)) != ADM_OK)
        goto done;
    read_s = adm_h_now() - t0;
    adm_trace_part("run.read", tt, -1);
    op = adm_op_find(adm_capture_op(cap));
    if (want_op && strcmp(want_op, adm_capture_op(cap)) != 0) {
        st = ADM_FAIL(ADM_ERR_INVALID, "%s: the capture's op is '%s', the entry's '%s'", capture, adm_capture_op(cap),
                      want_op);
        goto done;
    }
    if (!op) {
        st = ADM_FAIL(ADM_ERR_UNSUPPORTED, "%s: op '%s' is not in the catalog: run needs the oracle", capture,
                      adm_capture_op(cap));
        goto done;
    }
    if (params_override) *field = "params";
    if ((st = adm_op_params_parse(op, params_override ? params_override : adm_capture_params(cap), &p)) != ADM_OK)
        goto done;
    for (int i = 0; i < adm_op_input_count(op); i++) in[i] = adm_capture_find_input(cap, adm_op_input_name(op, i));
    /* the parameters against this capture's inputs (R1: an override the
     * capture's inputs cannot satisfy) */
    if ((st = adm_harness_check_inputs(op, &p, in)) != ADM_OK) {
        adm_error_prefix("%s: ", capture);
        goto done;
    }
    /* a plugin that cannot be loaded or queried fails this measurement
     * alone (in_run), like one whose kernel crashes */
    *field = "reference";
    if ((st = adm_impl_resolve(adm_op_name(op), ref_spec, &ref)) != ADM_OK) {
        *in_run = adm_impl_spec_is_plugin(ref_spec);
        goto done;
    }
    *field = "candidate";
    if ((st = adm_impl_resolve(adm_op_name(op), cand_spec, &cand)) != ADM_OK) {
        *in_run = adm_impl_spec_is_plugin(cand_spec);
        goto done;
    }
    *field = "captures";
    *in_run = 1;
    st = adm_harness_run_on(op, &p, in, ref, cand, reader, NULL, ocfg, rr);
    rr->seconds[0] = read_s;
    if (st == ADM_OK) *in_run = 0;
    else adm_error_prefix("%s: ", capture);
done:
    adm_plugin_free(ref);
    adm_plugin_free(cand);
    adm_capture_free(cap);
    return st;
}

/* What each capture will cost, judged before its data is read. */
static adm_status measure_plan(const char *ref_spec, const char *cand_spec, const char *params_override, adm_plan *plan)
{
    ADM_TRY(adm_plan_init(plan, ADM_PLAN_RUN));
    plan->params = params_override;
    if ((strchr(ref_spec, ':') && strstr(ref_spec, ".so")) || (strchr(cand_spec, ':') && strstr(cand_spec, ".so")))
        plan->impl_out_bytes = 8; /* a plugin may output fp64 */
    return ADM_OK;
}

ADM_FPENV_BODY
static adm_status harness_measure_body(const char *source, const char *want_op, const char *const *captures, int ncap,
                                       const char *params_override, const char *ref_spec, const char *cand_spec,
                                       const adm_reader *reader, const adm_oracle_config *ocfg,
                                       adm_measure_result *out)
{
    int64_t refined = 0;
    adm_plan plan;
    memset(out, 0, sizeof *out);
    /* the sandboxes' limits and the MPFR budget: refused when invalid */
    ADM_TRY(adm_env_check());
    if (ncap > 0 && !(out->per_capture = calloc((size_t)ncap, sizeof *out->per_capture)))
        return ADM_FAIL(ADM_ERR_NOMEM, "%s: out of memory for %d captures", source, ncap);
    ADM_TRY(measure_plan(ref_spec, cand_spec, params_override, &plan));
    for (int k = 0; k < ncap; k++) {
        adm_run_result rr;
        adm_status st;
        out->capture = k;
        if ((st = measure_one(captures[k], want_op, params_override, ref_spec, cand_spec, reader, ocfg, &plan, &rr,
                              &out->field, &out->in_run)) != ADM_OK)
            return st;
        {
            /* the capture's own verdict stays as a row; the entry is judged
             * on the evidence of all of them */
            char label[64];
            snprintf(label, sizeof label, "capture %d", k);
            adm_capture_summary_of(&rr.verdict, &out->per_capture[k]);
            adm_verdict_pool_add(&out->verdict, &rr.verdict, ncap > 1 ? label : NULL);
        }
        refined += rr.mpfr_refined;
        out->stats_device += rr.stats_device;
        for (int ph = 0; ph < ADM_RUN_PHASES; ph++) out->seconds[ph] += rr.seconds[ph];
        out->ncaptures = k + 1;
    }
    out->field = NULL;
    if (out->ncaptures == 0) return ADM_FAIL(ADM_ERR_INVALID, "%s: no captures to measure on", source);
    adm_verdict_pool_finish(&out->verdict, NULL);
    out->mpfr_refined = refined;
    return ADM_OK;
}

void adm_unit_result_free(adm_unit_result *r)
{
    if (!r) return;
    free(r->error);
    r->error = NULL;
}

/* The failure of a unit: the last error's message and code, as the table's
 * error row keeps them. */
static adm_status unit_failed(adm_unit_result *out, const char *field, int in_run)
{
    adm_status code = adm_error_code();
    out->status = code == ADM_OK ? ADM_ERR_INTERNAL : code;
    out->field = field;
    out->in_run = in_run;
    if (!(out->error = adm_strdup(adm_error_message()))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    return out->status;
}

ADM_FPENV_BODY
static adm_status measure_unit_body(const adm_measure_unit *u, adm_unit_result *out)
{
    adm_plan plan;
    adm_run_result rr;
    const char *field = NULL;
    int in_run = 0;
    memset(out, 0, sizeof *out);
    if (adm_env_check() != ADM_OK || measure_plan(u->ref_spec, u->cand_spec, u->params, &plan) != ADM_OK)
        return unit_failed(out, NULL, 0);
    if (measure_one(u->capture, u->op, u->params, u->ref_spec, u->cand_spec, &u->reader, NULL, &plan, &rr, &field,
                    &in_run) != ADM_OK)
        return unit_failed(out, field, in_run);
    out->verdict = rr.verdict;
    out->mpfr_refined = rr.mpfr_refined;
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_harness_measure_unit(const adm_measure_unit *u, adm_unit_result *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = measure_unit_body(u, out);
    adm_fpenv_leave(&fe);
    return rv;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_harness_measure(const char *source, const char *want_op, const char *const *captures, int ncap,
                               const char *params_override, const char *ref_spec, const char *cand_spec,
                               const adm_reader *reader, adm_measure_result *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = harness_measure_body(source, want_op, captures, ncap, params_override, ref_spec, cand_spec, reader, NULL,
                              out);
    adm_fpenv_leave(&fe);
    return rv;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_harness_measure_on(const char *source, const char *want_op, const char *const *captures, int ncap,
                                  const char *params_override, const char *ref_spec, const char *cand_spec,
                                  const adm_reader *reader, const adm_oracle_config *ocfg, adm_measure_result *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = harness_measure_body(source, want_op, captures, ncap, params_override, ref_spec, cand_spec, reader, ocfg,
                              out);
    adm_fpenv_leave(&fe);
    return rv;
}


/* ------------------------------------------------------------ the table's schema */

/* Where things sit in the JSON text, for messages (jansson keeps no
 * positions). One scan finds where each entry of "fusions" opens; a field
 * is then looked for inside its entry only, so that the messages of n
 * entries cost the text's length once, not n times (a table of 100k
 * entries whose captures cannot be read). */
typedef struct text_pos {
    size_t off;
    int line, col;
} text_pos;

typedef struct table_text {
    const char *text;
    text_pos *entry; /* where entry i's '{' is; off SIZE_MAX: not found */
    size_t n;        /* json_array_size of "fusions" */
    int indexed;
} table_text;

/* The offset just past the string that opens at text[i] ('"'). */
static size_t skip_string(const char *text, size_t i)
{
    for (i++; text[i]; i++) {
        if (text[i] == '\\' && text[i + 1]) i++;
        else if (text[i] == '"') return i + 1;
    }
    return i;
}

/* 1 when the string that opens at text[i] is an object's key (a ':'
 * follows it) spelled key (klen bytes, no escapes). */
static int is_key(const char *text, size_t i, const char *key, size_t klen)
{
    size_t e = skip_string(text, i);
    if (e != i + klen + 2 || strncmp(text + i + 1, key, klen) != 0) return 0;
    while (text[e] == ' ' || text[e] == '\t' || text[e] == '\n' || text[e] == '\r') e++;
    return text[e] == ':';
}

static void advance(const char *text, size_t from, size_t to, int *line, int *col)
{
    for (size_t i = from; i < to; i++) {
        if (text[i] == '\n') { (*line)++; *col = 1; }
        else (*col)++;
    }
}

/* The scan of the whole text, once: where each entry of the top-level
 * "fusions" array opens. On allocation failure positions read 1:1. */
static void index_entries(table_text *t)
{
    const char *text = t->text;
    int depth = 0, line = 1, col = 1, in_fusions = 0, after_key = 0;
    size_t seen = 0, last = 0;
    t->indexed = 1;
    if (!t->n || !(t->entry = malloc(t->n * sizeof *t->entry))) return;
    for (size_t k = 0; k < t->n; k++) t->entry[k].off = SIZE_MAX;
    for (size_t i = 0; text[i];) {
        char ch = text[i];
        if (ch == '"') {
            after_key = depth == 1 && is_key(text, i, "fusions", 7);
            i = skip_string(text, i);
            continue;
        }
        if (ch == '{' || ch == '[') {
            depth++;
            if (ch == '[' && depth == 2 && after_key) in_fusions = 1;
            if (ch == '{' && depth == 3 && in_fusions && seen < t->n) {
                advance(text, last, i, &line, &col);
                last = i;
                t->entry[seen].off = i;
                t->entry[seen].line = line;
                t->entry[seen].col = col;
                seen++;
            }
        } else if (ch == '}' || ch == ']') {
            if (depth == 2 && in_fusions) in_fusions = 0;
            depth--;
        }
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r' && ch != ':') after_key = 0;
        i++;
    }
}

/* Line and column of entry i's key `field` (up to an index: "captures[2]"
 * is "captures"), or of the entry itself; 1:1 when not found. */
static void locate(table_text *t, int entry, const char *field, int *line, int *col)
{
    const char *text = t->text;
    size_t flen = field ? strcspn(field, "[") : 0, i;
    int depth = 3, l, c;
    *line = *col = 1;
    if (!t->indexed) index_entries(t);
    if (!t->entry || entry < 0 || (size_t)entry >= t->n || t->entry[entry].off == SIZE_MAX) return;
    *line = l = t->entry[entry].line;
    *col = c = t->entry[entry].col;
    if (!field) return;
    i = t->entry[entry].off + 1;
    advance(text, i - 1, i, &l, &c);
    for (; text[i] && depth >= 3;) {
        size_t from = i;
        if (text[i] == '"') {
            if (depth == 3 && is_key(text, i, field, flen)) {
                *line = l;
                *col = c;
                return;
            }
            i = skip_string(text, i);
        } else {
            if (text[i] == '{' || text[i] == '[') depth++;
            else if (text[i] == '}' || text[i] == ']') depth--;
            i++;
        }
        advance(text, from, i, &l, &c);
    }
}

static adm_status schema_error(const char *file, table_text *t, int entry, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static adm_status schema_error(const char *file, table_text *t, int entry, const char *field, const char *fmt, ...)
{
    char *msg = NULL;
    int line, col, n;
    va_list ap;
    adm_status st;
    /* the message may hold another error's message and a path: its whole
     * length, so that the field and the reason are never cut */
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0 && (msg = malloc((size_t)n + 1))) {
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    locate(t, entry, field, &line, &col);
    st = ADM_FAIL(ADM_ERR_JSON, "%s:%d:%d: fusions[%d]%s%s: %s", file, line, col, entry, field ? "." : "",
                  field ? field : "", msg ? msg : "out of memory");
    free(msg);
    return st;
}

static const char *str_field(json_t *e, const char *k) { return json_string_value(json_object_get(e, k)); }

/* An entry's "static" declarations must be the candidate implementation's
 * own: a table cannot declare a precision its kernel does not have. */
static adm_status check_static(const char *file, table_text *t, int i, json_t *st, const adm_impl *im, const char *cand)
{
    const char *k;
    json_t *v;
    if (!st) return ADM_OK;
    if (!json_is_object(st)) return schema_error(file, t, i, "static", "must be an object");
    json_object_foreach(st, k, v) {
        if (!strcmp(k, "accumulator") || !strcmp(k, "operand") || !strcmp(k, "intermediate")) {
            adm_dtype want = !strcmp(k, "accumulator") ? im->decl.accumulator
                             : !strcmp(k, "operand")   ? im->decl.operand : im->decl.intermediate, got;
            if (!json_is_string(v) || adm_dtype_from_name(json_string_value(v), &got) != ADM_OK)
                return schema_error(file, t, i, "static", "'%s' must be a dtype name", k);
            if (got != want)
                return schema_error(file, t, i, "static", "declares %s %s, but implementation '%s' is %s", k,
                                    adm_dtype_name(got), cand, adm_dtype_name(want));
        } else if (!strcmp(k, "transcendental_ulps")) {
            if (!json_is_number(v) || json_number_value(v) != im->decl.transcendental_ulps)
                return schema_error(file, t, i, "static", "declares transcendental_ulps %g, but implementation '%s' "
                                    "is %g", json_number_value(v), cand, im->decl.transcendental_ulps);
        } else if (!strcmp(k, "stable")) {
            if (!json_is_boolean(v) || json_is_true(v) != (im->decl.stable == 1))
                return schema_error(file, t, i, "static", "declares stable %s, but implementation '%s' %s",
                                    json_is_true(v) ? "true" : "false", cand, im->decl.stable == 1 ? "is" : "is not");
        } else {
            return schema_error(file, t, i, "static", "unknown key '%s' (accumulator, operand, intermediate, "
                                "transcendental_ulps, stable)", k);
        }
    }
    return ADM_OK;
}

/* An entry whose candidate is its reference (the same spelling, or two
 * names of one function) would compare a function with itself: it
 * measures exact by construction and tells the runtime nothing. */
static adm_status check_distinct(const char *file, table_text *t, int i, const char *ref, const adm_impl *r,
                                 const char *cand, const adm_impl *c)
{
    int same = !strcmp(ref, cand) || (strcmp(r->backend, "plugin") && strcmp(c->backend, "plugin") && r->run == c->run);
    if (same)
        return schema_error(file, t, i, "candidate", "'%s' is the reference '%s' itself: the entry would compare "
                            "a function with itself", cand, ref);
    return ADM_OK;
}

/* ------------------------------------------------------------ the fusion table */

/* The format's version this reader knows (fusions/FORMAT.md). */
#define TABLE_VERSION 1

void adm_table_result_free(adm_table_result *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        free(r->entries[i].name);
        free(r->entries[i].op);
        free(r->entries[i].candidate);
        free(r->entries[i].error);
        free(r->entries[i].per_capture);
        free(r->entries[i].description);
        free(r->entries[i].static_decl);
        free(r->entries[i].reader);
    }
    free(r->entries);
    memset(r, 0, sizeof *r);
}

/* An entry once it has passed the schema: what measuring it needs. The
 * strings point into the parsed JSON, except the resolved paths. */
typedef struct plan {
    const char *name, *op, *ref, *cand;
    const char *description, *reader_text; /* for the reports; NULL: not given */
    char *static_text;           /* "static", compact JSON; NULL: not given */
    char *ref_spec, *cand_spec;  /* a plugin's path resolved from the table's folder */
    char *ptext;                 /* "params", compact JSON; NULL: the captures' own */
    char **cpaths;               /* ncap of them */
    int ncap;
    adm_tier declared;
    adm_reader reader;
    adm_power required;          /* "detect": the power the claim needs; 0: none */
    /* a plugin that could not be loaded or queried: not a schema error but
     * this entry's failure, its message kept for the entry's error row */
    char *load_error;
    adm_status load_status;
} plan;

static void plan_free(plan *p)
{
    free(p->ref_spec);
    free(p->cand_spec);
    free(p->ptext);
    free(p->static_text);
    for (int k = 0; k < p->ncap; k++) free(p->cpaths[k]);
    free(p->cpaths);
    free(p->load_error);
}

/* dir/rel, or rel itself when it is absolute; NULL when the result is
 * longer than a path can be (PATH_MAX) or memory runs out (*too_long
 * says which). */
static char *join_path(const char *dir, const char *rel, size_t *len)
{
    int abs = rel[0] == '/';
    size_t n = (abs ? 0 : strlen(dir) + 1) + strlen(rel);
    char *out;
    *len = n;
    if (n >= PATH_MAX || !(out = malloc(n + 1))) return NULL;
    snprintf(out, n + 1, "%s%s%s", abs ? "" : dir, abs ? "" : "/", rel);
    return out;
}

/* A "reference" or "candidate" that names a plugin (path.so:name, as
 * adm_impl_resolve tells them) resolves its path from the table's folder,
 * as captures do; a registered name stays as it is. */
static adm_status resolve_spec(const char *file, table_text *t, int i, const char *field, const char *dir,
                               const char *spec, char **out)
{
    const char *colon = strrchr(spec, ':');
    size_t len;
    *out = NULL;
    if (!(colon && strstr(spec, ".so")) || spec[0] == '/') {
        if (!(*out = adm_strdup(spec))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        return ADM_OK;
    }
    if (!(*out = join_path(dir, spec, &len))) {
        if (len >= PATH_MAX)
            return schema_error(file, t, i, field, "the plugin's path, from the table's folder, is %zu bytes: longer "
                                "than a path can be (PATH_MAX %d)", len, PATH_MAX);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    return ADM_OK;
}

/* "detect": the power an entry's claim requires, {"lean": 0.2, ...}: each
 * the largest lean of that kind (units of D; "rms_ratio": a ratio above 1)
 * its captures must be able to reject (harness/GATES.md, gate 2). */
static adm_status parse_detect(const char *file, table_text *t, int i, json_t *d, adm_power *out)
{
    static const char *const keys[] = {"lean", "sign", "gain", "channel", "row", "rms_ratio"};
    double *dst[] = {&out->lean, &out->sign, &out->gain, &out->channel, &out->row, &out->rms_ratio};
    const char *k;
    json_t *v;
    memset(out, 0, sizeof *out);
    if (!d) return ADM_OK;
    if (!json_is_object(d)) return schema_error(file, t, i, "detect", "must be an object such as {\"lean\": 0.2}");
    json_object_foreach(d, k, v) {
        size_t j = 0;
        double x;
        while (j < sizeof keys / sizeof keys[0] && strcmp(k, keys[j])) j++;
        if (j == sizeof keys / sizeof keys[0])
            return schema_error(file, t, i, "detect", "unknown key '%s' (lean, sign, gain, channel, row, rms_ratio)", k);
        x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(x > 0) || !isfinite(x) || (j == 5 && !(x > 1)))
            return schema_error(file, t, i, "detect", "'%s' must be a positive number%s", k,
                                j == 5 ? " above 1 (an RMS ratio)" : " (a lean in units of D)");
        *dst[j] = x;
    }
    return ADM_OK;
}

/* Entry i against the schema; *p holds what measuring it needs. Resolves
 * (loads) the reference and the candidate, so that an unknown name or a
 * plugin that cannot load is a schema error, found before anything is
 * measured. */
static adm_status check_entry(const char *file, table_text *t, const char *dir, int i, json_t *e, plan *p)
{
    json_t *caps, *params;
    const char *decl_s, *reader_s;
    const adm_op *op;
    const adm_impl *r = NULL, *c = NULL;
    adm_status st;
    memset(p, 0, sizeof *p);
    if (!json_is_object(e)) return schema_error(file, t, i, NULL, "must be an object");
    {
        /* a misspelt optional key ("param") would silently not apply */
        static const char *const known[] = {"name", "description", "op", "reference", "candidate", "declared",
                                            "captures", "params", "reader", "static", "sites", "detect"};
        const char *k;
        json_t *v;
        json_object_foreach(e, k, v) {
            size_t j = 0;
            while (j < sizeof known / sizeof known[0] && strcmp(k, known[j])) j++;
            if (j == sizeof known / sizeof known[0])
                return schema_error(file, t, i, k, "not a key of an entry (name, description, op, reference, "
                                    "candidate, declared, captures, params, reader, static, sites, detect; fusions/FORMAT.md)");
        }
    }
    p->name = str_field(e, "name");
    p->op = str_field(e, "op");
    p->ref = str_field(e, "reference");
    p->cand = str_field(e, "candidate");
    decl_s = str_field(e, "declared");
    reader_s = str_field(e, "reader");
    p->reader_text = reader_s;
    p->description = str_field(e, "description");
    caps = json_object_get(e, "captures");
    params = json_object_get(e, "params");
    {
        static const char *req[] = {"name", "op", "reference", "candidate", "declared"};
        const char *vals[] = {p->name, p->op, p->ref, p->cand, decl_s};
        for (int k = 0; k < 5; k++)
            if (!vals[k]) return schema_error(file, t, i, req[k], "required, a string");
    }
    if (adm_name_check("entry name", p->name) != ADM_OK)
        return schema_error(file, t, i, "name", "%s", adm_error_message());
    if (!(op = adm_op_find(p->op))) return schema_error(file, t, i, "op", "'%s' is not in the catalog", p->op);
    if (adm_tier_from_name(decl_s, &p->declared) != ADM_OK)
        return schema_error(file, t, i, "declared", "'%s' is not exact, lossless or high", decl_s);
    if (json_object_get(e, "reader") && !reader_s) return schema_error(file, t, i, "reader", "must be a string");
    if (adm_reader_parse(reader_s, &p->reader) != ADM_OK)
        return schema_error(file, t, i, "reader", "%s", adm_error_message());
    if (!json_is_array(caps) || json_array_size(caps) == 0 || json_array_size(caps) > ADM_TABLE_MAX_CAPTURES)
        return schema_error(file, t, i, "captures", "must be an array of 1 to %d paths", ADM_TABLE_MAX_CAPTURES);
    if (!(p->cpaths = calloc(json_array_size(caps), sizeof *p->cpaths))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    ADM_TRY(parse_detect(file, t, i, json_object_get(e, "detect"), &p->required));
    if (params && !json_is_object(params)) return schema_error(file, t, i, "params", "must be an object");
    for (size_t k = 0; k < json_array_size(caps); k++) {
        const char *cp = json_string_value(json_array_get(caps, k));
        char label[32];
        size_t len;
        snprintf(label, sizeof label, "captures[%zu]", k);
        if (!cp || !*cp) return schema_error(file, t, i, label, "must be a path (a non-empty string)");
        if (!(p->cpaths[k] = join_path(dir, cp, &len))) {
            if (len >= PATH_MAX)
                return schema_error(file, t, i, label, "the path, from the table's folder, is %zu bytes: longer "
                                    "than a path can be (PATH_MAX %d)", len, PATH_MAX);
            return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        }
        p->ncap++;
    }
    if (params) {
        adm_op_params pp;
        if (!(p->ptext = json_dumps(params, JSON_COMPACT))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        if (adm_op_params_parse(op, p->ptext, &pp) != ADM_OK)
            return schema_error(file, t, i, "params", "%s", adm_error_message());
    }
    ADM_TRY(resolve_spec(file, t, i, "reference", dir, p->ref, &p->ref_spec));
    ADM_TRY(resolve_spec(file, t, i, "candidate", dir, p->cand, &p->cand_spec));
    /* An unknown registered name is a schema error; a plugin that cannot
     * be loaded or queried (a missing .so, a query that crashes) fails its
     * own entry, whose row says why, and the others are measured. */
    for (int which = 0; which < 2 && !p->load_error; which++) {
        const char *spec = which ? p->cand_spec : p->ref_spec, *field = which ? "candidate" : "reference";
        if (adm_impl_resolve(p->op, spec, which ? &c : &r) == ADM_OK) continue;
        if (!adm_impl_spec_is_plugin(spec)) {
            st = schema_error(file, t, i, field, "entry '%s': %s", p->name, adm_error_message());
            adm_plugin_free(r);
            return st;
        }
        p->load_status = adm_error_code() == ADM_OK ? ADM_ERR_INTERNAL : adm_error_code();
        schema_error(file, t, i, field, "entry '%s': %s", p->name, adm_error_message());
        if (!(p->load_error = adm_strdup(adm_error_message()))) {
            adm_plugin_free(r);
            return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        }
        adm_error_clear();
    }
    st = ADM_OK;
    if (!p->load_error) st = check_static(file, t, i, json_object_get(e, "static"), c, p->cand);
    if (st == ADM_OK && json_object_get(e, "static") &&
        !(p->static_text = json_dumps(json_object_get(e, "static"), JSON_COMPACT | JSON_PRESERVE_ORDER)))
        st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    if (st == ADM_OK && !p->load_error) st = check_distinct(file, t, i, p->ref, r, p->cand, c);
    adm_plugin_free(r);
    adm_plugin_free(c);
    return st;
}

/* Entry i's row before its captures are measured: its names and claim,
 * or the error of a plugin that could not be loaded (the entry then has
 * no units). */
static adm_status entry_begin(const plan *p, adm_table_entry *te)
{
    memset(te, 0, sizeof *te);
    te->name = adm_strdup(p->name);
    te->op = adm_strdup(p->op);
    te->candidate = adm_strdup(p->cand);
    te->declared = p->declared;
    if (p->load_error) {
        te->error = adm_strdup(p->load_error);
        te->error_status = p->load_status;
    } else {
        te->required = p->required;
        te->per_capture = calloc((size_t)p->ncap, sizeof *te->per_capture);
    }
    if (p->description) te->description = adm_strdup(p->description);
    if (p->static_text) te->static_decl = adm_strdup(p->static_text);
    if (p->reader_text) te->reader = adm_strdup(p->reader_text);
    if (!te->name || !te->op || !te->candidate || (p->load_error ? !te->error : !te->per_capture) ||
        (p->description && !te->description) || (p->static_text && !te->static_decl) ||
        (p->reader_text && !te->reader)) {
        free(te->description);
        free(te->static_decl);
        free(te->reader);
        free(te->name);
        free(te->op);
        free(te->candidate);
        free(te->error);
        free(te->per_capture);
        memset(te, 0, sizeof *te);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    return ADM_OK;
}

/* Capture k's result into entry i (k = 0, 1, ... in order, as one
 * process measures them): its verdict pooled, or the entry's error row
 * naming the file, line, column and field. Whatever fails here (a capture
 * that cannot be read, parameters its inputs cannot satisfy, a plugin that
 * crashes) fails this entry only. */
static adm_status entry_add(const char *file, table_text *t, int i, const plan *p, int k, const adm_unit_result *r,
                            adm_table_entry *te)
{
    if (te->error) return ADM_OK;
    if (r->status != ADM_OK) {
        char label[32];
        if (r->field && !strcmp(r->field, "captures")) snprintf(label, sizeof label, "captures[%d]", k);
        else snprintf(label, sizeof label, "%s", r->field ? r->field : "");
        schema_error(file, t, i, r->field ? label : NULL, "entry '%s': %s", p->name,
                     r->error ? r->error : adm_strerror(r->status));
        free(te->per_capture);
        te->per_capture = NULL;
        te->ncaptures = 0;
        memset(&te->verdict, 0, sizeof te->verdict);
        te->mpfr_refined = 0;
        te->required = (adm_power){0};
        if (!(te->error = adm_strdup(adm_error_message()))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        te->error_status = r->status;
        return ADM_OK;
    }
    {
        /* the capture's own verdict stays as a row; the entry is judged on
         * the evidence of all of them */
        char label[64];
        snprintf(label, sizeof label, "capture %d", k);
        adm_capture_summary_of(&r->verdict, &te->per_capture[k]);
        adm_verdict_pool_add(&te->verdict, &r->verdict, p->ncap > 1 ? label : NULL);
    }
    te->mpfr_refined += r->mpfr_refined;
    te->ncaptures = k + 1;
    return ADM_OK;
}

/* The pooled verdict, against the power the entry requires. */
static void entry_end(const plan *p, adm_table_entry *te)
{
    if (te->error) return;
    adm_verdict_pool_finish(&te->verdict, NULL);
    adm_verdict_require_power(&te->verdict, &p->required);
}

/* The table's text, at most 16 MiB, NUL-terminated. */
static adm_status read_text(const char *file, char **out)
{
    int fd;
    int64_t len;
    FILE *f;
    char *text;
    *out = NULL;
    ADM_TRY(adm_file_open_regular(file, "the fusion table", &fd, &len));
    if (len > (1 << 24) || !(f = fdopen(fd, "rb"))) {
        close(fd);
        return ADM_FAIL(ADM_ERR_IO, "%s: cannot read the fusion table (at most 16 MiB)", file);
    }
    if (!(text = calloc((size_t)len + 1, 1)) || fread(text, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        free(text);
        return ADM_FAIL(ADM_ERR_IO, "%s: cannot read the fusion table (at most 16 MiB)", file);
    }
    fclose(f);
    *out = text;
    return ADM_OK;
}

/* "admit_fusion_table": the format's version; absent reads as 1. */
static adm_status check_version(const char *file, json_t *root)
{
    json_t *v = json_object_get(root, "admit_fusion_table");
    if (!v) return ADM_OK;
    if (!json_is_integer(v))
        return ADM_FAIL(ADM_ERR_JSON, "%s: field 'admit_fusion_table' must be an integer, the table format's "
                        "version (%d; fusions/FORMAT.md)", file, TABLE_VERSION);
    if (json_integer_value(v) != TABLE_VERSION)
        return ADM_FAIL(ADM_ERR_VERSION, "%s: field 'admit_fusion_table': the table is format version %lld; this "
                        "admit reads version %d (fusions/FORMAT.md)", file, (long long)json_integer_value(v),
                        TABLE_VERSION);
    return ADM_OK;
}

struct adm_table_plan {
    char *file, *text, *dir;
    json_t *root;
    table_text tt;
    plan *plans;
    size_t n;
};

void adm_table_plan_free(adm_table_plan *tp)
{
    if (!tp) return;
    for (size_t i = 0; i < tp->n; i++) plan_free(&tp->plans[i]);
    free(tp->plans);
    free(tp->tt.entry);
    json_decref(tp->root);
    free(tp->text);
    free(tp->dir);
    free(tp->file);
    free(tp);
}

ADM_FPENV_BODY
static adm_status table_plan_body(const char *file, adm_table_plan **out)
{
    adm_status st = ADM_OK;
    adm_table_plan *tp;
    json_t *fus;
    json_error_t err;
    size_t n;
    *out = NULL;
    if (!(tp = calloc(1, sizeof *tp)) || !(tp->file = adm_strdup(file))) {
        free(tp);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    if ((st = read_text(file, &tp->text)) != ADM_OK) goto done;
    {
        /* dirname may change its argument */
        char *tmp = adm_strdup(file);
        tp->dir = tmp ? adm_strdup(dirname(tmp)) : NULL;
        free(tmp);
        if (!tp->dir) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
    }
    tp->root = json_loads(tp->text, JSON_REJECT_DUPLICATES, &err);
    if (!tp->root) {
        st = ADM_FAIL(ADM_ERR_JSON, "%s:%d:%d: not valid JSON: %s", file, err.line, err.column, err.text);
        goto done;
    }
    if (!json_is_object(tp->root)) {
        st = ADM_FAIL(ADM_ERR_JSON, "%s: a fusion table is a JSON object (fusions/FORMAT.md)", file);
        goto done;
    }
    if ((st = check_version(file, tp->root)) != ADM_OK) goto done;
    {
        const char *k;
        json_t *v;
        json_object_foreach(tp->root, k, v) {
            if (strcmp(k, "admit_fusion_table") && strcmp(k, "description") && strcmp(k, "fusions")) {
                st = ADM_FAIL(ADM_ERR_JSON, "%s: unknown field '%s' (admit_fusion_table, description, fusions; "
                              "fusions/FORMAT.md)", file, k);
                goto done;
            }
        }
    }
    fus = json_object_get(tp->root, "fusions");
    if (!json_is_array(fus) || json_array_size(fus) == 0) {
        st = ADM_FAIL(ADM_ERR_JSON, "%s: field 'fusions' must be a non-empty array of entries", file);
        goto done;
    }
    n = json_array_size(fus);
    if (n > INT_MAX / 2) { st = ADM_FAIL(ADM_ERR_JSON, "%s: field 'fusions' has too many entries", file); goto done; }
    tp->tt.text = tp->text;
    tp->tt.n = n;
    if (!(tp->plans = calloc(n, sizeof *tp->plans))) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
    /* The whole table against its schema first: a table that breaks it
     * is refused before anything is measured. */
    for (size_t i = 0; i < n; i++) {
        st = check_entry(tp->file, &tp->tt, tp->dir, (int)i, json_array_get(fus, i), &tp->plans[i]);
        tp->n = i + 1;
        if (st != ADM_OK) goto done;
    }
done:
    if (st != ADM_OK) adm_table_plan_free(tp);
    else *out = tp;
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_table_plan_read(const char *file, adm_table_plan **out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = table_plan_body(file, out);
    adm_fpenv_leave(&fe);
    return rv;
}

int adm_table_plan_count(const adm_table_plan *tp) { return (int)tp->n; }

int adm_table_plan_units(const adm_table_plan *tp, int entry)
{
    const plan *p = &tp->plans[entry];
    return p->load_error ? 0 : p->ncap;
}

void adm_table_plan_unit(const adm_table_plan *tp, int entry, int k, adm_measure_unit *u)
{
    const plan *p = &tp->plans[entry];
    memset(u, 0, sizeof *u);
    u->source = p->name;
    u->op = p->op;
    u->capture = p->cpaths[k];
    u->params = p->ptext;
    u->ref_spec = p->ref_spec;
    u->cand_spec = p->cand_spec;
    u->reader = p->reader;
}

adm_status adm_table_plan_begin(const adm_table_plan *tp, int entry, adm_table_entry *out)
{
    return entry_begin(&tp->plans[entry], out);
}

adm_status adm_table_plan_add(adm_table_plan *tp, int entry, int k, const adm_unit_result *r, adm_table_entry *e)
{
    return entry_add(tp->file, &tp->tt, entry, &tp->plans[entry], k, r, e);
}

void adm_table_plan_end(const adm_table_plan *tp, int entry, adm_table_entry *e)
{
    entry_end(&tp->plans[entry], e);
}

ADM_FPENV_BODY
static adm_status harness_table_body(const char *file, adm_table_progress_fn progress, void *user,
                                     adm_table_result *out)
{
    adm_table_plan *tp = NULL;
    adm_status st;
    memset(out, 0, sizeof *out);
    ADM_TRY(adm_table_plan_read(file, &tp));
    if (!(out->entries = calloc(tp->n, sizeof *out->entries))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < tp->n; i++) {
        adm_table_entry *te = &out->entries[i];
        int nu = adm_table_plan_units(tp, (int)i);
        if (progress) progress((int)i + 1, (int)tp->n, tp->plans[i].name, user);
        if ((st = adm_table_plan_begin(tp, (int)i, te)) != ADM_OK) goto done;
        out->n++;
        /* one process stops at an entry's first failing capture */
        for (int k = 0; k < nu && !te->error; k++) {
            adm_measure_unit u;
            adm_unit_result r;
            adm_table_plan_unit(tp, (int)i, k, &u);
            adm_harness_measure_unit(&u, &r);
            st = adm_table_plan_add(tp, (int)i, k, &r, te);
            adm_unit_result_free(&r);
            if (st != ADM_OK) goto done;
        }
        adm_table_plan_end(tp, (int)i, te);
    }
    st = ADM_OK;
done:
    adm_table_plan_free(tp);
    if (st != ADM_OK) adm_table_result_free(out);
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_harness_table(const char *file, adm_table_progress_fn progress, void *user, adm_table_result *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = harness_table_body(file, progress, user, out);
    adm_fpenv_leave(&fe);
    return rv;
}
