/* Malformed captures, made with the HDF5 C API, for the reader's and the
 * CLI's error tests. Each case says which stage must refuse it, with which
 * status, and two pieces of text the message must contain (besides the
 * file's name). */
#ifndef ADM_TEST_BAD_CAPTURES_H
#define ADM_TEST_BAD_CAPTURES_H

#include "adm_capture.h"

typedef struct adm_bad_case {
    const char *file;
    int at_validate;      /* 0: adm_capture_read refuses; 1: adm_capture_validate */
    adm_status status;
    const char *needle1;
    const char *needle2;
} adm_bad_case;

extern const adm_bad_case adm_bad_cases[];
extern const int adm_bad_case_count;

/* Writes every case (and a valid base.h5) into dir. */
adm_status adm_make_bad_captures(const char *dir);

#endif
