/* The fusion table (fusions/dit.json) and the measuring behind it: a
 * reference and a candidate judged on captures with adm_harness_run, and a
 * runtime's table read, checked against its schema (errors name the file,
 * line, column and field) and every entry measured. The library's, so a
 * runtime can call it; admit-kernel table is a thin wrapper. */
#include "adm_capture.h"
#include "adm_harness.h"
#include "adm_oracle.h"

#include <jansson.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ measuring */

adm_status adm_harness_measure(const char *source, const char *want_op, const char *const *captures, int ncap,
                               const char *params_override, const char *ref_spec, const char *cand_spec,
                               const adm_reader *reader, adm_measure_result *out)
{
    adm_verdict worst;
    int64_t refined = 0;
    int have = 0;
    adm_measure_result *at = out;
    adm_plan plan;
    adm_status pst;
    memset(out, 0, sizeof *out);
    memset(&worst, 0, sizeof worst);
    /* what each capture will cost, judged before its data is read */
    if ((pst = adm_plan_init(&plan, ADM_PLAN_RUN)) != ADM_OK) return pst;
    plan.params = params_override;
    if ((strchr(ref_spec, ':') && strstr(ref_spec, ".so")) || (strchr(cand_spec, ':') && strstr(cand_spec, ".so")))
        plan.impl_out_bytes = 8; /* a plugin may output fp64 */
    for (int k = 0; k < ncap; k++) {
        adm_capture *cap = NULL;
        const adm_op *op;
        adm_op_params p;
        const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
        const adm_impl *ref = NULL, *cand = NULL;
        adm_run_result rr;
        adm_status st;
        at->field = "captures";
        at->capture = k;
        if ((st = adm_capture_read_sandboxed_plan(captures[k], NULL, adm_plan_check, &plan, &cap)) != ADM_OK ||
            (st = adm_capture_validate(cap)) != ADM_OK)
            goto fail;
        op = adm_op_find(adm_capture_op(cap));
        if (want_op && strcmp(want_op, adm_capture_op(cap)) != 0) {
            st = ADM_FAIL(ADM_ERR_INVALID, "%s: the capture's op is '%s', the entry's '%s'", captures[k],
                          adm_capture_op(cap), want_op);
            goto fail;
        }
        if (!op) {
            st = ADM_FAIL(ADM_ERR_UNSUPPORTED, "%s: op '%s' is not in the catalog: run needs the oracle", captures[k],
                          adm_capture_op(cap));
            goto fail;
        }
        if (params_override) at->field = "params";
        if ((st = adm_op_params_parse(op, params_override ? params_override : adm_capture_params(cap), &p)) != ADM_OK)
            goto fail;
        for (int i = 0; i < adm_op_input_count(op); i++) in[i] = adm_capture_find_input(cap, adm_op_input_name(op, i));
        /* the parameters against this capture's inputs (R1: an override the
         * capture's inputs cannot satisfy) */
        if ((st = adm_harness_check_inputs(op, &p, in)) != ADM_OK) {
            adm_error_prefix("%s: ", captures[k]);
            goto fail;
        }
        at->field = "reference";
        if ((st = adm_impl_resolve(adm_op_name(op), ref_spec, &ref)) != ADM_OK) goto fail;
        at->field = "candidate";
        if ((st = adm_impl_resolve(adm_op_name(op), cand_spec, &cand)) != ADM_OK) goto fail;
        at->field = "captures";
        at->in_run = 1;
        st = adm_harness_run(op, &p, in, ref, cand, reader, NULL, &rr);
        if (st == ADM_OK) at->in_run = 0;
        adm_plugin_free(ref);
        adm_plugin_free(cand);
        ref = cand = NULL;
        if (st != ADM_OK) {
            adm_error_prefix("%s: ", captures[k]);
            goto fail;
        }
        if (!have || rr.verdict.tier > worst.tier ||
            (rr.verdict.tier == worst.tier && rr.verdict.rms_ratio > worst.rms_ratio))
            worst = rr.verdict;
        refined += rr.mpfr_refined;
        have = 1;
        adm_capture_free(cap);
        continue;
    fail:
        adm_plugin_free(ref);
        adm_plugin_free(cand);
        adm_capture_free(cap);
        return st;
    }
    at->field = NULL;
    if (!have) return ADM_FAIL(ADM_ERR_INVALID, "%s: no captures to measure on", source);
    out->verdict = worst;
    out->mpfr_refined = refined;
    return ADM_OK;
}


/* ------------------------------------------------------------ the table's schema */

/* Where a field of entry i sits in the JSON text (line, column), for
 * schema errors: jansson keeps no positions, so the text is scanned for
 * the entry's object and the key inside it. */
static void locate(const char *text, int entry, const char *field, int *line, int *col)
{
    int depth = 0, instr = 0, esc = 0, seen = -1, l = 1, c = 1, in_fusions = 0;
    size_t flen = field ? strlen(field) : 0;
    *line = 1;
    *col = 1;
    for (const char *p = text; *p; p++) {
        if (instr) {
            if (esc) esc = 0;
            else if (*p == '\\') esc = 1;
            else if (*p == '"') instr = 0;
        } else if (*p == '"') {
            if (depth == 1 && !strncmp(p, "\"fusions\"", 9)) in_fusions = 1;
            if (field && seen == entry && depth == 3 && !strncmp(p + 1, field, flen) && p[1 + flen] == '"') {
                *line = l;
                *col = c;
                return;
            }
            instr = 1;
        } else if (*p == '{' || *p == '[') {
            depth++;
            if (*p == '{' && depth == 3 && in_fusions && ++seen == entry) {
                *line = l;
                *col = c;
            }
        } else if (*p == '}' || *p == ']') {
            depth--;
        }
        if (*p == '\n') { l++; c = 1; }
        else c++;
    }
}

static adm_status schema_error(const char *file, const char *text, int entry, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static adm_status schema_error(const char *file, const char *text, int entry, const char *field, const char *fmt, ...)
{
    char msg[512];
    int line, col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    {
        /* the key is the field up to an index ("captures[2]": "captures") */
        char key[64];
        snprintf(key, sizeof key, "%s", field ? field : "");
        key[strcspn(key, "[")] = '\0';
        locate(text, entry, field ? key : NULL, &line, &col);
    }
    return ADM_FAIL(ADM_ERR_JSON, "%s:%d:%d: fusions[%d]%s%s: %s", file, line, col, entry, field ? "." : "",
                    field ? field : "", msg);
}

static const char *str_field(json_t *e, const char *k) { return json_string_value(json_object_get(e, k)); }

/* An entry's "static" declarations must be the candidate implementation's
 * own: a table cannot declare a precision its kernel does not have. */
static adm_status check_static(const char *file, const char *text, int i, json_t *st, const char *op, const char *cand)
{
    const adm_impl *im = NULL;
    const char *k;
    json_t *v;
    adm_status rs = ADM_OK;
    if (!st) return ADM_OK;
    if (!json_is_object(st)) return schema_error(file, text, i, "static", "must be an object");
    if ((rs = adm_impl_resolve(op, cand, &im)) != ADM_OK)
        return schema_error(file, text, i, "candidate", "%s", adm_error_message());
    json_object_foreach(st, k, v) {
        if (!strcmp(k, "accumulator") || !strcmp(k, "operand") || !strcmp(k, "intermediate")) {
            adm_dtype want = !strcmp(k, "accumulator") ? im->decl.accumulator
                             : !strcmp(k, "operand")   ? im->decl.operand : im->decl.intermediate, got;
            if (!json_is_string(v) || adm_dtype_from_name(json_string_value(v), &got) != ADM_OK) {
                rs = schema_error(file, text, i, "static", "'%s' must be a dtype name", k);
                break;
            }
            if (got != want) {
                rs = schema_error(file, text, i, "static", "declares %s %s, but implementation '%s' is %s", k,
                                  adm_dtype_name(got), cand, adm_dtype_name(want));
                break;
            }
        } else if (!strcmp(k, "transcendental_ulps")) {
            if (!json_is_number(v) || json_number_value(v) != im->decl.transcendental_ulps) {
                rs = schema_error(file, text, i, "static", "declares transcendental_ulps %g, but implementation '%s' "
                                  "is %g", json_number_value(v), cand, im->decl.transcendental_ulps);
                break;
            }
        } else if (!strcmp(k, "stable")) {
            if (!json_is_boolean(v) || json_is_true(v) != (im->decl.stable == 1)) {
                rs = schema_error(file, text, i, "static", "declares stable %s, but implementation '%s' %s",
                                  json_is_true(v) ? "true" : "false", cand, im->decl.stable == 1 ? "is" : "is not");
                break;
            }
        } else {
            rs = schema_error(file, text, i, "static", "unknown key '%s' (accumulator, operand, intermediate, "
                              "transcendental_ulps, stable)", k);
            break;
        }
    }
    adm_plugin_free(im);
    return rs;
}

/* An entry whose candidate is its reference (the same name, or two names
 * of one function) would compare a function with itself: it measures
 * exact by construction and tells the runtime nothing. */
static adm_status check_distinct(const char *file, const char *text, int i, const char *op, const char *ref,
                                 const char *cand)
{
    const adm_impl *r = NULL, *c = NULL;
    int same = !strcmp(ref, cand);
    if (!same && adm_impl_resolve(op, ref, &r) == ADM_OK && adm_impl_resolve(op, cand, &c) == ADM_OK)
        same = strcmp(r->backend, "plugin") && strcmp(c->backend, "plugin") && r->run == c->run;
    adm_plugin_free(r);
    adm_plugin_free(c);
    adm_error_clear();
    if (same)
        return schema_error(file, text, i, "candidate", "'%s' is the reference '%s' itself: the entry would compare "
                            "a function with itself", cand, ref);
    return ADM_OK;
}

/* ------------------------------------------------------------ the fusion table */

void adm_table_result_free(adm_table_result *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        free(r->entries[i].name);
        free(r->entries[i].op);
        free(r->entries[i].candidate);
        free(r->entries[i].error);
    }
    free(r->entries);
    memset(r, 0, sizeof *r);
}

adm_status adm_harness_table(const char *file, adm_table_progress_fn progress, void *user, adm_table_result *out)
{
    adm_status st = ADM_OK;
    json_t *root = NULL, *fus;
    json_error_t err;
    char *text = NULL, dir[1024];
    FILE *f;
    memset(out, 0, sizeof *out);
    {
        int fd;
        int64_t len;
        if (adm_file_open_regular(file, "the fusion table", &fd, &len) != ADM_OK) return adm_error_code();
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
    }
    {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s", file);
        snprintf(dir, sizeof dir, "%s", dirname(tmp));
    }
    root = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        st = ADM_FAIL(ADM_ERR_JSON, "%s:%d:%d: not valid JSON: %s", file, err.line, err.column, err.text);
        goto done;
    }
    fus = json_object_get(root, "fusions");
    if (!json_is_array(fus) || json_array_size(fus) == 0) {
        st = ADM_FAIL(ADM_ERR_JSON, "%s: field 'fusions' must be a non-empty array of entries", file);
        goto done;
    }
    out->entries = calloc(json_array_size(fus), sizeof *out->entries);
    if (!out->entries) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
    for (size_t i = 0; i < json_array_size(fus); i++) {
        json_t *e = json_array_get(fus, i), *caps, *params;
        const char *name, *opname, *ref, *cand, *decl_s, *reader_s, *cpaths[16];
        char cbuf[16][2100], *ptext = NULL;
        adm_tier declared;
        adm_reader reader;
        int ncap;
        const adm_op *op;
        if (!json_is_object(e)) { st = (schema_error(file, text, (int)i, NULL, "must be an object")); goto done; }
        name = str_field(e, "name");
        opname = str_field(e, "op");
        ref = str_field(e, "reference");
        cand = str_field(e, "candidate");
        decl_s = str_field(e, "declared");
        reader_s = str_field(e, "reader");
        caps = json_object_get(e, "captures");
        params = json_object_get(e, "params");
        {
            static const char *req[] = {"name", "op", "reference", "candidate", "declared"};
            const char *vals[] = {name, opname, ref, cand, decl_s};
            for (int r = 0; r < 5; r++)
                if (!vals[r]) {
                    st = (schema_error(file, text, (int)i, req[r], "required, a string"));
                    goto done;
                }
        }
        if (adm_name_check("entry name", name) != ADM_OK) {
            st = (schema_error(file, text, (int)i, "name", "%s", adm_error_message()));
            goto done;
        }
        if (!(op = adm_op_find(opname))) {
            st = (schema_error(file, text, (int)i, "op", "'%s' is not in the catalog", opname));
            goto done;
        }
        if (adm_tier_from_name(decl_s, &declared) != ADM_OK) {
            st = (schema_error(file, text, (int)i, "declared", "'%s' is not exact, lossless or high", decl_s));
            goto done;
        }
        if (adm_reader_parse(reader_s, &reader) != ADM_OK) {
            st = (schema_error(file, text, (int)i, "reader", "%s", adm_error_message()));
            goto done;
        }
        if (!json_is_array(caps) || json_array_size(caps) == 0 || json_array_size(caps) > 16) {
            st = (schema_error(file, text, (int)i, "captures", "must be an array of 1 to 16 paths"));
            goto done;
        }
        if (params && !json_is_object(params)) {
            st = (schema_error(file, text, (int)i, "params", "must be an object"));
            goto done;
        }
        ncap = (int)json_array_size(caps);
        for (int k = 0; k < ncap; k++) {
            const char *cp = json_string_value(json_array_get(caps, (size_t)k));
            if (!cp) { st = (schema_error(file, text, (int)i, "captures", "entry %d is not a string", k)); goto done; }
            snprintf(cbuf[k], sizeof cbuf[k], "%s%s%s", cp[0] == '/' ? "" : dir, cp[0] == '/' ? "" : "/", cp);
            cpaths[k] = cbuf[k];
        }
        if ((st = check_static(file, text, (int)i, json_object_get(e, "static"), opname, cand)) != ADM_OK) goto done;
        if ((st = check_distinct(file, text, (int)i, opname, ref, cand)) != ADM_OK) goto done;
        if (params) ptext = json_dumps(params, JSON_COMPACT);
        if (progress) progress((int)i + 1, (int)json_array_size(fus), name, user);
        {
            adm_op_params pp;
            if (ptext && adm_op_params_parse(op, ptext, &pp) != ADM_OK) {
                st = (schema_error(file, text, (int)i, "params", "%s", adm_error_message()));
                free(ptext);
                goto done;
            }
        }
        {
            adm_measure_result mr;
            adm_table_entry *te = &out->entries[out->n];
            adm_status ms;
            memset(te, 0, sizeof *te);
            if ((ms = adm_harness_measure(name, opname, cpaths, ncap, ptext, ref, cand, &reader, &mr)) != ADM_OK) {
                char label[64], msg[1024];
                snprintf(msg, sizeof msg, "%s", adm_error_message());
                if (mr.field && !strcmp(mr.field, "captures")) snprintf(label, sizeof label, "captures[%d]", mr.capture);
                else snprintf(label, sizeof label, "%s", mr.field ? mr.field : "");
                st = schema_error(file, text, (int)i, mr.field ? label : NULL, "entry '%s': %s", name, msg);
                /* a capture that cannot be read or measured (corrupt, a
                 * crash inside libhdf5 or a plugin) fails its entry only */
                if (mr.field && !strcmp(mr.field, "captures")) {
                    te->error = adm_strdup(adm_error_message());
                    te->error_status = ms;
                    st = te->error ? ADM_OK : ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
                }
                if (st != ADM_OK) {
                    free(ptext);
                    goto done;
                }
            }
            te->name = adm_strdup(name);
            te->op = adm_strdup(opname);
            te->candidate = adm_strdup(cand);
            if (!te->name || !te->op || !te->candidate) {
                free(te->name);
                free(te->op);
                free(te->candidate);
                free(te->error);
                free(ptext);
                st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
                goto done;
            }
            te->declared = declared;
            te->verdict = mr.verdict;
            te->mpfr_refined = mr.mpfr_refined;
            out->n++;
        }
        free(ptext);
    }
done:
    json_decref(root);
    free(text);
    if (st != ADM_OK) adm_table_result_free(out);
    return st;
}
