/* Internal layout of a capture handle, shared by the model
 * (capture_model.c), the reader and writer (capture_read.c,
 * capture_write.c) and the validator. */
#ifndef ADM_CAPTURE_INTERNAL_H
#define ADM_CAPTURE_INTERNAL_H

#include "adm_capture.h"

typedef struct adm_entry {
    char *name;
    adm_tensor t;
} adm_entry;

typedef struct adm_entry_list {
    adm_entry *v;
    int n, cap;
} adm_entry_list;

typedef struct adm_special {
    char *name;
    adm_entry_list inputs;
    int has_ref;
    adm_tensor ref;
    adm_status refusal;
    adm_entry_list candidates;
} adm_special;

struct adm_capture {
    char *path;
    int version;
    char *op, *params, *model, *layer, *source;
    int64_t step;
    adm_entry_list inputs;
    int has_ref;
    adm_tensor ref;
    adm_entry_list candidates;
    int has_oracle;
    adm_tensor oracle;
    int has_oracle_bound;
    adm_tensor oracle_bound;
    int oracle_certified;
    adm_special *specials;
    int n_specials, cap_specials;
};

/* captures/capture_model.c, shared with the reader */
adm_capture *adm_cap_new(void);
adm_status adm_cap_list_push(adm_entry_list *l, const char *name, adm_tensor *t);
adm_status adm_cap_check_name(const char *name);

#endif
