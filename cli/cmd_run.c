/* admit-kernel run (implementations on a capture) and table (a runtime's
 * fusion table, every entry measured). */
#include "cli.h"
#include "adm_candidates.h"
#include "adm_harness.h"
#include "adm_oracle.h"
#include "adm_report.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
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
    "  --claim NAME=TIER  exit 1 when candidate NAME measures looser than TIER\n"
    "  --json FILE, --junit FILE\n"
    "  --list             the registered implementations\n";

static const char table_usage[] =
    "usage: admit-kernel table FILE [--strict] [--json F] [--junit F] [--html DIR]\n"
    "\n"
    "Measures every entry of a fusion table (JSON, fusions/dit.json) on its\n"
    "captures and compares the measured tier with the declared one: exit 1 when a\n"
    "declared tier is looser than measured (unsafe), and with --strict also when\n"
    "it is stricter (promotable).\n";

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

/* Which part of a table entry an error of measure() comes from. */
typedef struct where_ {
    const char *field;   /* "captures", "params", "reference", "candidate"; NULL: the entry */
    int capture;         /* the index into "captures" */
} where_;

/* Judges cand against ref on every capture; the worst verdict counts. On
 * failure *at says which input was at fault. */
static adm_status measure(const char *source, const char *label, const char *want_op, const char *const *captures, int ncap,
                          const char *params_override, const char *ref_spec, const char *cand_spec,
                          const adm_reader *reader, adm_report *rep, const adm_tier *claim, adm_tier *measured,
                          where_ *at)
{
    adm_verdict worst;
    int64_t refined = 0;
    int have = 0;
    *measured = ADM_TIER_EXACT;
    memset(&worst, 0, sizeof worst);
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
        if ((st = adm_capture_read(captures[k], &cap)) != ADM_OK || (st = adm_capture_validate(cap)) != ADM_OK)
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
        st = adm_harness_run(op, &p, in, ref, cand, reader, NULL, &rr);
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
    *measured = worst.tier;
    return adm_report_add(rep, source, label, cand_spec, &worst, refined, claim);
}

int adm_cmd_run(int argc, char **argv)
{
    const char *capture = NULL, *ref = NULL, *cands[32], *json = NULL, *junit = NULL, *reader_text = NULL;
    char *claim_names[32];
    adm_tier claim_tiers[32];
    int nc = 0, ncl = 0, rc = ADM_EXIT_OK;
    adm_reader reader;
    adm_report *rep = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(run_usage, stdout); return ADM_EXIT_OK; }
        if (!strcmp(a, "--list")) { list_impls(); return ADM_EXIT_OK; }
        if (a[0] != '-') {
            if (capture) { rc = adm_cli_usage_error("run: expected one CAPTURE, got '%s' too", a); goto done; }
            capture = a;
            continue;
        }
        if (!v) { rc = adm_cli_usage_error("run: option '%s' needs a value", a); goto done; }
        i++;
        if (!strcmp(a, "--reference")) ref = v;
        else if (!strcmp(a, "--candidate")) {
            if (nc == 32) { rc = adm_cli_usage_error("run: at most 32 candidates"); goto done; }
            cands[nc++] = v;
        } else if (!strcmp(a, "--reader")) reader_text = v;
        else if (!strcmp(a, "--json")) json = v;
        else if (!strcmp(a, "--junit")) junit = v;
        else if (!strcmp(a, "--claim")) {
            if (ncl == 32) { rc = adm_cli_usage_error("--claim: at most 32 claims"); goto done; }
            if ((rc = adm_cli_parse_claim(v, &claim_names[ncl], &claim_tiers[ncl])) != ADM_EXIT_OK) goto done;
            ncl++;
        } else {
            rc = adm_cli_usage_error("run: unknown option '%s'", a);
            goto done;
        }
    }
    if (!capture || !ref || nc == 0) {
        fputs(run_usage, stderr);
        rc = adm_cli_usage_error("run: expected CAPTURE, --reference and at least one --candidate");
        goto done;
    }
    if (adm_reader_parse(reader_text, &reader) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    if (adm_report_create("admit-kernel run", &rep) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    for (int k = 0; k < nc; k++) {
        const adm_tier *claim = NULL;
        adm_tier measured;
        const char *caps[1] = {capture};
        for (int c = 0; c < ncl; c++)
            if (!strcmp(claim_names[c], cands[k])) claim = &claim_tiers[c];
        adm_cli_progress(k + 1, nc, cands[k]);
        where_ at;
        if (measure(capture, "run", NULL, caps, 1, NULL, ref, cands[k], &reader, rep, claim, &measured, &at) != ADM_OK) {
            if (at.field && !strcmp(at.field, "reference")) adm_error_prefix("--reference: ");
            else if (at.field && !strcmp(at.field, "candidate")) adm_error_prefix("--candidate: ");
            rc = adm_cli_fail();
            goto done;
        }
    }
    rc = adm_cli_finish_report(rep, json, junit, NULL);
done:
    for (int c = 0; c < ncl; c++) free(claim_names[c]);
    adm_report_free(rep);
    return rc;
}

/* ------------------------------------------------------------ the fusion table */

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
#include <stdarg.h>
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

int adm_cmd_table(int argc, char **argv)
{
    const char *file = NULL, *json_out = NULL, *junit = NULL, *html = NULL;
    int strict = 0, rc = ADM_EXIT_OK;
    json_t *root = NULL, *fus;
    json_error_t err;
    char *text = NULL, dir[1024];
    adm_report *rep = NULL;
    FILE *f;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(table_usage, stdout); return ADM_EXIT_OK; }
        if (!strcmp(a, "--strict")) { strict = 1; continue; }
        if (a[0] != '-') {
            if (file) return adm_cli_usage_error("table: expected one FILE, got '%s' too", a);
            file = a;
            continue;
        }
        if (!v) return adm_cli_usage_error("table: option '%s' needs a value", a);
        i++;
        if (!strcmp(a, "--json")) json_out = v;
        else if (!strcmp(a, "--junit")) junit = v;
        else if (!strcmp(a, "--html")) html = v;
        else return adm_cli_usage_error("table: unknown option '%s'", a);
    }
    if (!file) { fputs(table_usage, stderr); return adm_cli_usage_error("table: expected a FILE"); }
    {
        int fd;
        int64_t len;
        if (adm_file_open_regular(file, "the fusion table", &fd, &len) != ADM_OK) return adm_cli_fail();
        if (len > (1 << 24) || !(f = fdopen(fd, "rb"))) {
            close(fd);
            return adm_cli_usage_error("%s: cannot read the fusion table (at most 16 MiB)", file);
        }
        if (!(text = calloc((size_t)len + 1, 1)) || fread(text, 1, (size_t)len, f) != (size_t)len) {
            fclose(f);
            free(text);
            return adm_cli_usage_error("%s: cannot read the fusion table (at most 16 MiB)", file);
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
        rc = adm_cli_usage_error("%s:%d:%d: not valid JSON: %s", file, err.line, err.column, err.text);
        goto done;
    }
    fus = json_object_get(root, "fusions");
    if (!json_is_array(fus) || json_array_size(fus) == 0) {
        rc = adm_cli_usage_error("%s: field 'fusions' must be a non-empty array of entries", file);
        goto done;
    }
    if (adm_report_create("admit-kernel table", &rep) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    adm_report_set_strict(rep, strict);
    adm_report_set_labels(rep, "entry", "declared");
    for (size_t i = 0; i < json_array_size(fus); i++) {
        json_t *e = json_array_get(fus, i), *caps, *params;
        const char *name, *opname, *ref, *cand, *decl_s, *reader_s, *cpaths[16];
        char cbuf[16][2100], *ptext = NULL;
        adm_tier declared, measured;
        adm_reader reader;
        int ncap;
        const adm_op *op;
        if (!json_is_object(e)) { rc = adm_cli_fail_with(schema_error(file, text, (int)i, NULL, "must be an object")); goto done; }
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
                    rc = adm_cli_fail_with(schema_error(file, text, (int)i, req[r], "required, a string"));
                    goto done;
                }
        }
        if (adm_name_check("entry name", name) != ADM_OK) {
            rc = adm_cli_fail_with(schema_error(file, text, (int)i, "name", "%s", adm_error_message()));
            goto done;
        }
        if (!(op = adm_op_find(opname))) {
            rc = adm_cli_fail_with(schema_error(file, text, (int)i, "op", "'%s' is not in the catalog", opname));
            goto done;
        }
        if (adm_tier_from_name(decl_s, &declared) != ADM_OK) {
            rc = adm_cli_fail_with(schema_error(file, text, (int)i, "declared", "'%s' is not exact, lossless or high", decl_s));
            goto done;
        }
        if (adm_reader_parse(reader_s, &reader) != ADM_OK) {
            rc = adm_cli_fail_with(schema_error(file, text, (int)i, "reader", "%s", adm_error_message()));
            goto done;
        }
        if (!json_is_array(caps) || json_array_size(caps) == 0 || json_array_size(caps) > 16) {
            rc = adm_cli_fail_with(schema_error(file, text, (int)i, "captures", "must be an array of 1 to 16 paths"));
            goto done;
        }
        if (params && !json_is_object(params)) {
            rc = adm_cli_fail_with(schema_error(file, text, (int)i, "params", "must be an object"));
            goto done;
        }
        ncap = (int)json_array_size(caps);
        for (int k = 0; k < ncap; k++) {
            const char *cp = json_string_value(json_array_get(caps, (size_t)k));
            if (!cp) { rc = adm_cli_fail_with(schema_error(file, text, (int)i, "captures", "entry %d is not a string", k)); goto done; }
            snprintf(cbuf[k], sizeof cbuf[k], "%s%s%s", cp[0] == '/' ? "" : dir, cp[0] == '/' ? "" : "/", cp);
            cpaths[k] = cbuf[k];
        }
        if (check_static(file, text, (int)i, json_object_get(e, "static"), opname, cand) != ADM_OK) {
            rc = adm_cli_fail();
            goto done;
        }
        if (params) ptext = json_dumps(params, JSON_COMPACT);
        adm_cli_progress((int)i + 1, (int)json_array_size(fus), name);
        {
            adm_op_params pp;
            if (ptext && adm_op_params_parse(op, ptext, &pp) != ADM_OK) {
                rc = adm_cli_fail_with(schema_error(file, text, (int)i, "params", "%s", adm_error_message()));
                free(ptext);
                goto done;
            }
        }
        {
            where_ at;
            if (measure(name, opname, opname, cpaths, ncap, ptext, ref, cand, &reader, rep, &declared, &measured, &at) !=
                ADM_OK) {
                char label[64], msg[1024];
                snprintf(msg, sizeof msg, "%s", adm_error_message());
                if (at.field && !strcmp(at.field, "captures")) snprintf(label, sizeof label, "captures[%d]", at.capture);
                else snprintf(label, sizeof label, "%s", at.field ? at.field : "");
                free(ptext);
                rc = adm_cli_fail_with(schema_error(file, text, (int)i, at.field ? label : NULL, "entry '%s': %s", name, msg));
                goto done;
            }
        }
        free(ptext);
    }
    rc = adm_cli_finish_report(rep, json_out, junit, html);
done:
    json_decref(root);
    free(text);
    adm_report_free(rep);
    return rc;
}
