/* PSNR, SSIM and the mean absolute difference, as scikit-image computes
 * them (skimage.metrics.peak_signal_noise_ratio with data_range;
 * structural_similarity with its defaults: a 7 x 7 uniform window, K1 0.01,
 * K2 0.03, sample covariance, the border cropped, channels averaged). */
#include "adm_drift.h"
#include "adm_fpenv.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#define U DBL_EPSILON / 2

void adm_ssim_config_default(adm_ssim_config *c)
{
    c->win_size = 7;
    c->k1 = 0.01;
    c->k2 = 0.03;
    c->use_sample_covariance = 1;
}

/* Neumaier's compensated sum: |result - exact| <= 2 u |exact| + n u^2
 * sum |terms| (Higham, Accuracy and Stability, 4.3). */
typedef struct ksum { double s, c; } ksum;
static void kadd(ksum *k, double v)
{
    double t = k->s + v;
    if (fabs(k->s) >= fabs(v)) k->c += (k->s - t) + v;
    else k->c += (v - t) + k->s;
    k->s = t;
}
static double kval(const ksum *k) { return k->s + k->c; }

ADM_FPENV_BODY
static double ssim_error_bound_body(double a_over_r, const adm_ssim_config *cfg)
{
    /* Per window (first order, derivation at adm_ssim_plane): means carry
     * E_m = (4 win + 4) u A^2, (co)variances E_v = (6 win + 6) u A^2; the
     * local SSIM moves by at most 2 E_m / C1 + 4 E_v / C2 + 10 u. Doubled
     * for the second-order terms; the compensated mean adds 2 u. */
    double w = cfg->win_size, q = a_over_r * a_over_r;
    double first = (2 * (4 * w + 4) / (cfg->k1 * cfg->k1) + 4 * (6 * w + 6) / (cfg->k2 * cfg->k2)) * U * q + 10 * U;
    return 2 * first + 2 * U;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
double adm_ssim_error_bound(double a_over_r, const adm_ssim_config *cfg)
{
    adm_fpenv fe;
    double rv;
    adm_fpenv_enter(&fe);
    rv = ssim_error_bound_body(a_over_r, cfg);
    adm_fpenv_leave(&fe);
    return rv;
}

/* Local moments of every window inside the plane: for the output position
 * (i, j) (window rows i..i+win-1, columns j..j+win-1), the five sums
 * x, y, xx, yy, xy, each as a column sum over win rows, then a row sum over
 * win columns: 2 (win - 1) additions, each rounding once. */
ADM_FPENV_BODY
static adm_status ssim_plane_body(const double *x, const double *y, int64_t h, int64_t w, int64_t stride,
                                  double data_range,
                                  const adm_ssim_config *cfg, double *ssim)
{
    const int64_t win = cfg->win_size;
    const double np = (double)(win * win);
    const double cov = cfg->use_sample_covariance ? np / (np - 1) : 1.0;
    const double c1 = (cfg->k1 * data_range) * (cfg->k1 * data_range), c2 = (cfg->k2 * data_range) * (cfg->k2 * data_range);
    double *col;
    ksum total = {0, 0};
    if (win < 3 || win % 2 == 0)
        return ADM_FAIL(ADM_ERR_INVALID, "SSIM: the window size must be odd and at least 3, got %lld", (long long)win);
    if (h < win || w < win)
        return ADM_FAIL(ADM_ERR_SHAPE, "SSIM needs at least %lld x %lld values per channel, got %lld x %lld",
                        (long long)win, (long long)win, (long long)h, (long long)w);
    if (!(data_range > 0) || !isfinite(data_range))
        return ADM_FAIL(ADM_ERR_INVALID, "SSIM: data_range must be positive and finite, got %g", data_range);
    col = malloc(sizeof *col * 5 * (size_t)w);
    if (!col) return ADM_FAIL(ADM_ERR_NOMEM, "SSIM: out of memory");
    for (int64_t i = 0; i + win <= h; i++) {
        /* column sums over rows i..i+win-1 */
        for (int64_t j = 0; j < w; j++) {
            double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
            for (int64_t r = i; r < i + win; r++) {
                double a = x[(r * w + j) * stride], b = y[(r * w + j) * stride];
                sx += a;
                sy += b;
                sxx += a * a;
                syy += b * b;
                sxy += a * b;
            }
            col[5 * j] = sx;
            col[5 * j + 1] = sy;
            col[5 * j + 2] = sxx;
            col[5 * j + 3] = syy;
            col[5 * j + 4] = sxy;
        }
        for (int64_t j = 0; j + win <= w; j++) {
            double s[5] = {0, 0, 0, 0, 0};
            for (int64_t c = j; c < j + win; c++)
                for (int k = 0; k < 5; k++) s[k] += col[5 * c + k];
            {
                /* skimage: ux = filter(im1) etc., then the same expression
                 * tree (numpy evaluates left to right) */
                double ux = s[0] / np, uy = s[1] / np, uxx = s[2] / np, uyy = s[3] / np, uxy = s[4] / np;
                double vx = cov * (uxx - ux * ux), vy = cov * (uyy - uy * uy), vxy = cov * (uxy - ux * uy);
                double a1 = 2 * ux * uy + c1, a2 = 2 * vxy + c2, b1 = ux * ux + uy * uy + c1, b2 = vx + vy + c2;
                kadd(&total, (a1 * a2) / (b1 * b2));
            }
        }
    }
    free(col);
    *ssim = kval(&total) / (double)((h - win + 1) * (w - win + 1));
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_ssim_plane(const double *x, const double *y, int64_t h, int64_t w, int64_t stride, double data_range,
                          const adm_ssim_config *cfg, double *ssim)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = ssim_plane_body(x, y, h, w, stride, data_range, cfg, ssim);
    adm_fpenv_leave(&fe);
    return rv;
}

static int same_shape(const adm_image *a, const adm_image *b)
{
    return a->frames == b->frames && a->height == b->height && a->width == b->width && a->channels == b->channels;
}

ADM_FPENV_BODY
static adm_status drift_compare_body(const adm_image *a, const adm_image *b, double data_range,
                                     const adm_ssim_config *cfg,
                                     adm_drift_metrics *m)
{
    adm_ssim_config def;
    int64_t n = adm_image_numel(a), plane = a->height * a->width * a->channels;
    ksum se = {0, 0}, ae = {0, 0}, ss = {0, 0};
    double mx = 0;
    int identical = 1;
    memset(m, 0, sizeof *m);
    if (!cfg) {
        adm_ssim_config_default(&def);
        cfg = &def;
    }
    if (!same_shape(a, b))
        return ADM_FAIL(ADM_ERR_SHAPE, "%s is %lld x %lld x %lld x %lld (frames, height, width, channels) but %s is "
                        "%lld x %lld x %lld x %lld",
                        a->source ? a->source : "arm a", (long long)a->frames, (long long)a->height, (long long)a->width,
                        (long long)a->channels, b->source ? b->source : "arm b", (long long)b->frames,
                        (long long)b->height, (long long)b->width, (long long)b->channels);
    if (!(data_range > 0) || !isfinite(data_range))
        return ADM_FAIL(ADM_ERR_INVALID, "data_range must be positive and finite, got %g", data_range);
    for (int64_t i = 0; i < n; i++) {
        double d = a->data[i] - b->data[i];
        if (a->data[i] != b->data[i]) identical = 0;
        kadd(&se, d * d);
        kadd(&ae, fabs(d));
        if (fabs(d) > mx) mx = fabs(d);
    }
    m->n = n;
    m->data_range = data_range;
    m->identical = identical;
    m->mse = kval(&se) / (double)n;
    m->mad = kval(&ae) / (double)n;
    m->max_abs = mx;
    m->psnr = m->mse > 0 ? 10 * log10((data_range * data_range) / m->mse) : INFINITY;
    for (int64_t f = 0; f < a->frames; f++)
        for (int64_t c = 0; c < a->channels; c++) {
            double s;
            adm_status st = adm_ssim_plane(a->data + f * plane + c, b->data + f * plane + c, a->height, a->width,
                                           a->channels, data_range, cfg, &s);
            if (st != ADM_OK) {
                adm_error_prefix("%s: ", a->source ? a->source : "arm");
                return st;
            }
            kadd(&ss, s);
        }
    m->ssim = kval(&ss) / (double)(a->frames * a->channels);
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_drift_compare(const adm_image *a, const adm_image *b, double data_range, const adm_ssim_config *cfg,
                             adm_drift_metrics *m)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = drift_compare_body(a, b, data_range, cfg, m);
    adm_fpenv_leave(&fe);
    return rv;
}

ADM_FPENV_BODY
static double drift_growth_exponent_body(int n, const double *depth, const double *err)
{
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (depth[i] > 0 && err[i] > 0 && isfinite(depth[i]) && isfinite(err[i])) {
            mx += log(depth[i]);
            my += log(err[i]);
            k++;
        }
    if (k < 2) return NAN;
    mx /= k;
    my /= k;
    /* two passes, centred: no cancellation between the sums */
    for (int i = 0; i < n; i++)
        if (depth[i] > 0 && err[i] > 0 && isfinite(depth[i]) && isfinite(err[i])) {
            double dx = log(depth[i]) - mx, dy = log(err[i]) - my;
            sxx += dx * dx;
            sxy += dx * dy;
        }
    return sxx > 0 ? sxy / sxx : NAN;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
double adm_drift_growth_exponent(int n, const double *depth, const double *err)
{
    adm_fpenv fe;
    double rv;
    adm_fpenv_enter(&fe);
    rv = drift_growth_exponent_body(n, depth, err);
    adm_fpenv_leave(&fe);
    return rv;
}
