/* drift: PSNR, SSIM and MAD against independent long double evaluations
 * within their stated bounds and against closed forms; the verdicts
 * (control, band, tiers, floors, tolerance, growth); arms from PNG and
 * HDF5; the spec and the history refuse what is malformed, naming the
 * file and the field or line. */
#include "adm_drift.h"

#include <check.h>
#include <float.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static void make_tmpdir(void)
{
    if (tmpdir[0]) return;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_drift.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("check_drift: mkdtemp");
        exit(EXIT_FAILURE);
    }
}

static const char *tmp(const char *name)
{
    static char buf[4][512];
    static int k;
    make_tmpdir();
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static uint64_t rng_state = 88172645463325252ull;
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* An image of smooth structure plus noise: integers in [0, 255] when
 * integral, else doubles in [0, 1]. */
static void fill(adm_image *img, int integral, double noise)
{
    int64_t n = adm_image_numel(img);
    for (int64_t i = 0; i < n; i++) {
        int64_t x = (i / img->channels) % img->width, y = (i / img->channels / img->width) % img->height;
        double v = 0.5 + 0.3 * sin(0.3 * (double)x + 0.2 * (double)y + (double)(i % img->channels)) + noise * (urand() - 0.5);
        v = v < 0 ? 0 : v > 1 ? 1 : v;
        img->data[i] = integral ? nearbyint(255 * v) : v;
    }
    img->data_range = integral ? 255 : 1;
}

/* SSIM of one plane evaluated directly, window by window, in long double. */
static long double ssim_direct(const double *x, const double *y, int64_t h, int64_t w, int64_t stride, double R)
{
    const int win = 7;
    long double np = 49, cov = np / (np - 1), c1 = (0.01L * R) * (0.01L * R), c2 = (0.03L * R) * (0.03L * R), total = 0;
    for (int64_t i = 0; i + win <= h; i++)
        for (int64_t j = 0; j + win <= w; j++) {
            long double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
            for (int a = 0; a < win; a++)
                for (int b = 0; b < win; b++) {
                    long double p = x[((i + a) * w + j + b) * stride], q = y[((i + a) * w + j + b) * stride];
                    sx += p;
                    sy += q;
                    sxx += p * p;
                    syy += q * q;
                    sxy += p * q;
                }
            {
                long double ux = sx / np, uy = sy / np;
                long double vx = cov * (sxx / np - ux * ux), vy = cov * (syy / np - uy * uy), vxy = cov * (sxy / np - ux * uy);
                total += ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2));
            }
        }
    return total / (long double)((h - win + 1) * (w - win + 1));
}

/* ---------------------------------------------------------------- metrics */

START_TEST(test_psnr_closed_form)
{
    /* a constant offset d: MSE = d^2, PSNR = 20 log10(R / d), MAD = d */
    static const double offs[] = {1, 3, 0.5, 17};
    for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
        adm_image a, b;
        adm_drift_metrics m;
        ck_assert_int_eq(adm_image_alloc(&a, 2, 9, 11, 3), ADM_OK);
        ck_assert_int_eq(adm_image_alloc(&b, 2, 9, 11, 3), ADM_OK);
        fill(&a, 1, 0.2);
        for (int64_t i = 0; i < adm_image_numel(&a); i++) b.data[i] = a.data[i] + ((i & 1) ? offs[k] : -offs[k]);
        ck_assert_int_eq(adm_drift_compare(&a, &b, 255, NULL, &m), ADM_OK);
        ck_assert(fabs(m.psnr - 20 * log10(255 / offs[k])) <= 1e-12);
        ck_assert(fabs(m.mad - offs[k]) <= 4 * DBL_EPSILON * offs[k]);
        ck_assert(m.max_abs == offs[k]);
        ck_assert(!m.identical);
        adm_image_free(&a);
        adm_image_free(&b);
    }
}
END_TEST

/* PSNR against a long double evaluation, within the stated bound. */
START_TEST(test_psnr_bound)
{
    for (int trial = 0; trial < 6; trial++) {
        adm_image a, b;
        adm_drift_metrics m;
        long double se = 0;
        double bound;
        ck_assert_int_eq(adm_image_alloc(&a, 1, 37 + trial, 53, 3), ADM_OK);
        ck_assert_int_eq(adm_image_alloc(&b, 1, 37 + trial, 53, 3), ADM_OK);
        fill(&a, trial & 1, 0.3);
        fill(&b, trial & 1, 0.3);
        for (int64_t i = 0; i < adm_image_numel(&a); i++) se += ((long double)a.data[i] - b.data[i]) * ((long double)a.data[i] - b.data[i]);
        ck_assert_int_eq(adm_drift_compare(&a, &b, a.data_range, NULL, &m), ADM_OK);
        {
            long double exact = 10 * log10l((long double)a.data_range * a.data_range / (se / adm_image_numel(&a)));
            double u = DBL_EPSILON / 2;
            bound = 10 / log(10) * (4 * u + (double)m.n * u * u) + 2 * (nextafter(m.psnr, INFINITY) - m.psnr);
            ck_assert_msg(fabsl(m.psnr - exact) <= bound, "psnr %.17g exact %.17Lg bound %g", m.psnr, exact, bound);
        }
        adm_image_free(&a);
        adm_image_free(&b);
    }
}
END_TEST

/* SSIM against the window-by-window long double evaluation, within
 * adm_ssim_error_bound; per channel, then averaged. */
START_TEST(test_ssim_bound)
{
    adm_ssim_config cfg;
    adm_ssim_config_default(&cfg);
    for (int trial = 0; trial < 6; trial++) {
        adm_image a, b;
        adm_drift_metrics m;
        long double sum = 0;
        double bound = adm_ssim_error_bound(1.0, &cfg);
        ck_assert_int_eq(adm_image_alloc(&a, 1, 20 + trial, 31, trial % 2 ? 3 : 1), ADM_OK);
        ck_assert_int_eq(adm_image_alloc(&b, 1, 20 + trial, 31, trial % 2 ? 3 : 1), ADM_OK);
        fill(&a, trial < 3, 0.1);
        fill(&b, trial < 3, 0.4);
        ck_assert_int_eq(adm_drift_compare(&a, &b, a.data_range, NULL, &m), ADM_OK);
        for (int64_t c = 0; c < a.channels; c++)
            sum += ssim_direct(a.data + c, b.data + c, a.height, a.width, a.channels, a.data_range);
        sum /= a.channels;
        ck_assert_msg(fabsl(m.ssim - sum) <= bound, "ssim %.17g direct %.17Lg bound %g", m.ssim, sum, bound);
        ck_assert(m.ssim < 1 && m.ssim > 0);
        adm_image_free(&a);
        adm_image_free(&b);
    }
    /* the bound is small where it matters: below 1e-9 for data within its range */
    ck_assert(adm_ssim_error_bound(1.0, &cfg) < 1e-9);
}
END_TEST

/* Constant planes a and b: every variance is 0, so each window's SSIM is
 * (2ab + C1) / (a^2 + b^2 + C1). */
START_TEST(test_ssim_closed_form)
{
    static const double pairs[][2] = {{100, 100}, {100, 120}, {0, 255}, {30, 31}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        adm_image a, b;
        adm_drift_metrics m;
        double x = pairs[k][0], y = pairs[k][1], c1 = (0.01 * 255) * (0.01 * 255);
        ck_assert_int_eq(adm_image_alloc(&a, 1, 8, 10, 1), ADM_OK);
        ck_assert_int_eq(adm_image_alloc(&b, 1, 8, 10, 1), ADM_OK);
        for (int64_t i = 0; i < 80; i++) {
            a.data[i] = x;
            b.data[i] = y;
        }
        ck_assert_int_eq(adm_drift_compare(&a, &b, 255, NULL, &m), ADM_OK);
        ck_assert(fabs(m.ssim - (2 * x * y + c1) / (x * x + y * y + c1)) <= 1e-12);
        adm_image_free(&a);
        adm_image_free(&b);
    }
}
END_TEST

START_TEST(test_growth_exponent)
{
    static const double exps[] = {0.5, 1.0, 0.25, 2.0};
    double dep[20], err[20];
    for (size_t k = 0; k < sizeof exps / sizeof exps[0]; k++) {
        for (int i = 0; i < 20; i++) {
            dep[i] = i + 1;
            err[i] = 3e-3 * pow(dep[i], exps[k]);
        }
        ck_assert(fabs(adm_drift_growth_exponent(20, dep, err) - exps[k]) <= 1e-12);
    }
    /* points with a zero or non-finite error are left out of the fit */
    err[3] = 0;
    err[5] = NAN;
    ck_assert(fabs(adm_drift_growth_exponent(20, dep, err) - 2.0) <= 1e-12);
}
END_TEST

/* ---------------------------------------------------------------- verdicts */

/* Arms: ref, and copies of it moved by +-step on every value. */
static void add_arm(adm_drift *d, const char *name, const adm_image *base, double step)
{
    adm_image img;
    ck_assert_int_eq(adm_image_alloc(&img, base->frames, base->height, base->width, base->channels), ADM_OK);
    for (int64_t i = 0; i < adm_image_numel(&img); i++) img.data[i] = base->data[i] + ((i % 3) ? step : -step);
    img.data_range = base->data_range;
    img.source = adm_strdup(name);
    ck_assert_int_eq(adm_drift_add_arm(d, name, &img), ADM_OK);
}

START_TEST(test_verdicts)
{
    adm_drift *d;
    adm_image base;
    ck_assert_int_eq(adm_image_alloc(&base, 1, 16, 16, 3), ADM_OK);
    fill(&base, 1, 0.0);
    for (int64_t i = 0; i < adm_image_numel(&base); i++) base.data[i] = 20 + 0.8 * base.data[i];
    ck_assert_int_eq(adm_drift_create("t", &d), ADM_OK);
    add_arm(d, "ref", &base, 0);
    add_arm(d, "again", &base, 0);
    add_arm(d, "off", &base, 1);       /* differs: a failing control */
    add_arm(d, "tp2", &base, 2);       /* the band: 20 log10(255/2) */
    add_arm(d, "close", &base, 1);     /* inside the band */
    add_arm(d, "far", &base, 3);       /* outside, above the floors */
    add_arm(d, "awful", &base, 15);    /* below the 28 dB floor */
    ck_assert_int_eq(adm_drift_add_pair(d, NULL, ADM_DRIFT_CONTROL, ADM_TIER_EXACT, "ref", "again"), ADM_OK);
    ck_assert_int_eq(adm_drift_add_pair(d, NULL, ADM_DRIFT_BAND, ADM_TIER_EXACT, "ref", "tp2"), ADM_OK);
    ck_assert_int_eq(adm_drift_add_pair(d, NULL, ADM_DRIFT_TIER, ADM_TIER_LOSSLESS, "ref", "close"), ADM_OK);
    ck_assert_int_eq(adm_drift_add_pair(d, NULL, ADM_DRIFT_TIER, ADM_TIER_HIGH, "ref", "far"), ADM_OK);
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    ck_assert(isinf(adm_drift_pair_at(d, 0)->m.psnr) && adm_drift_pair_at(d, 0)->passed);
    ck_assert(fabs(adm_drift_band_psnr(d) - 20 * log10(255 / 2.0)) < 1e-9);
    ck_assert(adm_drift_pair_at(d, 2)->inside_band && adm_drift_pair_at(d, 2)->passed);
    ck_assert(!adm_drift_pair_at(d, 3)->inside_band && adm_drift_pair_at(d, 3)->passed); /* high: floors only */
    ck_assert(adm_drift_passed(d));
    /* a lossless claim outside the band fails */
    ck_assert_int_eq(adm_drift_add_pair(d, "far lossless", ADM_DRIFT_TIER, ADM_TIER_LOSSLESS, "ref", "far"), ADM_OK);
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    ck_assert(!adm_drift_pair_at(d, 4)->passed && strstr(adm_drift_pair_at(d, 4)->why, "outside the band"));
    ck_assert(!adm_drift_passed(d));
    /* a tolerance wider than the gap admits it: 20 log10(2/3) = -3.52 dB */
    adm_drift_set_band_tolerance(d, 3.6);
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    ck_assert(adm_drift_pair_at(d, 4)->passed);
    adm_drift_set_band_tolerance(d, 3.4);
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    ck_assert(!adm_drift_pair_at(d, 4)->passed);
    adm_drift_set_band_tolerance(d, 0);
    adm_drift_free(d);

    /* a control that differs fails; a high tier below the floors fails */
    ck_assert_int_eq(adm_drift_create("t2", &d), ADM_OK);
    add_arm(d, "ref", &base, 0);
    add_arm(d, "off", &base, 1);
    add_arm(d, "awful", &base, 15);
    ck_assert_int_eq(adm_drift_add_pair(d, NULL, ADM_DRIFT_CONTROL, ADM_TIER_EXACT, "ref", "off"), ADM_OK);
    ck_assert_int_eq(adm_drift_add_pair(d, NULL, ADM_DRIFT_TIER, ADM_TIER_HIGH, "ref", "awful"), ADM_OK);
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    ck_assert(!adm_drift_pair_at(d, 0)->passed && strstr(adm_drift_pair_at(d, 0)->why, "not bit-identical"));
    ck_assert(!adm_drift_pair_at(d, 1)->passed && !adm_drift_pair_at(d, 1)->above_floors);
    /* video floors (24 / 0.92) when set */
    adm_drift_set_video(d, 1);
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    {
        double fp, fs;
        adm_drift_floors(d, &fp, &fs);
        ck_assert(fp == ADM_DRIFT_VIDEO_PSNR && fs == ADM_DRIFT_VIDEO_SSIM);
    }
    adm_drift_free(d);
    adm_image_free(&base);
}
END_TEST

/* The growth gate: a biased series (err ~ depth) against an unbiased
 * reference (err ~ sqrt(depth)) fails a lossless claim, is reported for a
 * high claim; a series like the reference passes. */
START_TEST(test_growth_gate)
{
    adm_drift *d;
    double dep[16], ref[16], same[16], biased[16];
    for (int i = 0; i < 16; i++) {
        dep[i] = i + 1;
        ref[i] = 1e-3 * sqrt(dep[i]);
        same[i] = 0.9e-3 * pow(dep[i], 0.55);
        biased[i] = 1e-3 * dep[i];
    }
    ck_assert_int_eq(adm_drift_create("g", &d), ADM_OK);
    ck_assert_int_eq(adm_drift_add_growth(d, "layers", "exact", 1, ADM_TIER_EXACT, 16, dep, ref), ADM_OK);
    ck_assert_int_eq(adm_drift_add_growth(d, "layers", "lossless", 0, ADM_TIER_LOSSLESS, 16, dep, same), ADM_OK);
    ck_assert_int_eq(adm_drift_add_growth(d, "layers", "biased", 0, ADM_TIER_LOSSLESS, 16, dep, biased), ADM_OK);
    ck_assert_int_eq(adm_drift_add_growth(d, "layers", "biased high", 0, ADM_TIER_HIGH, 16, dep, biased), ADM_OK);
    /* another group has its own reference: the biased series is its reference */
    ck_assert_int_eq(adm_drift_add_growth(d, "steps", "exact", 1, ADM_TIER_EXACT, 16, dep, biased), ADM_OK);
    ck_assert_int_eq(adm_drift_add_growth(d, "steps", "lossless", 0, ADM_TIER_LOSSLESS, 16, dep, ref), ADM_OK);
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    ck_assert(adm_drift_growth_at(d, 1)->passed);
    ck_assert(fabs(adm_drift_growth_at(d, 1)->excess - 0.05) < 1e-9);
    ck_assert(!adm_drift_growth_at(d, 2)->passed && strstr(adm_drift_growth_at(d, 2)->why, "biased"));
    ck_assert(fabs(adm_drift_growth_at(d, 2)->excess - 0.5) < 1e-9);
    ck_assert(adm_drift_growth_at(d, 3)->passed && strstr(adm_drift_growth_at(d, 3)->why, "high"));
    ck_assert(adm_drift_growth_at(d, 5)->passed);
    ck_assert(!adm_drift_passed(d)); /* no pairs, but a failing series */
    adm_drift_free(d);
}
END_TEST

/* ---------------------------------------------------------------- files */

START_TEST(test_png_roundtrip)
{
    adm_image a, b;
    ck_assert_int_eq(adm_image_alloc(&a, 1, 13, 17, 3), ADM_OK);
    fill(&a, 1, 0.5);
    ck_assert_int_eq(adm_image_write_png(&a, 0, 0, 255, tmp("rt.png")), ADM_OK);
    ck_assert_int_eq(adm_image_read_png(tmp("rt.png"), &b), ADM_OK);
    ck_assert(b.height == 13 && b.width == 17 && b.channels == 3 && b.frames == 1 && b.data_range == 255);
    ck_assert(!memcmp(a.data, b.data, sizeof(double) * 13 * 17 * 3));
    adm_image_free(&b);
    /* frames from several files */
    ck_assert_int_eq(adm_image_write_png(&a, 0, 0, 255, tmp("rt2.png")), ADM_OK);
    {
        char src[1100];
        snprintf(src, sizeof src, "%s,%s", tmp("rt.png"), tmp("rt2.png"));
        ck_assert_int_eq(adm_image_load(src, NULL, &b), ADM_OK);
        ck_assert(b.frames == 2 && !memcmp(b.data + 13 * 17 * 3, a.data, sizeof(double) * 13 * 17 * 3));
        adm_image_free(&b);
    }
    adm_image_free(&a);
}
END_TEST

static void write_h5(const char *path, const char *name, int rank, const hsize_t *dims, hid_t type, const void *data,
                     const char *layout, double range)
{
    hid_t f = access(path, F_OK) == 0 ? H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT)
                                      : H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(rank, dims, NULL), d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ck_assert(f >= 0 && d >= 0);
    ck_assert(H5Dwrite(d, type == H5T_STD_U8LE ? H5T_NATIVE_UINT8 : H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                       data) >= 0);
    if (layout) {
        hid_t st = H5Tcopy(H5T_C_S1), as = H5Screate(H5S_SCALAR), a;
        H5Tset_size(st, strlen(layout));
        a = H5Acreate2(d, "layout", st, as, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, st, layout);
        H5Aclose(a);
        H5Sclose(as);
        H5Tclose(st);
    }
    if (range > 0) {
        hid_t as = H5Screate(H5S_SCALAR), a = H5Acreate2(d, "data_range", H5T_IEEE_F64LE, as, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_DOUBLE, &range);
        H5Aclose(a);
        H5Sclose(as);
    }
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
}

START_TEST(test_hdf5_layouts)
{
    /* CHW [2, 3, 4] against HWC [3, 4, 2]: the same image */
    double chw[24], hwc[24];
    uint8_t u8[12];
    hsize_t d1[3] = {2, 3, 4}, d2[3] = {3, 4, 2}, d3[2] = {3, 4};
    adm_image a, b;
    const char *p = tmp("arms.h5");
    char src[1100];
    unlink(p);
    for (int c = 0; c < 2; c++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 4; x++) {
                double v = 0.1 * c + 0.01 * y + 0.001 * x;
                chw[(c * 3 + y) * 4 + x] = v;
                hwc[(y * 4 + x) * 2 + c] = v;
            }
    for (int i = 0; i < 12; i++) u8[i] = (uint8_t)(20 * i);
    write_h5(p, "/chw", 3, d1, H5T_IEEE_F64LE, chw, "CHW", 2.0);
    write_h5(p, "/hwc", 3, d2, H5T_IEEE_F64LE, hwc, NULL, 0);
    write_h5(p, "/u8", 2, d3, H5T_STD_U8LE, u8, NULL, 0);
    snprintf(src, sizeof src, "%s:/chw", p);
    ck_assert_int_eq(adm_image_load(src, NULL, &a), ADM_OK);
    snprintf(src, sizeof src, "%s:/hwc", p);
    ck_assert_int_eq(adm_image_load(src, NULL, &b), ADM_OK);
    ck_assert(a.height == 3 && a.width == 4 && a.channels == 2 && !memcmp(a.data, b.data, sizeof chw));
    ck_assert(a.data_range == 2.0 && b.data_range == 0); /* the attribute; a float without one */
    adm_image_free(&a);
    adm_image_free(&b);
    /* the layout given by the caller when the dataset has none */
    ck_assert_int_eq(adm_image_read_h5(p, "/hwc", "FHW", &a), ADM_OK);
    ck_assert(a.frames == 3 && a.height == 4 && a.width == 2 && a.channels == 1);
    adm_image_free(&a);
    snprintf(src, sizeof src, "%s:/u8", p);
    ck_assert_int_eq(adm_image_load(src, NULL, &a), ADM_OK);
    ck_assert(a.data_range == 255 && a.data[11] == 220);
    adm_image_free(&a);
}
END_TEST

/* The colour types and transformations against each other: the seeds of
 * fuzz_png (fuzz/seeds/make_png.py) draw every sample from one function of
 * (x, y, channel), so an interlaced file, a palette with transparency, and
 * an RGBA file must read as their plain twins. */
START_TEST(test_png_variants)
{
    static const char *const twins[][2] = {
        {"interlaced_gray8.png", "gray8.png"}, {"gray8_trns.png", "gray8.png"},
        {"palette8_trns.png", "palette8.png"}, {"rgba8.png", "rgb8.png"},
        {"rgb8_trns.png", "rgb8.png"},        {"graya8.png", "gray8.png"},
        {"rgba16.png", "rgb16.png"},
    };
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++) {
        char pa[1024], pb[1024];
        adm_image a, b;
        snprintf(pa, sizeof pa, "%s/fuzz/seeds/png/%s", ADM_SOURCE_DIR, twins[i][0]);
        snprintf(pb, sizeof pb, "%s/fuzz/seeds/png/%s", ADM_SOURCE_DIR, twins[i][1]);
        ck_assert_msg(adm_image_read_png(pa, &a) == ADM_OK, "%s: %s", pa, adm_error_message());
        ck_assert_int_eq(adm_image_read_png(pb, &b), ADM_OK);
        ck_assert_msg(a.height == b.height && a.width == b.width && a.channels == b.channels &&
                          a.data_range == b.data_range && !memcmp(a.data, b.data, sizeof(double) * (size_t)adm_image_numel(&a)),
                      "%s does not read as %s", twins[i][0], twins[i][1]);
        adm_image_free(&a);
        adm_image_free(&b);
    }
}
END_TEST

static uint32_t crc32_png(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

static void put32(FILE *f, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    fwrite(b, 1, 4, f);
}

static void png_chunk(FILE *f, const char *tag, const uint8_t *data, size_t n)
{
    uint8_t *buf = malloc(4 + n + 1);
    ck_assert_ptr_nonnull(buf);
    memcpy(buf, tag, 4);
    if (n) memcpy(buf + 4, data, n);
    put32(f, (uint32_t)n);
    fwrite(buf, 1, 4 + n, f);
    put32(f, crc32_png(buf, 4 + n));
    free(buf);
}

/* A PNG that declares w x h (depth, colour type), with `pad` bytes of a
 * private ancillary chunk before an IDAT holding an empty zlib stream. */
static void write_png_decl(const char *path, uint32_t w, uint32_t h, int depth, int ctype, size_t pad)
{
    static const uint8_t empty_zlib[] = {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01};
    uint8_t ihdr[13] = {(uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w,
                        (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h,
                        (uint8_t)depth, (uint8_t)ctype, 0, 0, 0};
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite("\x89PNG\r\n\x1a\n", 1, 8, f);
    png_chunk(f, "IHDR", ihdr, sizeof ihdr);
    if (pad) {
        uint8_t *z = calloc(1, pad);
        ck_assert_ptr_nonnull(z);
        png_chunk(f, "prVt", z, pad);
        free(z);
    }
    png_chunk(f, "IDAT", empty_zlib, sizeof empty_zlib);
    png_chunk(f, "IEND", NULL, 0);
    fclose(f);
}

/* What a PNG declares is checked before anything is allocated: the sides
 * (2^16), the values (ADM_PNG_MAX_VALUES), and the data against what the
 * file can hold; a FIFO is refused without blocking. */
START_TEST(test_png_limits)
{
    adm_image a;
    /* 65536 x 65536 RGB of 16 bits in 90 bytes: 24 GiB of samples, 96 GiB as doubles */
    write_png_decl(tmp("huge.png"), 65536, 65536, 16, 2, 0);
    ck_assert_int_eq(adm_image_read_png(tmp("huge.png"), &a), ADM_ERR_FORMAT);
    ck_assert_msg(strstr(adm_error_message(), "huge.png") && strstr(adm_error_message(), "can hold"), "%s",
                  adm_error_message());
    ck_assert_ptr_null(a.data);
    /* a side above 2^16 */
    write_png_decl(tmp("wide.png"), 65537, 1, 8, 0, 0);
    ck_assert_int_eq(adm_image_read_png(tmp("wide.png"), &a), ADM_ERR_FORMAT);
    ck_assert(strstr(adm_error_message(), "wide.png"));
    /* 16385 x 16384 gray in a file that could hold it (256 KiB at 1100:1):
     * one row over ADM_PNG_MAX_VALUES */
    write_png_decl(tmp("many.png"), 16385, 16384, 8, 0, 256 << 10);
    ck_assert_int_eq(adm_image_read_png(tmp("many.png"), &a), ADM_ERR_SHAPE);
    ck_assert_msg(strstr(adm_error_message(), "many.png") && strstr(adm_error_message(), "2^28"), "%s",
                  adm_error_message());
    ck_assert_ptr_null(a.data);
    /* within every limit, but its data is missing: refused by libpng */
    write_png_decl(tmp("short.png"), 64, 64, 8, 0, 0);
    ck_assert_int_eq(adm_image_read_png(tmp("short.png"), &a), ADM_ERR_FORMAT);
    ck_assert(strstr(adm_error_message(), "short.png"));
    /* a FIFO (no writer: an open without O_NONBLOCK would wait forever) */
    unlink(tmp("fifo.png"));
    ck_assert_int_eq(mkfifo(tmp("fifo.png"), 0600), 0);
    ck_assert_int_eq(adm_image_read_png(tmp("fifo.png"), &a), ADM_ERR_IO);
    ck_assert(strstr(adm_error_message(), "fifo.png") && strstr(adm_error_message(), "FIFO"));
    ck_assert_int_eq(adm_image_load(tmp("fifo.png"), NULL, &a), ADM_ERR_IO);
    ck_assert(strstr(adm_error_message(), "FIFO"));
}
END_TEST

/* Malformed input: the error names the file and the field, the dataset
 * or the line. */
START_TEST(test_special_inputs)
{
    adm_image a, b;
    adm_drift *d;
    adm_drift_metrics m;
    const char *h5 = tmp("bad.h5");
    char src[1100];
    /* shapes */
    ck_assert_int_eq(adm_image_alloc(&a, 1, 8, 8, 3), ADM_OK);
    ck_assert_int_eq(adm_image_alloc(&b, 1, 8, 9, 3), ADM_OK);
    a.source = adm_strdup("left.png");
    b.source = adm_strdup("right.png");
    ck_assert_int_eq(adm_drift_compare(&a, &b, 255, NULL, &m), ADM_ERR_SHAPE);
    ck_assert(strstr(adm_error_message(), "left.png") && strstr(adm_error_message(), "right.png"));
    adm_image_free(&b);
    ck_assert_int_eq(adm_drift_compare(&a, &a, 0, NULL, &m), ADM_ERR_INVALID);
    ck_assert_int_eq(adm_drift_compare(&a, &a, 255, NULL, &m), ADM_OK);
    ck_assert(isinf(m.psnr) && m.ssim == 1 && m.identical && m.mad == 0);
    adm_image_free(&a);
    /* below the 7 x 7 window */
    ck_assert_int_eq(adm_image_alloc(&a, 1, 6, 30, 1), ADM_OK);
    ck_assert_int_eq(adm_drift_compare(&a, &a, 255, NULL, &m), ADM_ERR_SHAPE);
    ck_assert(strstr(adm_error_message(), "7 x 7"));
    adm_image_free(&a);
    /* files */
    ck_assert_int_eq(adm_image_load(tmp("absent.png"), NULL, &a), ADM_ERR_IO);
    ck_assert(strstr(adm_error_message(), "absent.png"));
    write_text(tmp("fake.png"), "not a png at all");
    ck_assert_int_eq(adm_image_load(tmp("fake.png"), NULL, &a), ADM_ERR_FORMAT);
    {
        hsize_t dims[2] = {8, 8};
        double v[64] = {0};
        v[9] = NAN;
        unlink(h5);
        write_h5(h5, "/nan", 2, dims, H5T_IEEE_F64LE, v, NULL, 1);
        write_h5(h5, "/badlayout", 2, dims, H5T_IEEE_F64LE, v, "HWC", 1);
    }
    snprintf(src, sizeof src, "%s:/missing", h5);
    ck_assert_int_eq(adm_image_load(src, NULL, &a), ADM_ERR_NOT_FOUND);
    ck_assert(strstr(adm_error_message(), "bad.h5") && strstr(adm_error_message(), "missing"));
    snprintf(src, sizeof src, "%s:/nan", h5);
    ck_assert_int_eq(adm_image_load(src, NULL, &a), ADM_ERR_RANGE);
    ck_assert(strstr(adm_error_message(), "row 1, column 1"));
    snprintf(src, sizeof src, "%s:/badlayout", h5);
    ck_assert_int_eq(adm_image_load(src, NULL, &a), ADM_ERR_SHAPE);
    ck_assert_int_eq(adm_image_load(h5, NULL, &a), ADM_ERR_INVALID);
    ck_assert(strstr(adm_error_message(), ":/DATASET"));
    /* the spec */
    ck_assert_int_eq(adm_drift_create("s", &d), ADM_OK);
    write_text(tmp("bad.json"), "{\"admit_drift_spec\": 1, \"arms\": {");
    ck_assert_int_eq(adm_drift_load_spec(d, tmp("bad.json")), ADM_ERR_JSON);
    ck_assert(strstr(adm_error_message(), "bad.json") && strstr(adm_error_message(), "line"));
    write_text(tmp("key.json"), "{\"admit_drift_spec\": 1, \"arms\": {}, \"bands\": []}");
    ck_assert_int_eq(adm_drift_load_spec(d, tmp("key.json")), ADM_ERR_FORMAT);
    ck_assert(strstr(adm_error_message(), "key.json") && strstr(adm_error_message(), "'bands'"));
    write_text(tmp("arm.json"), "{\"admit_drift_spec\": 1, \"arms\": {\"a\": 3, \"b\": \"x.png\"}}");
    ck_assert_int_eq(adm_drift_load_spec(d, tmp("arm.json")), ADM_ERR_FORMAT);
    ck_assert(strstr(adm_error_message(), "'arms.a'"));
    adm_drift_free(d);
    ck_assert_int_eq(adm_image_alloc(&a, 1, 8, 8, 1), ADM_OK);
    ck_assert_int_eq(adm_image_write_png(&a, 0, 0, 255, tmp("p.png")), ADM_OK);
    adm_image_free(&a);
    ck_assert_int_eq(adm_drift_create("s", &d), ADM_OK);
    write_text(tmp("pair.json"), "{\"admit_drift_spec\": 1, \"arms\": {\"a\": \"p.png\", \"b\": \"p.png\"}, "
                                 "\"compare\": [[\"a\", \"b\"], {\"a\": \"a\", \"b\": \"c\"}]}");
    ck_assert_int_eq(adm_drift_load_spec(d, tmp("pair.json")), ADM_ERR_NOT_FOUND);
    ck_assert(strstr(adm_error_message(), "'compare[1]'") && strstr(adm_error_message(), "'c'"));
    adm_drift_free(d);
    ck_assert_int_eq(adm_drift_create("s", &d), ADM_OK);
    write_text(tmp("claim.json"), "{\"admit_drift_spec\": 1, \"arms\": {\"a\": \"p.png\", \"b\": \"p.png\"}, "
                                  "\"compare\": [{\"a\": \"a\", \"b\": \"b\", \"claim\": \"fast\"}]}");
    ck_assert_int_eq(adm_drift_load_spec(d, tmp("claim.json")), ADM_ERR_FORMAT);
    ck_assert(strstr(adm_error_message(), "'compare[0].claim'"));
    adm_drift_free(d);
}
END_TEST

START_TEST(test_history)
{
    adm_drift *d;
    adm_image base;
    const char *h = tmp("history.jsonl");
    FILE *f;
    char line[65536];
    int lines = 0;
    unlink(h);
    ck_assert_int_eq(adm_image_alloc(&base, 1, 8, 8, 1), ADM_OK);
    fill(&base, 1, 0.1);
    ck_assert_int_eq(adm_drift_create("h", &d), ADM_OK);
    add_arm(d, "ref", &base, 0);
    add_arm(d, "tp2", &base, 1);
    add_arm(d, "ll", &base, 0);
    ck_assert_int_eq(adm_drift_add_pair(d, NULL, ADM_DRIFT_BAND, ADM_TIER_EXACT, "ref", "tp2"), ADM_OK);
    ck_assert_int_eq(adm_drift_add_pair(d, NULL, ADM_DRIFT_TIER, ADM_TIER_LOSSLESS, "ref", "ll"), ADM_OK);
    adm_drift_set_provenance(d, "2026-11-30", "abc");
    ck_assert_int_eq(adm_drift_history_append(d, h), ADM_ERR_INVALID); /* not evaluated */
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    ck_assert_int_eq(adm_drift_history_append(d, h), ADM_OK);
    ck_assert_int_eq(adm_drift_history_append(d, h), ADM_OK);
    ck_assert_ptr_nonnull(f = fopen(h, "r"));
    while (fgets(line, sizeof line, f)) {
        lines++;
        ck_assert(strstr(line, "\"date\":\"2026-11-30\"") && strstr(line, "\"commit\":\"abc\""));
        ck_assert(strstr(line, "\"psnr\":\"inf\"")); /* identical arms */
    }
    fclose(f);
    ck_assert_int_eq(lines, 2);
    ck_assert_int_eq(adm_drift_write_html(d, tmp("html"), h), ADM_OK);
    /* a malformed line is refused with its number, and nothing is appended */
    f = fopen(h, "a");
    fputs("{\"date\": \"x\"\n", f);
    fclose(f);
    ck_assert_int_eq(adm_drift_history_append(d, h), ADM_ERR_FORMAT);
    ck_assert(strstr(adm_error_message(), "history.jsonl: line 3"));
    ck_assert_int_eq(adm_drift_write_html(d, tmp("html2"), h), ADM_ERR_FORMAT);
    adm_drift_free(d);
    adm_image_free(&base);
}
END_TEST

/* Names from the caller reach the HTML page escaped as the kernel
 * reports escape them (one escaper): control characters and malformed
 * UTF-8 written visibly (XML 1.0 allows neither), the markup characters
 * and the apostrophe as entities. */
START_TEST(test_html_escapes_names)
{
    adm_drift *d;
    adm_image base;
    FILE *f;
    char *page, *line, *save = NULL;
    long n;
    ck_assert_int_eq(adm_image_alloc(&base, 1, 8, 8, 1), ADM_OK);
    fill(&base, 1, 0.1);
    ck_assert_int_eq(adm_drift_create("title\x01with a control character", &d), ADM_OK);
    add_arm(d, "ref", &base, 0);
    add_arm(d, "alt", &base, 1);
    ck_assert_int_eq(adm_drift_add_pair(d, "it's <b>\x1b[31m", ADM_DRIFT_TIER, ADM_TIER_HIGH, "ref", "alt"), ADM_OK);
    ck_assert_int_eq(adm_drift_add_note(d, "caf\xe9 in Latin-1"), ADM_OK);
    ck_assert_int_eq(adm_drift_evaluate(d), ADM_OK);
    ck_assert_int_eq(adm_drift_write_html(d, tmp("esc"), NULL), ADM_OK);
    adm_drift_free(d);
    adm_image_free(&base);
    ck_assert_ptr_nonnull(f = fopen(tmp("esc/index.html"), "rb"));
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    ck_assert_ptr_nonnull(page = calloc(1, (size_t)n + 1));
    ck_assert_int_eq((long)fread(page, 1, (size_t)n, f), n);
    fclose(f);
    ck_assert_int_eq((long)strlen(page), n); /* no NUL */
    ck_assert_msg(strstr(page, "it&#39;s &lt;b&gt;\\x1b[31m") && !strstr(page, "it's"), "the pair's name is not escaped");
    ck_assert(strstr(page, "title\\x01with") && strstr(page, "caf\\xe9 in"));
    /* every line well-formed UTF-8 without control characters */
    for (line = strtok_r(page, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        ck_assert_msg(adm_text_clean(line), "a control character or malformed UTF-8 in: %.80s", line);
    free(page);
}
END_TEST

/* A variable-length layout string (as h5py writes str attributes) is read;
 * its heap reference pointed at the collection's free space (R7 raw-000864's
 * edit) is refused before libhdf5 follows it, naming file, dataset and
 * attribute. */
START_TEST(test_hdf5_vlen_layout_heap)
{
    double v[24];
    hsize_t dims[3] = {2, 3, 4};
    const char *p = tmp("vlen.h5"), *q = tmp("vlen_bad.h5"), *lay = "CHW";
    adm_image a;
    unsigned char *b = NULL;
    long n, g = -1, obj = -1, r = -1;
    FILE *f;
    unlink(p);
    for (int i = 0; i < 24; i++) v[i] = i / 24.0;
    write_h5(p, "/chw", 3, dims, H5T_IEEE_F64LE, v, NULL, 0);
    {
        hid_t fh = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT), d = H5Dopen2(fh, "/chw", H5P_DEFAULT);
        hid_t st = H5Tcopy(H5T_C_S1), as = H5Screate(H5S_SCALAR), at;
        H5Tset_size(st, H5T_VARIABLE);
        at = H5Acreate2(d, "layout", st, as, H5P_DEFAULT, H5P_DEFAULT);
        ck_assert(at >= 0 && H5Awrite(at, st, &lay) >= 0);
        H5Aclose(at);
        H5Sclose(as);
        H5Tclose(st);
        H5Dclose(d);
        H5Fclose(fh);
    }
    ck_assert_msg(adm_image_read_h5(p, "/chw", NULL, &a) == ADM_OK, "%s", adm_error_message());
    ck_assert(a.channels == 2 && a.height == 3 && a.width == 4);
    adm_image_free(&a);

    ck_assert((f = fopen(p, "rb")) != NULL);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    ck_assert((b = malloc((size_t)n)) != NULL && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    for (long i = 0; i + 16 <= n && g < 0; i++)
        if (!memcmp(b + i, "GCOL", 4)) g = i;
    ck_assert_msg(g >= 0, "no global heap collection in %s", p);
    for (long i = g + 16; i + 19 <= n && obj < 0; i++)
        if (!memcmp(b + i, "CHW", 3) && b[i - 8] == 3 && b[i - 7] == 0) obj = i - 16; /* size 3 */
    ck_assert(obj >= 0);
    {
        /* the 16-byte reference {length 3, collection address g, object index} */
        unsigned char ref[16] = {3, 0, 0, 0};
        for (int k = 0; k < 8; k++) ref[4 + k] = (unsigned char)((uint64_t)g >> (8 * k));
        ref[12] = b[obj];
        ref[13] = b[obj + 1];
        for (long i = 0; i + 16 <= n && r < 0; i++)
            if (!memcmp(b + i, ref, 16)) r = i;
    }
    ck_assert_msg(r >= 0, "the layout attribute's heap reference is not in %s", p);
    b[r + 12] = b[r + 13] = 0; /* object 0: the collection's free space */
    ck_assert((f = fopen(q, "wb")) != NULL && fwrite(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    free(b);
    ck_assert_int_eq(adm_image_read_h5(q, "/chw", NULL, &a), ADM_ERR_FORMAT);
    ck_assert_msg(strstr(adm_error_message(), q) && strstr(adm_error_message(), "dataset '/chw'") &&
                      strstr(adm_error_message(), "attribute 'layout'") &&
                      strstr(adm_error_message(), "free space"),
                  "%s", adm_error_message());
}
END_TEST

/* An arm is checked against what its file can hold before a byte is
 * allocated (issue 8 R3's class): a chunked dataset of 4096 x 4096 x 3
 * doubles (400 MB) with no chunk written, in a file of a few KB, and one
 * declaring more than 2^30 values. */
START_TEST(test_hdf5_arm_declared_size)
{
    const char *p = tmp("hollow.h5");
    hsize_t d1[3] = {4096, 4096, 3}, c1[3] = {256, 256, 3}, d2[3] = {65536, 65536, 3}, c2[3] = {1024, 1024, 3};
    adm_image a;
    hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    for (int i = 0; i < 2; i++) {
        hid_t s = H5Screate_simple(3, i ? d2 : d1, NULL), pl = H5Pcreate(H5P_DATASET_CREATE), d;
        H5Pset_chunk(pl, 3, i ? c2 : c1);
        d = H5Dcreate2(f, i ? "/huge" : "/hollow", H5T_IEEE_F64LE, s, H5P_DEFAULT, pl, H5P_DEFAULT);
        ck_assert(d >= 0);
        H5Dclose(d);
        H5Pclose(pl);
        H5Sclose(s);
    }
    H5Fclose(f);
    ck_assert_int_eq(adm_image_read_h5(p, "/hollow", "HWC", &a), ADM_ERR_FORMAT);
    ck_assert_msg(strstr(adm_error_message(), p) && strstr(adm_error_message(), "dataset '/hollow'") &&
                      strstr(adm_error_message(), "0 of its 256 chunks are written"),
                  "%s", adm_error_message());
    ck_assert(a.data == NULL);
    ck_assert_int_eq(adm_image_read_h5(p, "/huge", "HWC", &a), ADM_ERR_SHAPE);
    ck_assert_msg(strstr(adm_error_message(), "dataset '/huge'") && strstr(adm_error_message(), "2^30"), "%s",
                  adm_error_message());
}
END_TEST

static Suite *drift_suite(void)
{
    Suite *s = suite_create("drift");
    TCase *tc = tcase_create("Metrics");
    tcase_add_test(tc, test_psnr_closed_form);
    tcase_add_test(tc, test_psnr_bound);
    tcase_add_test(tc, test_ssim_bound);
    tcase_add_test(tc, test_ssim_closed_form);
    tcase_add_test(tc, test_growth_exponent);
    suite_add_tcase(s, tc);
    tc = tcase_create("Report");
    tcase_add_test(tc, test_verdicts);
    tcase_add_test(tc, test_growth_gate);
    tcase_add_test(tc, test_png_roundtrip);
    tcase_add_test(tc, test_png_variants);
    tcase_add_test(tc, test_hdf5_layouts);
    tcase_add_test(tc, test_history);
    suite_add_tcase(s, tc);
    tc = tcase_create("Special");
    tcase_add_test(tc, test_special_inputs);
    tcase_add_test(tc, test_png_limits);
    tcase_add_test(tc, test_html_escapes_names);
    tcase_add_test(tc, test_hdf5_vlen_layout_heap);
    tcase_add_test(tc, test_hdf5_arm_declared_size);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(drift_suite());
    make_tmpdir(); /* before the forks: one folder for every test */
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (tmpdir[0]) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "check_drift: could not remove %s\n", tmpdir);
    }
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
