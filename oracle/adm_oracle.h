/* admit oracle: the exact evaluation of the op catalog (adm_ops.h) in fp64
 * with a certified bound per element, MPFR where fp64 is not sharp enough.
 */
#ifndef ADM_ORACLE_H
#define ADM_ORACLE_H

#include "adm_export.h"

#include "adm_core.h"
#include "adm_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Evaluation                                                           */
/* ------------------------------------------------------------------ */

/* The oracle evaluates an op's exact math on the (already rounded) inputs
 * in fp64 and returns, for every element, a certified bound
 *     |value - exact| <= bound,
 * each step of the bound rounded upward so it stays a bound. Elements whose
 * bound is not sharp enough for the scale the caller must resolve are
 * recomputed with MPFR. The bounds and their derivations are written at
 * each op in the oracle sources; tests check them against MPFR at >= 200 bits. */

typedef struct adm_oracle adm_oracle;

typedef struct adm_oracle_config {
    /* The error scale the oracle must resolve: the harness passes the
     * reference path's RMS error. 0: no refinement. */
    double resolve_scale;
    /* Elements whose bound exceeds sharpness * resolve_scale are
     * recomputed with MPFR (default 1e-3). */
    double sharpness;
    int mpfr_bits;      /* precision of the MPFR evaluator (default 256, at least 64) */
    int threads;        /* CPU threads for the fp64 passes (0: OpenMP's default, omp_get_max_threads) */
    int use_gpu;        /* every op's fp64 pass on the GPU, where built and available */
    /* The most refinement work one evaluation may do, in terms (an element
     * recomputed with MPFR costs the number of input terms it reads: K for
     * a GEMM, the row for a norm; a GEMM element re-bounded in fp64 costs
     * K / 32). 0: no limit. Default ADM_MPFR_BUDGET_DEFAULT, or
     * ADM_MPFR_BUDGET in the environment (adm_oracle_config_default; an
     * invalid one leaves -1, which adm_oracle_create refuses naming the
     * variable). Counted, not timed, so the same
     * capture gets the same outcome on every machine and thread count. */
    int64_t mpfr_budget;
    /* With use_gpu, for the GEMM family and elementwise ops: the value,
     * bound and condition scale stay on the device and the result's host
     * tensors are allocated but not filled until adm_oracle_result_fetch
     * (adm_oracle_result_on_device), so that the harness's statistics on
     * the GPU read them there without the round trip (about 70 ms for
     * FLUX.1's MLP output on an H200). Refinement scans the bounds on the
     * device and fetches only where an element must be recomputed.
     * Default 0: the host tensors are filled as without a GPU. */
    int keep_on_device;
} adm_oracle_config;

/* 2^24 terms: about 2.5 s of MPFR at 256 bits on one core; the bundled
 * captures need none. */
#define ADM_MPFR_BUDGET_DEFAULT ((int64_t)1 << 24)

ADM_API void adm_oracle_config_default(adm_oracle_config *cfg);

typedef struct adm_oracle_result {
    adm_tensor value;        /* fp64, the op's output shape */
    adm_tensor bound;        /* fp64, same shape: |value - exact| <= bound */
    /* fp64, same shape: the element's condition scale, the magnitude of
     * the terms it is computed from (sum_k |x_ik w_kj| + |b_j| for a GEMM,
     * sum |x| for a sum, sum_j p_j |v_j| for attention; the op's files say
     * which), propagated through the op's functions to first order; at
     * least |value| up to a few bits. It is the scale every path's
     * rounding errors follow (the certified bound is proportional to it);
     * the harness measures ulps there (harness/GATES.md, gate 1). Only a
     * few bits are meaningful: it picks a binade. has_cond = 0 (cond not
     * allocated) for an op without a sound scale (quantize). */
    adm_tensor cond;
    int has_cond;
    int64_t mpfr_refined;    /* elements recomputed with MPFR */
    double max_bound;        /* over finite values */
    int certified;           /* 0 when the value is a user's evaluation */
    /* What the bounds rest on besides IEEE 754 arithmetic, exact GMP sums
     * and MPFR's correctly rounded functions: NULL when nothing (the
     * bounds are proven), else a phrase naming the math library functions
     * whose accuracy the fp64 bounds assume, such as "assuming libm's exp
     * within 1 ulp" (the op calls exp or erfc and some element kept its
     * fp64 bound). Such an assumption is checked against MPFR on hard
     * cases and dense samples (tests/check_oracle.c, case Libm), not
     * proven. A static string. */
    const char *assumption;
    int on_gpu;              /* the fp64 pass ran on the GPU */
} adm_oracle_result;

ADM_API adm_status adm_oracle_create(const adm_oracle_config *cfg, adm_oracle **out);
ADM_API void adm_oracle_free(adm_oracle *o);

/* inputs[] is aligned with the op's input list; NULL for an absent
 * optional input. Inputs may be strided views of any admit dtype; operands
 * of products must have at most 24 significant bits (fp32 or narrower), so
 * that every product is exact in fp64. */
ADM_API adm_status adm_oracle_eval(adm_oracle *o, const adm_op *op, const adm_op_params *p,
                                   const adm_tensor *const *inputs, adm_oracle_result *out);
ADM_API void adm_oracle_result_free(adm_oracle_result *r);
/* 1 where r's value, bound and cond are on the device only (keep_on_device)
 * and their host tensors not filled yet; a later GPU evaluation fills them
 * before it takes the device, so that r stays valid. fetch fills them
 * (ADM_OK at once where they are filled already). */
ADM_API int adm_oracle_result_on_device(const adm_oracle_result *r);
ADM_API adm_status adm_oracle_result_fetch(adm_oracle_result *r);
/* Refines an earlier result for a new scale (the harness learns the
 * reference path's RMS error only from the first evaluation). */
ADM_API adm_status adm_oracle_refine(adm_oracle *o, const adm_op *op, const adm_op_params *p,
                                     const adm_tensor *const *inputs, adm_oracle_result *r, double resolve_scale);

/* The MPFR evaluator: element `index` (row-major in the output) of the op
 * at `bits` of precision, rounded to the nearest double in *value, with
 * *err bounding |*value - exact| (the final rounding included). Slow: for
 * refinement, and for proving the fp64 bounds. */
ADM_API adm_status adm_oracle_eval_mpfr(const adm_op *op, const adm_op_params *p,
                                        const adm_tensor *const *inputs, int64_t index, int bits,
                                        double *value, double *err);

#ifdef __cplusplus
}
#endif
#endif
