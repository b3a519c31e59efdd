/* The drift report: arms, pairs and their verdicts against the band and
 * the floors, error growth against the reference path's, the spec file,
 * the terminal and Markdown tables, JSON and the history. */
#include "drift_internal.h"
#include "adm_fpenv.h"
#include "adm_report.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- text */

const char *drift_db(double psnr, char *buf, size_t n)
{
    if (isinf(psnr) && psnr > 0) snprintf(buf, n, "inf");
    else snprintf(buf, n, "%.2f", psnr);
    return buf;
}

/* ---------------------------------------------------------------- limits */

/* A limit from the environment: a positive integer with an optional K, M
 * or G suffix (powers of 1024); dflt when unset or empty; anything else is
 * refused, naming the variable (a typo must not lift a limit). */
static adm_status env_limit(const char *name, int64_t dflt, int64_t *out)
{
    const char *e = getenv(name);
    char *end;
    long long v;
    int shift = 0;
    *out = dflt;
    if (!e || !*e) return ADM_OK;
    errno = 0;
    v = strtoll(e, &end, 10);
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: break;
    }
    if (errno || end == e || *end || v <= 0 || v > (LLONG_MAX >> shift))
        return ADM_FAIL(ADM_ERR_INVALID, "environment variable %s='%s': expected a positive integer, optionally "
                        "with K, M or G", name, e);
    *out = (int64_t)v << shift;
    return ADM_OK;
}

/* ---------------------------------------------------------------- building */

const char *adm_drift_role_name(adm_drift_role r)
{
    switch (r) {
    case ADM_DRIFT_CONTROL: return "control";
    case ADM_DRIFT_BAND: return "band";
    case ADM_DRIFT_TIER: return "tier";
    }
    return "?";
}

adm_status adm_drift_create(const char *title, adm_drift **out)
{
    adm_drift *d = calloc(1, sizeof *d);
    if (!d || !(d->title = adm_strdup(title ? title : "admit drift"))) {
        free(d);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    d->floor_psnr = NAN;
    d->floor_ssim = NAN;
    *out = d;
    return ADM_OK;
}

void adm_drift_free(adm_drift *d)
{
    if (!d) return;
    for (int i = 0; i < d->n_arms; i++) {
        free(d->arms[i].name);
        free(d->arms[i].layout);
        adm_image_free(&d->arms[i].img);
    }
    for (int i = 0; i < d->n_pairs; i++) free(d->pairs[i].name);
    for (int i = 0; i < d->n_growth; i++) {
        free(d->growth[i].group);
        free(d->growth[i].name);
        free(d->growth[i].depth);
        free(d->growth[i].err);
    }
    for (int i = 0; i < d->n_notes; i++) free(d->notes[i]);
    free(d->notes);
    free(d->growth_claim);
    free(d->growth);
    free(d->arms);
    free(d->pairs);
    free(d->title);
    free(d->date);
    free(d->commit);
    free(d);
}

static adm_status grow(void **p, int *cap, int n, size_t size)
{
    if (n < *cap) return ADM_OK;
    {
        int c = *cap ? 2 * *cap : 8;
        void *q = realloc(*p, size * (size_t)c);
        if (!q) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        *p = q;
        *cap = c;
    }
    return ADM_OK;
}

static int find_arm(const adm_drift *d, const char *name)
{
    for (int i = 0; i < d->n_arms; i++)
        if (!strcmp(d->arms[i].name, name)) return i;
    return -1;
}

static adm_status check_name(const char *name)
{
    if (!name || !*name) return ADM_FAIL(ADM_ERR_INVALID, "an arm needs a name");
    if (strlen(name) > ADM_NAME_MAX)
        return ADM_FAIL(ADM_ERR_INVALID, "an arm name of %zu characters; at most %d", strlen(name), ADM_NAME_MAX);
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
            return ADM_FAIL(ADM_ERR_INVALID, "arm name '%s': use letters, digits, '_', '-' and '.'", name);
    return ADM_OK;
}

adm_status adm_drift_add_arm(adm_drift *d, const char *name, adm_image *img)
{
    ADM_TRY(check_name(name));
    if (find_arm(d, name) >= 0) return ADM_FAIL(ADM_ERR_INVALID, "arm '%s' is given twice", name);
    if (d->n_arms >= ADM_DRIFT_MAX_ARMS)
        return ADM_FAIL(ADM_ERR_INVALID, "arm '%s': more than %d arms (ADM_DRIFT_MAX_ARMS)", name, ADM_DRIFT_MAX_ARMS);
    ADM_TRY(grow((void **)&d->arms, &d->cap_arms, d->n_arms, sizeof *d->arms));
    memset(&d->arms[d->n_arms], 0, sizeof d->arms[d->n_arms]);
    if (!(d->arms[d->n_arms].name = adm_strdup(name))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    d->arms[d->n_arms].img = *img;
    memset(img, 0, sizeof *img);
    d->n_arms++;
    d->evaluated = 0;
    return ADM_OK;
}

/* Loads n arms: every name checked, then what every file declares, held
 * against the arms' and the run's limits, then the values. Nothing is
 * added unless all are. */
static adm_status load_plans(adm_drift *d, drift_plan *p, int n)
{
    int64_t max_values, total = 0;
    adm_image *imgs;
    adm_status st = ADM_OK;
    int added = 0;
    if (n <= 0) return ADM_OK;
    ADM_TRY(env_limit("ADM_DRIFT_MAX_VALUES", ADM_DRIFT_MAX_VALUES_DEFAULT, &max_values));
    for (int i = 0; i < n; i++) {
        int twice = find_arm(d, p[i].name) >= 0;
        for (int k = 0; k < i; k++) twice |= !strcmp(p[k].name, p[i].name);
        if ((st = check_name(p[i].name)) != ADM_OK || twice) {
            if (st == ADM_OK) st = ADM_FAIL(ADM_ERR_INVALID, "arm '%s' is given twice", p[i].name);
            adm_error_prefix("%s", p[i].prefix);
            return st;
        }
        if (d->n_arms + i >= ADM_DRIFT_MAX_ARMS) {
            st = ADM_FAIL(ADM_ERR_INVALID, "more than %d arms (ADM_DRIFT_MAX_ARMS)", ADM_DRIFT_MAX_ARMS);
            adm_error_prefix("%s", p[i].prefix);
            return st;
        }
    }
    ADM_TRY(drift_plans_declare(p, n));
    for (int i = 0; i < d->n_arms; i++) total += adm_image_numel(&d->arms[i].img);
    for (int i = 0; i < n; i++) {
        const drift_piece *a = &p[i].pieces[0];
        ADM_TRY(drift_plan_check(&p[i]));
        total += p[i].values;
        if (total > max_values) {
            st = ADM_FAIL(ADM_ERR_SHAPE, "%lld frame%s of %lld x %lld x %lld from %s%s (%lld values) bring the arms of "
                          "this run to %lld values, above the limit of %lld (ADM_DRIFT_MAX_VALUES; 8 bytes each in "
                          "memory)", (long long)p[i].frames, p[i].frames == 1 ? "" : "s", (long long)a->height,
                          (long long)a->width, (long long)a->channels, a->file, p[i].n_pieces > 1 ? " and on" : "",
                          (long long)p[i].values, (long long)total, (long long)max_values);
            adm_error_prefix("%s", p[i].prefix);
            return st;
        }
    }
    if (!(imgs = calloc((size_t)n, sizeof *imgs))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    st = drift_plans_read(p, n, imgs);
    for (; added < n && st == ADM_OK; added++) {
        drift_arm *a;
        if ((st = adm_drift_add_arm(d, p[added].name, &imgs[added])) != ADM_OK) break;
        /* where it came from, so that another process can read it again
         * (admit-kernel drift under MPI compares pairs elsewhere) */
        a = &d->arms[d->n_arms - 1];
        a->from_files = 1;
        if (p[added].layout && !(a->layout = adm_strdup(p[added].layout))) st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) adm_image_free(&imgs[i]);
    free(imgs);
    return st;
}

adm_status adm_drift_load_arms(adm_drift *d, int n, const char *const *names, const char *const *sources,
                               const char *layout)
{
    drift_plan *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    adm_status st = ADM_OK;
    if (!p) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && st == ADM_OK; i++) {
        char prefix[200];
        char esc[160];
        adm_text_escape(esc, sizeof esc, names[i]);
        snprintf(prefix, sizeof prefix, "arm '%s': ", esc);
        st = drift_plan_init(&p[i], names[i], sources[i], layout, prefix);
    }
    if (st == ADM_OK) st = load_plans(d, p, n);
    for (int i = 0; i < n; i++) drift_plan_free(&p[i]);
    free(p);
    return st;
}

adm_status adm_drift_load_arm(adm_drift *d, const char *name, const char *source, const char *layout)
{
    return adm_drift_load_arms(d, 1, &name, &source, layout);
}

int adm_drift_arm_count(const adm_drift *d) { return d->n_arms; }

const adm_image *adm_drift_arm(const adm_drift *d, int i, const char **name)
{
    if (i < 0 || i >= d->n_arms) return NULL;
    if (name) *name = d->arms[i].name;
    return &d->arms[i].img;
}

adm_status adm_drift_add_pair(adm_drift *d, const char *name, adm_drift_role role, adm_tier claim, const char *a,
                              const char *b)
{
    int ia = find_arm(d, a ? a : ""), ib = find_arm(d, b ? b : "");
    adm_drift_pair *p;
    char auto_name[256];
    if (ia < 0) return ADM_FAIL(ADM_ERR_NOT_FOUND, "%s pair: no arm named '%s'", adm_drift_role_name(role), a ? a : "");
    if (ib < 0) return ADM_FAIL(ADM_ERR_NOT_FOUND, "%s pair: no arm named '%s'", adm_drift_role_name(role), b ? b : "");
    if (ia == ib) return ADM_FAIL(ADM_ERR_INVALID, "%s pair: arm '%s' against itself", adm_drift_role_name(role), a);
    if (d->n_pairs >= ADM_DRIFT_MAX_PAIRS)
        return ADM_FAIL(ADM_ERR_INVALID, "%s pair %s:%s: more than %d pairs (ADM_DRIFT_MAX_PAIRS)",
                        adm_drift_role_name(role), a, b, ADM_DRIFT_MAX_PAIRS);
    if (role == ADM_DRIFT_TIER && claim == ADM_TIER_EXACT) role = ADM_DRIFT_CONTROL;
    ADM_TRY(grow((void **)&d->pairs, &d->cap_pairs, d->n_pairs, sizeof *d->pairs));
    p = &d->pairs[d->n_pairs];
    memset(p, 0, sizeof *p);
    if (!name || !*name) {
        snprintf(auto_name, sizeof auto_name, "%s vs %s", a, b);
        name = auto_name;
    }
    if (!(p->name = adm_strdup(name))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    p->role = role;
    p->claim = role == ADM_DRIFT_CONTROL ? ADM_TIER_EXACT : claim;
    p->a = ia;
    p->b = ib;
    d->n_pairs++;
    d->evaluated = 0;
    return ADM_OK;
}

int adm_drift_pair_count(const adm_drift *d) { return d->n_pairs; }
const adm_drift_pair *adm_drift_pair_at(const adm_drift *d, int i) { return (i >= 0 && i < d->n_pairs) ? &d->pairs[i] : NULL; }

void adm_drift_set_data_range(adm_drift *d, double r) { d->data_range = r; }
void adm_drift_set_video(adm_drift *d, int video)
{
    d->video_set = 1;
    d->video = video;
}
void adm_drift_set_floors(adm_drift *d, double psnr, double ssim)
{
    d->floor_psnr = psnr;
    d->floor_ssim = ssim;
}

void adm_drift_set_band_tolerance(adm_drift *d, double db) { d->band_tol = db > 0 ? db : 0; }
double adm_drift_band_tolerance(const adm_drift *d) { return d->band_tol; }

void adm_drift_set_provenance(adm_drift *d, const char *date, const char *commit)
{
    free(d->date);
    free(d->commit);
    d->date = date ? adm_strdup(date) : NULL;
    d->commit = commit ? adm_strdup(commit) : NULL;
}

adm_status adm_drift_set_title(adm_drift *d, const char *title)
{
    char *t = adm_strdup(title);
    if (!t) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    free(d->title);
    d->title = t;
    return ADM_OK;
}

adm_status adm_drift_add_note(adm_drift *d, const char *note)
{
    char **p = realloc(d->notes, sizeof *p * (size_t)(d->n_notes + 1));
    if (!p) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    d->notes = p;
    if (!(p[d->n_notes] = adm_strdup(note))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    d->n_notes++;
    return ADM_OK;
}

adm_status adm_drift_add_growth(adm_drift *d, const char *group, const char *name, int reference, adm_tier claim,
                                int n, const double *depth, const double *err)
{
    adm_drift_growth *g;
    int cap = d->cap_growth;
    if (n < 1) return ADM_FAIL(ADM_ERR_INVALID, "growth series '%s' is empty", name);
    ADM_TRY(grow((void **)&d->growth, &d->cap_growth, d->n_growth, sizeof *d->growth));
    if (cap != d->cap_growth) {
        adm_tier *c = realloc(d->growth_claim, sizeof *c * (size_t)d->cap_growth);
        if (!c) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        d->growth_claim = c;
    }
    g = &d->growth[d->n_growth];
    memset(g, 0, sizeof *g);
    g->group = adm_strdup(group ? group : "");
    g->name = adm_strdup(name);
    g->depth = malloc(sizeof *g->depth * (size_t)n);
    g->err = malloc(sizeof *g->err * (size_t)n);
    if (!g->group || !g->name || !g->depth || !g->err) {
        free(g->group);
        free(g->name);
        free(g->depth);
        free(g->err);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    memcpy(g->depth, depth, sizeof *depth * (size_t)n);
    memcpy(g->err, err, sizeof *err * (size_t)n);
    g->n = n;
    g->reference = reference;
    d->growth_claim[d->n_growth] = reference ? ADM_TIER_EXACT : claim;
    d->n_growth++;
    d->evaluated = 0;
    return ADM_OK;
}

int adm_drift_growth_count(const adm_drift *d) { return d->n_growth; }
const adm_drift_growth *adm_drift_growth_at(const adm_drift *d, int i) { return (i >= 0 && i < d->n_growth) ? &d->growth[i] : NULL; }
adm_tier adm_drift_growth_claim(const adm_drift *d, int i) { return (i >= 0 && i < d->n_growth) ? d->growth_claim[i] : ADM_TIER_HIGH; }

/* ---------------------------------------------------------------- the spec */

/* "x.h5:/d" or "a.png" relative to the spec's folder. */
static char *resolve(const char *dir, const char *src)
{
    size_t n;
    char *out;
    if (src[0] == '/' || !dir || !*dir) return adm_strdup(src);
    n = strlen(dir) + strlen(src) + 2;
    if ((out = malloc(n))) snprintf(out, n, "%s/%s", dir, src);
    return out;
}

static adm_status spec_fail(const char *path, const char *field, const char *what)
{
    return ADM_FAIL(ADM_ERR_FORMAT, "%s: field '%s': %s", path, field, what);
}

/* A text file read whole: only a regular file (a FIFO or a device is
 * refused without blocking), at most max bytes (a longer one is refused
 * without reading it all). *text is NUL-terminated; NULL with ADM_OK when
 * absent_ok and the file does not exist. */
static adm_status read_text_file(const char *path, const char *what, int64_t max, int absent_ok, char **text,
                                 size_t *len)
{
    int fd;
    int64_t size;
    size_t n = 0, cap;
    char *buf;
    *text = NULL;
    *len = 0;
    if (absent_ok && access(path, F_OK) != 0 && errno == ENOENT) return ADM_OK;
    ADM_TRY(adm_file_open_regular(path, what, &fd, &size));
    if (size > max) {
        close(fd);
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: %lld bytes, more than the %lld bytes %s may have", path, (long long)size,
                        (long long)max, what);
    }
    cap = (size_t)size + 1;
    if (!(buf = malloc(cap + 1))) {
        close(fd);
        return ADM_FAIL(ADM_ERR_NOMEM, "%s: out of memory", path);
    }
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            adm_status st = ADM_FAIL(ADM_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(errno));
            free(buf);
            close(fd);
            return st;
        }
        if (r == 0) break;
        n += (size_t)r;
        if (n == cap) {
            /* it grew while being read: at most max bytes all the same */
            char *q;
            if ((int64_t)n > max) {
                free(buf);
                close(fd);
                return ADM_FAIL(ADM_ERR_FORMAT, "%s: more than the %lld bytes %s may have", path, (long long)max, what);
            }
            cap = 2 * cap < (size_t)max + 1 ? 2 * cap : (size_t)max + 1;
            if (!(q = realloc(buf, cap + 1))) {
                free(buf);
                close(fd);
                return ADM_FAIL(ADM_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = q;
        }
    }
    close(fd);
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return ADM_OK;
}

/* An arm: "path", ["f0", "f1", ...] (frames) or {"source": ..., "layout": ...};
 * its source text (paths resolved against dir, frames joined by commas)
 * into *joined and its layout into *layout. */
static adm_status spec_arm(const char *path, const char *dir, const char *name, json_t *v, const char *default_layout,
                           char **joined, const char **layout)
{
    char field[300];
    json_t *src = v;
    *joined = NULL;
    *layout = default_layout;
    snprintf(field, sizeof field, "arms.%s", name);
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            if (strcmp(k, "source") && strcmp(k, "layout")) {
                char f2[400];
                snprintf(f2, sizeof f2, "%s.%s", field, k);
                return spec_fail(path, f2, "unknown key (expected 'source' and optionally 'layout')");
            }
        }
        src = json_object_get(v, "source");
        if (json_object_get(v, "layout")) {
            if (!json_is_string(json_object_get(v, "layout")))
                return spec_fail(path, field, "'layout' must be a string such as \"CHW\"");
            *layout = json_string_value(json_object_get(v, "layout"));
        }
        if (!src) return spec_fail(path, field, "an arm object needs 'source'");
    }
    if (json_is_string(src)) {
        *joined = resolve(dir, json_string_value(src));
    } else if (json_is_array(src) && json_array_size(src) > 0) {
        size_t i, total = 1;
        json_t *x;
        if (json_array_size(src) > DRIFT_MAX_FRAMES) {
            char what[160];
            snprintf(what, sizeof what, "%zu frames; an arm has at most %d", json_array_size(src), DRIFT_MAX_FRAMES);
            return spec_fail(path, field, what);
        }
        json_array_foreach(src, i, x) {
            if (!json_is_string(x)) {
                char f2[400];
                snprintf(f2, sizeof f2, "%s[%zu]", field, i);
                return spec_fail(path, f2, "expected a path string");
            }
            total += strlen(json_string_value(x)) + strlen(dir ? dir : "") + 2;
        }
        if ((*joined = calloc(1, total))) {
            json_array_foreach(src, i, x) {
                char *r = resolve(dir, json_string_value(x));
                if (!r) {
                    free(*joined);
                    *joined = NULL;
                    return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
                }
                if (i) strcat(*joined, ",");
                strcat(*joined, r);
                free(r);
            }
        }
    } else {
        return spec_fail(path, field, "expected a path, a list of paths (frames) or an object with 'source'");
    }
    if (!*joined) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    return ADM_OK;
}

/* A list of pairs: [["a", "b"], ...] or [{"name": ..., "a": ..., "b": ..., "claim": ...}, ...]. */
static adm_status spec_pairs(adm_drift *d, const char *path, const char *key, json_t *list, adm_drift_role role)
{
    size_t i;
    json_t *p;
    if (!json_is_array(list)) return spec_fail(path, key, "expected a list of pairs");
    json_array_foreach(list, i, p) {
        char field[128];
        const char *a = NULL, *b = NULL, *name = NULL;
        adm_tier claim = ADM_TIER_LOSSLESS;
        adm_status st;
        snprintf(field, sizeof field, "%s[%zu]", key, i);
        if (json_is_array(p) && json_array_size(p) == 2 && json_is_string(json_array_get(p, 0)) &&
            json_is_string(json_array_get(p, 1))) {
            a = json_string_value(json_array_get(p, 0));
            b = json_string_value(json_array_get(p, 1));
        } else if (json_is_object(p)) {
            const char *k;
            json_t *x;
            json_object_foreach(p, k, x) {
                if (strcmp(k, "name") && strcmp(k, "a") && strcmp(k, "b") && strcmp(k, "claim")) {
                    char f2[200];
                    snprintf(f2, sizeof f2, "%s.%s", field, k);
                    return spec_fail(path, f2, "unknown key (expected name, a, b, claim)");
                }
                if (!json_is_string(x)) {
                    char f2[200];
                    snprintf(f2, sizeof f2, "%s.%s", field, k);
                    return spec_fail(path, f2, "expected a string");
                }
            }
            a = json_string_value(json_object_get(p, "a"));
            b = json_string_value(json_object_get(p, "b"));
            name = json_string_value(json_object_get(p, "name"));
            if (json_object_get(p, "claim")) {
                char f2[200];
                snprintf(f2, sizeof f2, "%s.claim", field);
                if (role != ADM_DRIFT_TIER) return spec_fail(path, f2, "only a comparison (\"compare\") carries a claim");
                if (adm_tier_from_name(json_string_value(json_object_get(p, "claim")), &claim) != ADM_OK ||
                    claim == ADM_TIER_EXACT)
                    return spec_fail(path, f2, "expected \"lossless\" or \"high\" (an exact claim is a control)");
            }
            if (!a || !b) return spec_fail(path, field, "a pair object needs 'a' and 'b'");
        } else {
            return spec_fail(path, field, "expected [\"ARM\", \"ARM\"] or {\"a\": ..., \"b\": ...}");
        }
        if ((st = adm_drift_add_pair(d, name, role, claim, a, b)) != ADM_OK) {
            adm_error_prefix("%s: field '%s': ", path, field);
            return st;
        }
    }
    return ADM_OK;
}

static adm_status spec_number(const char *path, const char *field, json_t *v, double lo, double hi, double *out)
{
    char what[160];
    if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi)) {
        snprintf(what, sizeof what, "expected a number in [%g, %g]", lo, hi);
        return spec_fail(path, field, what);
    }
    *out = json_number_value(v);
    return ADM_OK;
}

/* The spec:
 *   {"admit_drift_spec": 1, "title": "...", "kind": "image" | "video",
 *    "data_range": 255, "layout": "CHW",
 *    "floors": {"psnr": 28, "ssim": 0.95},
 *    "arms": {"NAME": "a.png" | "x.h5:/d" | ["f0.png", "f1.png"] | {"source": ..., "layout": ...}},
 *    "control": [PAIR...], "band": [PAIR...], "compare": [PAIR...]}
 * PAIR: ["A", "B"] or {"name": ..., "a": "A", "b": "B", "claim": "lossless" | "high"}. */
adm_status adm_drift_load_spec(adm_drift *d, const char *path)
{
    json_error_t je;
    json_t *root = NULL, *v, *arms;
    char *dir = NULL, *slash, *text = NULL;
    const char *k, *layout = NULL;
    size_t len;
    drift_plan *plans = NULL;
    int n_plans = 0;
    adm_status st = ADM_OK;
    /* a FIFO would block, a device feed it forever */
    ADM_TRY(read_text_file(path, "a drift spec", ADM_DRIFT_SPEC_MAX_BYTES, 0, &text, &len));
    /* a key given twice would silently drop the first (the fusion table
     * refuses them the same way) */
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!root) return ADM_FAIL(ADM_ERR_JSON, "%s: not valid JSON (line %d, column %d: %s)", path, je.line, je.column, je.text);
    if (!json_is_object(root)) {
        st = spec_fail(path, "(top level)", "expected a JSON object");
        goto done;
    }
    json_object_foreach(root, k, v) {
        static const char *const known[] = {"admit_drift_spec", "title", "kind", "data_range", "layout", "floors",
                                            "arms", "control", "band", "compare", "description",
                                            "band_tolerance"};
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) ok |= !strcmp(k, known[i]);
        if (!ok) {
            st = spec_fail(path, k, "unknown key");
            goto done;
        }
    }
    v = json_object_get(root, "admit_drift_spec");
    if (!v) {
        st = spec_fail(path, "admit_drift_spec", "missing: expected 1 (the spec format version)");
        goto done;
    }
    if (json_is_integer(v) && json_integer_value(v) > ADM_DRIFT_SPEC_VERSION) {
        st = ADM_FAIL(ADM_ERR_VERSION, "%s: field 'admit_drift_spec': version %lld, written for a newer admit; this "
                      "one reads version %d", path, (long long)json_integer_value(v), ADM_DRIFT_SPEC_VERSION);
        goto done;
    }
    if (!json_is_integer(v) || json_integer_value(v) != ADM_DRIFT_SPEC_VERSION) {
        st = spec_fail(path, "admit_drift_spec", "expected 1 (the spec format version)");
        goto done;
    }
    if ((v = json_object_get(root, "title"))) {
        if (!json_is_string(v)) {
            st = spec_fail(path, "title", "expected a string");
            goto done;
        }
        free(d->title);
        if (!(d->title = adm_strdup(json_string_value(v)))) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    if ((v = json_object_get(root, "kind"))) {
        const char *s = json_string_value(v);
        if (!s || (strcmp(s, "image") && strcmp(s, "video"))) {
            st = spec_fail(path, "kind", "expected \"image\" or \"video\"");
            goto done;
        }
        adm_drift_set_video(d, !strcmp(s, "video"));
    }
    if ((v = json_object_get(root, "data_range")) &&
        (st = spec_number(path, "data_range", v, 1e-300, 1e300, &d->data_range)) != ADM_OK)
        goto done;
    if ((v = json_object_get(root, "band_tolerance")) &&
        (st = spec_number(path, "band_tolerance", v, 0, 100, &d->band_tol)) != ADM_OK)
        goto done;
    if ((v = json_object_get(root, "layout"))) {
        if (!json_is_string(v)) {
            st = spec_fail(path, "layout", "expected a string such as \"CHW\"");
            goto done;
        }
        layout = json_string_value(v);
    }
    if ((v = json_object_get(root, "floors"))) {
        const char *fk;
        json_t *fv;
        if (!json_is_object(v)) {
            st = spec_fail(path, "floors", "expected {\"psnr\": DB, \"ssim\": S}");
            goto done;
        }
        json_object_foreach(v, fk, fv) {
            if (!strcmp(fk, "psnr")) st = spec_number(path, "floors.psnr", fv, 0, 1000, &d->floor_psnr);
            else if (!strcmp(fk, "ssim")) st = spec_number(path, "floors.ssim", fv, -1, 1, &d->floor_ssim);
            else {
                char f2[200];
                snprintf(f2, sizeof f2, "floors.%s", fk);
                st = spec_fail(path, f2, "unknown key (expected psnr, ssim)");
            }
            if (st != ADM_OK) goto done;
        }
    }
    arms = json_object_get(root, "arms");
    if (!json_is_object(arms) || json_object_size(arms) < 2) {
        st = spec_fail(path, "arms", "expected an object of at least two named arms");
        goto done;
    }
    /* how much the spec asks for, before any of it is read */
    if ((size_t)d->n_arms + json_object_size(arms) > ADM_DRIFT_MAX_ARMS) {
        char what[200];
        snprintf(what, sizeof what, "%zu arms, more than the %d a run may have (ADM_DRIFT_MAX_ARMS)",
                 json_object_size(arms), ADM_DRIFT_MAX_ARMS);
        st = spec_fail(path, "arms", what);
        goto done;
    }
    {
        static const char *const lists[] = {"control", "band", "compare"};
        size_t pairs = (size_t)d->n_pairs;
        for (int i = 0; i < 3; i++) {
            json_t *l = json_object_get(root, lists[i]);
            pairs += json_is_array(l) ? json_array_size(l) : 0;
            if (pairs > ADM_DRIFT_MAX_PAIRS) {
                char what[200];
                snprintf(what, sizeof what, "the spec's pairs pass the %d a run may have (ADM_DRIFT_MAX_PAIRS)",
                         ADM_DRIFT_MAX_PAIRS);
                st = spec_fail(path, lists[i], what);
                goto done;
            }
        }
    }
    if (!(dir = adm_strdup(path))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((slash = strrchr(dir, '/'))) *slash = '\0';
    else dir[0] = '\0';
    if (!(plans = calloc(json_object_size(arms), sizeof *plans))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        goto done;
    }
    {
        json_t *a;
        const char *name;
        json_object_foreach(arms, name, a) {
            char *joined, prefix[400], esc[300];
            const char *arm_layout;
            if ((st = check_name(name)) != ADM_OK) {
                adm_error_prefix("%s: field 'arms': ", path);
                goto done;
            }
            if ((st = spec_arm(path, dir, name, a, layout, &joined, &arm_layout)) != ADM_OK) goto done;
            adm_text_escape(esc, sizeof esc, path);
            snprintf(prefix, sizeof prefix, "%s: field 'arms.%s': ", esc, name);
            st = drift_plan_init(&plans[n_plans++], name, joined, arm_layout, prefix);
            free(joined);
            if (st != ADM_OK) goto done;
        }
    }
    if ((st = load_plans(d, plans, n_plans)) != ADM_OK) goto done;
    if ((v = json_object_get(root, "control")) && (st = spec_pairs(d, path, "control", v, ADM_DRIFT_CONTROL)) != ADM_OK)
        goto done;
    if ((v = json_object_get(root, "band")) && (st = spec_pairs(d, path, "band", v, ADM_DRIFT_BAND)) != ADM_OK)
        goto done;
    if ((v = json_object_get(root, "compare")) && (st = spec_pairs(d, path, "compare", v, ADM_DRIFT_TIER)) != ADM_OK)
        goto done;
    if (d->n_pairs == 0) st = spec_fail(path, "compare", "the spec names no pair (control, band or compare)");
done:
    for (int i = 0; i < n_plans; i++) drift_plan_free(&plans[i]);
    free(plans);
    free(dir);
    json_decref(root);
    return st;
}

/* ---------------------------------------------------------------- evaluation */

static double pair_range(const adm_drift *d, const adm_drift_pair *p, adm_status *st)
{
    const drift_arm *a = &d->arms[p->a], *b = &d->arms[p->b];
    *st = ADM_OK;
    if (d->data_range > 0) return d->data_range;
    if (!(a->img.data_range > 0))
        *st = ADM_FAIL(ADM_ERR_INVALID, "arm '%s' (%s) holds floats of no declared range: give --data-range, the spec's "
                       "data_range, or a 'data_range' attribute", a->name, a->img.source);
    else if (a->img.data_range != b->img.data_range)
        *st = ADM_FAIL(ADM_ERR_INVALID, "arms '%s' (range %g) and '%s' (range %g) differ in data range: give --data-range",
                       a->name, a->img.data_range, b->name, b->img.data_range);
    return a->img.data_range;
}

int adm_drift_arm_files(const adm_drift *d, int i, const char **source, const char **layout)
{
    if (i < 0 || i >= d->n_arms || !d->arms[i].from_files || !d->arms[i].img.source) return 0;
    *source = d->arms[i].img.source;
    *layout = d->arms[i].layout;
    return 1;
}

adm_status adm_drift_pair_range(const adm_drift *d, int i, double *range)
{
    adm_status st;
    *range = pair_range(d, &d->pairs[i], &st);
    if (st != ADM_OK) adm_error_prefix("pair '%s': ", d->pairs[i].name);
    return st;
}

/* The work the pairs ask for, before any of it is done. */
adm_status adm_drift_check_compared(const adm_drift *d)
{
    int64_t max_cmp, cmp = 0;
    ADM_TRY(env_limit("ADM_DRIFT_MAX_COMPARED", ADM_DRIFT_MAX_COMPARED_DEFAULT, &max_cmp));
    for (int i = 0; i < d->n_pairs; i++) {
        cmp += adm_image_numel(&d->arms[d->pairs[i].a].img);
        if (cmp > max_cmp)
            return ADM_FAIL(ADM_ERR_SHAPE, "pair '%s': the pairs up to this one compare %lld values, above the "
                            "limit of %lld (ADM_DRIFT_MAX_COMPARED)", d->pairs[i].name, (long long)cmp,
                            (long long)max_cmp);
    }
    return ADM_OK;
}

void adm_drift_set_metrics(adm_drift *d, int i, const adm_drift_metrics *m)
{
    if (i < 0 || i >= d->n_pairs) return;
    d->pairs[i].m = *m;
    d->pairs[i].given = 1;
    d->evaluated = 0;
}

ADM_FPENV_BODY
static adm_status drift_evaluate_body(adm_drift *d)
{
    d->is_video = d->video_set ? d->video : 0;
    if (!d->video_set)
        for (int i = 0; i < d->n_arms; i++) d->is_video |= d->arms[i].img.frames > 1;
    d->use_psnr = isnan(d->floor_psnr) ? (d->is_video ? ADM_DRIFT_VIDEO_PSNR : ADM_DRIFT_IMAGE_PSNR) : d->floor_psnr;
    d->use_ssim = isnan(d->floor_ssim) ? (d->is_video ? ADM_DRIFT_VIDEO_SSIM : ADM_DRIFT_IMAGE_SSIM) : d->floor_ssim;
    d->has_band = 0;
    d->band_psnr = INFINITY;
    d->band_ssim = 1;
    ADM_TRY(adm_drift_check_compared(d));
    for (int i = 0; i < d->n_pairs; i++) {
        adm_drift_pair *p = &d->pairs[i];
        adm_status st;
        double r = pair_range(d, p, &st);
        if (d->progress) d->progress(i + 1, d->n_pairs, p->name, d->progress_user);
        if (st != ADM_OK) {
            adm_error_prefix("pair '%s': ", p->name);
            return st;
        }
        /* metrics measured elsewhere (adm_drift_set_metrics) stand */
        if (!p->given && (st = adm_drift_compare(&d->arms[p->a].img, &d->arms[p->b].img, r, NULL, &p->m)) != ADM_OK) {
            adm_error_prefix("pair '%s': ", p->name);
            return st;
        }
        p->evaluated = 1;
        if (p->role == ADM_DRIFT_BAND) {
            d->has_band = 1;
            d->band_psnr = fmin(d->band_psnr, p->m.psnr);
            d->band_ssim = fmin(d->band_ssim, p->m.ssim);
        }
    }
    for (int i = 0; i < d->n_pairs; i++) {
        adm_drift_pair *p = &d->pairs[i];
        char fl[160] = "";
        int psnr_ok = p->m.psnr >= d->use_psnr, ssim_ok = p->m.ssim >= d->use_ssim;
        p->above_floors = psnr_ok && ssim_ok;
        /* a clause: which floor, by how much */
        if (!psnr_ok && !ssim_ok)
            snprintf(fl, sizeof fl, "below the floors, PSNR %.2f dB < %g dB and SSIM %.4f < %g", p->m.psnr, d->use_psnr,
                     p->m.ssim, d->use_ssim);
        else if (!psnr_ok)
            snprintf(fl, sizeof fl, "below the floors, PSNR %.2f dB < %g dB", p->m.psnr, d->use_psnr);
        else if (!ssim_ok)
            snprintf(fl, sizeof fl, "below the floors, SSIM %.4f < %g", p->m.ssim, d->use_ssim);
        p->margin = NAN;
        p->why[0] = '\0';
        switch (p->role) {
        case ADM_DRIFT_CONTROL:
            p->inside_band = 1;
            p->passed = p->m.identical;
            if (!p->passed)
                snprintf(p->why, sizeof p->why, "The control is not bit-identical (max |difference| %g): the runs are "
                         "not deterministic, so no drift below this is meaningful.", p->m.max_abs);
            break;
        case ADM_DRIFT_BAND:
            p->inside_band = 1;
            p->passed = 1;
            if (!p->above_floors)
                snprintf(p->why, sizeof p->why, "Note: the reference path itself is %s.", fl);
            break;
        case ADM_DRIFT_TIER:
            p->inside_band = !d->has_band || p->m.psnr >= d->band_psnr - d->band_tol;
            if (d->has_band) p->margin = p->m.psnr - (d->band_psnr - d->band_tol);
            if (p->claim == ADM_TIER_LOSSLESS) {
                p->passed = p->inside_band && p->above_floors;
                if (!p->inside_band)
                    snprintf(p->why, sizeof p->why, "It lies outside the band: %.2f dB, %.2f dB below the band's %.2f "
                             "dB%s.%s%s%s", p->m.psnr, -p->margin, d->band_psnr - d->band_tol,
                             d->band_tol > 0 ? " (with the tolerance)" : "", p->above_floors ? "" : " It is also ", fl,
                             p->above_floors ? "" : ".");
                else if (!p->above_floors)
                    snprintf(p->why, sizeof p->why, "It is %s.", fl);
                else if (!d->has_band)
                    snprintf(p->why, sizeof p->why, "Note: no band pair was given, so it is judged on the floors alone.");
                else if (p->m.psnr < d->band_psnr)
                    snprintf(p->why, sizeof p->why, "Note: %.2f dB below the band, within the tolerance of %.2f dB.",
                             d->band_psnr - p->m.psnr, d->band_tol);
            } else {
                p->passed = p->above_floors;
                if (!p->above_floors) snprintf(p->why, sizeof p->why, "It is %s.", fl);
                else if (!p->inside_band)
                    snprintf(p->why, sizeof p->why, "Note: at %.2f dB it lies %.2f dB below the band's %.2f dB, as a "
                             "high tier may: a high tier is judged on the floors alone.", p->m.psnr, -p->margin,
                             d->band_psnr - d->band_tol);
            }
            break;
        }
    }
    for (int i = 0; i < d->n_growth; i++) {
        adm_drift_growth *g = &d->growth[i];
        int ref = -1;
        for (int k = 0; k < d->n_growth; k++)
            if (d->growth[k].reference && !strcmp(d->growth[k].group, g->group)) ref = k;
        g->exponent = adm_drift_growth_exponent(g->n, g->depth, g->err);
        g->why[0] = '\0';
        g->passed = 1;
        g->excess = 0;
        g->ratio_last = NAN;
        if (ref < 0 || i == ref) continue;
        {
            const adm_drift_growth *r = &d->growth[ref];
            g->excess = g->exponent - adm_drift_growth_exponent(r->n, r->depth, r->err);
            if (g->n == r->n && r->err[r->n - 1] > 0) g->ratio_last = g->err[g->n - 1] / r->err[r->n - 1];
            if (d->growth_claim[i] == ADM_TIER_HIGH) {
                if (g->excess > ADM_DRIFT_GROWTH_SLACK)
                    snprintf(g->why, sizeof g->why, "Note: it compounds faster than the reference path (exponent "
                             "%+.2f), which is reported, not judged, for a high tier.", g->excess);
                continue;
            }
            if (!(g->excess <= ADM_DRIFT_GROWTH_SLACK)) {
                g->passed = 0;
                snprintf(g->why, sizeof g->why, "It compounds faster than the reference path: error ~ depth^%.2f "
                         "against depth^%.2f (excess %.2f > %.2f), as a biased rounding does.",
                         g->exponent, g->exponent - g->excess, g->excess, ADM_DRIFT_GROWTH_SLACK);
            }
        }
    }
    d->evaluated = 1;
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_drift_evaluate(adm_drift *d)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = drift_evaluate_body(d);
    adm_fpenv_leave(&fe);
    return rv;
}

double adm_drift_band_psnr(const adm_drift *d) { return d->band_psnr; }
double adm_drift_band_ssim(const adm_drift *d) { return d->band_ssim; }
int adm_drift_has_band(const adm_drift *d) { return d->has_band; }
int adm_drift_is_video(const adm_drift *d) { return d->is_video; }
void adm_drift_floors(const adm_drift *d, double *psnr, double *ssim)
{
    *psnr = d->use_psnr;
    *ssim = d->use_ssim;
}

int adm_drift_passed(const adm_drift *d)
{
    if (!d->evaluated) return 0;
    for (int i = 0; i < d->n_pairs; i++)
        if (!d->pairs[i].passed) return 0;
    for (int i = 0; i < d->n_growth; i++)
        if (!d->growth[i].passed) return 0;
    return 1;
}

/* ---------------------------------------------------------------- terminal and Markdown */

const char *drift_pair_verdict(const adm_drift *d, const adm_drift_pair *p)
{
    switch (p->role) {
    case ADM_DRIFT_CONTROL: return p->passed ? "bit-identical" : "FAIL: not identical";
    case ADM_DRIFT_BAND: return p->m.psnr == d->band_psnr ? "the band" : "band pair";
    case ADM_DRIFT_TIER:
        if (!p->passed) return p->inside_band ? "FAIL: below the floors" : "FAIL: outside the band";
        return p->inside_band ? "inside the band" : "outside the band (high: allowed)";
    }
    return "?";
}

/* Text from a spec, a history or the command line (titles, pair names,
 * notes) is printed through the one escaper (adm_text_escape): a control
 * character cannot move the cursor, clear the screen or start a line of
 * its own, so no name can forge a verdict line. */
static char *escaped(const char *s)
{
    size_t need = adm_text_escape(NULL, 0, s);
    char *b = malloc(need + 1);
    if (b) adm_text_escape(b, need + 1, s);
    return b;
}

static void put_text(FILE *f, const char *fmt, const char *s)
{
    char *e = escaped(s ? s : "");
    fprintf(f, fmt, e ? e : "(out of memory)");
    free(e);
}

static void header_line(const adm_drift *d, FILE *f)
{
    put_text(f, "%s\n", d->title);
    if (d->date || d->commit) {
        put_text(f, "date %s, ", d->date ? d->date : "-");
        put_text(f, "commit %s\n", d->commit ? d->commit : "-");
    }
}

void adm_drift_set_terminal(adm_drift *d, int width, int color)
{
    d->width = width > 0 ? width : 0;
    d->color = color != 0;
}

void adm_drift_set_progress(adm_drift *d, adm_drift_progress_fn fn, void *user)
{
    d->progress = fn;
    d->progress_user = user;
}

void adm_drift_summary_text(const adm_drift *d, int headline_only, char *buf, size_t n)
{
    int nc = 0, fc = 0, nt = 0, ft = 0, inside = 0, ng = 0, fg = 0;
    size_t used = 0;
#define PUT(...) (used += used < n ? (size_t)snprintf(buf + used, n - used, __VA_ARGS__) : 0)
    if (n == 0) return;
    buf[0] = '\0';
    for (int i = 0; i < d->n_pairs; i++) {
        const adm_drift_pair *p = &d->pairs[i];
        if (p->role == ADM_DRIFT_CONTROL) {
            nc++;
            fc += !p->passed;
        } else if (p->role == ADM_DRIFT_TIER) {
            nt++;
            ft += !p->passed;
            inside += p->inside_band;
        }
    }
    for (int i = 0; i < d->n_growth; i++) {
        if (d->growth[i].reference) continue;
        ng++;
        fg += !d->growth[i].passed;
    }
    if (headline_only) {
        if (!d->evaluated) PUT("not evaluated");
        else if (adm_drift_passed(d)) PUT("pass");
        else {
            PUT("FAIL:");
            if (fc) PUT(" %d of %d control%s not identical%s", fc, nc, nc == 1 ? "" : "s", ft || fg ? "," : "");
            if (ft) PUT(" %d of %d tier comparison%s failing%s", ft, nt, nt == 1 ? "" : "s", fg ? "," : "");
            if (fg) PUT(" %d of %d growth series compounding too fast", fg, ng);
        }
        return;
    }
    PUT("%d comparison%s: %d of %d tier comparison%s pass (%d inside the band)", d->n_pairs, d->n_pairs == 1 ? "" : "s",
        nt - ft, nt, nt == 1 ? "" : "s", inside);
    if (nc) PUT(", %d of %d control%s bit-identical", nc - fc, nc, nc == 1 ? " is" : "s are");
    if (ng) PUT("; %d of %d growth series compound no faster than the reference path", ng - fg, ng);
    PUT(". %s", adm_drift_passed(d) ? "Every check passes." : "The gate fails.");
#undef PUT
}

/* A dB figure for a cell: "inf dB", "54.42 dB", "+0.22 dB", "-" (NaN). */
static const char *db_cell(double x, int sign, char *buf, size_t n)
{
    if (isnan(x)) snprintf(buf, n, "-");
    else if (isinf(x)) snprintf(buf, n, "%sinf dB", x < 0 ? "-" : sign ? "+" : "");
    else snprintf(buf, n, sign ? "%+.2f dB" : "%.2f dB", x);
    return buf;
}

/* The verdict's colour: red only for a failure, green for a pass of a
 * control or a tier comparison, none for the rest (the band, a note). */
static const char *verdict_sgr(const adm_drift *d, const adm_drift_pair *p)
{
    if (!p->passed) return adm_sgr(d->color, ADM_SGR_RED);
    if (p->role == ADM_DRIFT_BAND || (p->role == ADM_DRIFT_TIER && !p->inside_band)) return "";
    return adm_sgr(d->color, ADM_SGR_GREEN);
}

#define PAIR_TAIL 61 /* claim .. max, with their spaces, and two before the verdict */

void adm_drift_print(const adm_drift *d, FILE *f)
{
    const int width = d->width ? d->width : ADM_REPORT_DEFAULT_WIDTH;
    char db[32], mg[32], bdb[32], t[1024];
    int wn = 10, wv = 7, one_line, wg = 5, wt = 4, g_one;
    header_line(d, f);
    for (int i = 0; i < d->n_pairs; i++) {
        char *e = escaped(d->pairs[i].name);
        if (e && adm_text_cols(e) > wn) wn = adm_text_cols(e);
        free(e);
        if ((int)strlen(drift_pair_verdict(d, &d->pairs[i])) > wv) wv = (int)strlen(drift_pair_verdict(d, &d->pairs[i]));
    }
    /* one line a pair when it fits, else the name on a line of its own:
     * a name is never cut */
    one_line = wn + PAIR_TAIL + wv <= width;
    if (one_line) adm_text_pad(f, "comparison", wn);
    else fputs("comparison\n   ", f);
    fprintf(f, " %-8s %9s %9s %8s %10s %9s  %s\n", "claim", "PSNR", "margin", "SSIM", "MAD", "max", "verdict");
    for (int i = 0; i < d->n_pairs; i++) {
        const adm_drift_pair *p = &d->pairs[i];
        const char *sgr = verdict_sgr(d, p);
        char *e = escaped(p->name);
        if (one_line) adm_text_pad(f, e ? e : "(out of memory)", wn);
        else fprintf(f, "%s\n   ", e ? e : "(out of memory)");
        free(e);
        fprintf(f, " %-8s %9s %9s %8.6f %10.4g %9.4g  %s%s%s\n",
                p->role == ADM_DRIFT_TIER ? adm_tier_name(p->claim) : adm_drift_role_name(p->role),
                db_cell(p->m.psnr, 0, db, sizeof db), db_cell(p->margin, 1, mg, sizeof mg), p->m.ssim, p->m.mad,
                p->m.max_abs, sgr, drift_pair_verdict(d, p), *sgr ? ADM_SGR_RESET : "");
        if (p->why[0]) {
            char *w = escaped(p->why);
            adm_text_wrap(f, "   ", 4, width, w ? w : "(out of memory)");
            free(w);
        }
    }
    if (d->has_band)
        fprintf(f, "band: %s dB (SSIM %.6f); ", drift_db(d->band_psnr, bdb, sizeof bdb), d->band_ssim);
    else
        fprintf(f, "no band pair; ");
    if (d->band_tol > 0) fprintf(f, "band tolerance %.2f dB; ", d->band_tol);
    fprintf(f, "floors: PSNR %g dB, SSIM %g (%s); margin: PSNR above the band's edge\n", d->use_psnr, d->use_ssim,
            d->is_video ? "video" : "image");
    if (d->n_growth) {
        for (int i = 0; i < d->n_growth; i++) {
            char *a = escaped(d->growth[i].group), *b = escaped(d->growth[i].name);
            if (a && adm_text_cols(a) > wg) wg = adm_text_cols(a);
            if (b && adm_text_cols(b) > wt) wt = adm_text_cols(b);
            free(a);
            free(b);
        }
        g_one = wg + 1 + wt + 8 * 2 + 13 * 2 + 2 + 9 <= width;
        fprintf(f, "\nerror growth with depth against the fp64 run (relative RMS error ~ depth^a):\n");
        if (g_one) {
            adm_text_pad(f, "depth", wg);
            fputc(' ', f);
            adm_text_pad(f, "tier", wt);
        } else {
            fputs("depth  tier\n   ", f);
        }
        fprintf(f, " %8s %8s %12s %12s  %s\n", "a", "excess", "err (last)", "x reference", "verdict");
        for (int i = 0; i < d->n_growth; i++) {
            const adm_drift_growth *g = &d->growth[i];
            char *a = escaped(g->group), *b = escaped(g->name), xr[32];
            const char *sgr = !g->passed ? adm_sgr(d->color, ADM_SGR_RED) : g->reference ? "" : adm_sgr(d->color, ADM_SGR_GREEN);
            if (g_one) {
                adm_text_pad(f, a ? a : "?", wg);
                fputc(' ', f);
                adm_text_pad(f, b ? b : "?", wt);
            } else {
                fprintf(f, "%s  %s\n   ", a ? a : "?", b ? b : "?");
            }
            free(a);
            free(b);
            if (isfinite(g->ratio_last)) snprintf(xr, sizeof xr, "%.3g", g->ratio_last);
            else snprintf(xr, sizeof xr, "-");
            fprintf(f, " %8.3f %+8.3f %12.3g %12s  %s%s%s\n", g->exponent, g->excess, g->err[g->n - 1], xr, sgr,
                    g->reference ? "reference" : g->passed ? "pass" : "FAIL", *sgr ? ADM_SGR_RESET : "");
            if (g->why[0]) {
                char *w = escaped(g->why);
                adm_text_wrap(f, "   ", 4, width, w ? w : "(out of memory)");
                free(w);
            }
        }
    }
    if (d->n_notes) fputc('\n', f);
    for (int i = 0; i < d->n_notes; i++) {
        char *e = escaped(d->notes[i]);
        adm_text_wrap(f, "-", 2, width, e ? e : "(out of memory)");
        free(e);
    }
    adm_drift_summary_text(d, 0, t, sizeof t);
    fputc('\n', f);
    adm_text_wrap(f, "summary:", 9, width, t);
    fprintf(f, "verdict: %s%s%s\n", adm_sgr(d->color, adm_drift_passed(d) ? ADM_SGR_GREEN : ADM_SGR_RED),
            adm_drift_passed(d) ? "pass" : "FAIL", adm_sgr(d->color, ADM_SGR_RESET));
}

/* Markdown: escaped as on the terminal, then every character Markdown
 * reads as markup backslashed, so that a name cannot end a table cell
 * ('|'), start a line, or turn into a link, code or HTML. */
static void put_md(FILE *f, const char *s)
{
    char *e = escaped(s ? s : "");
    if (!e) {
        fputs("(out of memory)", f);
        return;
    }
    for (const char *p = e; *p; p++) {
        if (strchr("\\|`*_[]<>#!~&", *p)) fputc('\\', f);
        fputc(*p, f);
    }
    free(e);
}

void adm_drift_print_markdown(const adm_drift *d, FILE *f)
{
    char db[32], mg[32], t[1024];
    int whys = 0;
    fputs("### ", f);
    put_md(f, d->title);
    fputs("\n\n", f);
    if (d->date || d->commit) {
        fputs("date ", f);
        put_md(f, d->date ? d->date : "-");
        fputs(", commit ", f);
        put_md(f, d->commit ? d->commit : "-");
        fputs("\n\n", f);
    }
    adm_drift_summary_text(d, 1, t, sizeof t);
    fprintf(f, "**Verdict: %s**. ", t);
    adm_drift_summary_text(d, 0, t, sizeof t);
    fprintf(f, "%s\n\n", t);
    fprintf(f, "| comparison | claim | PSNR (dB) | margin (dB) | SSIM | MAD | verdict |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < d->n_pairs; i++) {
        const adm_drift_pair *p = &d->pairs[i];
        fputs("| ", f);
        put_md(f, p->name);
        if (isnan(p->margin)) snprintf(mg, sizeof mg, "-");
        else snprintf(mg, sizeof mg, "%+.2f", p->margin);
        fprintf(f, " | %s | %s | %s | %.6f | %.4g | %s%s |\n",
                p->role == ADM_DRIFT_TIER ? adm_tier_name(p->claim) : adm_drift_role_name(p->role),
                drift_db(p->m.psnr, db, sizeof db), mg, p->m.ssim, p->m.mad, drift_pair_verdict(d, p), p->why[0] ? " (*)" : "");
        whys += p->why[0] != '\0';
    }
    fprintf(f, "\n");
    if (d->has_band) fprintf(f, "Band: **%s dB** (SSIM %.6f). ", drift_db(d->band_psnr, db, sizeof db), d->band_ssim);
    if (d->band_tol > 0) fprintf(f, "Band tolerance: %.2f dB. ", d->band_tol);
    fprintf(f, "Floors: PSNR %g dB, SSIM %g (%s). The margin is the PSNR above the band's edge.\n\n", d->use_psnr,
            d->use_ssim, d->is_video ? "video" : "image");
    if (whys) {
        fputs("(*) Why:\n\n", f);
        for (int i = 0; i < d->n_pairs; i++) {
            if (!d->pairs[i].why[0]) continue;
            fputs("- ", f);
            put_md(f, d->pairs[i].name);
            fputs(": ", f);
            put_md(f, d->pairs[i].why);
            fputc('\n', f);
        }
        fputc('\n', f);
    }
    if (d->n_growth) {
        fprintf(f, "| depth | tier | growth exponent | excess | error at the last depth | x reference | verdict |\n"
                   "|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < d->n_growth; i++) {
            const adm_drift_growth *g = &d->growth[i];
            char xr[32];
            if (isfinite(g->ratio_last)) snprintf(xr, sizeof xr, "%.3g", g->ratio_last);
            else snprintf(xr, sizeof xr, "-");
            fputs("| ", f);
            put_md(f, g->group);
            fputs(" | ", f);
            put_md(f, g->name);
            fprintf(f, " | %.3f | %+.3f | %.3g | %s | %s |\n", g->exponent, g->excess, g->err[g->n - 1], xr,
                    g->reference ? "reference" : g->passed ? "pass" : "FAIL");
        }
        fprintf(f, "\n");
        int any = 0;
        for (int i = 0; i < d->n_growth; i++) {
            if (!d->growth[i].why[0]) continue;
            if (!any++) fputs("Why:\n\n", f);
            fputs("- ", f);
            put_md(f, d->growth[i].group);
            fputs(", ", f);
            put_md(f, d->growth[i].name);
            fputs(": ", f);
            put_md(f, d->growth[i].why);
            fputc('\n', f);
        }
        if (any) fputc('\n', f);
    }
    for (int i = 0; i < d->n_notes; i++) {
        fputs("- ", f);
        put_md(f, d->notes[i]);
        fputc('\n', f);
    }
    fprintf(f, "%s**Verdict: %s**\n", d->n_notes ? "\n" : "", adm_drift_passed(d) ? "pass" : "FAIL");
}

/* ---------------------------------------------------------------- JSON and the history */

/* +Inf as "inf" (identical arms), other non-finite values as null. */
static json_t *num(double x)
{
    if (isinf(x) && x > 0) return json_string("inf");
    return isfinite(x) ? json_real(x) : json_null();
}

/* A JSON string for any text: jansson refuses malformed UTF-8 (a title
 * from the command line may hold it), which then goes in escaped. */
static json_t *jstr(const char *s)
{
    json_t *j = json_string(s ? s : "");
    char *e;
    if (j) return j;
    if (!(e = escaped(s))) return NULL;
    j = json_string(e);
    free(e);
    return j;
}

static json_t *to_json(const adm_drift *d, int with_series)
{
    json_t *root = json_object(), *arms = json_array(), *pairs = json_array(), *growth = json_array(),
           *notes = json_array();
    json_object_set_new(root, "admit_drift", json_integer(1));
    json_object_set_new(root, "title", jstr(d->title));
    json_object_set_new(root, "date", d->date ? jstr(d->date) : json_null());
    json_object_set_new(root, "commit", d->commit ? jstr(d->commit) : json_null());
    json_object_set_new(root, "kind", json_string(d->is_video ? "video" : "image"));
    json_object_set_new(root, "floors", json_pack("{s:o,s:o}", "psnr", num(d->use_psnr), "ssim", num(d->use_ssim)));
    json_object_set_new(root, "band", d->has_band ? json_pack("{s:o,s:o,s:o}", "psnr", num(d->band_psnr), "ssim",
                                                               num(d->band_ssim), "tolerance", num(d->band_tol))
                                                  : json_null());
    for (int i = 0; i < d->n_arms; i++) {
        const drift_arm *a = &d->arms[i];
        json_array_append_new(arms, json_pack("{s:s,s:o,s:I,s:I,s:I,s:I,s:o}", "name", a->name, "source",
                                              jstr(a->img.source), "frames", (json_int_t)a->img.frames,
                                              "height", (json_int_t)a->img.height, "width", (json_int_t)a->img.width,
                                              "channels", (json_int_t)a->img.channels, "data_range",
                                              num(a->img.data_range)));
    }
    for (int i = 0; i < d->n_pairs; i++) {
        const adm_drift_pair *p = &d->pairs[i];
        json_array_append_new(pairs, json_pack("{s:o,s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:b,s:b,s:b,s:b,s:s}",
                                               "name", jstr(p->name), "role", adm_drift_role_name(p->role), "claim",
                                               adm_tier_name(p->claim), "a", d->arms[p->a].name, "b",
                                               d->arms[p->b].name, "psnr", num(p->m.psnr), "ssim", num(p->m.ssim),
                                               "mad", num(p->m.mad), "mse", num(p->m.mse), "max_abs",
                                               num(p->m.max_abs), "data_range", num(p->m.data_range), "identical",
                                               p->m.identical, "inside_band", p->inside_band, "above_floors",
                                               p->above_floors, "passed", p->passed, "why", p->why));
        json_object_set_new(json_array_get(pairs, json_array_size(pairs) - 1), "band_margin", num(p->margin));
    }
    for (int i = 0; i < d->n_growth; i++) {
        const adm_drift_growth *g = &d->growth[i];
        json_t *o = json_pack("{s:o,s:o,s:b,s:s,s:o,s:o,s:o,s:b,s:s}", "group", jstr(g->group), "name", jstr(g->name),
                              "reference", g->reference, "claim",
                              adm_tier_name(d->growth_claim[i]), "exponent", num(g->exponent), "excess",
                              num(g->excess), "ratio_last", num(g->ratio_last), "passed", g->passed, "why", g->why);
        if (with_series) {
            json_t *dep = json_array(), *err = json_array();
            for (int k = 0; k < g->n; k++) {
                json_array_append_new(dep, num(g->depth[k]));
                json_array_append_new(err, num(g->err[k]));
            }
            json_object_set_new(o, "depth", dep);
            json_object_set_new(o, "err", err);
        }
        json_array_append_new(growth, o);
    }
    for (int i = 0; i < d->n_notes; i++) json_array_append_new(notes, jstr(d->notes[i]));
    json_object_set_new(root, "arms", arms);
    json_object_set_new(root, "pairs", pairs);
    json_object_set_new(root, "growth", growth);
    json_object_set_new(root, "notes", notes);
    json_object_set_new(root, "passed", json_boolean(adm_drift_passed(d)));
    if (with_series) {
        char text[1024], head[256];
        adm_drift_summary_text(d, 1, head, sizeof head);
        adm_drift_summary_text(d, 0, text, sizeof text);
        json_object_set_new(root, "summary", json_pack("{s:s,s:s}", "headline", head, "text", text));
    }
    return root;
}

json_t *drift_row_json(const adm_drift *d) { return to_json(d, 0); }

/* Every non-empty line of a history's text must be a JSON object with a
 * "date" and "pairs"; the rows are appended to rows when it is not NULL. */
static adm_status history_parse(const char *path, const char *text, size_t len, json_t *rows)
{
    size_t pos = 0;
    int lineno = 0;
    while (pos < len) {
        size_t end = pos, n;
        json_error_t je;
        json_t *o;
        while (end < len && text[end] != '\n') end++;
        lineno++;
        n = end - pos;
        while (n > 0 && (text[pos + n - 1] == '\r' || text[pos + n - 1] == ' ')) n--;
        if (n > 0) {
            o = json_loadb(text + pos, n, JSON_REJECT_DUPLICATES, &je);
            if (!o || !json_is_object(o) || !json_is_string(json_object_get(o, "date")) ||
                !json_is_array(json_object_get(o, "pairs"))) {
                adm_status st = ADM_FAIL(ADM_ERR_FORMAT, "%s: line %d: %s", path, lineno,
                                         !o ? je.text : "not a drift history row (an object with 'date' and 'pairs')");
                json_decref(o);
                return st;
            }
            if (rows) json_array_append_new(rows, o);
            else json_decref(o);
        }
        pos = end + 1;
    }
    return ADM_OK;
}

/* Reads a history file whole (at most ADM_DRIFT_HISTORY_MAX_BYTES, only a
 * regular file): an empty list when it does not exist yet. */
adm_status adm_drift_history_read(const char *path, json_t **rows)
{
    char *text;
    size_t len;
    adm_status st;
    *rows = NULL;
    ADM_TRY(read_text_file(path, "a drift history", ADM_DRIFT_HISTORY_MAX_BYTES, 1, &text, &len));
    if (!(*rows = json_array())) {
        free(text);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    st = text ? history_parse(path, text, len, *rows) : ADM_OK;
    free(text);
    if (st != ADM_OK) {
        json_decref(*rows);
        *rows = NULL;
    }
    return st;
}

/* The history with tonight's row appended, as text (the old one checked
 * line by line); with rows, its rows too. */
static adm_status history_render(const adm_drift *d, const char *path, char **out, size_t *outlen, json_t **rows)
{
    char *old = NULL, *row;
    size_t oldn = 0;
    adm_buf b = {0};
    adm_status st;
    json_t *r;
    *out = NULL;
    if (rows) *rows = NULL;
    ADM_TRY(read_text_file(path, "a drift history", ADM_DRIFT_HISTORY_MAX_BYTES, 1, &old, &oldn));
    if (rows && !(*rows = json_array())) {
        free(old);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    if (old && (st = history_parse(path, old, oldn, rows ? *rows : NULL)) != ADM_OK) {
        free(old);
        if (rows) {
            json_decref(*rows);
            *rows = NULL;
        }
        return st;
    }
    r = to_json(d, 0);
    row = r ? json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    if (rows && r) json_array_append(*rows, r);
    json_decref(r);
    if (oldn) {
        adm_buf_put(&b, old, oldn);
        if (old[oldn - 1] != '\n') adm_buf_puts(&b, "\n");
    }
    if (row) {
        adm_buf_puts(&b, row);
        adm_buf_puts(&b, "\n");
    }
    free(old);
    free(row);
    if (!row || b.oom || (int64_t)b.n > ADM_DRIFT_HISTORY_MAX_BYTES) {
        free(b.p);
        if (rows) {
            json_decref(*rows);
            *rows = NULL;
        }
        if (!row || b.oom) return ADM_FAIL(ADM_ERR_NOMEM, "%s: out of memory", path);
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: tonight's row would take the history past its %lld bytes (start a new "
                        "history file)", path, (long long)ADM_DRIFT_HISTORY_MAX_BYTES);
    }
    *out = b.p;
    *outlen = b.n;
    return ADM_OK;
}

/* ---------------------------------------------------------------- writing, all or nothing */

adm_status drift_stage_add(drift_stages *s, const char *path, char *tmp)
{
    if (s->n == s->cap) {
        int c = s->cap ? 2 * s->cap : 8;
        drift_stage *v = realloc(s->v, sizeof *v * (size_t)c);
        if (!v) {
            unlink(tmp);
            free(tmp);
            return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        }
        s->v = v;
        s->cap = c;
    }
    s->v[s->n].tmp = tmp;
    s->v[s->n].renamed = 0;
    if (!(s->v[s->n].path = adm_strdup(path))) {
        unlink(tmp);
        free(tmp);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    s->n++;
    return ADM_OK;
}

adm_status drift_stage_text(drift_stages *s, const char *path, const char *text, size_t len)
{
    char *tmp;
    int fd;
    FILE *f;
    adm_status st = ADM_OK;
    ADM_TRY(adm_temp_beside(path, &tmp, &fd));
    f = fdopen(fd, "wb");
    if (!f || fwrite(text, 1, len, f) != len) st = ADM_FAIL(ADM_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (f && fclose(f) != 0 && st == ADM_OK) st = ADM_FAIL(ADM_ERR_IO, "%s: cannot finish writing", path);
    if (!f) close(fd);
    if (st != ADM_OK) {
        unlink(tmp);
        free(tmp);
        return st;
    }
    return drift_stage_add(s, path, tmp);
}

adm_status drift_stage_dir(drift_stages *s, const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) return ADM_FAIL(ADM_ERR_IO, "%s: the report folder exists and is not a folder", dir);
        return ADM_OK;
    }
    if (mkdir(dir, 0777) != 0) return ADM_FAIL(ADM_ERR_IO, "%s: cannot create the report folder: %s", dir, strerror(errno));
    free(s->made_dir);
    if (!(s->made_dir = adm_strdup(dir))) {
        rmdir(dir);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    return ADM_OK;
}

/* Takes back what was staged or moved into place, and a folder made for it. */
void drift_stages_undo(drift_stages *s)
{
    for (int i = 0; i < s->n; i++) unlink(s->v[i].renamed ? s->v[i].path : s->v[i].tmp);
    if (s->made_dir) rmdir(s->made_dir);
}

void drift_stages_free(drift_stages *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->v[i].path);
        free(s->v[i].tmp);
    }
    free(s->v);
    free(s->made_dir);
    memset(s, 0, sizeof *s);
}

/* Moves every staged file into place in order; when one cannot be moved,
 * those already moved are taken back (so the last, the history, is only
 * moved when everything else is in place). */
adm_status drift_stages_commit(drift_stages *s)
{
    for (int i = 0; i < s->n; i++) {
        if (rename(s->v[i].tmp, s->v[i].path) != 0) {
            adm_status st = ADM_FAIL(ADM_ERR_IO, "%s: cannot move the report into place: %s", s->v[i].path,
                                     strerror(errno));
            drift_stages_undo(s);
            return st;
        }
        s->v[i].renamed = 1;
    }
    return ADM_OK;
}

adm_status adm_drift_write_all(const adm_drift *d, const char *json, const char *history, const char *html_dir)
{
    drift_stages sg;
    char *htext = NULL, *jtext = NULL;
    size_t hlen = 0;
    json_t *rows = NULL;
    adm_status st = ADM_OK;
    memset(&sg, 0, sizeof sg);
    if (!d->evaluated && (history || html_dir)) return ADM_FAIL(ADM_ERR_INVALID, "the drift report is not evaluated");
    /* the history first: a malformed one stops everything before any file
     * is written; it is moved into place last */
    if (history) ADM_TRY(history_render(d, history, &htext, &hlen, html_dir ? &rows : NULL));
    if (json) {
        json_t *root = to_json(d, 1);
        jtext = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
        json_decref(root);
        st = jtext ? drift_stage_text(&sg, json, jtext, strlen(jtext)) : ADM_FAIL(ADM_ERR_NOMEM, "drift JSON: out of memory");
    }
    if (st == ADM_OK && html_dir) st = drift_html_stage(d, html_dir, rows, history != NULL, &sg);
    if (st == ADM_OK && history) st = drift_stage_text(&sg, history, htext, hlen);
    if (st == ADM_OK) st = drift_stages_commit(&sg);
    else drift_stages_undo(&sg);
    drift_stages_free(&sg);
    json_decref(rows);
    free(htext);
    free(jtext);
    return st;
}

adm_status adm_drift_write_json(const adm_drift *d, const char *path) { return adm_drift_write_all(d, path, NULL, NULL); }

adm_status adm_drift_history_append(const adm_drift *d, const char *path)
{
    return adm_drift_write_all(d, NULL, path, NULL);
}
