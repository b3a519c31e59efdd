/* Internal to the harness: the gates' allocator, with a failure-injection
 * hook so tests can show that running out of memory is an error
 * (ADM_ERR_NOMEM), never a verdict. */
#ifndef ADM_HARNESS_INTERNAL_H
#define ADM_HARNESS_INTERNAL_H

#include "adm_harness.h"

/* calloc, unless an injected failure is due. Thread-safe (the numeric
 * gates allocate per OpenMP thread). */
void *adm_h_calloc(size_t n, size_t size);

/* Test hook: the nth call of adm_h_calloc from now (1: the next) returns
 * NULL; 0 disarms (keeping the count). adm_h_injected reports how many
 * injected failures have fired since the last arming. */
void adm_h_inject_alloc_failure(int nth);
int adm_h_injected(void);

#endif
