/* Status codes and the per-thread last error. */
#include "adm_core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    const char *text;
} status_table[ADM_STATUS_COUNT] = {
    [ADM_OK] = {"ADM_OK", "success"},
    [ADM_ERR_INVALID] = {"ADM_ERR_INVALID", "invalid argument"},
    [ADM_ERR_NOMEM] = {"ADM_ERR_NOMEM", "out of memory"},
    [ADM_ERR_OVERFLOW] = {"ADM_ERR_OVERFLOW", "size overflow"},
    [ADM_ERR_RANGE] = {"ADM_ERR_RANGE", "value out of range"},
    [ADM_ERR_DTYPE] = {"ADM_ERR_DTYPE", "unsupported element type"},
    [ADM_ERR_SHAPE] = {"ADM_ERR_SHAPE", "shape mismatch"},
    [ADM_ERR_IO] = {"ADM_ERR_IO", "input/output error"},
    [ADM_ERR_FORMAT] = {"ADM_ERR_FORMAT", "malformed file"},
    [ADM_ERR_VERSION] = {"ADM_ERR_VERSION", "unsupported format version"},
    [ADM_ERR_NOT_FOUND] = {"ADM_ERR_NOT_FOUND", "not found"},
    [ADM_ERR_UNSUPPORTED] = {"ADM_ERR_UNSUPPORTED", "not supported"},
    [ADM_ERR_HDF5] = {"ADM_ERR_HDF5", "HDF5 error"},
    [ADM_ERR_JSON] = {"ADM_ERR_JSON", "malformed JSON"},
    [ADM_ERR_CUDA] = {"ADM_ERR_CUDA", "CUDA error"},
    [ADM_ERR_NO_DEVICE] = {"ADM_ERR_NO_DEVICE", "no usable GPU"},
    [ADM_ERR_INTERNAL] = {"ADM_ERR_INTERNAL", "internal error"},
};

const char *adm_strerror(adm_status s)
{
    if ((int)s < 0 || s >= ADM_STATUS_COUNT) return "unknown status";
    return status_table[s].text;
}

const char *adm_status_name(adm_status s)
{
    if ((int)s < 0 || s >= ADM_STATUS_COUNT) return "ADM_ERR_UNKNOWN";
    return status_table[s].name;
}

adm_status adm_status_from_name(const char *name, adm_status *out)
{
    for (int i = 0; i < ADM_STATUS_COUNT; i++)
        if (name && strcmp(name, status_table[i].name) == 0) {
            *out = (adm_status)i;
            return ADM_OK;
        }
    return ADM_FAIL(ADM_ERR_INVALID, "unknown status name '%s'", name ? name : "(null)");
}

#define ADM_ERRBUF 1024
static _Thread_local struct {
    adm_status code;
    char msg[ADM_ERRBUF];
    char where[256];
} last_error;

adm_status adm_error_set(adm_status code, const char *file, int line,
                         const char *fmt, ...)
{
    va_list ap;
    last_error.code = code;
    va_start(ap, fmt);
    vsnprintf(last_error.msg, sizeof last_error.msg, fmt, ap);
    va_end(ap);
    snprintf(last_error.where, sizeof last_error.where, "%s:%d", file ? file : "?", line);
    return code;
}

void adm_error_prefix(const char *fmt, ...)
{
    char pre[ADM_ERRBUF];
    size_t np, nold;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    np = strlen(pre);
    nold = strlen(last_error.msg);
    if (np + nold > ADM_ERRBUF - 1) nold = ADM_ERRBUF - 1 - np;
    memmove(last_error.msg + np, last_error.msg, nold);
    memcpy(last_error.msg, pre, np);
    last_error.msg[np + nold] = '\0';
}

const char *adm_error_message(void)
{
    if (last_error.msg[0] == '\0') return adm_strerror(last_error.code);
    return last_error.msg;
}

const char *adm_error_where(void) { return last_error.where; }
adm_status adm_error_code(void) { return last_error.code; }

void adm_error_clear(void)
{
    last_error.code = ADM_OK;
    last_error.msg[0] = '\0';
    last_error.where[0] = '\0';
}
