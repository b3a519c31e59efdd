/* The CUDA module's side of core/adm_cuda_module.h: its entry point and
 * table, and the libadmit functions its CUDA code calls, defined here
 * under their own names and forwarded to the host's table. The link
 * (core/cuda_module.map) keeps every name here local but the entry point,
 * so these never stand in for libadmit's own. */
#include "adm_cuda_module.h"
#include "adm_cuda.h"
#include "adm_candidates.h"
#include "cuda_twins.h"
#include "adm_toy.h"
#include "oracle_internal.h"

#include <stdarg.h>
#include <stdio.h>

_Static_assert(ADM_TOY_NCCL_ID_BYTES == 128, "adm_cuda_module's NCCL id is 128 bytes");

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

const char *adm_op_name(const adm_op *op) { return host->op_name(op); }

const char *adm_op_input_name(const adm_op *op, int i) { return host->op_input_name(op, i); }

adm_op_id adm_op_id_of(const adm_op *op) { return (adm_op_id)host->op_id_of(op); }

void adm_o_rows(const adm_tensor *t, int64_t K, int64_t r0, int64_t r1, double *out)
{
    host->o_rows(t, K, r0, r1, out);
}

adm_status adm_o_need_narrow(const adm_tensor *t, const char *op, const char *name)
{
    return host->o_need_narrow(t, op, name);
}

/* adm_cuda_twin's enum crosses as an int */
static adm_status twin(int which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    return adm_cuda_twin((adm_twin)which, p, in, out);
}

static const adm_cuda_module table = {
    ADM_CUDA_MODULE_ABI,
    sizeof(adm_cuda_module),
    adm_cuda_device_count,
    adm_cuda_device_name,
    adm_cuda_select,
    adm_cuda_convert_f32,
    adm_cuda_convert_f32_range,
    adm_o_cuda_usable,
    adm_o_cuda_gemm,
    adm_o_cuda_elementwise,
    adm_o_cuda_bench_gemm,
    adm_o_cuda_reduce,
    adm_o_cuda_norm,
    adm_o_cuda_attention,
    adm_o_cuda_linattn,
    adm_o_cuda_quantize,
    adm_cuda_linear_gelu,
    twin,
    adm_cuda_libm_f32_range,
    adm_toy_cuda_select,
    adm_toy_cuda_gemm_bf16,
    adm_toy_nccl_unique_id,
    adm_toy_nccl_init,
    adm_toy_nccl_allreduce_bf16,
    adm_toy_nccl_free,
    adm_stats_cuda_open,
    adm_stats_cuda_run,
    adm_stats_cuda_close,
    adm_stats_cuda_borrowed,
    adm_o_cuda_forget,
    adm_cuda_warm,
    adm_o_cuda_stale,
    adm_o_cuda_fetch,
    adm_o_cuda_scan,
    adm_stats_cuda_scale,
    adm_stats_cuda_flip,
};

const adm_cuda_module *adm_cuda_module_open(const adm_cuda_host *h);

const adm_cuda_module *adm_cuda_module_open(const adm_cuda_host *h)
{
    if (!h || h->abi != ADM_CUDA_MODULE_ABI || h->size != sizeof(adm_cuda_host) ||
        h->tensor_size != sizeof(adm_tensor) || h->o_ctx_size != sizeof(adm_o_ctx) ||
        h->op_params_size != sizeof(adm_op_params))
        return NULL;
    host = h;
    return &table;
}
