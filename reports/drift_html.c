/* The drift report as a page: a verdict banner, the table with each
 * comparison's margin to the band, each comparison's margin over the runs
 * of the history (inline SVG; failing points marked), the arms' images
 * beside a heat map of their difference (PNG files through libpng), and
 * the error growth with depth (inline SVG, log-log). The stylesheet is
 * every page's (page_style.c); a series keeps its colour and marker in
 * every plot of the page. */
#include "drift_internal.h"
#include "adm_report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Series colours: no red (a failure), green (a pass) or purple, which
 * mean one thing on every page; neighbours in the order differ in hue
 * (the toy's growth series are 4 to 6); markers differ too, so that
 * series stay apart where colours are hard to tell. */
static const char *const palette[] = {"#0969da", "#d4760b", "#24292f", "#54aeff", "#8a4600",
                                      "#0598bc", "#6e7781", "#9a6700"};
#define N_PALETTE ((int)(sizeof palette / sizeof palette[0]))
#define N_MARKERS 4
static const char *const marker_glyph[N_MARKERS] = {"&#9679;", "&#9632;", "&#9650;", "&#9670;"};

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

/* ---------------------------------------------------------------- series and their colours */

/* Every series of the page by name, in order of first appearance: the
 * tier comparisons of this run, those only in the history, then the
 * growth series; a series' index is its colour and marker everywhere. */
typedef struct series_map {
    const char *name[64];
    int n;
} series_map;

static int series_of(series_map *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->name[i], name)) return i;
    if (m->n == 64) return 63;
    m->name[m->n] = name;
    return m->n++;
}

static const char *series_colour(int i) { return palette[i % N_PALETTE]; }

/* A series' marker at (x, y): circle, square, triangle, diamond. */
static void put_marker(adm_buf *b, int i, double x, double y, int hollow)
{
    const char *c = series_colour(i), *fill = hollow ? "#fff" : c;
    switch ((i / 1) % N_MARKERS) {
    case 0: adm_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\">",
                           x, y, fill, c); break;
    case 1: adm_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"%s\" stroke=\"%s\" "
                           "stroke-width=\"1.5\">", x - 3.5, y - 3.5, fill, c); break;
    case 2: adm_buf_printf(b, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\" stroke=\"%s\" "
                           "stroke-width=\"1.5\">", x, y - 4.5, x - 4.5, y + 3.5, x + 4.5, y + 3.5, fill, c); break;
    default: adm_buf_printf(b, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\" stroke=\"%s\" "
                            "stroke-width=\"1.5\">", x, y - 5, x + 5, y, x, y + 5, x - 5, y, fill, c); break;
    }
}

static const char *marker_end(int i)
{
    switch (i % N_MARKERS) {
    case 0: return "</circle>";
    case 1: return "</rect>";
    default: return "</polygon>";
    }
}

static void put_legend_item(adm_buf *b, int i, const char *name, const char *extra)
{
    adm_buf_printf(b, "<li><span style=\"color:%s\">%s</span> ", series_colour(i), marker_glyph[i % N_MARKERS]);
    adm_buf_xml(b, name);
    if (extra) adm_buf_puts(b, extra);
    adm_buf_puts(b, "</li>");
}

/* Axis ticks at 1, 2 or 5 times a power of ten, about five of them. */
static double nice_step(double span)
{
    double raw = span / 5, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* ---------------------------------------------------------------- the margin over the runs */

static double row_psnr(json_t *v)
{
    if (json_is_string(v) && !strcmp(json_string_value(v), "inf")) return INFINITY;
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Each tier comparison of one claim (lossless: its margin to the band,
 * the band's PSNR less the tolerance; high: to the PSNR floor, which is
 * what a high tier is judged on), one point per run of the history; a
 * failing point ringed in red. Returns the number of points drawn. */
#define MP_H 250
static int svg_margins(adm_buf *b, series_map *sm, json_t *rows, int high)
{
    const int L = 52, R = 12, T = 12, B = 62, pw = 360 - L - R, ph = MP_H - T - B;
    size_t nn = json_array_size(rows), q, k;
    double lo = 0, hi = 0, step;
    int used[64] = {0}, ns = 0, points = 0, any_fail = 0, any_ident = 0;
    json_t *row, *p;
    /* the range, and which series appear */
    json_array_foreach(rows, q, row) {
        json_t *bd = json_object_get(row, "band"), *fl = json_object_get(row, "floors");
        double edge = high ? row_psnr(json_object_get(fl, "psnr"))
                           : row_psnr(json_object_get(bd, "psnr")) - (json_is_number(json_object_get(bd, "tolerance"))
                                                                         ? json_number_value(json_object_get(bd, "tolerance"))
                                                                         : 0);
        json_array_foreach(json_object_get(row, "pairs"), k, p) {
            const char *name = json_string_value(json_object_get(p, "name")), *role, *claim;
            double y;
            role = json_string_value(json_object_get(p, "role"));
            claim = json_string_value(json_object_get(p, "claim"));
            if (!name || !role || !claim || strcmp(role, "tier") || strcmp(claim, high ? "high" : "lossless")) continue;
            y = row_psnr(json_object_get(p, "psnr")) - edge;
            if (isnan(y)) continue;
            used[series_of(sm, name)] = 1;
            points++;
            if (isfinite(y)) {
                lo = fmin(lo, y);
                hi = fmax(hi, y);
            }
        }
    }
    if (!points) return 0;
    for (int i = 0; i < sm->n; i++) ns += used[i];
    {
        double pad = fmax(0.08 * (hi - lo), 0.05);
        lo -= pad;
        hi += pad;
        step = nice_step(hi - lo);
        lo = floor(lo / step) * step;
        hi = ceil(hi / step) * step;
    }
#define X(q) (L + (nn > 1 ? ((double)(q) + 0.5) * pw / (double)nn : pw / 2.0))
#define Y(v) (T + ph - ((isinf(v) ? hi : (v)) - lo) * ph / (hi - lo))
    adm_buf_printf(b, "<figure class=\"plot\"><svg viewBox=\"0 0 360 %d\" width=\"360\" height=\"%d\" role=\"img\" "
                   "font-size=\"12\" font-family=\"system-ui,sans-serif\"><title>%s comparisons: PSNR margin to the %s "
                   "over the runs, dB</title>", MP_H, MP_H, high ? "High-tier" : "Lossless", high ? "floor" : "band");
    /* the failing side tinted: below the edge */
    adm_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#8c959f\"/>", L, T, pw, ph);
    if (lo < 0)
        adm_buf_printf(b, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#ffebe9\"/>", L + 1, Y(0.0), pw - 1,
                       T + ph - Y(0.0) - 0.5);
    for (double v = lo; v <= hi + step / 1000; v += step) {
        double vv = fabs(v) < step / 1000 ? 0 : v;
        adm_buf_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eaeef2\"/><text x=\"%d\" y=\"%.1f\" "
                       "text-anchor=\"end\">%s%g</text>", L, L + pw, Y(vv), Y(vv), L - 4, Y(vv) + 4,
                       vv > 0 ? "+" : vv < 0 ? "&#8722;" : "", fabs(vv));
    }
    adm_buf_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#24292f\" stroke-width=\"1.5\"/>"
                   "<text x=\"%d\" y=\"%.1f\" fill=\"#24292f\">%s</text>", L, L + pw, Y(0.0), Y(0.0),
                   L + 4, Y(0.0) + (Y(0.0) + 16 < T + ph ? 14 : -5), high ? "the PSNR floor" : "the band's edge");
    adm_buf_printf(b, "<text x=\"12\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 12 %d)\">margin (dB), "
                   "above is better</text>", T + ph / 2, T + ph / 2);
    /* the runs: at most five labelled, each its date and commit */
    {
        size_t lab = nn > 5 ? (nn + 4) / 5 : 1;
        json_array_foreach(rows, q, row) {
            const char *date = json_string_value(json_object_get(row, "date"));
            const char *commit = json_string_value(json_object_get(row, "commit"));
            size_t again = 0, q2;
            json_t *r2;
            if ((nn - 1 - q) % lab) continue; /* the latest run always labelled */
            /* a rerun of one date and commit: its ordinal, so that no two labels read alike */
            json_array_foreach(rows, q2, r2) {
                const char *d2 = json_string_value(json_object_get(r2, "date"));
                const char *c2 = json_string_value(json_object_get(r2, "commit"));
                if (q2 >= q) break;
                again += d2 && date && !strcmp(d2, date) && ((!c2 && !commit) || (c2 && commit && !strcmp(c2, commit)));
            }
            adm_buf_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", X(q), T + ph + 15);
            adm_buf_xml(b, date ? (strlen(date) == 10 ? date + 5 : date) : "?");
            if (again) adm_buf_printf(b, " (%zu)", again + 1);
            adm_buf_printf(b, "</text><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#57606a\">", X(q),
                           T + ph + 29);
            {
                char c[8];
                snprintf(c, sizeof c, "%.7s", commit ? commit : "-");
                adm_buf_xml(b, c);
            }
            adm_buf_puts(b, "</text>");
        }
        adm_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">run (date, commit)</text>", L + pw / 2,
                       T + ph + 48);
    }
    /* each series: a thin line through its runs, a marker per run,
     * dodged sideways a little so that series at one margin stay apart */
    for (int j = 0, shown = 0; j < sm->n; j++) {
        double dx;
        int open = 0;
        if (!used[j]) continue;
        dx = ns > 1 ? (shown - (ns - 1) / 2.0) * fmin(6.0, 0.5 * pw / (double)(nn ? nn : 1) / ns) : 0;
        shown++;
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1 && open) adm_buf_puts(b, "\"/>");
            open = 0;
            json_array_foreach(rows, q, row) {
                json_t *bd = json_object_get(row, "band"), *fl = json_object_get(row, "floors"), *hit = NULL;
                double edge = high ? row_psnr(json_object_get(fl, "psnr"))
                                   : row_psnr(json_object_get(bd, "psnr")) -
                                         (json_is_number(json_object_get(bd, "tolerance"))
                                              ? json_number_value(json_object_get(bd, "tolerance")) : 0),
                       y, psnr;
                json_array_foreach(json_object_get(row, "pairs"), k, p) {
                    const char *name = json_string_value(json_object_get(p, "name"));
                    const char *role = json_string_value(json_object_get(p, "role"));
                    if (name && role && !strcmp(role, "tier") && !strcmp(name, sm->name[j])) hit = p;
                }
                psnr = hit ? row_psnr(json_object_get(hit, "psnr")) : NAN;
                y = psnr - edge;
                if (pass == 0) { /* the line */
                    if (isnan(y) || isinf(y)) {
                        if (open) adm_buf_puts(b, "\"/>");
                        open = 0;
                        continue;
                    }
                    if (!open) adm_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" "
                                              "stroke-opacity=\"0.6\" points=\"", series_colour(j));
                    adm_buf_printf(b, "%.1f,%.1f ", X(q) + dx, Y(y));
                    open = 1;
                } else if (!isnan(y)) { /* the markers, failures ringed */
                    const char *date = json_string_value(json_object_get(row, "date"));
                    const char *commit = json_string_value(json_object_get(row, "commit"));
                    int fail = json_is_false(json_object_get(hit, "passed")), ident = isinf(y);
                    any_fail |= fail;
                    any_ident |= ident;
                    if (fail)
                        adm_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" stroke=\"#cf222e\" "
                                       "stroke-width=\"2\"/>", X(q) + dx, Y(y));
                    put_marker(b, j, X(q) + dx, Y(y), ident);
                    adm_buf_puts(b, "<title>");
                    adm_buf_xml(b, sm->name[j]);
                    adm_buf_puts(b, ", ");
                    adm_buf_xml(b, date ? date : "?");
                    adm_buf_puts(b, " ");
                    adm_buf_xml(b, commit ? commit : "");
                    if (ident) adm_buf_puts(b, ": identical (PSNR inf)");
                    else adm_buf_printf(b, ": %+.3f dB (PSNR %.2f dB, %s %.2f dB)%s", y, psnr,
                                        high ? "floor" : "band edge", edge, fail ? ", FAIL" : "");
                    adm_buf_puts(b, "</title>");
                    adm_buf_puts(b, marker_end(j));
                }
            }
        }
    }
    adm_buf_puts(b, "</svg><ul class=\"legend\">");
    for (int j = 0; j < sm->n; j++)
        if (used[j]) put_legend_item(b, j, sm->name[j], NULL);
    if (any_fail)
        adm_buf_puts(b, "<li><span style=\"color:#cf222e\">&#9711;</span> failed its claim</li>");
    if (any_ident) adm_buf_puts(b, "<li>hollow at the top: identical (PSNR inf)</li>");
    adm_buf_printf(b, "</ul><figcaption>%s comparisons: PSNR above (+) or below (&#8722;) %s, in dB, one point per "
                   "run.</figcaption></figure>\n", high ? "High-tier" : "Lossless",
                   high ? "the PSNR floor, which a high tier is judged on" : "the band's edge (its PSNR less the "
                   "tolerance), which a lossless tier must not fall below");
#undef X
#undef Y
    return points;
}

/* ---------------------------------------------------------------- growth with depth */

static void svg_growth(adm_buf *b, const adm_drift *d, series_map *sm, const char *group)
{
    const int H = 260, L = 52, R = 12, T = 12, B = 46, pw = 360 - L - R, ph = H - T - B;
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
#define GX(v) (L + (log10(v) - log10(xlo)) * pw / (log10(xhi) - log10(xlo)))
#define GY(v) (T + ph - (log10(v) - log10(ylo)) * ph / (log10(yhi) - log10(ylo)))
    adm_buf_puts(b, "<figure class=\"plot\"><svg viewBox=\"0 0 360 260\" width=\"360\" height=\"260\" role=\"img\" "
                    "font-size=\"12\" font-family=\"system-ui,sans-serif\"><title>Relative RMS error against the fp64 "
                    "run by depth, ");
    adm_buf_xml(b, group);
    adm_buf_puts(b, " (log-log)</title>");
    adm_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#8c959f\"/>", L, T, pw, ph);
    for (double v = ylo; v <= yhi * 1.0001; v *= 10)
        adm_buf_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eaeef2\"/><text x=\"%d\" y=\"%.1f\" "
                       "text-anchor=\"end\">1e%d</text>", L, L + pw, GY(v), GY(v), L - 4, GY(v) + 4,
                       (int)lround(log10(v)));
    {
        static const double ticks[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
        for (size_t k = 0; k < sizeof ticks / sizeof ticks[0]; k++)
            if (ticks[k] >= xlo && ticks[k] <= xhi)
                adm_buf_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#eaeef2\"/><text x=\"%.1f\" "
                               "y=\"%d\" text-anchor=\"middle\">%g</text>", GX(ticks[k]), GX(ticks[k]), T, T + ph,
                               GX(ticks[k]), T + ph + 15, ticks[k]);
    }
    adm_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">depth (", L + pw / 2, T + ph + 34);
    adm_buf_xml(b, group);
    adm_buf_puts(b, "), log scale</text>");
    adm_buf_printf(b, "<text x=\"12\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 12 %d)\">relative RMS error "
                   "vs fp64</text>", T + ph / 2, T + ph / 2);
    /* the guides through the reference's first point: depth^(1/2) dashed,
     * depth dotted (named in the legend, not on the plot) */
    if (ref && ref->n > 0 && ref->err[0] > 0) {
        static const double slope[2] = {0.5, 1.0};
        for (int k = 0; k < 2; k++) {
            double y0 = ref->err[0] * pow(xlo / ref->depth[0], slope[k]), y1 = ref->err[0] * pow(xhi / ref->depth[0], slope[k]);
            double x1 = xhi;
            if (y1 > yhi) {
                y1 = yhi;
                x1 = ref->depth[0] * pow(y1 / ref->err[0], 1 / slope[k]);
            }
            adm_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#8c959f\" "
                           "stroke-width=\"1.2\" stroke-dasharray=\"%s\"/>", GX(xlo), GY(y0), GX(x1), GY(y1),
                           k ? "2 3" : "7 4");
        }
    }
    for (int i = 0; i < d->n_growth; i++) {
        const adm_drift_growth *g = &d->growth[i];
        int j, last = -1;
        if (strcmp(g->group, group)) continue;
        j = series_of(sm, g->name);
        adm_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"", series_colour(j),
                       g->reference ? "2.5" : "1.5");
        for (int k = 0; k < g->n; k++)
            if (g->depth[k] > 0 && g->err[k] > 0 && isfinite(g->err[k])) {
                adm_buf_printf(b, "%.1f,%.1f ", GX(g->depth[k]), GY(g->err[k]));
                last = k;
            }
        adm_buf_puts(b, "\"/>");
        for (int k = 0; k < g->n; k++)
            if (g->depth[k] > 0 && g->err[k] > 0 && isfinite(g->err[k]) && (k == last || k % 4 == 0)) {
                put_marker(b, j, GX(g->depth[k]), GY(g->err[k]), 0);
                adm_buf_printf(b, "<title>%s, depth %g: %.3g</title>%s", "", g->depth[k], g->err[k], marker_end(j));
            }
        if (!g->passed && last >= 0)
            adm_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" stroke=\"#cf222e\" stroke-width=\"2\"/>",
                           GX(g->depth[last]), GY(g->err[last]));
    }
    adm_buf_puts(b, "</svg><ul class=\"legend\">");
    for (int i = 0; i < d->n_growth; i++) {
        const adm_drift_growth *g = &d->growth[i];
        char extra[96];
        if (strcmp(g->group, group)) continue;
        snprintf(extra, sizeof extra, ": exponent %.2f%s", g->exponent,
                 g->reference ? " (the reference)" : g->passed ? "" : ", FAIL");
        put_legend_item(b, series_of(sm, g->name), g->name, extra);
    }
    adm_buf_puts(b, "<li><span class=\"swatch\" style=\"background:none;border:0;border-top:2px dashed #8c959f;"
                    "height:0\"></span>~ depth<sup>1/2</sup> (unbiased)</li><li><span class=\"swatch\" style=\""
                    "background:none;border:0;border-top:2px dotted #8c959f;height:0\"></span>~ depth (biased)</li>"
                    "</ul></figure>\n");
#undef GX
#undef GY
}

/* ---------------------------------------------------------------- the page */

static const char *pair_class(const adm_drift_pair *p)
{
    if (!p->passed) return "fail";
    if (p->role == ADM_DRIFT_TIER) return p->inside_band ? "pass" : "allowed";
    return p->role == ADM_DRIFT_BAND ? "band" : "pass";
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
        int64_t w = a->img.width, shown = w < 160 ? (w * ((160 + w - 1) / w)) : w > 320 ? 320 : w;
        snprintf(path, sizeof path, "%s/diff-%d.png", dir, i);
        ADM_TRY(heat_map(&a->img, &c->img, p->m.max_abs, &heat));
        {
            adm_status st = stage_png(sg, &heat, 0, 255, path);
            adm_image_free(&heat);
            ADM_TRY(st);
        }
        adm_buf_printf(b, "<div class=\"pair %s\"><h3>", pair_class(p));
        adm_buf_xml(b, p->name);
        adm_buf_printf(b, " &middot; <span class=\"num\">%s dB, SSIM %.4f</span></h3>\n<figure class=\"img\"><img src=\"arm-",
                       drift_db(p->m.psnr, db, sizeof db), p->m.ssim);
        adm_buf_xml(b, a->name);
        adm_buf_printf(b, ".png\" width=\"%lld\" alt=\"arm ", (long long)shown);
        adm_buf_xml(b, a->name);
        adm_buf_puts(b, "\"><figcaption>");
        adm_buf_xml(b, a->name);
        adm_buf_puts(b, "</figcaption></figure>\n<figure class=\"img\"><img src=\"arm-");
        adm_buf_xml(b, c->name);
        adm_buf_printf(b, ".png\" width=\"%lld\" alt=\"arm ", (long long)shown);
        adm_buf_xml(b, c->name);
        adm_buf_puts(b, "\"><figcaption>");
        adm_buf_xml(b, c->name);
        adm_buf_printf(b, "</figcaption></figure>\n<figure class=\"img\"><img src=\"diff-%d.png\" width=\"%lld\" "
                       "alt=\"difference\"><figcaption>", i, (long long)shown);
        if (p->m.identical) adm_buf_puts(b, "identical: no difference anywhere");
        else adm_buf_printf(b, "|difference|: 0 <span class=\"ramp\"></span> %.4g (MAD %.4g)", p->m.max_abs, p->m.mad);
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

/* A table cell with its label for the narrow layout (cards). */
static void td(adm_buf *b, const char *cls, const char *label)
{
    adm_buf_printf(b, "<td class=\"%s\" data-label=\"%s\">", cls, label);
}

adm_status drift_html_stage(const adm_drift *d, const char *dir, json_t *history_rows, int from_history,
                            drift_stages *sg)
{
    adm_buf b = {0};
    char path[4400], db[32], text[1024];
    json_t *rows;
    adm_status st;
    series_map sm;
    int drawn;
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
    memset(&sm, 0, sizeof sm);
    for (int i = 0; i < d->n_pairs; i++)
        if (d->pairs[i].role == ADM_DRIFT_TIER) series_of(&sm, d->pairs[i].name);
    adm_buf_puts(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    adm_buf_xml(&b, d->title);
    adm_buf_puts(&b, "</title><style>");
    adm_buf_puts(&b, adm_page_style);
    adm_buf_puts(&b, "</style></head><body>\n<h1>");
    adm_buf_xml(&b, d->title);
    adm_buf_puts(&b, "</h1>\n");
    adm_drift_summary_text(d, 1, text, sizeof text);
    adm_buf_printf(&b, "<div class=\"banner %s\" role=\"status\"><p class=\"headline\">", adm_drift_passed(d) ? "pass" : "fail");
    adm_buf_xml(&b, text);
    adm_buf_puts(&b, "</p><p class=\"counts\">");
    adm_drift_summary_text(d, 0, text, sizeof text);
    adm_buf_xml(&b, text);
    adm_buf_puts(&b, "</p></div>\n<p>");
    if (d->date) {
        adm_buf_puts(&b, "Date ");
        adm_buf_xml(&b, d->date);
    }
    if (d->commit) {
        adm_buf_puts(&b, d->date ? ", commit <code>" : "Commit <code>");
        adm_buf_xml(&b, d->commit);
        adm_buf_puts(&b, "</code>");
    }
    adm_buf_puts(&b, ".</p>\n<p class=\"note\">Switching tier must move the output less than the reference path already "
                     "moves between two legal environments (the band: TP1 against TP2). Higher PSNR is a smaller "
                     "difference: a lossless comparison sits inside the band when its PSNR is at least the band's (less "
                     "the tolerance); its margin is how far above that edge it sits. A high tier is judged on the floors "
                     "alone.</p>\n");
    adm_buf_puts(&b, "<h2 id=\"comparisons\">Comparisons</h2>\n<div class=\"scroll\"><table class=\"sum cards\">\n<thead><tr>"
                     "<th scope=\"col\">comparison</th><th scope=\"col\">arms</th><th scope=\"col\">claim</th>"
                     "<th scope=\"col\" class=\"num\">PSNR (dB)</th><th scope=\"col\" class=\"num\" title=\"PSNR above (+) "
                     "or below (&#8722;) the band's edge, the band's PSNR less the tolerance\">margin (dB)</th>"
                     "<th scope=\"col\" class=\"num\">SSIM</th><th scope=\"col\" class=\"num\">MAD</th><th scope=\"col\" "
                     "class=\"num\">max |diff|</th><th scope=\"col\">verdict</th></tr></thead>\n<tbody>\n");
    for (int i = 0; i < d->n_pairs; i++) {
        const adm_drift_pair *p = &d->pairs[i];
        const char *cls = pair_class(p);
        adm_buf_printf(&b, "<tr class=\"%s\">", cls);
        td(&b, "name", "comparison");
        adm_buf_xml(&b, p->name);
        adm_buf_puts(&b, "</td>");
        td(&b, "", "arms");
        adm_buf_xml(&b, d->arms[p->a].name);
        adm_buf_puts(&b, " / ");
        adm_buf_xml(&b, d->arms[p->b].name);
        adm_buf_puts(&b, "</td>");
        td(&b, "", "claim");
        adm_buf_printf(&b, "<span class=\"tier\">%s</span></td>",
                       p->role == ADM_DRIFT_TIER ? adm_tier_name(p->claim) : adm_drift_role_name(p->role));
        td(&b, "num", "PSNR (dB)");
        adm_buf_printf(&b, "%s</td>", drift_db(p->m.psnr, db, sizeof db));
        td(&b, "num", "margin (dB)");
        if (isnan(p->margin)) adm_buf_puts(&b, "&ndash;");
        else if (isinf(p->margin)) adm_buf_puts(&b, "+inf");
        else adm_buf_printf(&b, "%s%.2f", p->margin < 0 ? "&#8722;" : "+", fabs(p->margin));
        adm_buf_puts(&b, "</td>");
        td(&b, "num", "SSIM");
        adm_buf_printf(&b, "%.6f</td>", p->m.ssim);
        td(&b, "num", "MAD");
        adm_buf_printf(&b, "%.4g</td>", p->m.mad);
        td(&b, "num", "max |diff|");
        adm_buf_printf(&b, "%.4g</td>", p->m.max_abs);
        td(&b, "verdict", "verdict");
        adm_buf_printf(&b, "<span><span class=\"badge %s\">", !strcmp(cls, "allowed") || !strcmp(cls, "band") ? "" : cls);
        adm_buf_xml(&b, drift_pair_verdict(d, p));
        adm_buf_puts(&b, "</span>");
        if (p->why[0]) {
            adm_buf_puts(&b, "<br><small>");
            adm_buf_xml(&b, p->why);
            adm_buf_puts(&b, "</small>");
        }
        adm_buf_puts(&b, "</span></td></tr>\n");
    }
    adm_buf_puts(&b, "</tbody></table></div>\n<p>");
    if (d->has_band) adm_buf_printf(&b, "The band: <b>%s dB</b> (SSIM %.6f). ", drift_db(d->band_psnr, db, sizeof db), d->band_ssim);
    else adm_buf_puts(&b, "No band pair: the tier comparisons are judged on the floors alone. ");
    if (d->band_tol > 0) adm_buf_printf(&b, "Band tolerance: %.2f dB, so the band's edge is %.2f dB. ", d->band_tol,
                                        d->band_psnr - d->band_tol);
    adm_buf_printf(&b, "Floors: PSNR %g dB, SSIM %g (%s).</p>\n", d->use_psnr, d->use_ssim, d->is_video ? "video" : "image");
    adm_buf_printf(&b, "<h2>Margin over the runs</h2>\n<p class=\"note\">%zu run%s%s, one point each, labelled with its "
                   "date and commit. Below zero (the tinted side) a comparison fails its claim; a red ring marks a "
                   "failed point.</p>\n<div class=\"plots\">", json_array_size(rows), json_array_size(rows) == 1 ? "" : "s",
                   from_history ? " from the history" : "");
    drawn = svg_margins(&b, &sm, rows, 0);
    drawn += svg_margins(&b, &sm, rows, 1);
    if (!drawn) adm_buf_puts(&b, "<p>No tier comparison to plot.</p>");
    adm_buf_puts(&b, "</div>\n");
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
        adm_buf_printf(&b, "%.2f fails even when one application passes the operator gates.</p>\n<div class=\"plots\">",
                       ADM_DRIFT_GROWTH_SLACK);
        for (int i = 0; i < d->n_growth; i++) {
            int first = 1;
            for (int k = 0; k < i; k++) first &= strcmp(d->growth[k].group, d->growth[i].group) != 0;
            if (first) svg_growth(&b, d, &sm, d->growth[i].group);
        }
        adm_buf_puts(&b, "</div>\n<div class=\"scroll\"><table class=\"sum cards\">\n<thead><tr><th scope=\"col\">tier</th>"
                         "<th scope=\"col\">depth</th><th scope=\"col\" class=\"num\">exponent</th><th scope=\"col\" "
                         "class=\"num\">excess</th><th scope=\"col\" class=\"num\">error at the last depth</th><th "
                         "scope=\"col\" class=\"num\">&times; the reference</th><th scope=\"col\">verdict</th></tr>"
                         "</thead>\n<tbody>\n");
        for (int i = 0; i < d->n_growth; i++) {
            const adm_drift_growth *g = &d->growth[i];
            const char *cls = !g->passed ? "fail" : g->reference ? "band" : "pass";
            adm_buf_printf(&b, "<tr class=\"%s\">", cls);
            td(&b, "name", "tier");
            adm_buf_xml(&b, g->name);
            adm_buf_puts(&b, "</td>");
            td(&b, "", "depth");
            adm_buf_xml(&b, g->group);
            adm_buf_puts(&b, "</td>");
            td(&b, "num", "exponent");
            adm_buf_printf(&b, "%.3f</td>", g->exponent);
            td(&b, "num", "excess");
            adm_buf_printf(&b, "%+.3f</td>", g->excess);
            td(&b, "num", "error at the last depth");
            adm_buf_printf(&b, "%.3g</td>", g->err[g->n - 1]);
            td(&b, "num", "&times; the reference");
            if (isfinite(g->ratio_last)) adm_buf_printf(&b, "%.3g</td>", g->ratio_last);
            else adm_buf_puts(&b, "&ndash;</td>");
            td(&b, "verdict", "verdict");
            adm_buf_printf(&b, "<span><span class=\"badge %s\">%s</span>", g->reference ? "" : cls,
                           g->reference ? "the reference" : g->passed ? "pass" : "FAIL");
            if (g->why[0]) {
                adm_buf_puts(&b, "<br><small>");
                adm_buf_xml(&b, g->why);
                adm_buf_puts(&b, "</small>");
            }
            adm_buf_puts(&b, "</span></td></tr>\n");
        }
        adm_buf_puts(&b, "</tbody></table></div>\n");
    }
    if (d->n_notes) {
        adm_buf_puts(&b, "<h2>Notes</h2>\n<ul class=\"notes\">");
        for (int i = 0; i < d->n_notes; i++) {
            adm_buf_puts(&b, "<li>");
            adm_buf_xml(&b, d->notes[i]);
            adm_buf_puts(&b, "</li>");
        }
        adm_buf_puts(&b, "</ul>\n");
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
