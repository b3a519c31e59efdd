/* Internal to the oracle: op identities, error-analysis constants, and the
 * per-op evaluators. */
#ifndef ADM_ORACLE_INTERNAL_H
#define ADM_ORACLE_INTERNAL_H

#include "adm_oracle.h"

#include <math.h>
#include <gmp.h>
#include <mpfr.h>

typedef enum adm_op_id {
    OP_ROW_SUM, OP_MEAN_SQ, OP_MATMUL, OP_LINEAR, OP_SCALE, OP_RELU, OP_GELU, OP_SILU,
    OP_SWIGLU, OP_LINEAR_GELU, OP_GATED_RESIDUAL, OP_RMSNORM, OP_LAYERNORM, OP_GROUPNORM,
    OP_SOFTMAX, OP_ATTENTION, OP_LINEAR_ATTENTION, OP_QUANTIZE
} adm_op_id;

adm_op_id adm_op_id_of(const adm_op *op);

/* The unit roundoff of fp64 (round to nearest). */
#define ADM_U 0x1p-53

#include "scalar_fns.h"

/* gelu_tanh'(v) = s + v s (1 - s) 2C (1 + 3A v^2), s = sigma(2z) =
 * gelu_tanh(v) / v, from the value g = adm_fn_gelu_tanh(v) instead of
 * adm_fn_gelu_tanh_d's two exp calls: for the condition scale, which
 * needs a few bits. s carries two roundings (g's and the quotient's,
 * within about 1e-12 of g's own bound); 1 - s cancels only where s is
 * near 1 (large positive v), where that term's absolute error, a few u
 * times v 2C (1 + 3A v^2), is below 1e-13 of the derivative (about 1) for
 * v up to 10 and the term itself below u beyond. Where v is 0, 1/2;
 * non-finite where v or g is (Inf, NaN, an overflowing term):
 * adm_fn_cond_chain then takes |g|, as it does for adm_fn_gelu_tanh_d
 * there. No branch: the GEMM's epilogue vectorises it (oracle/gemm.c). */
static inline double adm_o_gelu_tanh_d_from(double v, double g)
{
    const double A = 0.044715, C = 0.79788456080286535588;
    double s = g / v;
    return v == 0 ? 0.5 : s + v * s * (1.0 - s) * 2.0 * C * (1.0 + 3.0 * A * v * v);
}

/* The bounds' arithmetic (adm_add_up, adm_mul_up, adm_div_up,
 * adm_sqrt_up, adm_sub_dn, adm_gamma_up, adm_rn_err ...) rounds every
 * step upward: scalar_fns.h. */

/* The per-line work of the reductions and norms, shared with the GPU:
 * oracle/line_fns.h (adm_o_softmax, adm_o_reduce_line, adm_o_norm_set). */

/* Scalar functions of the catalog in fp64, each returning the value and
 * in *err a bound on |value - f(x)| for the exact real f at the double x. */
double adm_o_gelu_tanh(double x, double *err);
double adm_o_gelu_erf(double x, double *err);
double adm_o_silu(double x, double *err);
/* sup |f'| over the reals, for propagating an input's error through f. */
#define ADM_GELU_LIPSCHITZ 1.15
#define ADM_SILU_LIPSCHITZ 1.11

/* Exact sums of products (oracle/exact.c): M 2^e, M a GMP integer; an
 * infinite or NaN term makes the sum that IEEE value (has_special). */
typedef struct adm_o_exact {
    mpz_t m;
    long e;
    mpz_t t;          /* scratch */
    double special;
    int has_special;
} adm_o_exact;
void adm_o_exact_init(adm_o_exact *x);
void adm_o_exact_clear(adm_o_exact *x);
void adm_o_exact_zero(adm_o_exact *x);
void adm_o_exact_add(adm_o_exact *x, double a);
void adm_o_exact_add_prod(adm_o_exact *x, double a, double b);
void adm_o_exact_add_prod3(adm_o_exact *x, double a, double b, double c);
/* x += scale * y */
void adm_o_exact_add_exact(adm_o_exact *x, const adm_o_exact *y, long scale);
/* the bits of M: the precision that holds the sum exactly */
mpfr_prec_t adm_o_exact_prec(const adm_o_exact *x);
/* r = the sum rounded in direction rnd at r's precision */
int adm_o_exact_get_fr(mpfr_t r, const adm_o_exact *x, mpfr_rnd_t rnd);
/* The sum rounded to the nearest double, and in *dist_up |that - sum|
 * rounded up (0 for an infinite or NaN sum). */
double adm_o_exact_get_d(const adm_o_exact *x, double *dist_up);

/* Closed intervals of MPFR numbers, for the MPFR evaluator
 * (oracle/mpfr_eval.c): lo rounded down, hi up, at every step. */
typedef struct adm_o_iv { mpfr_t lo, hi; } adm_o_iv;
void adm_o_iv_init(adm_o_iv *a, mpfr_prec_t p);
void adm_o_iv_clear(adm_o_iv *a);
void adm_o_iv_set_d(adm_o_iv *r, double d);
/* Enclosures of the scalar functions at y's precision (x any interval). */
void adm_o_gelu_tanh_iv(adm_o_iv *y, const adm_o_iv *x);
void adm_o_gelu_erf_iv(adm_o_iv *y, const adm_o_iv *x);
void adm_o_silu_iv(adm_o_iv *y, const adm_o_iv *x);

/* Reduction geometry: output element o of a reduction over `axis` reads
 * elements outer*n*inner + j*inner + in for j < n. */
typedef struct adm_axis_geom { int64_t outer, n, inner; } adm_axis_geom;
adm_axis_geom adm_o_axis_geom(const adm_tensor *x, int axis);
int adm_o_norm_axis(int axis, int ndim);

/* Rows r0..r1-1 of t seen as [R, K] (leading dims flattened), exactly. */
void adm_o_rows(const adm_tensor *t, int64_t K, int64_t r0, int64_t r1, double *out);
/* Products of these inputs must be exact in fp64. */
adm_status adm_o_need_narrow(const adm_tensor *t, const char *op, const char *name);

/* Per-op fp64 evaluators: val and bnd are dense row-major outputs. */
typedef struct adm_o_ctx {
    const adm_op *op;
    const adm_op_params *p;
    const adm_tensor *const *in;
    int ndim;
    const int64_t *shape;
    int64_t numel;
    int threads;
    int use_gpu;
    double *cond;   /* dense row-major: the condition scale of each output (adm_oracle_result.cond); NULL: not wanted */
    /* on the GPU, the GEMM family and elementwise ops: value, bound and
     * cond stay on the device, the host's arrays stale
     * (adm_oracle_config.keep_on_device, adm_o_cuda_stale) */
    int resident;
} adm_o_ctx;

adm_status adm_o_eval_elementwise(const adm_o_ctx *c, double *val, double *bnd);
adm_status adm_o_eval_gemm(const adm_o_ctx *c, double *val, double *bnd);
adm_status adm_o_eval_reduce(const adm_o_ctx *c, double *val, double *bnd);
adm_status adm_o_eval_norm(const adm_o_ctx *c, double *val, double *bnd);
adm_status adm_o_eval_attention(const adm_o_ctx *c, double *val, double *bnd);
adm_status adm_o_eval_quantize(const adm_o_ctx *c, double *val, double *bnd);

adm_status adm_o_gemm_tighten(const adm_o_ctx *c, int64_t index, double *value, double *bound);

/* The GPU: cuBLAS DGEMM and CUDA kernels (oracle/oracle_cuda.cu). */
int adm_o_cuda_usable(void);
adm_status adm_o_cuda_gemm(const adm_o_ctx *c, double *val, double *bnd);
adm_status adm_o_cuda_elementwise(const adm_o_ctx *c, double *val, double *bnd);
/* The GPU oracle keeps its last result's value and condition scale on
 * the device after downloading them into the host arrays val and cond
 * (oracle/oracle_cuda.cu), so that the gates' statistics on the GPU
 * (harness/stats_cuda.cu) read them there instead of uploading them
 * again. The device copy stands for the host arrays, found by their
 * addresses, only while those hold what was downloaded: it is dropped by
 * the next GPU evaluation, by adm_oracle_result_free, and by whatever
 * writes the host values (refinement, the test hooks' mutants), each of
 * which calls adm_o_cuda_forget(val) first. Nothing where the CUDA module
 * was never loaded (nothing can be kept then). */
void adm_o_cuda_forget(const double *val);
/* A resident result (adm_o_ctx.resident): stale, 1 where val's host
 * arrays (value, bound, cond) are not filled and the device holds the
 * result (0 where the module was never loaded); fetch fills them (nothing
 * to do where not stale); scan, on the device, the count of finite values
 * whose bound exceeds thr and the largest bound of a finite value (0
 * where none), refine's scan (ADM_ERR_NOT_FOUND where the device holds
 * no bound for val). A later GPU evaluation fills a stale result's host
 * arrays before it drops the device copy: they stay valid until
 * adm_oracle_result_free, which forgets without filling. */
int adm_o_cuda_stale(const double *val);
adm_status adm_o_cuda_fetch(const double *val);
adm_status adm_o_cuda_scan(const double *val, double thr, int64_t *blunt, double *maxb);
/* The lines of a reduction or norm (oracle/line_fns.h) on the GPU, from
 * the host's fp64 inputs (total elements; per channel w, b; shift and
 * scale dense, NULL when absent) into host outputs; cond may be NULL. */
struct adm_o_reduce_job;
struct adm_o_norm_job;
struct adm_o_attn_job;
struct adm_o_linattn_job;
adm_status adm_o_cuda_reduce(const struct adm_o_reduce_job *j, int64_t total, const double *x, double *val,
                             double *bnd, double *cond);
adm_status adm_o_cuda_norm(const struct adm_o_norm_job *j, int64_t total, const double *x, const double *w,
                           const double *b, const double *shift, const double *scale, double *val, double *bnd,
                           double *cond);
/* Attention and linear attention on the GPU from the host's fp64 q, k, v
 * (H x S x D, H x T x D, H x T x E) into host outputs (H x S x E). */
adm_status adm_o_cuda_attention(const struct adm_o_attn_job *j, const double *q, const double *k, const double *v,
                                double *val, double *bnd, double *cond);
adm_status adm_o_cuda_linattn(const struct adm_o_linattn_job *j, const double *q, const double *k, const double *v,
                              double *val, double *bnd, double *cond);
/* quantize-dequantize on the GPU (oracle/quantize_cuda.cu, the
 * arithmetic of quantize_fns.h) from the host's fp64 x (n elements, rows
 * of N) into host values: scheme ADM_Q_*, g the tensor's scale (fp8 per
 * tensor: s; nvfp4: the global g; unused per row). */
adm_status adm_o_cuda_quantize(int scheme, int64_t n, int64_t N, double g, const double *x, double *val);
/* Device-side times (ms, median of reps) at M x K x N from random bf16
 * inputs: [0] one cuBLAS DGEMM on fp64 operands, [1] the oracle (bf16 to
 * fp64, norms, DGEMM, bias, GELU, bound, and the condition scale: a
 * bf16 GEMM on |x|, |w| on the tensor cores), [2] uploading the bf16
 * inputs, [3] downloading value and bound, [5] the condition scale alone;
 * max bound in ms[4]. ms: 6 doubles. */
adm_status adm_o_cuda_bench_gemm(int64_t M, int64_t K, int64_t N, int reps, double *ms);

/* The MPFR evaluator (oracle/mpfr_eval.c): output element `index` as an
 * enclosure y->lo <= exact <= y->hi at y's precision p, every step exact
 * (GMP) or rounded outward; its width, derived there, is a few units of
 * 2^-p times the element's sum of |terms| (not of |y|, which may cancel).
 * NaN in both ends where the exact value is undefined (NaN inputs, 0/0). */
adm_status adm_o_mpfr_element(const adm_o_ctx *c, int64_t index, adm_o_iv *y);
/* The exact pre-activation x_i . w_j (+ bias_j) of a GEMM-family element. */
void adm_o_gemm_exact(const adm_o_ctx *c, int64_t index, adm_o_exact *s);
/* For the ops whose output is a sum of exact products (matmul, linear,
 * row_sum, gated_residual): the exact value, and 1; else 0. */
int adm_o_exact_element(const adm_o_ctx *c, int64_t index, adm_o_exact *s);

#ifdef ADM_ORACLE_TEST_HOOKS
/* The test copy only (tests/CMakeLists.txt builds the oracle a second time
 * with ADM_ORACLE_TEST_HOOKS for tests/check_oracle.c; libadmit has none
 * of this). A mutant shrinks one op's bounds or moves its values, so that
 * the tests can show they catch it; the libm hook returns, for exp and
 * erfc, the farthest result the assumption allows on the side asked. */
typedef struct adm_o_mutation {
    int op;              /* adm_op_id + 1 of the mutated op; 0: none */
    double bound_factor; /* its bounds times this */
    int value_ulps;      /* its values moved up by this many ulps */
    int refined;         /* mutate the refined elements' bounds (MPFR, GMP) instead of the fp64 pass's */
} adm_o_mutation;
extern adm_o_mutation adm_o_mutant;
extern int adm_o_libm_worst; /* 0: libm as is; +1 / -1: N ulps above / below the exact value */
#endif

#endif
