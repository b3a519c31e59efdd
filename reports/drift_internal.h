/* Internal to the drift report (reports/drift*.c). */
#ifndef ADM_DRIFT_INTERNAL_H
#define ADM_DRIFT_INTERNAL_H

#include "adm_drift.h"
#include "text_buf.h"

#include <jansson.h>

typedef struct drift_arm {
    char *name;
    adm_image img;
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
    /* after evaluate */
    int evaluated, has_band, is_video;
    double band_psnr, band_ssim, use_psnr, use_ssim;
};

/* "inf" for +Inf, else %.*f. */
const char *drift_db(double psnr, char *buf, size_t n);

/* The rows of a history file (a JSON array; empty when the file does not
 * exist); a malformed line is refused with its number. */
adm_status adm_drift_history_read(const char *path, json_t **rows);
/* Tonight's row as the history holds it. */
json_t *drift_row_json(const adm_drift *d);

/* The rows of a history file (a JSON array; empty when the file does not
 * exist); a malformed line is refused with its number. */
adm_status adm_drift_history_read(const char *path, json_t **rows);
/* Tonight's row as the history holds it. */
json_t *drift_row_json(const adm_drift *d);

#endif
