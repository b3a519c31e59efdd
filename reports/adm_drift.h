/* admit drift: the end-to-end gate. Arms are images, videos or latents
 * (PNG through libpng, HDF5 datasets); pairs of arms are compared by PSNR,
 * SSIM (scikit-image's definitions) and mean absolute difference. Control
 * pairs must be bit-identical, band pairs measure how far the reference
 * path moves between two legal environments (TP1 against TP2), and each
 * tier comparison must sit inside that band and above absolute floors.
 * Error growth with depth (compounding) is judged against the reference
 * path's. Reports: terminal, Markdown, JSON, a history file of one JSON
 * line per night, and an HTML page with plots. */
#ifndef ADM_DRIFT_H
#define ADM_DRIFT_H

#include "adm_export.h"

#include <stdio.h>

#include "adm_core.h"
#include "adm_harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Images                                                              */
/* ------------------------------------------------------------------ */

/* Frames of an image, row-major [frames][height][width][channels], every
 * value exactly as stored (integers for PNG and integer datasets). */
typedef struct adm_image {
    int64_t frames, height, width, channels;
    double *data;
    double data_range;   /* the dtype's range for integer sources (255, 65535); 0: not known (float data) */
    char *source;        /* where it came from, for messages and reports */
    size_t map_len;      /* 0: data is malloc'd; else a mapping of this many bytes (an arm read in a sandbox) */
} adm_image;

/* Zero-filled, owned; extents >= 1, at most ADM_MAX_ELEMENTS in all. */
ADM_API adm_status adm_image_alloc(adm_image *img, int64_t frames, int64_t height, int64_t width, int64_t channels);
ADM_API void adm_image_free(adm_image *img);
ADM_API int64_t adm_image_numel(const adm_image *img);

/* What an arm may declare, over all its frames: at most 2^30 values (8 GiB
 * as doubles; 121 frames of 1280 x 720 RGB fit), and no more raw bytes
 * than its files can hold (checked before allocating). */
#define ADM_ARM_MAX_VALUES ((int64_t)1 << 30)
/* What a PNG may declare: sides of at most 2^16, and at most 2^28 values
 * (2 GiB as doubles; a 16384 x 16384 gray or an 8K UHD RGB frame fits). */
#define ADM_PNG_MAX_SIDE 65536
#define ADM_PNG_MAX_VALUES ((int64_t)1 << 28)
/* A PNG through libpng: gray or RGB, 8 or 16 bits (palette and low bit
 * depths expand to 8 bits; interlaced files are de-interlaced; an alpha
 * channel or tRNS transparency is dropped). data_range is 255 or 65535.
 * One frame. Checked before anything is allocated: the limits above
 * (ADM_ERR_SHAPE past ADM_PNG_MAX_VALUES), and that the file can hold the
 * image data it declares at deflate's best ratio (ADM_ERR_FORMAT
 * otherwise), so that a small file cannot demand gigabytes. Only a regular
 * file is opened (a FIFO is refused without blocking). Every refusal names
 * the file; img is left empty. */
ADM_API adm_status adm_image_read_png(const char *path, adm_image *img);
/* Frame `frame` as an 8-bit PNG: gray for one channel, RGB for three,
 * else the first channel as gray. Values map linearly from [lo, hi] to
 * 0..255 (clamped, rounded to nearest). Written atomically. */
ADM_API adm_status adm_image_write_png(const adm_image *img, int64_t frame, double lo, double hi, const char *path);
/* An HDF5 dataset of any integer (at most 64 bits) or float type. The
 * layout comes from the dataset's "layout" attribute (one string), else
 * from `layout` (NULL: by rank: HW, HWC, FHWC): one of HW, HWC, CHW, FHW,
 * FHWC, FCHW. The range comes from a "data_range" attribute (one positive
 * number), else the integer type's (255 for uint8), else 0 (float). Every
 * link of the dataset's path must be a hard or a soft link within the file
 * (external and user-defined links are refused, wherever on the path);
 * the attributes' class, number of elements and length, the extents
 * (ADM_ARM_MAX_VALUES) and the storage against the file are checked before
 * anything is read into memory. Runs libhdf5 in this process: a corrupt
 * file can still crash it; adm_image_load reads in a sandbox. */
ADM_API adm_status adm_image_read_h5(const char *path, const char *dataset, const char *layout, adm_image *img);
/* An arm from its source text: "a.png", "x.h5:/dataset", or several of
 * them separated by commas (at most 4096), stacked as the frames of a
 * video (all of one size and range). What every file declares is read
 * first and checked (the frames agree, at most ADM_ARM_MAX_VALUES in all),
 * then the values, straight into place. Both steps run in a sandbox child
 * process under the capture reader's limits (ADM_SANDBOX_MEMORY, _CPU,
 * _TIMEOUT; ADM_SANDBOX=off reads in this process), so a file that crashes
 * or hangs libhdf5 or libpng is reported, naming the file and what was
 * being read. */
ADM_API adm_status adm_image_load(const char *source, const char *layout, adm_image *img);

/* ------------------------------------------------------------------ */
/* Metrics                                                             */
/* ------------------------------------------------------------------ */

/* skimage.metrics.structural_similarity's parameters. */
typedef struct adm_ssim_config {
    int win_size;               /* 7: a win x win uniform window (odd, >= 3) */
    double k1, k2;              /* 0.01, 0.03 */
    int use_sample_covariance;  /* 1: covariances scaled by NP / (NP - 1), NP = win^2 */
} adm_ssim_config;
ADM_API void adm_ssim_config_default(adm_ssim_config *c);

/* SSIM of one plane (h x w values at x[(i*w + j)*stride], y likewise), as
 * skimage computes it for a 2-D image: local means, variances and the
 * covariance over every win x win window that lies inside the image (the
 * uniform filter's border values are cropped away, pad = (win-1)/2), and
 * the mean of the local SSIM over those windows.
 * Error bound (u = 2^-53, A = max |value|, R = data_range): each window sum
 * is two recursive sums of win terms, so a local mean carries an absolute
 * error <= (4 win + 4) u A^2 and a (co)variance <= (6 win + 6) u A^2 (first
 * order); the local SSIM's denominators are at least C1 = (k1 R)^2 and
 * C2 = (k2 R)^2, so each local SSIM moves by at most
 * (2 (4 win + 4) / k1^2 + 4 (6 win + 6) / k2^2) u (A/R)^2 + 10 u, and the
 * compensated mean adds 2 u. adm_ssim_error_bound returns twice the first
 * order term (for the second-order ones) plus 2 u: 1.9e-10 at the defaults
 * with A = R. Tests check it against a window-by-window long double
 * evaluation. ADM_ERR_SHAPE when h or w is smaller than win. */
ADM_API adm_status adm_ssim_plane(const double *x, const double *y, int64_t h, int64_t w, int64_t stride, double data_range,
                                  const adm_ssim_config *cfg, double *ssim);
/* The bound above for a given A / R and configuration. */
ADM_API double adm_ssim_error_bound(double a_over_r, const adm_ssim_config *cfg);

typedef struct adm_drift_metrics {
    double mse;          /* mean of (a - b)^2 over every value */
    double psnr;         /* 10 log10(R^2 / mse) dB; +Inf when mse = 0 */
    double ssim;         /* per channel of each frame, then the mean */
    double mad;          /* mean |a - b| */
    double max_abs;      /* max |a - b| */
    double data_range;   /* R used */
    int identical;       /* every value equal (bit-identical for the stored data) */
    int64_t n;           /* values compared */
} adm_drift_metrics;

/* PSNR (skimage.metrics.peak_signal_noise_ratio with data_range: one MSE
 * over all values, frames included), SSIM (structural_similarity with its
 * defaults and channel_axis=-1, per frame; frames averaged) and the mean
 * absolute difference. Shapes must match (ADM_ERR_SHAPE naming both
 * sources); data_range > 0.
 * Error bounds: mse and mad are compensated sums, relative error
 * <= 4 u + n u^2, so |psnr - exact| <= 10 / ln 10 (4 u + n u^2) +
 * 2 ulp(psnr) dB; ssim as adm_ssim_plane. */
ADM_API adm_status adm_drift_compare(const adm_image *a, const adm_image *b, double data_range, const adm_ssim_config *cfg,
                                     adm_drift_metrics *m);

/* Least-squares slope of log(err) against log(depth) over the points where
 * both are positive and finite: the growth exponent (1/2 for an unbiased
 * random walk of roundings, 1 for a biased one). NaN with fewer than two
 * points or one depth. Two passes, centred: with the logs each within one
 * ulp, the slope's error is <= (2 n + 10) u kappa |slope| + (2 n + 10) u
 * max|log err| / S_xx^(1/2) kappa, kappa = sum|dx dy| / |sum dx dy|; an
 * exact power law is recovered to 1e-12 (tested). */
ADM_API double adm_drift_growth_exponent(int n, const double *depth, const double *err);

/* ------------------------------------------------------------------ */
/* The report                                                          */
/* ------------------------------------------------------------------ */

typedef enum adm_drift_role {
    ADM_DRIFT_CONTROL = 0,  /* the same environment twice: must be bit-identical */
    ADM_DRIFT_BAND = 1,     /* the reference path in two legal environments: the band */
    ADM_DRIFT_TIER = 2      /* a tier against the reference: judged against the band and the floors */
} adm_drift_role;
ADM_API const char *adm_drift_role_name(adm_drift_role r);

/* Absolute floors (diffusion serving consistency suites). */
#define ADM_DRIFT_IMAGE_PSNR 28.0
#define ADM_DRIFT_IMAGE_SSIM 0.95
#define ADM_DRIFT_VIDEO_PSNR 24.0
#define ADM_DRIFT_VIDEO_SSIM 0.92
/* A tier's error growth exponent may exceed the reference path's by this
 * much (bench/results: the toy's lossless fusions sit within 0.1). */
#define ADM_DRIFT_GROWTH_SLACK 0.25

typedef struct adm_drift_pair {
    char *name;
    adm_drift_role role;
    adm_tier claim;           /* TIER: lossless must sit inside the band; high only above the floors */
    int a, b;                 /* arm indices */
    adm_drift_metrics m;
    int evaluated;
    int inside_band;          /* TIER: psnr >= the band's */
    /* TIER with a band: PSNR minus the band's edge (the band's PSNR less
     * the tolerance), dB: >= 0 inside the band; NaN otherwise */
    double margin;
    int above_floors;
    int passed;
    char why[320];            /* whole sentences when it failed, or a note ("Note: ..."); "" when neither */
    int given;                /* m was measured elsewhere (adm_drift_set_metrics) */
} adm_drift_pair;

typedef struct adm_drift_growth {
    char *group;              /* what depth counts ("layers", "steps"): judged against the reference of its group */
    char *name;               /* the tier */
    int reference;            /* the reference path's series: the others are judged against it */
    int n;
    double *depth, *err;      /* err: relative RMS error against the fp64 run at each depth */
    double exponent, excess;  /* growth exponent; minus the reference's */
    double ratio_last;        /* err / reference err at the last depth */
    int passed;
    char why[320];
} adm_drift_growth;

typedef struct adm_drift adm_drift;

ADM_API adm_status adm_drift_create(const char *title, adm_drift **out);
ADM_API void adm_drift_free(adm_drift *d);

/* What a drift run may ask for, refused (exit 2, naming the file and the
 * field) before the work is done: arms and pairs; the values of all its
 * arms together (8 bytes each in memory; ADM_DRIFT_MAX_VALUES in the
 * environment replaces the default), checked against what the files
 * declare before any is read; the values its pairs compare together
 * (about 0.1 us each on one core; ADM_DRIFT_MAX_COMPARED),
 * checked before the first comparison; a spec's and a history's bytes. */
#define ADM_DRIFT_MAX_ARMS 256
#define ADM_DRIFT_MAX_PAIRS 1024
#define ADM_DRIFT_MAX_VALUES_DEFAULT ((int64_t)1 << 30)
#define ADM_DRIFT_MAX_COMPARED_DEFAULT ((int64_t)1 << 31)
#define ADM_DRIFT_SPEC_MAX_BYTES ((int64_t)16 << 20)
#define ADM_DRIFT_HISTORY_MAX_BYTES ((int64_t)16 << 20)
/* The spec format's version ("admit_drift_spec"). */
#define ADM_DRIFT_SPEC_VERSION 1

/* Takes ownership of img's storage (img is left empty). Names are unique,
 * of 1 to 128 letters, digits, '_', '-' and '.'; at most
 * ADM_DRIFT_MAX_ARMS. */
ADM_API adm_status adm_drift_add_arm(adm_drift *d, const char *name, adm_image *img);
/* Loads n arms from source texts (as adm_image_load, in one sandbox child
 * for all): what every file declares is held against the limits above
 * (with the arms already there) before any value is read; nothing is
 * read when one is refused. */
ADM_API adm_status adm_drift_load_arms(adm_drift *d, int n, const char *const *names, const char *const *sources,
                                       const char *layout);
ADM_API adm_status adm_drift_load_arm(adm_drift *d, const char *name, const char *source, const char *layout);
ADM_API int adm_drift_arm_count(const adm_drift *d);
ADM_API const adm_image *adm_drift_arm(const adm_drift *d, int i, const char **name);
/* name NULL: "A vs B". At most ADM_DRIFT_MAX_PAIRS. */
ADM_API adm_status adm_drift_add_pair(adm_drift *d, const char *name, adm_drift_role role, adm_tier claim, const char *a,
                                      const char *b);
ADM_API int adm_drift_pair_count(const adm_drift *d);
ADM_API const adm_drift_pair *adm_drift_pair_at(const adm_drift *d, int i);

/* A drift spec (JSON, see adm_drift_load_spec in reports/drift.c and the
 * README): arms, pairs, kind, data_range, floors. Relative paths resolve
 * against the spec's folder. Errors name the file and the field. Only a
 * regular file of at most ADM_DRIFT_SPEC_MAX_BYTES is read; a key given
 * twice (an arm's name included) is refused, as is a version other than
 * ADM_DRIFT_SPEC_VERSION; the arms' and pairs' counts are checked before
 * any arm is read. */
ADM_API adm_status adm_drift_load_spec(adm_drift *d, const char *path);

/* 0: from the arms (integer ranges), else this range for every pair. */
ADM_API void adm_drift_set_data_range(adm_drift *d, double r);
/* Video (floors 24 / 0.92) when any arm has more than one frame, unless
 * set: 0 image, 1 video. */
ADM_API void adm_drift_set_video(adm_drift *d, int video);
/* NaN: the kind's default. */
ADM_API void adm_drift_set_floors(adm_drift *d, double psnr, double ssim);
/* A lossless comparison sits inside the band when its PSNR is at least
 * the band's minus this many dB (default 0, the strict gate). A positive
 * tolerance admits the measurement's own noise: state how it was
 * measured (bench/results: the toy's seed-to-seed spread). */
ADM_API void adm_drift_set_band_tolerance(adm_drift *d, double db);
ADM_API double adm_drift_band_tolerance(const adm_drift *d);
ADM_API void adm_drift_set_provenance(adm_drift *d, const char *date, const char *commit);
ADM_API adm_status adm_drift_set_title(adm_drift *d, const char *title);
/* Free text lines printed under the table (what the arms are). */
ADM_API adm_status adm_drift_add_note(adm_drift *d, const char *note);

/* Error growth with depth, one series per tier and group (copied): the
 * reference path's (reference = 1), and tiers judged against the
 * reference of the same group. A lossless claim fails when its growth
 * exponent exceeds the reference's by more than ADM_DRIFT_GROWTH_SLACK; a
 * high claim is reported only. */
ADM_API adm_status adm_drift_add_growth(adm_drift *d, const char *group, const char *name, int reference, adm_tier claim,
                                        int n, const double *depth, const double *err);
ADM_API int adm_drift_growth_count(const adm_drift *d);
ADM_API const adm_drift_growth *adm_drift_growth_at(const adm_drift *d, int i);
ADM_API adm_tier adm_drift_growth_claim(const adm_drift *d, int i);

/* Comparing pairs elsewhere (admit-kernel drift under MPI: another
 * process reads the two arms' files again and compares them). An arm read
 * from files: 1, with its source text and HDF5 layout (NULL: by rank) as
 * adm_image_load takes them; 0 for an arm added in memory. */
ADM_API int adm_drift_arm_files(const adm_drift *d, int i, const char **source, const char **layout);
/* The data range pair i is compared at (--data-range, else its arms'),
 * or the error adm_drift_evaluate would give. */
ADM_API adm_status adm_drift_pair_range(const adm_drift *d, int i, double *range);
/* ADM_ERR_SHAPE when the pairs compare more than ADM_DRIFT_MAX_COMPARED
 * values together (adm_drift_evaluate's first check). */
ADM_API adm_status adm_drift_check_compared(const adm_drift *d);
/* Pair i's metrics as adm_drift_compare gave them elsewhere, on the same
 * arms at adm_drift_pair_range's range: adm_drift_evaluate takes them
 * instead of comparing again (the verdicts are then the same, bit for
 * bit). */
ADM_API void adm_drift_set_metrics(adm_drift *d, int i, const adm_drift_metrics *m);

/* Computes every pair's metrics and verdict and the growth verdicts;
 * first refuses pairs that together compare more than
 * ADM_DRIFT_MAX_COMPARED values. */
ADM_API adm_status adm_drift_evaluate(adm_drift *d);
/* After evaluate: the band (the widest drift of the band pairs; +Inf and 1
 * with no band pair), the floors in force, whether it is video. */
ADM_API double adm_drift_band_psnr(const adm_drift *d);
ADM_API double adm_drift_band_ssim(const adm_drift *d);
ADM_API void adm_drift_floors(const adm_drift *d, double *psnr, double *ssim);
ADM_API int adm_drift_is_video(const adm_drift *d);
ADM_API int adm_drift_has_band(const adm_drift *d);
/* 1 when every control is identical, every tier comparison passes its
 * claim and every growth series passes. */
ADM_API int adm_drift_passed(const adm_drift *d);

/* The terminal adm_drift_print writes for, as adm_report_set_terminal:
 * its width (0: ADM_REPORT_DEFAULT_WIDTH) and whether to colour (red only
 * for a failure). Names are never cut: a row that does not fit puts its
 * name on a line of its own. */
ADM_API void adm_drift_set_terminal(adm_drift *d, int width, int color);
/* Called before each step of a long run: k of n, what (adm_drift_evaluate
 * calls it before each pair, adm_toy_drift before each run of the toy);
 * NULL: none. */
typedef void (*adm_drift_progress_fn)(int k, int n, const char *what, void *user);
ADM_API void adm_drift_set_progress(adm_drift *d, adm_drift_progress_fn fn, void *user);
/* The verdict in whole sentences (how many comparisons and growth series
 * pass), or its headline alone ("pass", "FAIL: 1 of 4 tier comparisons
 * failing"), at most n bytes. */
ADM_API void adm_drift_summary_text(const adm_drift *d, int headline_only, char *buf, size_t n);

/* The table; text from the spec or the caller (title, pair names, notes)
 * goes through adm_text_escape, and in Markdown every character Markdown
 * reads as markup is backslashed too, so that no name can write a control
 * sequence, a line of its own or a table cell. */
ADM_API void adm_drift_print(const adm_drift *d, FILE *f);
ADM_API void adm_drift_print_markdown(const adm_drift *d, FILE *f);
ADM_API adm_status adm_drift_write_json(const adm_drift *d, const char *path);
/* Appends tonight's row (one JSON object on one line: date, commit, arms,
 * band, floors, every pair's metrics and verdict, growth exponents) to the
 * history, rewriting it atomically; a malformed history is refused with
 * its line, and nothing is written. Only a regular file of at most
 * ADM_DRIFT_HISTORY_MAX_BYTES (before and after the row) is read. */
ADM_API adm_status adm_drift_history_append(const adm_drift *d, const char *path);
/* DIR/index.html: the table, PSNR per comparison over the nights of the
 * history (NULL: tonight only) with the band shaded, the arms' images and
 * difference heat maps (PNG files in DIR), and the growth plot. */
ADM_API adm_status adm_drift_write_html(const adm_drift *d, const char *dir, const char *history);
/* Every requested output (NULL: not wanted), all or nothing: the JSON, the
 * history with tonight's row, and the HTML page with its images (its plot
 * over the nights includes tonight's row). Each file is written complete
 * beside its target first, and they are moved into place only when all
 * are written, the history last; on any failure none is left (nor a
 * report folder made for them) and the history is unchanged. */
ADM_API adm_status adm_drift_write_all(const adm_drift *d, const char *json, const char *history, const char *html_dir);

#ifdef __cplusplus
}
#endif
#endif
