/* Internal: the ADM_* numeric environment variables (core/env.c). Not
 * part of the public API; adm_env_check (adm_core.h) is. */
#ifndef ADM_ENV_H
#define ADM_ENV_H

#include "adm_core.h"

/* The variable `name` (one of core/env.c's table) parsed strictly: *out is
 * its value, or dflt when it is unset or empty; ADM_ERR_INVALID naming the
 * variable, its value and its range otherwise (*out is then dflt). */
adm_status adm_env_i64(const char *name, int64_t dflt, int64_t *out);

#endif
