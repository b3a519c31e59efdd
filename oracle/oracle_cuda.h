/* Internal: the oracle's part of the CUDA module (core/adm_cuda_module.h).
 * Its device code (oracle/oracle_cuda.cu, oracle/quantize_cuda.cu) has
 * the contracts of oracle_internal.h's adm_o_cuda_* functions; its table
 * is defined beside it (oracle/oracle_cuda_part.c), and libadmit's
 * adm_o_cuda_* (oracle/oracle_cuda_load.c) reach it by the part's name.
 * What the device code calls of the oracle's host code comes through
 * adm_o_cuda_host. */
#ifndef ADM_ORACLE_CUDA_H
#define ADM_ORACLE_CUDA_H

#include "adm_cuda_module.h"
#include "adm_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ADM_O_CUDA_PART "oracle"
/* Raise on any change to either table or to a structure that crosses. */
#define ADM_O_CUDA_ABI 1

struct adm_o_ctx;
struct adm_o_reduce_job;
struct adm_o_norm_job;
struct adm_o_attn_job;
struct adm_o_linattn_job;

/* The oracle's host functions its device code calls, with the sizes of
 * the structures that cross (oracle/oracle_cuda_part.c defines these
 * names inside the module and forwards them here). */
typedef struct adm_o_cuda_host {
    adm_cuda_part_head head;
    uint32_t o_ctx_size, op_params_size;
    const char *(*op_name)(const adm_op *op);
    const char *(*op_input_name)(const adm_op *op, int i);
    int (*op_id_of)(const adm_op *op);
    void (*o_rows)(const adm_tensor *t, int64_t K, int64_t r0, int64_t r1, double *out);
    adm_status (*o_need_narrow)(const adm_tensor *t, const char *op, const char *name);
} adm_o_cuda_host;

/* The GPU oracle of oracle_internal.h, with its contracts; warm: the
 * GPU oracle's side of adm_cuda_warm_start (adm_o_cuda_warm). */
typedef struct adm_o_cuda_part {
    adm_cuda_part_head head;
    int (*usable)(void);
    adm_status (*gemm)(const struct adm_o_ctx *c, double *val, double *bnd);
    adm_status (*elementwise)(const struct adm_o_ctx *c, double *val, double *bnd);
    adm_status (*bench_gemm)(int64_t M, int64_t K, int64_t N, int reps, double *ms);
    adm_status (*reduce)(const struct adm_o_reduce_job *j, int64_t total, const double *x, double *val,
                         double *bnd, double *cond);
    adm_status (*norm)(const struct adm_o_norm_job *j, int64_t total, const double *x, const double *w,
                       const double *b, const double *shift, const double *scale, double *val, double *bnd,
                       double *cond);
    adm_status (*attention)(const struct adm_o_attn_job *j, const double *q, const double *k, const double *v,
                            double *val, double *bnd, double *cond);
    adm_status (*linattn)(const struct adm_o_linattn_job *j, const double *q, const double *k, const double *v,
                          double *val, double *bnd, double *cond);
    adm_status (*quantize)(int scheme, int64_t n, int64_t N, double g, const double *x, double *val);
    void (*forget)(const double *val);
    int (*stale)(const double *val);
    adm_status (*fetch)(const double *val);
    adm_status (*scan)(const double *val, double thr, int64_t *blunt, double *maxb);
    adm_status (*warm)(void);
} adm_o_cuda_part;

/* The GPU oracle's cuBLAS handle, its first DGEMM and bf16 GEMM and its
 * download buffers (oracle/oracle_cuda.cu), on the calling thread's
 * device: adm_cuda_warm_start's ADM_CUDA_WARM_ORACLE. */
adm_status adm_o_cuda_warm(void);

/* Inside the module only: the GPU oracle's last result on the device, for
 * the gates' statistics on the GPU (harness/stats_cuda.cu; the lifetime
 * rule: oracle_internal.h, adm_o_cuda_forget). take: a reference to its
 * device copies of val (n values) and, where cond is not NULL, of cond,
 * when they stand for these host arrays on the current device (else
 * NULL); put releases it. The copies live while referenced, past a
 * forget or a later evaluation. */
void *adm_o_cuda_kept_take(const double *val, const double *cond, int64_t n, const double **dval,
                           const double **dcond);
void adm_o_cuda_kept_put(void *k);
/* oracle_internal.h's, for harness/stats_cuda.cu, which reads no more
 * of the oracle's internals */
int adm_o_cuda_stale(const double *val);

#ifdef __cplusplus
}
#endif
#endif
