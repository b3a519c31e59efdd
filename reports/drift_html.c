/* The drift report as a page: the table, PSNR per comparison over nights
 * with the band shaded (inline SVG), the arms' images beside a heat map of
 * their difference (PNG files through libpng), and the error growth with
 * depth (inline SVG, log-log). */
#include "drift_internal.h"
#include "adm_report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                      "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
#define N_PALETTE ((int)(sizeof palette / sizeof palette[0]))

/* ---------------------------------------------------------------- heat maps */

/* An 'inferno'-like ramp through five anchors: black, purple, red, orange,
 * pale yellow; t in [0, 1]. */
static void ramp(double t, double rgb[3])
{
    static const double a[5][3] = {{0, 0, 4}, {87, 16, 110}, {188, 55, 84}, {249, 142, 9}, {252, 255, 164}};
    double x = t <= 0 ? 0 : t >= 1 ? 4 : 4 * t;
    int k = (int)x;
    if (k > 3) k = 3;
    x -= k;
    for (int c = 0; c < 3; c++) rgb[c] = a[k][c] + (a[k + 1][c] - a[k][c]) * x;
}

/* |a - b| of frame 0, the largest over channels, as an RGB image scaled
 * so that `top` is the brightest colour. */
static adm_status heat_map(const adm_image *a, const adm_image *b, double top, adm_image *out)
{
    int64_t H = a->height, W = a->width, C = a->channels;
    ADM_TRY(adm_image_alloc(out, 1, H, W, 3));
    for (int64_t i = 0; i < H * W; i++) {
        double m = 0, rgb[3];
        for (int64_t c = 0; c < C; c++) m = fmax(m, fabs(a->data[i * C + c] - b->data[i * C + c]));
        ramp(top > 0 ? m / top : 0, rgb);
        for (int c = 0; c < 3; c++) out->data[i * 3 + c] = rgb[c];
    }
    return ADM_OK;
}

/* The value span an arm is shown in: [0, range] for integer data, else
 * its own min and max. */
static void display_span(const adm_image *img, double *lo, double *hi)
{
    int64_t n = adm_image_numel(img);
    if (img->data_range > 0 && img->data_range == floor(img->data_range)) {
        int integral = 1;
        for (int64_t i = 0; i < n && integral; i++) integral = img->data[i] >= 0 && img->data[i] == floor(img->data[i]);
        if (integral) {
            *lo = 0;
            *hi = img->data_range;
            return;
        }
    }
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        *lo = fmin(*lo, img->data[i]);
        *hi = fmax(*hi, img->data[i]);
    }
    if (!(*hi > *lo)) *hi = *lo + 1;
}

/* ---------------------------------------------------------------- PSNR over nights */

typedef struct night_series {
    const char *name;
    double *y;   /* per night; NAN where the comparison is absent */
} night_series;

static double row_psnr(json_t *v)
{
    if (json_is_string(v) && !strcmp(json_string_value(v), "inf")) return INFINITY;
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void svg_history(adm_buf *b, const adm_drift *d, json_t *rows)
{
    const int W = 1000, H = 340, L = 60, R = 340, T = 20, B = 50;
    const int pw = W - L - R, ph = H - T - B;
    size_t nn = json_array_size(rows), i;
    int ns = 0;
    night_series s[32];
    double *band = calloc(nn ? nn : 1, sizeof *band), lo = INFINITY, hi = -INFINITY;
    json_t *row;
    if (!band) {
        b->oom = 1;
        return;
    }
    /* the tier comparisons by name, in order of first appearance */
    json_array_foreach(rows, i, row) {
        size_t k;
        json_t *p, *bd = json_object_get(row, "band");
        band[i] = json_is_object(bd) ? row_psnr(json_object_get(bd, "psnr")) : NAN;
        if (json_is_object(bd) && json_is_number(json_object_get(bd, "tolerance")))
            band[i] -= json_number_value(json_object_get(bd, "tolerance"));
        json_array_foreach(json_object_get(row, "pairs"), k, p) {
            const char *name = json_string_value(json_object_get(p, "name"));
            const char *role = json_string_value(json_object_get(p, "role"));
            int j;
            double y = row_psnr(json_object_get(p, "psnr"));
            if (!name || !role || strcmp(role, "tier")) continue;
            for (j = 0; j < ns; j++)
                if (!strcmp(s[j].name, name)) break;
            if (j == ns) {
                if (ns == 32) continue;
                s[ns].name = name;
                s[ns].y = malloc(sizeof(double) * nn);
                if (!s[ns].y) {
                    b->oom = 1;
                    goto out;
                }
                for (size_t q = 0; q < nn; q++) s[ns].y[q] = NAN;
                ns++;
            }
            s[j].y[i] = y;
        }
    }
    for (size_t q = 0; q < nn; q++) {
        if (isfinite(band[q])) {
            lo = fmin(lo, band[q]);
            hi = fmax(hi, band[q]);
        }
        for (int j = 0; j < ns; j++)
            if (isfinite(s[j].y[q])) {
                lo = fmin(lo, s[j].y[q]);
                hi = fmax(hi, s[j].y[q]);
            }
    }
    lo = fmin(lo, d->use_psnr);
    hi = fmax(hi, d->use_psnr);
    lo = floor((lo - 2) / 5) * 5;
    hi = ceil((hi + 4) / 5) * 5;
    {
#define X(q) (L + (nn > 1 ? (double)(q) * pw / (double)(nn - 1) : pw / 2.0))
#define Y(v) (T + ph - ((isinf(v) ? hi : (v)) - lo) * ph / (hi - lo))
        adm_buf_printf(b, "<svg class=\"plot\" width=\"%d\" height=\"%d\" role=\"img\" viewBox=\"0 0 %d %d\">"
                     "<title>PSNR per comparison over nights; the band shaded</title>\n", W, H, W, H);
        adm_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#888\"/>\n", L, T, pw,
                     ph);
        /* the band: the region of PSNR at least the band's (inside it) */
        {
            int any = 0;
            for (size_t q = 0; q < nn; q++) any |= isfinite(band[q]) || isinf(band[q]);
            if (any) {
                adm_buf_printf(b, "<polygon fill=\"#cfe8cf\" stroke=\"#5a9a5a\" stroke-width=\"1.5\" points=\"");
                if (nn == 1) {
                    adm_buf_printf(b, "%d,%.1f %d,%.1f %d,%d %d,%d", L, Y(band[0]), L + pw, Y(band[0]), L + pw, T, L, T);
                } else {
                    for (size_t q = 0; q < nn; q++)
                        adm_buf_printf(b, "%.1f,%.1f ", X(q), Y(isnan(band[q]) ? hi : band[q]));
                    adm_buf_printf(b, "%.1f,%d %.1f,%d", X(nn - 1), T, X(0), T);
                }
                adm_buf_printf(b, "\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#3a7a3a\">inside the TP1/TP2 band"
                             "</text>\n", L + 6, T + 14);
            }
        }
        /* grid and the y axis */
        for (double v = lo; v <= hi + 1e-9; v += 5) {
            adm_buf_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                         "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
                         L, L + pw, Y(v), Y(v), L - 6, Y(v) + 4, v);
        }
        adm_buf_printf(b, "<text x=\"14\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">"
                     "PSNR (dB), higher is closer</text>\n", T + ph / 2, T + ph / 2);
        /* the floor */
        adm_buf_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" stroke-dasharray=\"6 4\"/>"
                     "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"#c00\" text-anchor=\"end\">floor %g dB</text>\n",
                     L, L + pw, Y(d->use_psnr), Y(d->use_psnr), L + pw - 4, Y(d->use_psnr) - 4, d->use_psnr);
        /* nights on the x axis: at most about 10 labels */
        {
            size_t step = nn > 10 ? (nn + 9) / 10 : 1;
            json_array_foreach(rows, i, row) {
                const char *date = json_string_value(json_object_get(row, "date"));
                if (i % step && i != nn - 1) continue;
                adm_buf_printf(b, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">", X(i), T + ph + 16);
                adm_buf_xml(b, date ? date : "?");
                adm_buf_puts(b, "</text>\n");
            }
            adm_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">night</text>\n", L + pw / 2,
                         T + ph + 36);
        }
        /* the comparisons */
        for (int j = 0; j < ns; j++) {
            const char *col = palette[j % N_PALETTE];
            int open = 0;
            for (size_t q = 0; q < nn; q++) {
                if (isnan(s[j].y[q])) {
                    if (open) adm_buf_puts(b, "\"/>\n");
                    open = 0;
                    continue;
                }
                if (!open) adm_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
                adm_buf_printf(b, "%.1f,%.1f ", X(q), Y(s[j].y[q]));
                open = 1;
            }
            if (open) adm_buf_puts(b, "\"/>\n");
            for (size_t q = 0; q < nn; q++) {
                if (isnan(s[j].y[q])) continue;
                if (isinf(s[j].y[q]))
                    adm_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#fff\" stroke=\"%s\" stroke-width=\"2\">"
                                 "<title>identical (PSNR inf)</title></circle>\n", X(q), Y(s[j].y[q]), col);
                else
                    adm_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>%.2f dB</title></circle>\n",
                                 X(q), Y(s[j].y[q]), col, s[j].y[q]);
            }
            adm_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
                         "font-size=\"12\">", L + pw + 14, T + 10 + 20 * j, col, L + pw + 34, T + 15 + 20 * j);
            adm_buf_xml(b, s[j].name);
            adm_buf_puts(b, "</text>\n");
        }
        adm_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"#cfe8cf\" stroke=\"#5a9a5a\"/>"
                     "<text x=\"%d\" y=\"%d\" font-size=\"12\">the band (TP1 vs TP2) and above</text>\n",
                     L + pw + 14, T + 4 + 20 * ns, L + pw + 34, T + 13 + 20 * ns);
        adm_buf_puts(b, "</svg>\n");
#undef X
#undef Y
    }
out:
    for (int j = 0; j < ns; j++) free(s[j].y);
    free(band);
}

/* ---------------------------------------------------------------- growth with depth */

static void svg_growth(adm_buf *b, const adm_drift *d, const char *group)
{
    const int W = 1000, H = 380, L = 70, R = 340, T = 20, B = 50;
    const int pw = W - L - R, ph = H - T - B;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    const adm_drift_growth *ref = NULL;
    for (int i = 0; i < d->n_growth; i++) {
        const adm_drift_growth *g = &d->growth[i];
        if (strcmp(g->group, group)) continue;
        if (g->reference) ref = g;
        for (int k = 0; k < g->n; k++)
            if (g->depth[k] > 0 && g->err[k] > 0 && isfinite(g->err[k])) {
                xlo = fmin(xlo, g->depth[k]);
                xhi = fmax(xhi, g->depth[k]);
                ylo = fmin(ylo, g->err[k]);
                yhi = fmax(yhi, g->err[k]);
            }
    }
    if (!(xhi > 0) || !(yhi > 0)) return;
    if (!(xhi > xlo)) xhi = xlo * 2;
    ylo = pow(10, floor(log10(ylo)));
    yhi = pow(10, ceil(log10(yhi)));
    if (!(yhi > ylo)) yhi = ylo * 10;
    {
#define GX(v) (L + (log10(v) - log10(xlo)) * pw / (log10(xhi) - log10(xlo)))
#define GY(v) (T + ph - (log10(v) - log10(ylo)) * ph / (log10(yhi) - log10(ylo)))
        adm_buf_printf(b, "<svg class=\"plot\" width=\"%d\" height=\"%d\" role=\"img\" viewBox=\"0 0 %d %d\">"
                     "<title>relative RMS error against the fp64 run, by depth (log-log)</title>\n", W, H, W, H);
        adm_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#888\"/>\n", L, T, pw,
                     ph);
        for (double v = ylo; v <= yhi * 1.0001; v *= 10)
            adm_buf_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" "
                         "font-size=\"11\" text-anchor=\"end\">1e%d</text>\n",
                         L, L + pw, GY(v), GY(v), L - 6, GY(v) + 4, (int)lround(log10(v)));
        {
            static const double ticks[] = {1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000};
            for (size_t k = 0; k < sizeof ticks / sizeof ticks[0]; k++)
                if (ticks[k] >= xlo && ticks[k] <= xhi)
                    adm_buf_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#eee\"/><text x=\"%.1f\" "
                                 "y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
                                 GX(ticks[k]), GX(ticks[k]), T, T + ph, GX(ticks[k]), T + ph + 16, ticks[k]);
        }
        adm_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">depth: ", L + pw / 2,
                     T + ph + 36);
        adm_buf_xml(b, group);
        adm_buf_puts(b, "</text>\n");
        adm_buf_printf(b, "<text x=\"16\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">"
                     "relative RMS error vs fp64</text>\n", T + ph / 2, T + ph / 2);
        /* guides through the reference's first point: depth^(1/2) and depth^1 */
        if (ref && ref->n > 0 && ref->err[0] > 0) {
            static const double slope[2] = {0.5, 1.0};
            static const char *const lab[2] = {"~ depth^1/2 (unbiased)", "~ depth (biased)"};
            for (int k = 0; k < 2; k++) {
                double y0 = ref->err[0] * pow(xlo / ref->depth[0], slope[k]), y1 = ref->err[0] * pow(xhi / ref->depth[0], slope[k]);
                if (y1 > yhi) y1 = yhi;
                {
                    double x1 = ref->depth[0] * pow(y1 / ref->err[0], 1 / slope[k]);
                    adm_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
                                 "stroke-dasharray=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#777\" "
                                 "text-anchor=\"end\">%s</text>\n", GX(xlo), GY(y0), GX(x1), GY(y1), k ? "2 3" : "8 4",
                                 GX(x1) - 4, GY(y1) + (k ? -6 : 14), lab[k]);
                }
            }
        }
        for (int i = 0, shown = 0; i < d->n_growth; i++) {
            const adm_drift_growth *g = &d->growth[i];
            const char *col = palette[shown % N_PALETTE];
            if (strcmp(g->group, group)) continue;
            adm_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"", col,
                         g->reference ? "3" : "2");
            for (int k = 0; k < g->n; k++)
                if (g->depth[k] > 0 && g->err[k] > 0 && isfinite(g->err[k]))
                    adm_buf_printf(b, "%.1f,%.1f ", GX(g->depth[k]), GY(g->err[k]));
            adm_buf_puts(b, "\"/>\n");
            for (int k = 0; k < g->n; k++)
                if (g->depth[k] > 0 && g->err[k] > 0 && isfinite(g->err[k]))
                    adm_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", GX(g->depth[k]),
                                 GY(g->err[k]), col);
            adm_buf_printf(b, "\n<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
                         "font-size=\"12\">", L + pw + 14, T + 10 + 36 * shown, col, L + pw + 34, T + 15 + 36 * shown);
            adm_buf_xml(b, g->name);
            adm_buf_printf(b, "</text><text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#555\">exponent %.2f%s%s</text>\n",
                         L + pw + 34, T + 30 + 36 * shown, g->exponent, g->reference ? " (reference)" : "",
                         g->reference ? "" : g->passed ? ", pass" : ", FAIL");
            shown++;
        }
        adm_buf_puts(b, "</svg>\n");
#undef GX
#undef GY
    }
}

/* ---------------------------------------------------------------- the page */

static const char *pair_class(const adm_drift_pair *p)
{
    if (!p->passed) return "bad";
    if (p->role == ADM_DRIFT_TIER) return p->inside_band ? "inside" : "outside";
    return p->role == ADM_DRIFT_BAND ? "band" : "control";
}

static adm_status stage_png(drift_stages *sg, const adm_image *img, double lo, double hi, const char *path)
{
    char *tmp;
    ADM_TRY(drift_png_temp(img, 0, lo, hi, path, &tmp));
    return drift_stage_add(sg, path, tmp);
}

static adm_status write_arm_images(const adm_drift *d, const char *dir, adm_buf *b, drift_stages *sg)
{
    char path[4400], db[32];
    for (int i = 0; i < d->n_arms; i++) {
        const drift_arm *a = &d->arms[i];
        double lo, hi;
        display_span(&a->img, &lo, &hi);
        snprintf(path, sizeof path, "%s/arm-%s.png", dir, a->name);
        ADM_TRY(stage_png(sg, &a->img, lo, hi, path));
    }
    adm_buf_puts(b, "<h2>The arms and their difference</h2>\n<p class=\"note\">Each comparison: the first arm, the second, "
                  "and |first &minus; second| (the largest over channels), brightest at the pair's largest difference. "
                  "Video arms show their first frame.</p>\n");
    for (int i = 0; i < d->n_pairs; i++) {
        const adm_drift_pair *p = &d->pairs[i];
        const drift_arm *a = &d->arms[p->a], *c = &d->arms[p->b];
        adm_image heat;
        int64_t w = a->img.width, shown = w < 200 ? (w * ((200 + w - 1) / w)) : w > 320 ? 320 : w;
        snprintf(path, sizeof path, "%s/diff-%d.png", dir, i);
        ADM_TRY(heat_map(&a->img, &c->img, p->m.max_abs, &heat));
        {
            adm_status st = stage_png(sg, &heat, 0, 255, path);
            adm_image_free(&heat);
            ADM_TRY(st);
        }
        adm_buf_printf(b, "<div class=\"pair %s\"><h3>", pair_class(p));
        adm_buf_xml(b, p->name);
        adm_buf_printf(b, " <span class=\"num\">%s dB, SSIM %.4f</span></h3>\n<figure><img src=\"arm-", drift_db(p->m.psnr, db, sizeof db),
                     p->m.ssim);
        adm_buf_xml(b, a->name);
        adm_buf_printf(b, ".png\" width=\"%lld\" alt=\"arm ", (long long)shown);
        adm_buf_xml(b, a->name);
        adm_buf_puts(b, "\"><figcaption>");
        adm_buf_xml(b, a->name);
        adm_buf_puts(b, "</figcaption></figure>\n<figure><img src=\"arm-");
        adm_buf_xml(b, c->name);
        adm_buf_printf(b, ".png\" width=\"%lld\" alt=\"arm ", (long long)shown);
        adm_buf_xml(b, c->name);
        adm_buf_puts(b, "\"><figcaption>");
        adm_buf_xml(b, c->name);
        adm_buf_printf(b, "</figcaption></figure>\n<figure><img src=\"diff-%d.png\" width=\"%lld\" alt=\"difference\">"
                     "<figcaption>", i, (long long)shown);
        if (p->m.identical) adm_buf_puts(b, "identical: no difference anywhere");
        else
            adm_buf_printf(b, "|difference|: 0 <span class=\"ramp\"></span> %.4g (MAD %.4g)", p->m.max_abs, p->m.mad);
        adm_buf_puts(b, "</figcaption></figure></div>\n");
    }
    return ADM_OK;
}

adm_status adm_drift_write_html(const adm_drift *d, const char *dir, const char *history)
{
    json_t *rows = NULL;
    drift_stages sg;
    adm_status st;
    if (!d->evaluated) return ADM_FAIL(ADM_ERR_INVALID, "the drift report is not evaluated");
    if (history) ADM_TRY(adm_drift_history_read(history, &rows));
    memset(&sg, 0, sizeof sg);
    st = drift_html_stage(d, dir, rows, history != NULL, &sg);
    if (st == ADM_OK) st = drift_stages_commit(&sg);
    else drift_stages_undo(&sg);
    drift_stages_free(&sg);
    json_decref(rows);
    return st;
}

adm_status drift_html_stage(const adm_drift *d, const char *dir, json_t *history_rows, int from_history,
                            drift_stages *sg)
{
    adm_buf b = {0};
    char path[4400], db[32];
    json_t *rows;
    adm_status st;
    if (!d->evaluated) return ADM_FAIL(ADM_ERR_INVALID, "the drift report is not evaluated");
    /* room for DIR/arm-NAME.png in path (names have at most 128 bytes) */
    if (strlen(dir) > 4096) return ADM_FAIL(ADM_ERR_INVALID, "a report folder's path of %zu bytes, at most 4096", strlen(dir));
    ADM_TRY(drift_stage_dir(sg, dir));
    if (history_rows && json_array_size(history_rows) > 0) {
        rows = json_incref(history_rows);
    } else {
        if (!(rows = json_array())) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        json_array_append_new(rows, drift_row_json(d));
    }
    adm_buf_puts(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>");
    adm_buf_xml(&b, d->title);
    adm_buf_puts(&b, "</title>\n<style>body{font-family:sans-serif;margin:20px;color:#222}"
                   "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
                   "td.num,span.num{font-variant-numeric:tabular-nums}th{background:#f0f0f0}"
                   "tr.inside td,div.inside{background:#e8f4e8}tr.outside td,div.outside{background:#fdf0e0}"
                   "tr.bad td,div.bad{background:#f8d8d8}tr.band td,div.band{background:#eef2fa}"
                   ".verdict{font-size:20px;font-weight:bold;padding:4px 10px;display:inline-block}"
                   ".pass{background:#cfe8cf}.fail{background:#f4c0c0}.note{color:#555;max-width:900px}"
                   "div.pair{display:inline-block;vertical-align:top;margin:6px;padding:6px;border:1px solid #ccc}"
                   "div.pair h3{font-size:14px;margin:2px 0 6px}figure{display:inline-block;margin:0 6px 0 0}"
                   "figure img{image-rendering:pixelated;border:1px solid #999;display:block}"
                   "figcaption{font-size:12px}.ramp{display:inline-block;width:60px;height:9px;"
                   "background:linear-gradient(90deg,#000004,#57106e,#bc3754,#f98e09,#fcffa4)}"
                   "svg.plot{font-family:sans-serif;max-width:100%;height:auto}</style></head><body>\n<h1>");
    adm_buf_xml(&b, d->title);
    adm_buf_puts(&b, "</h1>\n<p>");
    if (d->date) {
        adm_buf_puts(&b, "date ");
        adm_buf_xml(&b, d->date);
    }
    if (d->commit) {
        adm_buf_puts(&b, ", commit <code>");
        adm_buf_xml(&b, d->commit);
        adm_buf_puts(&b, "</code>");
    }
    adm_buf_printf(&b, "</p>\n<p><span class=\"verdict %s\">%s</span></p>\n", adm_drift_passed(d) ? "pass" : "fail",
                 adm_drift_passed(d) ? "pass" : "FAIL");
    adm_buf_puts(&b, "<p class=\"note\">Switching tier must move the output less than the reference path already moves "
                   "between two legal environments (the band: TP1 against TP2). Higher PSNR is a smaller difference: a "
                   "tier comparison sits inside the band when its PSNR is at least the band's.</p>\n");
    adm_buf_puts(&b, "<table>\n<tr><th>comparison</th><th>arms</th><th>claim</th><th>PSNR (dB)</th><th>SSIM</th>"
                   "<th>MAD</th><th>max |diff|</th><th>verdict</th></tr>\n");
    for (int i = 0; i < d->n_pairs; i++) {
        const adm_drift_pair *p = &d->pairs[i];
        adm_buf_printf(&b, "<tr class=\"%s\"><td>", pair_class(p));
        adm_buf_xml(&b, p->name);
        adm_buf_puts(&b, "</td><td>");
        adm_buf_xml(&b, d->arms[p->a].name);
        adm_buf_puts(&b, " / ");
        adm_buf_xml(&b, d->arms[p->b].name);
        adm_buf_printf(&b, "</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%.6f</td><td class=\"num\">%.4g</td>"
                     "<td class=\"num\">%.4g</td><td>",
                     p->role == ADM_DRIFT_TIER ? adm_tier_name(p->claim) : adm_drift_role_name(p->role),
                     drift_db(p->m.psnr, db, sizeof db), p->m.ssim, p->m.mad, p->m.max_abs);
        adm_buf_puts(&b, !p->passed ? "FAIL" : p->role == ADM_DRIFT_CONTROL ? "bit-identical" : p->role == ADM_DRIFT_BAND ? "band"
                       : p->inside_band ? "inside the band" : "outside the band (high: allowed)");
        if (p->why[0]) {
            adm_buf_puts(&b, "<br><small>");
            adm_buf_xml(&b, p->why);
            adm_buf_puts(&b, "</small>");
        }
        adm_buf_puts(&b, "</td></tr>\n");
    }
    adm_buf_printf(&b, "</table>\n<p>%s%s%s floors: PSNR %g dB, SSIM %g (%s).", d->has_band ? "Band: <b>" : "",
                 d->has_band ? drift_db(d->band_psnr, db, sizeof db) : "No band pair.", d->has_band ? " dB</b>;" : "",
                 d->use_psnr, d->use_ssim, d->is_video ? "video" : "image");
    if (d->band_tol > 0) adm_buf_printf(&b, " Band tolerance: %.2f dB (the shaded region starts that far below the band).", d->band_tol);
    adm_buf_puts(&b, "</p>\n");
    for (int i = 0; i < d->n_notes; i++) {
        adm_buf_puts(&b, "<p class=\"note\">");
        adm_buf_xml(&b, d->notes[i]);
        adm_buf_puts(&b, "</p>\n");
    }
    adm_buf_printf(&b, "<h2>PSNR per comparison over nights</h2>\n<p class=\"note\">%zu night%s%s. The shaded region is "
                 "inside the band; the dashed red line is the floor. Controls are not drawn (bit-identical: PSNR inf); "
                 "a hollow marker at the top is an identical pair.</p>\n",
                 json_array_size(rows), json_array_size(rows) == 1 ? "" : "s", from_history ? " from the history" : "");
    svg_history(&b, d, rows);
    json_decref(rows);
    if ((st = write_arm_images(d, dir, &b, sg)) != ADM_OK) {
        free(b.p);
        return st;
    }
    if (d->n_growth) {
        adm_buf_puts(&b, "<h2>Compounding: error growth with depth</h2>\n<p class=\"note\">Each tier's run against an fp64 "
                       "run of the same math: the relative RMS error of the state at each depth. An unbiased rounding "
                       "grows like a random walk (slope 1/2 on these log-log axes), a biased one linearly (slope 1); a "
                       "lossless tier whose growth exponent exceeds the reference path's by more than ");
        adm_buf_printf(&b, "%.2f fails even when one application passes the operator gates.</p>\n", ADM_DRIFT_GROWTH_SLACK);
        for (int i = 0; i < d->n_growth; i++) {
            int first = 1;
            for (int k = 0; k < i; k++) first &= strcmp(d->growth[k].group, d->growth[i].group) != 0;
            if (!first) continue;
            adm_buf_puts(&b, "<h3>");
            adm_buf_xml(&b, d->growth[i].group);
            adm_buf_puts(&b, "</h3>\n");
            svg_growth(&b, d, d->growth[i].group);
        }
        adm_buf_puts(&b, "<table>\n<tr><th>depth</th><th>tier</th><th>exponent</th><th>excess</th><th>error at the last depth</th>"
                       "<th>x reference</th><th>verdict</th></tr>\n");
        for (int i = 0; i < d->n_growth; i++) {
            const adm_drift_growth *g = &d->growth[i];
            adm_buf_printf(&b, "<tr class=\"%s\"><td>", g->passed ? "inside" : "bad");
            adm_buf_xml(&b, g->group);
            adm_buf_puts(&b, "</td><td>");
            adm_buf_xml(&b, g->name);
            adm_buf_printf(&b, "</td><td class=\"num\">%.3f</td><td class=\"num\">%+.3f</td><td class=\"num\">%.3g</td>"
                         "<td class=\"num\">%.3g</td><td>%s", g->exponent, g->excess, g->err[g->n - 1], g->ratio_last,
                         g->reference ? "reference" : g->passed ? "pass" : "FAIL");
            if (g->why[0]) {
                adm_buf_puts(&b, "<br><small>");
                adm_buf_xml(&b, g->why);
                adm_buf_puts(&b, "</small>");
            }
            adm_buf_puts(&b, "</td></tr>\n");
        }
        adm_buf_puts(&b, "</table>\n");
    }
    adm_buf_puts(&b, "<p class=\"note\">PSNR and SSIM follow scikit-image (peak_signal_noise_ratio with data_range; "
                   "structural_similarity: 7x7 uniform window, K1 0.01, K2 0.03, sample covariance, per channel then "
                   "averaged). Generated by admit " ADM_VERSION_STRING ".</p>\n</body></html>\n");
    if (b.oom) {
        free(b.p);
        return ADM_FAIL(ADM_ERR_NOMEM, "HTML drift report: out of memory");
    }
    snprintf(path, sizeof path, "%s/index.html", dir);
    st = drift_stage_text(sg, path, b.p, b.n);
    free(b.p);
    return st;
}
