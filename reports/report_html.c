/* The verdict report as a page (DIR/index.html): a banner with the
 * summary, the verdict table (a card per row on a phone), and each row's
 * detail: what was compared, its numbers, its error histogram, why its
 * tier is what it is, the two tests of each group bias statistic, its
 * flips where a reader is given, its power and the captures a pooled
 * verdict adds up. One inline SVG per row (the
 * histogram); the stylesheet is every page's (page_style.c). */
#include "report_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- pieces */

static const char *status_class(const adm_report_row *row)
{
    return adm_claim_status_name(adm_report_claim_status(row));
}

/* A claim's badge: holds, unsafe, promotable (outlined red when --strict
 * makes it a violation), error, or "no claim". */
static void put_badge(adm_buf *b, const adm_report_row *row)
{
    adm_claim_status cs = adm_report_claim_status(row);
    static const char *const words[] = {"no claim", "holds", "promotable", "unsafe", "error"};
    adm_buf_printf(b, "<span class=\"badge %s%s\">%s</span>", status_class(row),
                   cs == ADM_CLAIM_PROMOTABLE && row->strict ? " violated" : "", words[cs]);
}

static void put_tier(adm_buf *b, adm_tier t)
{
    adm_buf_printf(b, "<span class=\"tier %s\">%s</span>", adm_tier_name(t), adm_tier_name(t));
}

/* A number for a cell; "&ndash;" when not finite. */
static void put_g(adm_buf *b, const char *fmt, double x, const char *unit)
{
    if (!isfinite(x)) {
        adm_buf_puts(b, "&ndash;");
        return;
    }
    adm_buf_printf(b, fmt, x);
    adm_buf_puts(b, unit);
}

/* The gates that failed, which keep the verdict from a stricter tier. */
static void put_failed_gates(adm_buf *b, const adm_verdict *v)
{
    int any = 0;
    for (int g = 1; g < ADM_GATE_COUNT; g++)
        if (!v->gate[g].passed && (g != ADM_GATE_EXACT || v->tier == ADM_TIER_EXACT)) {
            adm_buf_puts(b, any ? ", " : "");
            adm_buf_xml(b, adm_gate_name(g));
            any = 1;
        }
    if (!any) adm_buf_puts(b, v->tier == ADM_TIER_EXACT ? "none: bit-identical" : "none");
}

/* ---------------------------------------------------------------- the histogram */

#define PW 360 /* the plots' viewBox width; text 12 units, >= 11 px from a 330 px wide box up */

/* Log-scaled counts: a bar of count c rises log10(c / 0.5) of the axis,
 * so that a single error shows; the axis's ticks are decades. */
static double ybar(int64_t c, double top_decade, double ph)
{
    if (c <= 0) return 0;
    return ph * log10((double)c / 0.5) / log10(top_decade / 0.5);
}

/* The tick label of 2^e ulps. */
static void pow2_label(int e, char *buf, size_t n)
{
    if (e < 0) snprintf(buf, n, "1/%d", 1 << -e);
    else if (e < 14) snprintf(buf, n, "%d", 1 << e);
    else snprintf(buf, n, "2^%d", e);
}

/* The error histograms of the reference path and the candidate. The
 * linear view (ulps, fitted to the bins that hold errors) when almost
 * every error lies within +-ADM_HIST_RANGE ulps; else the view by octave
 * of |error|, signed. Overflow bins are hatched and labelled; counts on
 * a log scale, named on the axis. */
static void svg_hist(adm_buf *b, const adm_verdict *v)
{
    const int H = 210, L = 46, R = 10, T = 10, B = 48, pw = PW - L - R, ph = H - T - B;
    int64_t tot_r = 0, tot_c = 0, out_r = v->hist_r[0] + v->hist_r[ADM_HIST_BINS - 1],
            out_c = v->hist_c[0] + v->hist_c[ADM_HIST_BINS - 1], top = 1;
    int logview, lo, hi, nb; /* the bins shown: lo..hi of the chosen histogram */
    const int64_t *hr, *hc;
    double top_dec;
    for (int i = 0; i < ADM_HIST_BINS; i++) {
        tot_r += v->hist_r[i];
        tot_c += v->hist_c[i];
    }
    logview = (double)out_r > 0.01 * (double)tot_r || (double)out_c > 0.01 * (double)tot_c;
    if (logview) {
        int k = 4;
        hr = v->hist_log_r;
        hc = v->hist_log_c;
        for (int i = 0; i < ADM_HIST_LOG_BINS; i++)
            if (hr[i] || hc[i]) {
                int d = abs(i - ADM_HIST_LOG_ZERO);
                if (d > k) k = d;
            }
        lo = ADM_HIST_LOG_ZERO - k;
        hi = ADM_HIST_LOG_ZERO + k;
    } else {
        /* the inner bins that hold errors, symmetric, whole ulps; the
         * overflow bins only when they hold some */
        const double w = 2 * ADM_HIST_RANGE / (ADM_HIST_BINS - 2);
        int k = (int)lround(1 / w); /* one ulp */
        hr = v->hist_r;
        hc = v->hist_c;
        for (int i = 1; i < ADM_HIST_BINS - 1; i++)
            if (hr[i] || hc[i]) {
                int d = i <= (ADM_HIST_BINS - 2) / 2 ? (ADM_HIST_BINS - 2) / 2 + 1 - i : i - (ADM_HIST_BINS - 2) / 2;
                if (d > k) k = d;
            }
        k = (int)(ceil(k * w) / w + 0.5); /* whole ulps */
        if (k > (ADM_HIST_BINS - 2) / 2) k = (ADM_HIST_BINS - 2) / 2;
        lo = (ADM_HIST_BINS - 2) / 2 + 1 - k;
        hi = (ADM_HIST_BINS - 2) / 2 + k;
        if (out_r || out_c) {
            lo = 0;
            hi = ADM_HIST_BINS - 1;
        }
    }
    nb = hi - lo + 1;
    for (int i = lo; i <= hi; i++) top = hr[i] > top ? hr[i] : hc[i] > top ? hc[i] : top;
    top_dec = pow(10, ceil(log10((double)top) + 1e-9));
    adm_buf_printf(b, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" font-size=\"12\" "
                   "font-family=\"system-ui,sans-serif\"><title>Error histogram, %s: the reference path grey, the "
                   "candidate blue; counts on a log scale</title>", PW, H, PW, H,
                   logview ? "by octave of |error| in ulps" : "in ulps");
    adm_buf_puts(b, "<defs><pattern id=\"hatch\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" "
                    "patternTransform=\"rotate(45)\"><rect width=\"4\" height=\"4\" fill=\"#fff\"/>"
                    "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"4\" stroke=\"#57606a\" stroke-width=\"2\"/></pattern></defs>");
    adm_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#8c959f\"/>", L, T, pw, ph);
    /* y: decades */
    for (double c = 1; c <= top_dec * 1.0001; c *= 10) {
        double y = T + ph - ybar((int64_t)c, top_dec, ph);
        char lab[16];
        if (c >= 1e6) snprintf(lab, sizeof lab, "%gM", c / 1e6);
        else if (c >= 1e3) snprintf(lab, sizeof lab, "%gk", c / 1e3);
        else snprintf(lab, sizeof lab, "%g", c);
        adm_buf_printf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eaeef2\"/><text x=\"%d\" "
                       "y=\"%.1f\" text-anchor=\"end\">%s</text>", L, L + pw, y, y, L - 4, y + 4, lab);
    }
    adm_buf_printf(b, "<text x=\"12\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 12 %d)\">count (log "
                   "scale)</text>", T + ph / 2, T + ph / 2);
    /* the bars */
    {
        double bw = (double)pw / nb;
        for (int i = lo; i <= hi; i++) {
            double x = L + (i - lo) * bw;
            int over = logview ? (i == 0 || i == ADM_HIST_LOG_BINS - 1) : (i == 0 || i == ADM_HIST_BINS - 1);
            double h1 = ybar(hr[i], top_dec, ph), h2 = ybar(hc[i], top_dec, ph);
            if (over)
                adm_buf_printf(b, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"url(#hatch)\" "
                               "opacity=\"0.5\"><title>overflow: beyond the axis</title></rect>", x, T, bw, ph);
            if (h1 > 0)
                adm_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#8c959f\">"
                               "<title>reference path: %lld</title></rect>", x + 0.5, T + ph - h1, bw / 2 - 0.5, h1,
                               (long long)hr[i]);
            if (h2 > 0)
                adm_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#0969da\">"
                               "<title>candidate: %lld</title></rect>", x + bw / 2, T + ph - h2, bw / 2 - 0.5, h2,
                               (long long)hc[i]);
        }
        /* x ticks */
        if (logview) {
            int k = ADM_HIST_LOG_ZERO - lo, step = k <= 8 ? 2 : k <= 16 ? 4 : 8;
            char lab[24];
            adm_buf_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">0</text>",
                           L + (ADM_HIST_LOG_ZERO - lo + 0.5) * bw, T + ph + 15);
            for (int j = step; j <= k; j += step) {
                /* the boundary above octave j: 2^(MIN + j) */
                int e = ADM_HIST_LOG_MIN + j;
                double xr = L + (ADM_HIST_LOG_ZERO + j + 1 - lo) * bw, xl = L + (ADM_HIST_LOG_ZERO - j - lo) * bw;
                if (j > ADM_HIST_LOG_OCTAVES) break;
                pow2_label(e, lab, sizeof lab);
                adm_buf_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#57606a\"/>"
                               "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>"
                               "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#57606a\"/>"
                               "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">&#8722;%s</text>",
                               xr, xr, T + ph, T + ph + 4, xr, T + ph + 15, lab, xl, xl, T + ph, T + ph + 4, xl,
                               T + ph + 15, lab);
            }
            adm_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">error in ulps, by powers of 2 (log "
                           "scale), signed</text>", L + pw / 2, T + ph + 34);
        } else {
            const double w = 2 * ADM_HIST_RANGE / (ADM_HIST_BINS - 2);
            /* bin i (inner) starts at -RANGE + (i - 1) w */
#define XU(u) (L + ((((u) + ADM_HIST_RANGE) / w + 1) - lo) * bw)
            double ulo = -ADM_HIST_RANGE + (lo < 1 ? 0 : lo - 1) * w, uhi = -ulo;
            int stepu = uhi - ulo > 4 ? 2 : 1;
            for (int u = (int)ulo; u <= (int)uhi; u++) {
                if (u % stepu) continue;
                adm_buf_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#57606a\"/><text "
                               "x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s%d</text>", XU(u), XU(u), T + ph,
                               T + ph + 4, XU(u), T + ph + 15, u < 0 ? "&#8722;" : "", abs(u));
            }
#undef XU
            if (lo == 0)
                adm_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"start\">&lt;&#8722;%g</text><text x=\"%d\" "
                               "y=\"%d\" text-anchor=\"end\">&gt;%g</text>", L, T + ph + 28, ADM_HIST_RANGE, L + pw,
                               T + ph + 28, ADM_HIST_RANGE);
            adm_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">error in ulps (linear)</text>",
                           L + pw / 2, T + ph + (lo == 0 ? 42 : 34));
        }
    }
    adm_buf_puts(b, "</svg>");
    adm_buf_puts(b, "<ul class=\"legend\"><li><span class=\"swatch\" style=\"background:#8c959f\"></span>reference "
                    "path</li><li><span class=\"swatch\" style=\"background:#0969da\"></span>candidate</li>");
    if (lo == 0)
        adm_buf_puts(b, "<li><span class=\"swatch hatch\"></span>overflow bin (beyond the axis)</li>");
    adm_buf_puts(b, "</ul><figcaption>");
    if (logview)
        adm_buf_printf(b, "By octave of |error| in ulps%s: %lld of %lld candidate errors lie beyond &plusmn;%g ulps "
                       "(%lld of the reference path's). The centre bin holds errors below %s ulp.",
                       v->ulp_gated ? " at the condition scale" : " at the token/channel scale", (long long)out_c,
                       (long long)tot_c, ADM_HIST_RANGE, (long long)out_r, "1/64");
    else
        adm_buf_printf(b, "In ulps%s, bins of %g ulp%s.", v->ulp_gated ? " at the condition scale" : " at the "
                       "token/channel scale", 2 * ADM_HIST_RANGE / (ADM_HIST_BINS - 2),
                       out_r || out_c ? "; the end bins count what lies beyond &plusmn;4 ulps" : "");
    adm_buf_puts(b, "</figcaption>");
}

/* ---------------------------------------------------------------- the detail */

static void put_num_row(adm_buf *b, const char *what, const char *unit, double ref, double cand)
{
    adm_buf_printf(b, "<tr><th scope=\"row\">%s%s</th><td class=\"num\">", what, unit);
    put_g(b, "%.4g", ref, "");
    adm_buf_puts(b, "</td><td class=\"num\">");
    put_g(b, "%.4g", cand, "");
    adm_buf_puts(b, "</td></tr>");
}

static void put_numbers(adm_buf *b, const adm_verdict *v)
{
    static const char *lab[ADM_BIAS_SCOPES][ADM_BIAS_KINDS] = {
        {"mean error", "mean along sign(o)", "gain"},
        {"per-channel mean", "per-channel sign", "per-channel gain"},
        {"per-row mean", "per-row sign", "per-row gain"}};
    int pooled = v->ev.captures > 1;
    adm_buf_puts(b, "<div class=\"scroll\"><table>\n<thead><tr><th scope=\"col\">error</th><th scope=\"col\" "
                    "class=\"num\">reference path</th><th scope=\"col\" class=\"num\">candidate</th></tr></thead>"
                    "<tbody>");
    put_num_row(b, "RMS error", pooled ? " (D)" : "", v->rms_r, v->rms_c);
    put_num_row(b, "max error", pooled ? " (D)" : "", v->max_r, v->max_c);
    put_num_row(b, "RMS error", " (ulps)", v->ulp_rms_r, v->ulp_rms_c);
    put_num_row(b, "max error", " (ulps)", v->ulp_max_r, v->ulp_max_c);
    for (int sc = 0; sc < ADM_BIAS_SCOPES; sc++)
        for (int k = 0; k < ADM_BIAS_KINDS; k++)
            if (v->bias[sc][k].applicable) put_num_row(b, lab[sc][k], " (D)", v->bias[sc][k].ref, v->bias[sc][k].cand);
    adm_buf_puts(b, "</tbody></table></div>");
}

/* What the evidence could have missed, against what the claim requires. */
static void put_power(adm_buf *b, const adm_report_row *row)
{
    const adm_verdict *v = &row->verdict;
    const adm_power *p = &v->power, *q = &row->required;
    struct { const char *what; double have, need; int ratio; } c[] = {
        {"lean (the signed mean)", p->lean, q->lean, 0},  {"lean along sign(o)", p->sign, q->sign, 0},
        {"gain (a scale error)", p->gain, q->gain, 0},    {"per-channel bias", p->channel, q->channel, 0},
        {"per-row bias", p->row, q->row, 0},              {"RMS ratio", p->rms_ratio, q->rms_ratio, 1},
    };
    int any_need = 0;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) any_need |= c[i].need > 0;
    adm_buf_puts(b, "<h3>Power</h3>");
    if (v->n == 0) {
        adm_buf_puts(b, "<p>None: no element was judged.</p>");
        return;
    }
    adm_buf_printf(b, "<p class=\"note\">The smallest effect of each kind this evidence would have rejected, over %lld "
                   "elements%s: smaller ones could go unseen%s. Leans are in units of D, the reference path's RMS "
                   "error.</p>", (long long)v->n, v->ev.captures > 1 ? "" : " of one capture",
                   p->lean > 0.25 ? " (add captures to see them)" : "");
    adm_buf_puts(b, "<div class=\"scroll\"><table><thead><tr><th scope=\"col\">effect</th><th scope=\"col\" "
                    "class=\"num\">detectable from</th>");
    if (any_need) adm_buf_puts(b, "<th scope=\"col\" class=\"num\">required</th>");
    adm_buf_puts(b, "</tr></thead><tbody>");
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int met = !(c[i].need > 0) || (c[i].have > 0 && c[i].have <= c[i].need);
        if (!(c[i].have > 0) && !(c[i].need > 0)) continue; /* not applicable (a 1-D output has no channels) */
        adm_buf_printf(b, "<tr><th scope=\"row\">%s</th><td class=\"num\">", c[i].what);
        if (c[i].have > 0) put_g(b, c[i].ratio ? "%.3g" : "%.2g", c[i].have, c[i].ratio ? "x" : " D");
        else adm_buf_puts(b, "no such statistic");
        if (i == 2 && p->gain_relative > 0) adm_buf_printf(b, " (%.2g%%)", 100 * p->gain_relative);
        adm_buf_puts(b, "</td>");
        if (any_need) {
            adm_buf_puts(b, "<td class=\"num\">");
            if (c[i].need > 0) {
                put_g(b, c[i].ratio ? "%.3g" : "%.2g", c[i].need, c[i].ratio ? "x" : " D");
                adm_buf_puts(b, met ? " <span class=\"badge holds\">met</span>" : " <span class=\"badge fail\">not met</span>");
            } else {
                adm_buf_puts(b, "&ndash;");
            }
            adm_buf_puts(b, "</td>");
        }
        adm_buf_puts(b, "</tr>");
    }
    adm_buf_puts(b, "</tbody></table></div>");
}

/* One test's cells: the value and its threshold with its degrees of
 * freedom ("-" where the test does not apply). */
static void put_test(adm_buf *b, int on, double x, double thr, double dof1, double dof2, int two)
{
    adm_buf_puts(b, "<td class=\"num\">");
    if (on) put_g(b, "%.3g", x, "");
    else adm_buf_puts(b, "&ndash;");
    adm_buf_puts(b, "</td><td class=\"num\">");
    if (on) {
        put_g(b, "%.3g", thr, "");
        adm_buf_puts(b, " (");
        put_g(b, "%.3g", dof1, "");
        if (two) {
            adm_buf_puts(b, ", ");
            put_g(b, "%.3g", dof2, "");
        }
        adm_buf_puts(b, ")");
    } else {
        adm_buf_puts(b, "&ndash;");
    }
    adm_buf_puts(b, "</td>");
}

/* Gate 2's group statistics, each tested in D and in ulps, twice each
 * (GATES.md, gate 2): the spread across the groups in standard errors
 * against Student's t at G - 1 degrees of freedom, the variance ratio
 * against its F quantile at (h1, h2), and which decided a failure. None
 * on a 1-D output. */
static void put_groups(adm_buf *b, const adm_verdict *v)
{
    int any = 0;
    for (int sc = ADM_BIAS_CHANNEL; sc <= ADM_BIAS_ROW; sc++)
        for (int k = 0; k < ADM_BIAS_KINDS; k++) any |= v->bias[sc][k].applicable;
    if (!any) return;
    adm_buf_puts(b, "<h3>Group tests</h3><p class=\"note\">Each per-channel and per-row statistic is tested on "
                    "the groups' leans in units of D and in ulps at the condition scale, twice each (gate 2): the "
                    "spread of the leans across the groups, in standard errors against Student's t at G &minus; 1 "
                    "degrees of freedom, and the variance ratio against its F quantile at (h1, h2) degrees of "
                    "freedom; any test, with the lean beyond its floor, fails it.</p>");
    adm_buf_puts(b, "<div class=\"scroll\"><table><thead><tr><th scope=\"col\">statistic</th><th scope=\"col\" "
                    "class=\"num\">spread (standard errors)</th><th scope=\"col\" class=\"num\">t (dof)</th>"
                    "<th scope=\"col\" class=\"num\">variance ratio</th><th scope=\"col\" class=\"num\">F quantile "
                    "(h1, h2)</th><th scope=\"col\" class=\"num\">spread in ulps</th><th scope=\"col\" "
                    "class=\"num\">t (dof)</th><th scope=\"col\" class=\"num\">variance ratio in ulps</th>"
                    "<th scope=\"col\" class=\"num\">F quantile (h1, h2)</th><th scope=\"col\">outcome</th></tr>"
                    "</thead><tbody>");
    for (int sc = ADM_BIAS_CHANNEL; sc <= ADM_BIAS_ROW; sc++)
        for (int k = 0; k < ADM_BIAS_KINDS; k++) {
            const adm_bias_test *bt = &v->bias[sc][k];
            double z, zu;
            char outcome[128];
            if (!bt->applicable) continue;
            adm_report_group_tests(bt, &z, &zu);
            adm_report_group_outcome(bt, outcome, sizeof outcome);
            adm_buf_printf(b, "<tr><th scope=\"row\">per-%s %s</th>", adm_bias_scope_name(sc), adm_bias_kind_name(k));
            put_test(b, 1, z, bt->t, bt->dof, 0, 0);
            put_test(b, 1, bt->f, bt->f_quantile, bt->f_dof1, bt->f_dof2, 1);
            put_test(b, bt->ulps_applicable, zu, bt->u_t, bt->u_dof, 0, 0);
            put_test(b, bt->ulps_applicable, bt->u_f, bt->u_f_quantile, bt->u_f_dof1, bt->u_f_dof2, 1);
            adm_buf_printf(b, "<td><span class=\"badge %s\">%s</span></td></tr>", bt->failed ? "fail" : "pass",
                           outcome);
        }
    adm_buf_puts(b, "</tbody></table></div>");
}

/* Decision flips, where a reader is declared or given. */
static void put_flips(adm_buf *b, const adm_report_row *row)
{
    const adm_verdict *v = &row->verdict;
    const adm_gate_outcome *g = &v->gate[ADM_GATE_FLIP];
    if (!(v->decisions > 0 || g->applicable)) return;
    adm_buf_puts(b, "<h3>Decision flips</h3><p class=\"note\">");
    if (row->reader) {
        adm_buf_puts(b, "Reader <code>");
        adm_buf_xml(b, row->reader);
        adm_buf_puts(b, "</code>");
    } else {
        adm_buf_puts(b, "The reader");
    }
    adm_buf_printf(b, "%s: how often the output read downstream decides otherwise than the oracle would, over %lld "
                   "decisions (%lld ties at a boundary left out).</p>",
                   g->applicable ? " is declared, so flips are gated (gate 5)" : " is not declared: flips are reported, not gated",
                   (long long)v->decisions, (long long)v->ties);
    adm_buf_puts(b, "<div class=\"scroll\"><table><thead><tr><th scope=\"col\"></th><th scope=\"col\" class=\"num\">"
                    "reference path</th><th scope=\"col\" class=\"num\">candidate</th></tr></thead><tbody>");
    adm_buf_printf(b, "<tr><th scope=\"row\">flips</th><td class=\"num\">%lld</td><td class=\"num\">%lld</td></tr>",
                   (long long)v->flips_r, (long long)v->flips_c);
    adm_buf_puts(b, "<tr><th scope=\"row\">flip rate</th><td class=\"num\">");
    put_g(b, "%.3g", v->decisions ? 100.0 * (double)v->flips_r / (double)v->decisions : NAN, "%");
    adm_buf_puts(b, "</td><td class=\"num\">");
    put_g(b, "%.3g", v->decisions ? 100.0 * (double)v->flips_c / (double)v->decisions : NAN, "%");
    adm_buf_puts(b, "</td></tr></tbody></table></div>");
    if (g->applicable && !g->passed) {
        adm_buf_puts(b, "<p>");
        adm_buf_xml(b, g->reason);
        adm_buf_puts(b, "</p>");
    }
}

/* The captures a pooled verdict adds up, each one's own verdict in brief. */
static void put_captures(adm_buf *b, const adm_report_row *row)
{
    if (row->ncaptures < 2) return;
    adm_buf_printf(b, "<h3>The %d captures pooled</h3><p class=\"note\">The verdict above is judged on their pooled "
                   "evidence; each capture's own verdict, for comparison (ratios to the reference path, lean in units "
                   "of that capture's D).</p>", row->ncaptures);
    adm_buf_puts(b, "<div class=\"scroll\"><table><thead><tr><th scope=\"col\">capture</th><th scope=\"col\">verdict"
                    "</th><th scope=\"col\" class=\"num\">elements</th><th scope=\"col\" class=\"num\">RMS ratio</th>"
                    "<th scope=\"col\" class=\"num\">max ratio</th><th scope=\"col\" class=\"num\">ulp RMS ratio</th>"
                    "<th scope=\"col\" class=\"num\">lean (D)</th><th scope=\"col\" class=\"num\">lean detectable "
                    "from (D)</th></tr></thead><tbody>");
    for (int k = 0; k < row->ncaptures; k++) {
        const adm_capture_summary *cs = &row->per_capture[k];
        adm_buf_printf(b, "<tr><td class=\"num\">%d</td><td>", k);
        put_tier(b, cs->tier);
        adm_buf_printf(b, "</td><td class=\"num\">%lld</td><td class=\"num\">", (long long)cs->n);
        put_g(b, "%.3g", cs->rms_ratio, "x");
        adm_buf_puts(b, "</td><td class=\"num\">");
        put_g(b, "%.3g", cs->max_ratio_judged, "x");
        adm_buf_puts(b, "</td><td class=\"num\">");
        put_g(b, "%.3g", cs->ulp_ratio, "x");
        adm_buf_puts(b, "</td><td class=\"num\">");
        put_g(b, "%.2g", cs->lean, "");
        adm_buf_puts(b, "</td><td class=\"num\">");
        put_g(b, "%.2g", cs->lean_detect, "");
        adm_buf_puts(b, "</td></tr>");
    }
    adm_buf_puts(b, "</tbody></table></div>");
}

static void put_detail(adm_buf *b, const adm_report *r, int i)
{
    const adm_report_row *row = &r->rows[i];
    const adm_verdict *v = &row->verdict;
    int any = 0;
    adm_buf_printf(b, "<section class=\"entry\" id=\"e%d\"><h2>", i + 1);
    adm_buf_xml(b, adm_report_base(row->source));
    adm_buf_puts(b, " &middot; ");
    adm_buf_xml(b, row->candidate);
    adm_buf_puts(b, "</h2>\n<p>");
    if (row->has_claim) {
        adm_buf_puts(b, adm_report_is_table(r) ? "declared " : "claimed ");
        put_tier(b, row->claim);
        adm_buf_puts(b, " &middot; ");
    }
    adm_buf_puts(b, "measured ");
    put_tier(b, v->tier);
    adm_buf_puts(b, " &middot; claim ");
    put_badge(b, row);
    adm_buf_puts(b, "</p>\n");
    if (row->description) {
        adm_buf_puts(b, "<p>");
        adm_buf_xml(b, row->description);
        adm_buf_puts(b, "</p>\n");
    }
    adm_buf_puts(b, "<dl class=\"facts\"><dt>source</dt><dd>");
    adm_buf_xml(b, row->source);
    adm_buf_puts(b, "</dd><dt>op</dt><dd><code>");
    adm_buf_xml(b, row->op);
    adm_buf_puts(b, "</code></dd>");
    if (row->static_decl) {
        char st[1024];
        adm_report_static_text(row->static_decl, st, sizeof st);
        adm_buf_puts(b, "<dt>static declarations</dt><dd>");
        adm_buf_xml(b, st[0] ? st : "none");
        adm_buf_puts(b, "</dd>");
    }
    if (row->reader) {
        adm_buf_puts(b, "<dt>reader</dt><dd><code>");
        adm_buf_xml(b, row->reader);
        adm_buf_puts(b, "</code></dd>");
    }
    adm_buf_puts(b, "<dt>oracle</dt><dd>");
    adm_buf_xml(b, adm_report_oracle_basis(v));
    adm_buf_printf(b, "</dd><dt>compared</dt><dd>%lld elements, %lld refined with MPFR</dd>", (long long)v->n,
                   (long long)row->mpfr_refined);
    if (v->ev.captures > 1)
        adm_buf_printf(b, "<dt>pooled</dt><dd>over %.0f captures: the absolute errors are in units of each capture's "
                       "D</dd>", v->ev.captures);
    adm_buf_puts(b, "</dl>\n<div class=\"detail\">");
    put_numbers(b, v);
    adm_buf_puts(b, "<figure class=\"plot\">");
    svg_hist(b, v);
    adm_buf_puts(b, "</figure></div>\n<h3>Why ");
    adm_buf_puts(b, adm_tier_name(v->tier));
    adm_buf_puts(b, "</h3><div class=\"reasons\">");
    for (int g = 1; g < ADM_GATE_COUNT; g++) {
        if (v->gate[g].passed) continue;
        if (g == ADM_GATE_EXACT && v->tier != ADM_TIER_EXACT) continue;
        adm_buf_puts(b, "<p><b>");
        adm_buf_xml(b, adm_gate_name(g));
        adm_buf_puts(b, "</b>: ");
        adm_buf_xml(b, v->gate[g].reason);
        adm_buf_puts(b, "</p>");
        any = 1;
    }
    if (!any)
        adm_buf_puts(b, v->tier == ADM_TIER_EXACT ? "<p>Bit-identical to the reference path.</p>"
                                                  : "<p>Every gate of its tier holds.</p>");
    adm_buf_puts(b, "</div>\n");
    put_groups(b, v);
    put_flips(b, row);
    put_power(b, row);
    put_captures(b, row);
    adm_buf_puts(b, "<p><a href=\"#verdicts\">back to the verdicts</a></p></section>\n");
}

/* ---------------------------------------------------------------- the page */

/* The columns of the verdict table: name, what its header's tooltip and
 * the legend under the table say. */
static const struct {
    const char *head, *num, *what;
} cols[] = {
    {NULL, "", "the capture or entry; a link to its detail"},
    {"candidate", "", "the implementation judged against the reference path"},
    {NULL, "", "the tier the candidate is claimed (replay, run: --claim) or declared (a table) to serve at"},
    {"measured", "", "the tier the gates measured: exact (bit-identical), lossless (only rounding moves) or high "
                     "(what is computed changes)"},
    {"claim", "", "holds (measured the claimed tier), unsafe (measured looser: the claim is violated), promotable "
                  "(measured stricter: it could be claimed stricter; a violation with --strict), or error"},
    {"RMS ratio", " num", "the candidate's RMS error as a multiple of the reference path's (gate 1)"},
    {"max ratio", " num", "the candidate's maximum error as a multiple of the reference path's: the figure gate 1 "
                          "judged (where ulps are gated, the smaller of the absolute and the ulp yardstick)"},
    {"ulp RMS ratio", " num", "the RMS error in ulps as a multiple of the reference path's"},
    {"lean (D)", " num", "the mean of candidate &minus; reference, in units of D (the reference path's RMS error): "
                         "the candidate's bias relative to the reference's own, 0 for an exact candidate (gate 2)"},
    {"gates failed", "", "the gates that failed, which keep the verdict from a stricter tier (not a failure of a "
                         "claim: the claim column says that)"},
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

static void put_cell_open(adm_buf *b, int c, const char *cls, const char *label)
{
    adm_buf_printf(b, "<td class=\"%s%s\" data-label=\"", cls, cols[c].num);
    adm_buf_xml(b, label);
    adm_buf_puts(b, "\">");
}

adm_status adm_report_render_html(const adm_report *r, char **out, size_t *len)
{
    adm_buf b = {0};
    char date[32], host[256], text[1024];
    const char *keys[ADM_REPORT_MAX_CONTEXT + 4], *vals[ADM_REPORT_MAX_CONTEXT + 4];
    const char *slab = r->source_label ? r->source_label : "capture", *clab = r->claim_label ? r->claim_label : "claimed";
    const char *heads[NCOLS];
    adm_report_summary s;
    int nk;
    adm_report_summarize(r, &s);
    for (int c = 0; c < NCOLS; c++) heads[c] = cols[c].head;
    heads[0] = slab;
    heads[2] = clab;
    adm_buf_puts(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    adm_buf_xml(&b, r->title);
    adm_buf_puts(&b, "</title><style>");
    adm_buf_puts(&b, adm_page_style);
    adm_buf_puts(&b, "</style></head><body>\n<h1>");
    adm_buf_xml(&b, r->title);
    adm_buf_puts(&b, "</h1>\n");
    /* the banner: the answer first */
    adm_report_summary_text(r, 1, text, sizeof text);
    adm_buf_printf(&b, "<div class=\"banner %s\" role=\"status\"><p class=\"headline\">",
                   s.errors ? "error" : s.violations ? "fail" : s.holds + s.promotable ? "pass" : "neutral");
    adm_buf_xml(&b, text);
    adm_buf_puts(&b, "</p><p class=\"counts\">");
    adm_report_summary_text(r, 0, text, sizeof text);
    adm_buf_xml(&b, text);
    adm_buf_puts(&b, "</p></div>\n<details class=\"run\"><summary>What was run</summary><dl class=\"facts\">");
    adm_report_run_context(r, &nk, keys, vals, date, host);
    for (int i = 0; i < nk; i++) {
        adm_buf_puts(&b, "<dt>");
        adm_buf_xml(&b, keys[i]);
        adm_buf_puts(&b, "</dt><dd>");
        adm_buf_xml(&b, vals[i]);
        adm_buf_puts(&b, "</dd>");
    }
    adm_buf_puts(&b, "</dl></details>\n<h2 id=\"verdicts\">Verdicts</h2>\n<div class=\"scroll\"><table class=\"sum cards\">"
                     "\n<thead><tr>");
    for (int c = 0; c < NCOLS; c++) {
        adm_buf_printf(&b, "<th scope=\"col\" class=\"%s\" title=\"", cols[c].num + (cols[c].num[0] == ' '));
        adm_buf_puts(&b, cols[c].what);
        adm_buf_puts(&b, "\">");
        adm_buf_xml(&b, heads[c]);
        adm_buf_puts(&b, "</th>");
    }
    adm_buf_puts(&b, "</tr></thead>\n<tbody>\n");
    for (int i = 0; i < r->n; i++) {
        const adm_report_row *row = &r->rows[i];
        const adm_verdict *v = &row->verdict;
        adm_buf_printf(&b, "<tr class=\"%s\">", status_class(row));
        put_cell_open(&b, 0, "name", heads[0]);
        if (row->error) {
            adm_buf_xml(&b, row->source);
        } else {
            adm_buf_printf(&b, "<a href=\"#e%d\">", i + 1);
            adm_buf_xml(&b, adm_report_base(row->source));
            adm_buf_puts(&b, "</a>");
        }
        adm_buf_puts(&b, "</td>");
        put_cell_open(&b, 1, "", heads[1]);
        adm_buf_xml(&b, row->candidate);
        adm_buf_puts(&b, "</td>");
        put_cell_open(&b, 2, "", heads[2]);
        if (row->has_claim) put_tier(&b, row->claim);
        else adm_buf_puts(&b, "&ndash;");
        adm_buf_puts(&b, "</td>");
        put_cell_open(&b, 3, "verdict", heads[3]);
        if (row->error) adm_buf_puts(&b, "<span class=\"badge error\">not measured</span>");
        else put_tier(&b, v->tier);
        adm_buf_puts(&b, "</td>");
        put_cell_open(&b, 4, "verdict", heads[4]);
        put_badge(&b, row);
        adm_buf_puts(&b, "</td>");
        if (row->error) {
            for (int c = 5; c < NCOLS - 1; c++) {
                put_cell_open(&b, c, "", heads[c]);
                adm_buf_puts(&b, "&ndash;</td>");
            }
            put_cell_open(&b, NCOLS - 1, "msg", "why");
            adm_buf_puts(&b, "not measured: ");
            adm_buf_xml(&b, row->error);
            adm_buf_puts(&b, "</td></tr>\n");
            continue;
        }
        put_cell_open(&b, 5, "", heads[5]);
        put_g(&b, "%.3g", v->rms_ratio, "x");
        adm_buf_puts(&b, "</td>");
        put_cell_open(&b, 6, "", heads[6]);
        put_g(&b, "%.3g", v->max_ratio_judged, "x");
        adm_buf_puts(&b, "</td>");
        put_cell_open(&b, 7, "", heads[7]);
        put_g(&b, "%.3g", v->ulp_ratio, "x");
        if (!v->ulp_gated) adm_buf_puts(&b, " (not gated)");
        adm_buf_puts(&b, "</td>");
        put_cell_open(&b, 8, "", heads[8]);
        put_g(&b, "%.2g", v->bias[ADM_BIAS_GLOBAL][ADM_BIAS_MEAN].diff, "");
        adm_buf_puts(&b, "</td>");
        put_cell_open(&b, 9, "gates", heads[9]);
        put_failed_gates(&b, v);
        if (adm_report_insufficient(row)) adm_buf_puts(&b, " (insufficient evidence)");
        adm_buf_puts(&b, "</td></tr>\n");
    }
    adm_buf_puts(&b, "</tbody></table></div>\n<details class=\"cols\" open><summary>What the columns say</summary>"
                     "<dl class=\"cols\">");
    for (int c = 0; c < NCOLS; c++) {
        adm_buf_puts(&b, "<dt>");
        adm_buf_xml(&b, heads[c]);
        adm_buf_puts(&b, ":</dt><dd>");
        adm_buf_puts(&b, cols[c].what);
        adm_buf_puts(&b, ".</dd>");
    }
    adm_buf_puts(&b, "</dl></details>\n");
    for (int i = 0; i < r->n; i++)
        if (!r->rows[i].error) put_detail(&b, r, i); /* an error's row says why */
    adm_buf_puts(&b, "<p class=\"note\">Gates and thresholds: harness/GATES.md. Generated by admit "
                     ADM_VERSION_STRING ".</p>\n</body></html>\n");
    if (b.oom) {
        free(b.p);
        return ADM_FAIL(ADM_ERR_NOMEM, "HTML report: out of memory");
    }
    *out = b.p;
    *len = b.n;
    return ADM_OK;
}
