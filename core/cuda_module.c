/* The CUDA module's side of core/adm_cuda_module.h: its entry point, the
 * core functions its CUDA code calls, defined here under their own names
 * and forwarded to the host's table, and core's part. The link
 * (core/cuda_module.map) keeps every name here local but the entry point
 * and the parts, so these never stand in for libadmit's own. Like the
 * loader, this knows no other module: each part is defined beside its
 * device code. */
#include "adm_cuda_module.h"
#include "adm_cuda.h"

#include <stdarg.h>
#include <stdio.h>

static const adm_cuda_host *host;

adm_status adm_error_set(adm_status code, const char *file, int line, const char *fmt, ...)
{
    /* As long as libadmit's own message buffer (core/status.c). */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host->error_set(code, file, line, "%s", msg);
}

const char *adm_dtype_name(adm_dtype dt) { return host->dtype_name(dt); }

adm_status adm_tensor_alloc(adm_tensor *t, adm_dtype dt, int ndim, const int64_t *shape)
{
    return host->tensor_alloc(t, dt, ndim, shape);
}

void adm_tensor_free(adm_tensor *t) { host->tensor_free(t); }

int64_t adm_tensor_numel(const adm_tensor *t) { return host->tensor_numel(t); }

adm_status adm_tensor_transpose(const adm_tensor *src, int d0, int d1, adm_tensor *view)
{
    return host->tensor_transpose(src, d0, d1, view);
}

adm_status adm_tensor_broadcast(const adm_tensor *src, int ndim, const int64_t *shape, adm_tensor *view)
{
    return host->tensor_broadcast(src, ndim, shape, view);
}

uint64_t adm_tensor_bits(const adm_tensor *t, int64_t i) { return host->tensor_bits(t, i); }

double adm_tensor_get(const adm_tensor *t, int64_t i) { return host->tensor_get(t, i); }

adm_status adm_tensor_to_f64(const adm_tensor *t, double *out) { return host->tensor_to_f64(t, out); }

uint32_t adm_cuda_module_open(const adm_cuda_host *h);

uint32_t adm_cuda_module_open(const adm_cuda_host *h)
{
    if (!h || h->abi != ADM_CUDA_MODULE_ABI || h->size != sizeof(adm_cuda_host) ||
        h->tensor_size != sizeof(adm_tensor))
        return 0;
    host = h;
    return ADM_CUDA_MODULE_ABI;
}

static const adm_cuda_core_part core_part = {
    .head = {ADM_CUDA_CORE_ABI, sizeof(adm_cuda_core_part)},
    .device_count = adm_cuda_device_count,
    .device_name = adm_cuda_device_name,
    .device_select = adm_cuda_select,
    .convert_f32 = adm_cuda_convert_f32,
    .convert_f32_range = adm_cuda_convert_f32_range,
    .warm = adm_cuda_warm_module,
};

/* core's part calls nothing but the host table */
ADM_CUDA_PART_PLAIN(core, core_part)
