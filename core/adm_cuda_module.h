/* Internal: the boundary between libadmit and its CUDA module.
 *
 * The CUDA code (core/cuda.cu, oracle/oracle_cuda.cu, harness/stats_cuda.cu,
 * candidates/cuda_impl.cu, candidates/cuda_twins.cu, toy/toy_cuda.cu) is built as a separate
 * module, libadmit_cuda.so, that libadmit loads with dlopen the first time
 * a GPU path is asked for (core/cuda_load.c). A process that never uses a
 * GPU never maps the CUDA runtime, cuBLAS and cuBLASLt: linked in, their
 * constructors cost some 0.6 s of CPU and 220 MB of resident memory at
 * every start, and every fork of a sandbox copied and tore down their
 * mappings (bench/results/2026-11-30-cpu-sandbox-cost.md).
 *
 * The module links no part of libadmit: what its code calls of the
 * library comes through the host table libadmit hands to its one exported
 * function, so that it works beside libadmit.so, beside a static copy of
 * the library inside a program, and with libadmit's internals hidden.
 * Both tables carry their ABI version and size, and the host's the sizes
 * of the structures that cross; the module refuses a host from another
 * build, and libadmit a module from another build. */
#ifndef ADM_CUDA_MODULE_H
#define ADM_CUDA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "adm_core.h"
#include "adm_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raise on any change to either table or to a structure that crosses. */
#define ADM_CUDA_MODULE_ABI 11
#define ADM_CUDA_MODULE_FILE "libadmit_cuda.so"
#define ADM_CUDA_MODULE_ENTRY "adm_cuda_module_open"

struct adm_o_ctx;
struct adm_o_reduce_job;
struct adm_o_norm_job;
struct adm_o_attn_job;
struct adm_o_linattn_job;

/* What the module's code calls of libadmit (core/cuda_module.c defines
 * these names inside the module and forwards them here). */
typedef struct adm_cuda_host {
    uint32_t abi, size;
    uint32_t tensor_size, o_ctx_size, op_params_size;
    adm_status (*error_set)(adm_status code, const char *file, int line, const char *fmt, ...);
    const char *(*dtype_name)(adm_dtype dt);
    adm_status (*tensor_alloc)(adm_tensor *t, adm_dtype dt, int ndim, const int64_t *shape);
    void (*tensor_free)(adm_tensor *t);
    int64_t (*tensor_numel)(const adm_tensor *t);
    adm_status (*tensor_transpose)(const adm_tensor *src, int d0, int d1, adm_tensor *view);
    adm_status (*tensor_broadcast)(const adm_tensor *src, int ndim, const int64_t *shape, adm_tensor *view);
    uint64_t (*tensor_bits)(const adm_tensor *t, int64_t i);
    double (*tensor_get)(const adm_tensor *t, int64_t i);
    adm_status (*tensor_to_f64)(const adm_tensor *t, double *out);
    const char *(*op_name)(const adm_op *op);
    const char *(*op_input_name)(const adm_op *op, int i);
    int (*op_id_of)(const adm_op *op);
    void (*o_rows)(const adm_tensor *t, int64_t K, int64_t r0, int64_t r1, double *out);
    adm_status (*o_need_narrow)(const adm_tensor *t, const char *op, const char *name);
} adm_cuda_host;

/* The gates' raw sums on the GPU (harness/stats_cuda.cu): one output of
 * R rows x N channels in the partition of harness/stat_elem.h (ns
 * stripes, nb blocks), the oracle's values o and condition scale cond
 * (NULL: none) in fp64 and the reference output in its stored format
 * ref_dt (contiguous; fmt: the format the ulps are taken in), all on the
 * host, uploaded once by stats_open for every candidate of the output
 * (o and cond are borrowed instead where the GPU oracle still holds them:
 * adm_o_cuda_kept_take). */
typedef struct adm_stats_dev_desc {
    int64_t R, N, ns, nb;
    int fmt, ref_dt;
    const double *o, *cond;
    const void *ref;
} adm_stats_dev_desc;

/* The module's definitions (harness/stats_cuda.cu). open: the device
 * copies in *sess (ADM_ERR_UNSUPPORTED for formats other than bf16, fp16,
 * fp32, fp64). run: a candidate output (contiguous, cand_dt, R x N)
 * uploaded and its raw sums into the host arrays rows (R x RAW_NS), chans
 * (N x RAW_NS: the ns stripes' channel sums already added in stripe
 * order, as adm_h_stats_finish adds them), mg (nb x MG_NS) and ph
 * (nb x HIST_BLOCK); first[0] the first element whose kind (finite, NaN,
 * +Inf, -Inf) differs from the reference's, first[1] the first whose
 * bits differ (NaN payloads aside) where cand_dt is the reference's
 * format, else -1; R N where none (gates 3 and 7). */
adm_status adm_stats_cuda_open(const adm_stats_dev_desc *d, void **sess);
adm_status adm_stats_cuda_run(void *sess, const void *cand, int cand_dt, double *rows, double *chans, double *mg,
                              int64_t *ph, int64_t *first);
void adm_stats_cuda_close(void *sess);
/* 1 where open borrowed the GPU oracle's device copies of o and cond. */
int adm_stats_cuda_borrowed(void *sess);

/* The GPU oracle's last result on the device (oracle/oracle_cuda.cu; the
 * lifetime rule: oracle_internal.h, adm_o_cuda_forget). take: a reference
 * to its device copies of val (R N values) and, where cond is not NULL,
 * of cond, when they stand for these host arrays on the current device
 * (else NULL); put releases it. The copies live while referenced, past a
 * forget or a later evaluation. */
void *adm_o_cuda_kept_take(const double *val, const double *cond, int64_t n, const double **dval,
                           const double **dcond);
void adm_o_cuda_kept_put(void *k);
void adm_o_cuda_forget(const double *val);
/* 1 where val's host arrays are stale, the result resident on the device
 * (oracle_internal.h: adm_o_cuda_stale). */
int adm_o_cuda_stale(const double *val);
/* The resolve scale's block sums (harness/stat_elem.h, adm_se_scale_add)
 * over a session's oracle values and reference: 3 doubles a block of
 * ADM_SE_SCALE_BLK elements into part, in block order. */
adm_status adm_stats_cuda_scale(void *sess, double *part);
/* Gate 5 on the device (harness/stat_elem.h adm_se_flip) over the
 * session's oracle, reference and last candidate: reader's scale set
 * there for a quantize reader (max |o| over the finite values over
 * reader.maxf, 1 where that is 0); cnt: ties, decisions, the reference's
 * and the candidate's flips. */
typedef struct adm_stats_flip_desc {
    int kind, fmt, has_nan; /* harness/stat_elem.h's adm_se_reader, but its scale */
    double threshold, maxf;
} adm_stats_flip_desc;
adm_status adm_stats_cuda_flip(void *sess, const adm_stats_flip_desc *d, int64_t *cnt);

/* The module's side of adm_cuda_warm_start (core/cuda.cu): the device
 * selected where device >= 0 (on the calling thread), its context
 * created, and what (ADM_CUDA_WARM_*) asks for: the cuBLASLt
 * implementations' (candidates/cuda_impl.cu: adm_cuda_impl_warm) first,
 * then the GPU oracle's (oracle/oracle_cuda.cu: adm_o_cuda_warm). */
adm_status adm_cuda_warm(int device, unsigned what);
adm_status adm_o_cuda_warm(void);
adm_status adm_cuda_impl_warm(void);

/* What the module does: the functions of adm_cuda.h (but adm_cuda_built),
 * the GPU oracle of oracle_internal.h, adm_cuda_linear_gelu, the CUDA
 * twins of candidates/cuda_twins.h, the gates' statistics and the toy's GPU
 * surface, with the same contracts. */
typedef struct adm_cuda_module {
    uint32_t abi, size;
    adm_status (*device_count)(int *count);
    adm_status (*device_name)(char *buf, size_t n, int *cc_major, int *cc_minor);
    adm_status (*device_select)(int device);
    adm_status (*convert_f32)(adm_dtype dt, adm_round mode, unsigned flags, const float *in, uint16_t *out,
                              size_t n);
    adm_status (*convert_f32_range)(adm_dtype dt, adm_round mode, unsigned flags, uint32_t first, uint16_t *out,
                                    size_t n);
    int (*o_usable)(void);
    adm_status (*o_gemm)(const struct adm_o_ctx *c, double *val, double *bnd);
    adm_status (*o_elementwise)(const struct adm_o_ctx *c, double *val, double *bnd);
    adm_status (*o_bench_gemm)(int64_t M, int64_t K, int64_t N, int reps, double *ms);
    adm_status (*o_reduce)(const struct adm_o_reduce_job *j, int64_t total, const double *x, double *val,
                           double *bnd, double *cond);
    adm_status (*o_norm)(const struct adm_o_norm_job *j, int64_t total, const double *x, const double *w,
                         const double *b, const double *shift, const double *scale, double *val, double *bnd,
                         double *cond);
    adm_status (*o_attention)(const struct adm_o_attn_job *j, const double *q, const double *k, const double *v,
                              double *val, double *bnd, double *cond);
    adm_status (*o_linattn)(const struct adm_o_linattn_job *j, const double *q, const double *k, const double *v,
                            double *val, double *bnd, double *cond);
    adm_status (*o_quantize)(int scheme, int64_t n, int64_t N, double g, const double *x, double *val);
    adm_status (*linear_gelu)(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias, int mode,
                              adm_tensor *out);
    adm_status (*twin)(int which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out);
    adm_status (*libm_f32_range)(int fn, uint32_t first, uint32_t *out, size_t n);
    adm_status (*toy_select)(int device);
    adm_status (*toy_gemm_bf16)(const uint16_t *x, const uint16_t *w, int64_t M, int64_t K, int64_t N,
                                uint16_t *y);
    adm_status (*toy_nccl_unique_id)(unsigned char id[128]);
    adm_status (*toy_nccl_init)(const unsigned char id[128], int rank, int world, void **comm);
    adm_status (*toy_nccl_allreduce_bf16)(void *comm, uint16_t *buf, int64_t n);
    void (*toy_nccl_free)(void *comm);
    adm_status (*stats_open)(const adm_stats_dev_desc *d, void **sess);
    adm_status (*stats_run)(void *sess, const void *cand, int cand_dt, double *rows, double *chans, double *mg,
                            int64_t *ph, int64_t *first);
    void (*stats_close)(void *sess);
    int (*stats_borrowed)(void *sess);
    void (*o_forget)(const double *val);
    adm_status (*warm)(int device, unsigned what);
    int (*o_stale)(const double *val);
    adm_status (*o_fetch)(const double *val);
    adm_status (*o_scan)(const double *val, double thr, int64_t *blunt, double *maxb);
    adm_status (*stats_scale)(void *sess, double *part);
    adm_status (*stats_flip)(void *sess, const adm_stats_flip_desc *d, int64_t *cnt);
} adm_cuda_module;

/* The module's one exported function: its table, or NULL when host is
 * from another build. */
typedef const adm_cuda_module *(*adm_cuda_module_open_fn)(const adm_cuda_host *host);

/* libadmit's side (core/cuda_load.c): the module, loaded on the first
 * call (thread-safe); ADM_ERR_NO_DEVICE, saying why, when libadmit was
 * built without CUDA or the module cannot be loaded. It is looked for at
 * $ADM_CUDA_MODULE when set (there only), else beside the object that
 * holds libadmit (libadmit.so, or the program a static copy is in), then
 * on the dynamic linker's search path, then in the build tree. */
adm_status adm_cuda_module_get(const adm_cuda_module **out);
/* The module where it is loaded already, else NULL; never loads it (for
 * releasing what only a loaded module can hold). */
const adm_cuda_module *adm_cuda_module_loaded(void);

#ifdef __cplusplus
}
#endif
#endif
