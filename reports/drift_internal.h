/* Internal to the drift report (reports/drift*.c). */
#ifndef ADM_DRIFT_INTERNAL_H
#define ADM_DRIFT_INTERNAL_H

#include "adm_drift.h"
#include "text_buf.h"

#include <jansson.h>

typedef struct drift_arm {
    char *name;
    adm_image img;
    int from_files;  /* read from img.source (adm_drift_load_arms, a spec), not added in memory */
    char *layout;    /* the HDF5 layout it was read with; NULL: by rank */
} drift_arm;

struct adm_drift {
    char *title, *date, *commit;
    drift_arm *arms;
    int n_arms, cap_arms;
    adm_drift_pair *pairs;
    int n_pairs, cap_pairs;
    adm_drift_growth *growth;
    int n_growth, cap_growth;
    adm_tier *growth_claim;
    char **notes;
    int n_notes;
    double data_range;         /* 0: from the arms */
    int video_set, video;
    double floor_psnr, floor_ssim;   /* NaN: the kind's default */
    double band_tol;                 /* dB */
    int width, color;                /* the terminal's (adm_drift_set_terminal) */
    adm_drift_progress_fn progress;  /* NULL: none */
    void *progress_user;
    /* after evaluate */
    int evaluated, has_band, is_video;
    double band_psnr, band_ssim, use_psnr, use_ssim;
};

/* ---------------------------------------------------------------- reading arms
 * An arm is read in two steps: what each of its files declares (extents,
 * value range), checked against the limits of the arm and of the run
 * before a byte is allocated for values; then the values, each file's
 * straight into its place in the arm. Both steps run in a sandbox child
 * (drift_sandbox.c) unless ADM_SANDBOX is off. */

/* One file of an arm: a PNG, or an HDF5 dataset. */
typedef struct drift_piece {
    char *file;
    char *dataset;                           /* NULL: a PNG */
    int64_t frames, height, width, channels; /* declared */
    double range;                            /* declared; 0: floats of no stated range */
} drift_piece;

typedef struct drift_plan {
    char *name;     /* the arm's name ("" for an image loaded alone) */
    char *source;   /* the arm's source text */
    char *layout;   /* the caller's HDF5 layout; NULL: by rank */
    char *prefix;   /* what a message about the arm starts with ("arm 'x': ") */
    drift_piece *pieces;
    int n_pieces;
    int64_t frames, values; /* after drift_plan_check */
} drift_plan;

/* At most this many files (frames) an arm. */
#define DRIFT_MAX_FRAMES 4096

/* Splits source ("a.png", "x.h5:/d", comma-separated frames) into pieces. */
adm_status drift_plan_init(drift_plan *p, const char *name, const char *source, const char *layout, const char *prefix);
void drift_plan_free(drift_plan *p);
/* After the pieces are declared: the frames agree, the arm is within
 * ADM_ARM_MAX_VALUES; sets frames and values. */
adm_status drift_plan_check(drift_plan *p);
/* One piece in this process: with dst NULL, what it declares into *pc;
 * else its values into dst (frames x height x width x channels, as *pc
 * declares), each checked finite. */
adm_status drift_piece_run(drift_piece *pc, const char *layout, double *dst);
/* Every value of a piece's place in an arm finite (ADM_ERR_RANGE naming
 * the file and the position otherwise). */
adm_status drift_piece_finite(const drift_piece *pc, const double *v);
/* Declares every piece of n plans, then reads the arms into imgs[n]; in a
 * sandbox child under memory and time limits (ADM_SANDBOX_MEMORY, _CPU,
 * _TIMEOUT) unless ADM_SANDBOX is off. A failure's message starts with its
 * plan's prefix. */
adm_status drift_plans_declare(drift_plan *p, int n);
adm_status drift_plans_read(drift_plan *p, int n, adm_image *imgs);

/* Inside a reader child: a page shared with the parent naming what the
 * child asks a library for next, so that the parent can say what a file
 * was being read for when the child died; NULL elsewhere. */
extern void *drift_crumb_;
void drift_trace(const char *lib, const char *file, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
#define DRIFT_TRACE(lib, file, ...)                              \
    do {                                                         \
        if (drift_crumb_) drift_trace(lib, file, __VA_ARGS__);   \
    } while (0)

/* ---------------------------------------------------------------- writing
 * Reports are all or nothing: every file is written complete to a
 * temporary file beside its target, and only when all are written are
 * they moved into place, in order; when one cannot be, those moved are
 * taken back, and a report folder made for them is removed. */
typedef struct drift_stage {
    char *path, *tmp;
    int renamed;
} drift_stage;
typedef struct drift_stages {
    drift_stage *v;
    int n, cap;
    char *made_dir;
} drift_stages;
/* Takes tmp (a written temporary file for path). */
adm_status drift_stage_add(drift_stages *s, const char *path, char *tmp);
adm_status drift_stage_text(drift_stages *s, const char *path, const char *text, size_t len);
/* The report folder: made when absent (and removed by undo); something
 * that is not a folder is refused. */
adm_status drift_stage_dir(drift_stages *s, const char *dir);
adm_status drift_stages_commit(drift_stages *s);
void drift_stages_undo(drift_stages *s);
void drift_stages_free(drift_stages *s);
/* Frame `frame` as adm_image_write_png writes it, into a temporary file
 * beside path (*tmp, to be renamed). */
adm_status drift_png_temp(const adm_image *img, int64_t frame, double lo, double hi, const char *path, char **tmp);
/* The page and its images into dir, staged; the history's rows (NULL or
 * empty: tonight's only). */
adm_status drift_html_stage(const adm_drift *d, const char *dir, json_t *history_rows, int from_history,
                            drift_stages *sg);

/* A pair's verdict in a few words ("inside the band", "FAIL: outside
 * the band"). */
const char *drift_pair_verdict(const adm_drift *d, const adm_drift_pair *p);

/* "inf" for +Inf, else %.*f. */
const char *drift_db(double psnr, char *buf, size_t n);

/* The rows of a history file (a JSON array; empty when the file does not
 * exist); a malformed line is refused with its number. */
adm_status adm_drift_history_read(const char *path, json_t **rows);
/* Tonight's row as the history holds it. */
json_t *drift_row_json(const adm_drift *d);

#endif
