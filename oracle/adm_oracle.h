/* admit oracle: the op catalog.
 *
 * Each op names its parameters (parsed from the JSON a capture or a fusion
 * table carries), its inputs, and a shape rule. The shape rule is what the
 * capture validator applies to a file before anything is computed from it.
 */
#ifndef ADM_ORACLE_H
#define ADM_ORACLE_H

#include "adm_core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ADM_OP_MAX_INPUTS 6

typedef enum adm_qscheme {
    ADM_Q_NONE = 0,
    ADM_Q_FP8_TENSOR,   /* fp8 e4m3, one fp32 scale amax/448 per tensor */
    ADM_Q_FP8_ROW,      /* fp8 e4m3, one fp32 scale per row */
    ADM_Q_NVFP4         /* e2m1 values, e4m3 scales per 16, fp32 global amax/(6*448) */
} adm_qscheme;

/* Every parameter of every op, with its default; an op reads the ones it
 * declares and refuses any other key. */
typedef struct adm_op_params {
    int axis;            /* row_sum, mean_sq, softmax; default -1 */
    double factor;       /* scale */
    int gelu_tanh;       /* gelu, linear+gelu: approximate="tanh" (1) or "none" (0) */
    double eps;          /* rmsnorm 1e-6, layernorm/groupnorm 1e-5, linear_attention 1e-6 */
    int modulate;        /* layernorm: y*(1+scale)+shift */
    int groups;          /* groupnorm */
    int silu;            /* groupnorm, rmsnorm: SiLU after the affine (VAE decoders) */
    int channels_last;   /* groupnorm: x is [B, L, C] rather than [B, C, L] */
    int causal;          /* attention */
    double attn_scale;   /* attention: 0 means 1/sqrt(D) */
    adm_qscheme scheme;  /* quantize */
    const char *json;    /* the text parsed (borrowed from the caller), for plugins */
} adm_op_params;

typedef struct adm_op adm_op;

/* The shapes handed to a shape rule, aligned with the op's input list. */
typedef struct adm_op_shapes {
    int present[ADM_OP_MAX_INPUTS];
    int ndim[ADM_OP_MAX_INPUTS];
    int64_t shape[ADM_OP_MAX_INPUTS][ADM_MAX_DIMS];
} adm_op_shapes;

const adm_op *adm_op_find(const char *name);
int adm_op_count(void);
const adm_op *adm_op_at(int i);
const char *adm_op_name(const adm_op *op);
int adm_op_input_count(const adm_op *op);
const char *adm_op_input_name(const adm_op *op, int i);
int adm_op_input_optional(const adm_op *op, int i);
/* Index of the input called name, or -1. */
int adm_op_input_index(const adm_op *op, const char *name);

/* Parses a JSON object ("" or NULL means {}) into p, applying defaults.
 * An unknown key, a wrong type or an out-of-range value is refused with a
 * message that names the key. */
adm_status adm_op_params_parse(const adm_op *op, const char *json, adm_op_params *p);
/* The output shape the op produces from these inputs, or ADM_ERR_SHAPE
 * naming the input and what was expected. Also checks that required
 * inputs are present and that parameters fit the shapes (an axis in
 * range, a group count that divides the channels). */
adm_status adm_op_output_shape(const adm_op *op, const adm_op_params *p,
                               const adm_op_shapes *in, int *ndim, int64_t *shape);

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
    int threads;        /* CPU threads for the fp64 passes (0: all cores) */
    int use_gpu;        /* the GEMM-family and elementwise ops on the GPU, where built and available */
    /* The most refinement work one evaluation may do, in terms (an element
     * recomputed with MPFR costs the number of input terms it reads: K for
     * a GEMM, the row for a norm; a GEMM element re-bounded in fp64 costs
     * K / 32). 0: no limit. Default ADM_MPFR_BUDGET_DEFAULT, or
     * ADM_MPFR_BUDGET in the environment. Counted, not timed, so the same
     * capture gets the same outcome on every machine and thread count. */
    int64_t mpfr_budget;
} adm_oracle_config;

/* 2^24 terms: about 2.5 s of MPFR at 256 bits on one core; the bundled
 * captures need none. */
#define ADM_MPFR_BUDGET_DEFAULT ((int64_t)1 << 24)

void adm_oracle_config_default(adm_oracle_config *cfg);

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

adm_status adm_oracle_create(const adm_oracle_config *cfg, adm_oracle **out);
void adm_oracle_free(adm_oracle *o);

/* inputs[] is aligned with the op's input list; NULL for an absent
 * optional input. Inputs may be strided views of any admit dtype; operands
 * of products must have at most 24 significant bits (fp32 or narrower), so
 * that every product is exact in fp64. */
adm_status adm_oracle_eval(adm_oracle *o, const adm_op *op, const adm_op_params *p,
                           const adm_tensor *const *inputs, adm_oracle_result *out);
void adm_oracle_result_free(adm_oracle_result *r);
/* Refines an earlier result for a new scale (the harness learns the
 * reference path's RMS error only from the first evaluation). */
adm_status adm_oracle_refine(adm_oracle *o, const adm_op *op, const adm_op_params *p,
                             const adm_tensor *const *inputs, adm_oracle_result *r, double resolve_scale);

/* The MPFR evaluator: element `index` (row-major in the output) of the op
 * at `bits` of precision, rounded to the nearest double in *value, with
 * *err bounding |*value - exact| (the final rounding included). Slow: for
 * refinement, and for proving the fp64 bounds. */
adm_status adm_oracle_eval_mpfr(const adm_op *op, const adm_op_params *p,
                                const adm_tensor *const *inputs, int64_t index, int bits,
                                double *value, double *err);

#ifdef __cplusplus
}
#endif
#endif
