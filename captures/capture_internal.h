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
    /* A capture read through the sandbox: its tensors' bytes, mapped
     * (sandbox.c); NULL otherwise. */
    void *arena;
    size_t arena_len;
    /* adm_capture_create_borrowed: every tensor added is a view of the
     * caller's storage (never owned, never copied) */
    int borrowed;
};

/* captures/capture_model.c, shared with the reader */
adm_capture *adm_cap_new(void);
adm_status adm_cap_list_append(adm_entry_list *l, char *name, adm_tensor *t);
adm_status adm_cap_list_push(adm_entry_list *l, const char *name, adm_tensor *t);
adm_status adm_cap_check_name(const char *name);
/* The sandbox (sandbox.c): inside a reader child, adm_capture_crumb_ is a
 * page shared with the parent, and the reader names there what it asks
 * libhdf5 for next, so that the parent can say what the library was
 * reading when the child died or hung. NULL (nothing done) elsewhere. */
extern char *adm_capture_crumb_;
void adm_capture_trace(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
#define ADM_CAPTURE_TRACE(...)                                    \
    do {                                                          \
        if (adm_capture_crumb_) adm_capture_trace(__VA_ARGS__);   \
    } while (0)
/* Unmaps a sandboxed capture's tensors (adm_capture_free). */
void adm_sandbox_arena_free(adm_capture *c);
/* Writes the child's answer for a capture read whole (contiguous tensors)
 * to fd: 0, or -1 when a write fails. */
int adm_sandbox_encode(int fd, const adm_capture *c);
/* Inside a reader child, where a dataset's tensor is allocated: in the
 * memory file the parent maps afterwards (zero-filled, contiguous, not
 * owned), so that the bytes libhdf5 writes are the bytes the parent gets.
 * NULL elsewhere: adm_tensor_alloc. */
extern adm_status (*adm_capture_tensor_alloc_)(adm_tensor *t, adm_dtype dt, int ndim, const int64_t *shape);
/* Decodes a reader child's answer held in memory (the fuzz target of the
 * sandbox boundary): a capture, or the child's refusal as an error. */
adm_status adm_sandbox_decode_buffer(const void *buf, size_t len, const char *path, adm_capture **out);

#endif
