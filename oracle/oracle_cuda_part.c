/* The oracle's part of the CUDA module (oracle/oracle_cuda.h): its table
 * and the oracle's host functions its device code calls, defined here
 * under their own names and forwarded to the part's host table (local to
 * the module: core/cuda_module.map). */
#include "oracle_cuda.h"
#include "oracle_internal.h"

static const adm_o_cuda_host *host;

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

static const adm_o_cuda_part part = {
    .head = {ADM_O_CUDA_ABI, sizeof(adm_o_cuda_part)},
    .usable = adm_o_cuda_usable,
    .gemm = adm_o_cuda_gemm,
    .elementwise = adm_o_cuda_elementwise,
    .bench_gemm = adm_o_cuda_bench_gemm,
    .reduce = adm_o_cuda_reduce,
    .norm = adm_o_cuda_norm,
    .attention = adm_o_cuda_attention,
    .linattn = adm_o_cuda_linattn,
    .quantize = adm_o_cuda_quantize,
    .forget = adm_o_cuda_forget,
    .stale = adm_o_cuda_stale,
    .fetch = adm_o_cuda_fetch,
    .scan = adm_o_cuda_scan,
    .warm = adm_o_cuda_warm,
};

const adm_cuda_part_head *adm_cuda_part_oracle(const adm_cuda_part_head *h);

const adm_cuda_part_head *adm_cuda_part_oracle(const adm_cuda_part_head *h)
{
    const adm_o_cuda_host *oh = (const adm_o_cuda_host *)h;
    if (!oh || oh->head.abi != ADM_O_CUDA_ABI || oh->head.size != sizeof(adm_o_cuda_host) ||
        oh->o_ctx_size != sizeof(adm_o_ctx) || oh->op_params_size != sizeof(adm_op_params))
        return NULL;
    host = oh;
    return &part.head;
}
