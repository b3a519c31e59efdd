/* admit harness: the seven gates and the tier verdict (harness/GATES.md).
 *
 * A judgement compares a candidate's output c with the reference path's r,
 * both against the oracle o (with its certified bound), over the elements
 * where all three are finite; special values, views, declarations and
 * bit-identity are judged from the outcomes the caller gathered (stored in
 * a capture for `replay`, run for `run`). */
#ifndef ADM_HARNESS_H
#define ADM_HARNESS_H

#include "adm_export.h"

#include "adm_core.h"
#include "adm_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum adm_tier { ADM_TIER_EXACT = 0, ADM_TIER_LOSSLESS = 1, ADM_TIER_HIGH = 2 } adm_tier;
ADM_API const char *adm_tier_name(adm_tier t);
ADM_API adm_status adm_tier_from_name(const char *name, adm_tier *out);

enum {
    ADM_GATE_MAGNITUDE = 1,
    ADM_GATE_BIAS = 2,
    ADM_GATE_SPECIAL = 3,
    ADM_GATE_STRIDES = 4,
    ADM_GATE_FLIP = 5,
    ADM_GATE_STATIC = 6,
    ADM_GATE_EXACT = 7,
    ADM_GATE_EVIDENCE = 8,     /* enough finite, non-trivial elements, and the power a claim requires */
    ADM_GATE_COUNT = 9
};
ADM_API const char *adm_gate_name(int gate);


/* What reads the output (gate 5). */
typedef enum adm_reader_kind {
    ADM_READER_NONE = 0,
    ADM_READER_QUANTIZE,   /* round(x / s) into `format`, s = amax(oracle) / max(format) */
    ADM_READER_THRESHOLD,  /* x > threshold */
    ADM_READER_TOPK        /* membership in the top k of each row (last axis) */
} adm_reader_kind;

typedef struct adm_reader {
    adm_reader_kind kind;
    adm_dtype format;      /* QUANTIZE */
    double threshold;      /* THRESHOLD */
    int k;                 /* TOPK */
    int declared;          /* gated when declared, reported otherwise */
} adm_reader;
/* "fp8_e4m3", "threshold:0.5", "topk:8" */
ADM_API adm_status adm_reader_parse(const char *text, adm_reader *r);

/* A special-value case: each side's status and output. A status of
 * ADM_ERR_NOT_FOUND for the candidate means it was not run on the case. */
typedef struct adm_special_outcome {
    const char *name;
    adm_status ref_status;
    const adm_tensor *ref;
    adm_status cand_status;
    const adm_tensor *cand;
} adm_special_outcome;

/* A non-contiguous view (gate 4): the candidate's status and whether its
 * output was bit-identical to its own contiguous result. */
typedef struct adm_view_outcome {
    const char *name;
    adm_status ref_status;
    adm_status cand_status;
    int cand_identical;
} adm_view_outcome;

typedef struct adm_judge_input {
    const adm_tensor *oracle, *bound;   /* fp64, the output's shape */
    /* fp64, the output's shape: the oracle's condition scale
     * (adm_oracle_result.cond), where gate 1 measures ulps. NULL where the
     * op has none (quantize, a user oracle): the ulp form is then measured
     * at the token/channel scale, reported and not gated. */
    const adm_tensor *cond;
    int oracle_certified;
    const char *oracle_assumption;      /* adm_oracle_result.assumption: NULL when the bounds are proven */
    const adm_tensor *ref, *cand;
    const adm_decl *ref_decl, *cand_decl; /* NULL: undeclared */
    const adm_reader *reader;             /* NULL: none */
    const adm_special_outcome *special;
    int n_special;
    const adm_view_outcome *views;
    int n_views;                          /* -1: not runnable (stored outputs) */
    /* The harness's own (replay, run); NULL from other callers. stats_dev:
     * the oracle, its condition scale and the reference resident on a GPU,
     * where gates 1 and 2's sums are then computed (the same bits as the
     * CPU's); seconds: [0] += the statistics' wall time, [1] += the other
     * gates'; stats_batch: the CPU's pass over every candidate of a
     * capture at once (the same bits), used when it holds the candidate
     * and the GPU does not. */
    struct adm_h_stats_dev *stats_dev;
    double *seconds;
    struct adm_h_stats_batch *stats_batch;
} adm_judge_input;

typedef struct adm_gate_config {
    double magnitude_limit;   /* 1.5 */
    /* 0.1: a bias component is material above this fraction of the
     * reference error scale D (or above one rounding of a scale in the
     * working precision, where that is larger: GATES.md, gate 2) */
    double bias_material;
    /* 1e-3: the false-alarm rate of gate 2 per verdict, shared equally by
     * the bias statistics that apply (two-sided Student-t quantiles at
     * their degrees of freedom; GATES.md) */
    double bias_alpha;
    /* 3: the magnitude ratios' sampling allowance: the limit is
     * magnitude_limit exp(magnitude_z / sqrt(n)) over n elements, and the
     * max's yardstick never below rms sqrt(2 ln(n / 1e-3)) (GATES.md) */
    double magnitude_z;
    /* 1e-3: the false-alarm rate of the RMS ratios per verdict, shared by
     * the RMS and (where gated) the ulp ratio: the limit is
     * magnitude_limit exp(max(magnitude_z / sqrt(n), t se)), se the paired
     * standard error of the ratio's log, t the one-sided Student-t
     * quantile at n - 1 degrees of freedom (GATES.md, gate 1) */
    double magnitude_alpha;
    double flip_limit;        /* 1.5 */
    double sharpness;         /* 1e-3: oracle bound / reference RMS error */
    /* 32: a verdict needs at least this many finite, non-trivial elements
     * (an element is trivial when every term it is computed from is zero:
     * an all-zero or all-NaN capture proves nothing) */
    int64_t min_elements;
} adm_gate_config;
ADM_API void adm_gate_config_default(adm_gate_config *c);

typedef struct adm_gate_outcome {
    int applicable;
    int passed;
    char reason[2048];         /* whole sentences when failed (never cut mid-word), a note when not applicable */
} adm_gate_outcome;

/* Error histograms in ulps of the output format (at the scale gate 1's ulp form uses):
 * bin 0 below -ADM_HIST_RANGE, the last above +ADM_HIST_RANGE, the rest
 * of width 2 ADM_HIST_RANGE / (ADM_HIST_BINS - 2) between. */
#define ADM_HIST_BINS 34
#define ADM_HIST_RANGE 4.0
/* The same errors by octave of |error| in ulps, for errors far beyond a
 * few ulps (a high tier's) that the linear histogram only counts at its
 * ends: bin ADM_HIST_LOG_ZERO holds |e| < 2^ADM_HIST_LOG_MIN ulp (zero
 * included); bin ADM_HIST_LOG_ZERO + k (k = 1 .. ADM_HIST_LOG_OCTAVES)
 * holds positive errors with 2^(ADM_HIST_LOG_MIN + k - 1) <= e <
 * 2^(ADM_HIST_LOG_MIN + k), and ADM_HIST_LOG_ZERO - k the negative ones
 * of that magnitude; the two end bins hold what is larger still
 * (|e| >= 2^24 ulps). */
#define ADM_HIST_LOG_MIN (-6)
#define ADM_HIST_LOG_OCTAVES 30
#define ADM_HIST_LOG_ZERO (ADM_HIST_LOG_OCTAVES + 1)
#define ADM_HIST_LOG_BINS (2 * ADM_HIST_LOG_OCTAVES + 3)

/* Gate 2's statistics: three kinds, each over the whole output (global)
 * and per group (channels: the last axis; rows: the rest). */
enum { ADM_BIAS_MEAN = 0, ADM_BIAS_SIGN = 1, ADM_BIAS_GAIN = 2, ADM_BIAS_KINDS = 3 };
enum { ADM_BIAS_GLOBAL = 0, ADM_BIAS_CHANNEL = 1, ADM_BIAS_ROW = 2, ADM_BIAS_SCOPES = 3 };
ADM_API const char *adm_bias_kind_name(int kind);   /* "mean", "sign", "gain" */
ADM_API const char *adm_bias_scope_name(int scope); /* "global", "channel", "row" */

/* Count, sum and sum of squares of a sample. */
typedef struct adm_moments {
    double n, s1, s2;
} adm_moments;

/* The evidence behind gates 1, 2 and 5: sums over the judged elements in
 * units of each capture's reference error scale D (ulps in units of Du,
 * the ulp form's), so that the captures of one fusion pool by adding
 * (adm_evidence_pool: n summed, every element weighted alike in D units).
 * Fixed size: pooling thousands of captures costs no memory. */
typedef struct adm_evidence {
    double captures;           /* how many captures were pooled */
    double n, nontrivial;      /* judged elements (all finite); of which non-trivial */
    /* gate 1: sums of squares and maxima */
    double ec2, er2, q2, uc2, ur2, uq2;
    /* and the fourth-order sums of the RMS ratios' paired standard error:
     * sum e_c^4, e_r^4, q^4, e_c^2 e_r^2, e_c^2 q^2 (q = round(o) - o), in
     * units of D^4; the same in ulps, in units of Du^4 */
    double ec4, er4, q4, ecr, ecq, uc4, ur4, uq4, ucr, ucq;
    double maxc, maxr, maxq, umaxc, umaxr, umaxq;
    int ulp_gated;             /* 1 when every pooled capture had a condition scale */
    /* gate 2, global: moments of z = w d / D (d = c - r, the paired
     * difference) and of w e_r / D, w = 1, sign(o), o / rms(o) by kind */
    adm_moments d[ADM_BIAS_KINDS], r[ADM_BIAS_KINDS];
    /* the mean's and the sign's significance, in ulps at the condition
     * scale: moments of u d and of u e_r (mean), sign(o) u d and sign(o) u
     * e_r (sign), u the inverse ulp; and the sum of ulp / D, the mean ulp
     * in units of D that turns a lean in ulps into one in D */
    adm_moments dw[2], rw[2];
    double ulp_over_D;
    /* gate 2, per group (scope 1 channels, 2 rows): moments over the groups
     * of u = L^2 - v, a group's lean L (the mean of z over the group) less
     * its sampling variance v, for d, for e_r and for e_c; and the sum of
     * the reference's v (the noise that bounds the power) */
    adm_moments gd[ADM_BIAS_SCOPES][ADM_BIAS_KINDS], gr[ADM_BIAS_SCOPES][ADM_BIAS_KINDS],
        gc[ADM_BIAS_SCOPES][ADM_BIAS_KINDS];
    double gvr[ADM_BIAS_SCOPES][ADM_BIAS_KINDS];
    /* the variance ratio's sums for d (GATES.md, gate 2): sum v, sum v^2
     * and sum v^2 / (n_g - 1) over the groups, n_g a group's elements */
    double gvd[ADM_BIAS_SCOPES][ADM_BIAS_KINDS], gvd2[ADM_BIAS_SCOPES][ADM_BIAS_KINDS],
        gvdm[ADM_BIAS_SCOPES][ADM_BIAS_KINDS];
    /* the group tests in ulps (GATES.md, gate 2): the same sums for the
     * groups' leans of d in ulps at the condition scale (mean: u d; sign:
     * sign(o) u d; gain: the slope times the group's rms(o u)), each
     * capture's in D by its mean ulp in D (mean, sign) or its rms(o) /
     * rms(o u) / D (gain), which is what a lean of a constant number of
     * ulps is in D; and the reference's v in ulps (the power's noise) */
    adm_moments gdu[ADM_BIAS_SCOPES][ADM_BIAS_KINDS];
    double gvdu[ADM_BIAS_SCOPES][ADM_BIAS_KINDS], gvdu2[ADM_BIAS_SCOPES][ADM_BIAS_KINDS],
        gvdum[ADM_BIAS_SCOPES][ADM_BIAS_KINDS], gvru[ADM_BIAS_SCOPES][ADM_BIAS_KINDS];
    /* the relative part of each materiality floor (one rounding of a
     * scale in the working precision, in D units), summed with weight n */
    double floor_rel[ADM_BIAS_SCOPES][ADM_BIAS_KINDS];
    double o_rms_over_D;       /* sum of n rms(o) / D: turns a gain in D units into a relative one */
    /* gate 5 */
    double flips_r, flips_c, ties, decisions;
} adm_evidence;

/* One bias statistic's test (GATES.md, gate 2); values in units of D. */
typedef struct adm_bias_test {
    int applicable, failed;
    double ref, cand;          /* global: the signed statistic; group: the RMS of the groups' leans beyond noise */
    double diff, se;           /* the paired difference (group: U of d) and its standard error */
    double credited_ref;       /* the reference's own value, counted in proportion to its evidence */
    double excess;             /* the candidate's lean beyond the credited reference's */
    double floor;              /* the materiality floor */
    double t, dof;             /* the Student-t quantile of the statistic's false-alarm share, its dof */
    double z;                  /* the test statistic compared with t (global mean and sign: the larger of two) */
    double se_ulp;             /* global mean and sign: the second test's standard error (in ulps, times the
                                * mean ulp in D); 0 where it does not apply */
    double detect;             /* the smallest lean this evidence would reject (the power) */
    /* group statistics' second test: the variance ratio sum L^2 / sum v of
     * the paired difference, its F quantile at its Satterthwaite degrees
     * of freedom (GATES.md, gate 2); 0 for the global statistics */
    double f, f_quantile, f_dof1, f_dof2;
    /* group statistics' tests in ulps (GATES.md, gate 2): the same two
     * tests on the groups' leans in ulps at the condition scale (in D by
     * the capture's mean ulp): U of d and its standard error, the t
     * quantile and its dof, the variance ratio, its quantile and dof;
     * ulps_applicable 0 where no group's sums in ulps are finite */
    int ulps_applicable;
    double u_diff, u_se, u_t, u_dof, u_f, u_f_quantile, u_f_dof1, u_f_dof2;
} adm_bias_test;

/* What a verdict could have missed: the smallest lean of each kind (in
 * units of the reference error scale D) and the smallest RMS ratio that
 * its evidence would have rejected. A component of 0 means not
 * applicable (a 1-D output has no channel or row statistic). */
typedef struct adm_power {
    double lean, sign, gain, channel, row;
    double gain_relative;      /* the gain's as a relative scale error */
    double rms_ratio;
} adm_power;

typedef struct adm_verdict {
    adm_tier tier;
    int64_t hist_r[ADM_HIST_BINS], hist_c[ADM_HIST_BINS];
    int64_t hist_log_r[ADM_HIST_LOG_BINS], hist_log_c[ADM_HIST_LOG_BINS];
    adm_gate_outcome gate[ADM_GATE_COUNT];
    int64_t n;                 /* elements compared (all three finite) */
    /* gate 1 */
    double rms_r, rms_c, max_r, max_c, rms_round, max_round, rms_ratio, max_ratio;
    /* the RMS ratio's denominator D: max(rms_r, rms_round), the unit of the
     * bias gate's components too; the max ratio's: max(max_r, max_round,
     * D sqrt(2 ln n)) */
    double rms_expected, max_expected;
    /* the max ratio the gate judged against magnitude_limit_n: max_ratio,
     * or where ulp_gated the smaller of max_ratio and ulp_max_ratio (the
     * max fails only when both yardsticks exceed the limit); reports print
     * this one */
    double max_ratio_judged;
    /* the max in ulps at the condition scale (gated where ulp_gated) and
     * its ratio; the magnitude limit in force after the sampling allowance */
    double ulp_max_r, ulp_max_c, ulp_max_ratio, magnitude_limit_n;
    double ulp_rms_r, ulp_rms_c, ulp_rms_round, ulp_ratio;
    /* the RMS and ulp ratios' limits in force (magnitude_limit_n or above,
     * from the paired standard errors of their logs, rms_se and ulp_se) */
    double rms_limit_n, ulp_limit_n, rms_se, ulp_se;
    int ulp_gated;             /* 1: ulps at the condition scale, gated; 0: at the token/channel scale, reported only */
    /* gate 2: every statistic's test, in units of D (scope x kind) */
    adm_bias_test bias[ADM_BIAS_SCOPES][ADM_BIAS_KINDS];
    double out_rms;            /* rms(o) over the judged elements (one capture; pooled: in units of D) */
    /* the evidence these numbers come from; what it could have missed */
    adm_evidence ev;
    adm_power power;
    int evidence_ok;           /* at least min_elements finite, non-trivial elements */
    /* gate 5 */
    int64_t flips_r, flips_c, ties, decisions;
    /* the oracle */
    double max_bound;
    int oracle_certified;
    const char *oracle_assumption; /* static; NULL: the certified bounds are proven */
} adm_verdict;

/* Judges; the oracle must be sharp (max bound <= sharpness x the
 * reference RMS error, floored at the correctly rounded output's), or
 * ADM_ERR_RANGE: nothing is judged with a blunt oracle. Running out of
 * memory is ADM_ERR_NOMEM, not a verdict. On any error *v holds no
 * verdict (its tier reads high). */
ADM_API adm_status adm_judge(const adm_judge_input *in, const adm_gate_config *cfg, adm_verdict *v);
/* Pooling the verdicts of one fusion's captures (many layers and steps):
 * adm_verdict_pool_add adds one capture's verdict to acc (memset to 0
 * before the first): its evidence is summed, the gates decided capture by
 * capture (special values, views, static declarations, exactness) must
 * hold on every capture (the first failure's reason is kept, prefixed with
 * label), and flips are summed. adm_verdict_pool_finish then decides gates
 * 1, 2 and 5, the evidence gate, the power and the tier on the pooled
 * evidence, exactly as adm_judge does for one capture (a pool of one
 * capture is that capture's verdict). Pooling does not depend on the
 * order of the captures except in which failure's reason is kept. */
ADM_API void adm_verdict_pool_add(adm_verdict *acc, const adm_verdict *one, const char *label);
ADM_API void adm_verdict_pool_finish(adm_verdict *acc, const adm_gate_config *cfg);

/* The power a claim requires (a fusion table's "detect"): each component
 * > 0 is the largest lean of that kind (units of D; rms_ratio: a ratio)
 * the evidence must be able to reject. Where the verdict's power does not
 * reach it, its evidence gate fails ("insufficient evidence", naming what
 * is missing and how far the evidence falls short) and the tier is high:
 * the claim is not established. */
ADM_API void adm_verdict_require_power(adm_verdict *v, const adm_power *required);

/* The error scale the oracle must resolve for this reference: its RMS
 * error (never below the correctly rounded output's, since the reference
 * is stored in its format: harness/stat_elem.h, adm_se_scale_add). */
ADM_API double adm_judge_resolve_scale(const adm_tensor *oracle, const adm_tensor *ref);

/* ------------------------------------------------------------------ */
/* Replay: judging the outputs stored in a capture                      */
/* ------------------------------------------------------------------ */

struct adm_capture;
struct adm_oracle_config;

typedef struct adm_replay_result {
    int n;                  /* candidates judged */
    char **names;
    adm_verdict *verdicts;
    int64_t mpfr_refined;   /* oracle elements recomputed with MPFR */
    int certified;          /* 0: the capture's own (user) oracle */
    const char *assumption; /* adm_oracle_result.assumption */
    int stats_device;       /* candidates whose gate statistics ran on the GPU */
    double seconds[3];      /* wall time: the oracle, the statistics, the other gates */
} adm_replay_result;

/* Evaluates the oracle of the capture's op (or takes the user's /oracle for
 * an op not in the catalog), refines it to the reference's error scale,
 * and judges every stored candidate against the stored reference,
 * including the special-value cases. */
ADM_API adm_status adm_harness_replay(const struct adm_capture *c, const struct adm_oracle_config *ocfg,
                                      const adm_gate_config *gcfg, adm_replay_result *out);
ADM_API void adm_replay_result_free(adm_replay_result *r);

/* ------------------------------------------------------------------ */
/* Run: executing implementations on a capture's inputs and probes       */
/* ------------------------------------------------------------------ */


typedef struct adm_run_result {
    adm_verdict verdict;
    int64_t mpfr_refined;
    int probes, views;      /* special-value probes and views run */
    int stats_device;       /* 1: gates 1 and 2's statistics ran on the GPU */
    /* wall time (s) of each phase: ADM_RUN_PHASES, named by adm_run_phase_name */
    double seconds[6];
} adm_run_result;
/* The phases of a run whose wall time adm_run_result and
 * adm_measure_result carry: 0 "read" (the capture; adm_harness_measure's),
 * 1 "implementations" (reference and candidate on the inputs), 2 "oracle"
 * (evaluation and refinement), 3 "probes_views" (the special-value probes
 * and the views), 4 "statistics" (gates 1 and 2), 5 "other_gates". */
#define ADM_RUN_PHASES 6
ADM_API const char *adm_run_phase_name(int phase);

/* Runs the reference and the candidate on the inputs, on the special-value
 * probes (a NaN element, a NaN row, +Inf, -Inf, +-0, subnormals, values
 * near overflow, an empty M = 0 input) and on non-contiguous views of the
 * first input (transposed, strided, offset, broadcast), evaluates the
 * oracle and judges. reader may be NULL. */
/* Special-value probe k (0 NaN element, 1 NaN row, 2 +Inf, 3 -Inf, 4 +-0,
 * 5 subnormals, 6 near overflow, 7 empty M = 0) of x, owned. */
ADM_API adm_status adm_harness_probe(const adm_tensor *x, int k, adm_tensor *out);

/* The inputs the probes and views run on, and capture synth's special
 * cases are made from: the inputs cut to their first ADM_PROBE_ROWS rows
 * (tokens) along one axis of the first input, so that the probes cost a
 * few rows of the op, not the whole capture. The axis: the queries of
 * attention and linear attention (rank - 2); for the other ops the first
 * axis before the last with more than ADM_PROBE_ROWS entries that is
 * neither the op's reduction axis (row_sum, mean_sq, softmax) nor
 * groupnorm's channel axis. The other inputs cut with the first are those
 * aligned with it row by row (gated_residual's g and y, swiglu's up,
 * layernorm's shift and scale: the same rank and the same extent on that
 * axis); weights, k and v stay whole. out[i] points at cut[i] (an owned
 * contiguous copy) where input i was cut, else at inputs[i]; when no axis
 * qualifies nothing is cut (*axis -1). Free cut[] with adm_tensor_free. */
#define ADM_PROBE_ROWS 8
ADM_API adm_status adm_harness_probe_inputs(const adm_op *op, const adm_op_params *p,
                                            const adm_tensor *const *inputs, adm_tensor *cut,
                                            const adm_tensor **out, int *axis);
/* run also cuts the probes' and views' output channels (not capture
 * synth's special cases, which leave the weights to /inputs): the GEMM
 * family's weight along its output features (linear and linear+gelu: w's
 * rows and the bias; matmul: b's columns) to its first ADM_PROBE_COLS, so
 * that a probe costs ADM_PROBE_ROWS x ADM_PROBE_COLS outputs, not
 * ADM_PROBE_ROWS x the full weight (12288 x 3072 at FLUX.1's MLP, read
 * whole by each of the ~36 calls; on the H200 the probes took 11.8 of
 * run's 16 s, bench/results/2026-12-02-h200-session2.md, most of it the
 * cuBLASLt kernels' per-element copy of w, since removed: session3.md).
 * Each output channel of a GEMM row reads the whole row of x, so a NaN,
 * Inf or near-overflow value in x reaches every channel alike: 64 show
 * what 12288 show, over several of a kernel's 16- or 32-wide column tiles
 * or vectors. Every other op keeps its channels: they are a norm's or
 * softmax's reduction, a quantizer's blocks or elementwise (cheap at
 * ADM_PROBE_ROWS rows); attention's k and v stay whole along the keys
 * (every output reads every key) and along E (a head's width: little
 * to save). */
#define ADM_PROBE_COLS 64

/* ADM_OK when the inputs (aligned with the op's input list, NULL for an
 * absent one) fit the op under these parameters, else ADM_ERR_SHAPE saying
 * which input is missing, extra or of the wrong shape. adm_harness_run
 * checks it before any implementation reads an input. */
ADM_API adm_status adm_harness_check_inputs(const adm_op *op, const adm_op_params *p,
                                            const adm_tensor *const *inputs);

ADM_API adm_status adm_harness_run(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs,
                                   const adm_impl *ref, const adm_impl *cand, const adm_reader *reader,
                                   const adm_gate_config *gcfg, adm_run_result *out);
/* The same with the oracle's configuration (NULL: the default, the CPU):
 * with ocfg->use_gpu the oracle runs on the GPU and gates 1 and 2's
 * statistics too where the outputs allow (as replay --device cuda). */
struct adm_oracle_config;
ADM_API adm_status adm_harness_run_on(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs,
                                      const adm_impl *ref, const adm_impl *cand, const adm_reader *reader,
                                      const adm_gate_config *gcfg, const struct adm_oracle_config *ocfg,
                                      adm_run_result *out);

/* ------------------------------------------------------------------ */
/* Budgets: a command's memory and work, from a capture's declared shapes */
/* ------------------------------------------------------------------ */

/* What a command does with a capture (harness/budget.c models each). */
typedef enum adm_plan_kind {
    ADM_PLAN_ORACLE = 0,   /* the oracle on the inputs (admit-kernel oracle) */
    ADM_PLAN_REPLAY = 1,   /* the oracle, and the gates on every stored candidate */
    ADM_PLAN_RUN = 2       /* implementations on the inputs, probes and views; the oracle; the gates */
} adm_plan_kind;

/* The default work budget, in multiply-adds: the FLUX.1 MLP capture's run
 * (x 4096 x 3072, w 12288 x 3072: 28 GEMMs of 1.5e11) is 4.3e12. */
#define ADM_PLAN_DEFAULT_WORK ((int64_t)10000000000000)

typedef struct adm_plan {
    adm_plan_kind kind;
    int impls;             /* RUN: implementations run on the capture (2: a reference and a candidate) */
    int impl_out_bytes;    /* RUN: the widest element they output (4 for the registry's; 8: a plugin may give fp64) */
    const char *params;    /* RUN: parameters that replace the capture's (a fusion table's "params"), or NULL */
    int write;             /* ORACLE: the capture is written again with the oracle (-o) */
    int64_t max_memory;    /* bytes the command may hold for the capture (its tensors, 64 MiB for the process); 0: no limit */
    int64_t max_work;      /* multiply-adds it may do; 0: no limit */
    int64_t memory, work;  /* adm_plan_estimate's */
} adm_plan;

/* kind with the defaults: memory half the machine's physical memory, work
 * ADM_PLAN_DEFAULT_WORK; ADM_MAX_MEMORY and ADM_MAX_WORK in the
 * environment replace them (adm_plan_parse_limit's syntax; a malformed
 * value is ADM_ERR_INVALID naming the variable). */
ADM_API adm_status adm_plan_init(adm_plan *p, adm_plan_kind kind);
/* A limit: a decimal number with an optional K, M, G or T suffix (powers of
 * 1024 for bytes, of 1000 otherwise), 0 for no limit; anything else is
 * ADM_ERR_INVALID naming what (an option or a variable). */
ADM_API adm_status adm_plan_parse_limit(const char *what, const char *text, int bytes, int64_t *out);
/* The memory and work the command would take for this capture (declared
 * shapes suffice: no data is read). */
ADM_API adm_status adm_plan_estimate(adm_plan *p, const struct adm_capture *declared);
/* An adm_capture_plan_fn (plan: an adm_plan *): ADM_ERR_RANGE naming the
 * file, what the command would need and how to raise the budget, when the
 * estimate is above a budget. */
ADM_API adm_status adm_plan_check(const struct adm_capture *declared, void *plan);

/* ------------------------------------------------------------------ */
/* Measuring on captures, and a runtime's fusion table (harness/table.c) */
/* ------------------------------------------------------------------ */

/* One capture's verdict in brief: the rows a pooled verdict is made of. */
typedef struct adm_capture_summary {
    adm_tier tier;
    int64_t n;
    double rms_ratio, max_ratio_judged, ulp_ratio;
    double lean;            /* the paired difference of the signed mean, in units of that capture's D */
    double lean_detect;     /* the smallest lean that capture alone would reject */
} adm_capture_summary;

typedef struct adm_measure_result {
    /* judged on the pooled evidence of all the captures (adm_verdict_pool_add,
     * _finish): many layers and steps of one fusion add up */
    adm_verdict verdict;
    int64_t mpfr_refined;   /* oracle elements recomputed with MPFR, over the captures */
    const char *field;      /* on failure, the input at fault: "captures", "params", "reference" or
                               "candidate"; NULL: none */
    int capture;            /* and for "captures", which one */
    int in_run;             /* 1: it failed while the implementations ran, or a plugin could not be loaded
                               or queried: this measurement fails alone */
    int ncaptures;          /* each capture's own verdict in brief, owned: adm_measure_result_free */
    adm_capture_summary *per_capture;
    int stats_device;       /* captures whose gates 1 and 2's statistics ran on the GPU */
    double seconds[6];      /* each phase's wall time over the captures (adm_run_phase_name) */
} adm_measure_result;
ADM_API void adm_measure_result_free(adm_measure_result *r);
ADM_API void adm_capture_summary_of(const adm_verdict *v, adm_capture_summary *s);

/* Judges cand_spec against ref_spec (registry names, or path.so:name for a
 * plugin) with adm_harness_run on each capture: its inputs, probes and
 * views. want_op (or NULL) is the op every capture must carry;
 * params_json (or NULL) overrides each capture's parameters. source names
 * the measurement in messages. An invalid ADM_* limit in the environment
 * is refused first (adm_env_check). */
ADM_API adm_status adm_harness_measure(const char *source, const char *want_op, const char *const *captures, int ncap,
                                       const char *params_json, const char *ref_spec, const char *cand_spec,
                                       const adm_reader *reader, adm_measure_result *out);
/* The same with the oracle's configuration (adm_harness_run_on). */
ADM_API adm_status adm_harness_measure_on(const char *source, const char *want_op, const char *const *captures,
                                          int ncap, const char *params_json, const char *ref_spec,
                                          const char *cand_spec, const adm_reader *reader,
                                          const struct adm_oracle_config *ocfg, adm_measure_result *out);

/* The most captures a fusion table's entry may name (a runtime's layers
 * and steps of one fusion): their verdicts pool into one. */
#define ADM_TABLE_MAX_CAPTURES 65536

typedef struct adm_table_entry {
    char *name, *op, *candidate;
    adm_tier declared;
    /* what the table says of the entry, for the reports (NULL: not given):
     * its "description", its "static" declarations as compact JSON, and
     * its "reader" as written */
    char *description, *static_decl, *reader;
    /* measured on the pooled evidence of the entry's captures; its evidence
     * gate fails where the power the entry requires is not reached */
    adm_verdict verdict;
    int64_t mpfr_refined;
    adm_power required;     /* the entry's "detect" (0: none) */
    int ncaptures;          /* each capture's own verdict in brief (owned) */
    adm_capture_summary *per_capture;
    /* An entry whose capture cannot be read or measured (corrupt, a crash
     * inside libhdf5 or a plugin): the message (file:line:column, field)
     * and status; NULL for a measured entry. The other entries are still
     * measured. */
    char *error;
    adm_status error_status;
} adm_table_entry;

typedef struct adm_table_result {
    int n;
    adm_table_entry *entries;
} adm_table_result;

/* Called before entry k (1-based) of n is measured; may be NULL. */
typedef void (*adm_table_progress_fn)(int k, int n, const char *name, void *user);

/* Reads a fusion table (JSON, fusions/FORMAT.md; relative capture and
 * plugin paths are relative to the table's folder), checks every entry
 * against the schema (the format's version, a required field missing, an
 * op not in the catalog, a tier, reader or parameter that does not parse,
 * a reference or candidate that does not resolve, static declarations
 * that are not the candidate's own, a path longer than PATH_MAX:
 * ADM_ERR_JSON naming file:line:column and the field), then measures every
 * entry. A table that does not hold to the schema is refused whole, before
 * anything is measured (out holds no entries); an entry whose capture or
 * candidate fails while measuring gets its error and the rest go on. The
 * caller compares each entry's verdict with its declared tier (a declared
 * tier looser than measured is unsafe). */
ADM_API adm_status adm_harness_table(const char *path, adm_table_progress_fn progress, void *user, adm_table_result *out);
ADM_API void adm_table_result_free(adm_table_result *r);

/* ------------------------------------------------------------------ */
/* A fusion table in units of work, for a caller that spreads them over  */
/* processes or machines (admit-kernel under MPI)                         */
/* ------------------------------------------------------------------ */

/* One capture of one entry: what measuring it needs. The strings belong to
 * the plan it came from (or to the caller that fills it in). */
typedef struct adm_measure_unit {
    const char *source;        /* the entry's name */
    const char *op;            /* the op the capture must carry; NULL: any */
    const char *capture;       /* the capture's path */
    const char *params;        /* parameters that replace the capture's (compact JSON); NULL: the capture's */
    const char *ref_spec, *cand_spec;
    adm_reader reader;
} adm_measure_unit;

/* A unit's outcome: the capture's own verdict (before any pooling), or why
 * it could not be measured. */
typedef struct adm_unit_result {
    adm_status status;         /* ADM_OK: verdict and mpfr_refined hold; else error says why */
    adm_verdict verdict;
    int64_t mpfr_refined;
    const char *field;         /* on failure, as adm_measure_result's (a static string), or NULL */
    int in_run;
    char *error;               /* on failure, the message (owned: adm_unit_result_free) */
} adm_unit_result;

/* Measures one unit as adm_harness_table measures that capture (the
 * limits in the environment, the budgets, the sandboxes); returns
 * out->status. */
ADM_API adm_status adm_harness_measure_unit(const adm_measure_unit *u, adm_unit_result *out);
ADM_API void adm_unit_result_free(adm_unit_result *r);

/* A fusion table read and checked against its schema (as
 * adm_harness_table does, refused whole on the same errors), not yet
 * measured. Its entries' units are measured anywhere, in any order; each
 * entry is then assembled in capture order: adm_table_plan_begin, then
 * adm_table_plan_add for k = 0, 1, ... (after the first failed capture the
 * entry is that capture's error row and later results are ignored; they
 * need not exist), then adm_table_plan_end. The entries so made are the
 * ones adm_harness_table makes, bit for bit, whatever measured the units
 * and in whatever order they were measured. */
typedef struct adm_table_plan adm_table_plan;
ADM_API adm_status adm_table_plan_read(const char *path, adm_table_plan **out);
ADM_API void adm_table_plan_free(adm_table_plan *p);
ADM_API int adm_table_plan_count(const adm_table_plan *p);
/* Entry `entry`'s units: its captures; 0 for an entry whose plugin could
 * not be loaded (its row is the error adm_table_plan_begin gives it). */
ADM_API int adm_table_plan_units(const adm_table_plan *p, int entry);
ADM_API void adm_table_plan_unit(const adm_table_plan *p, int entry, int k, adm_measure_unit *u);
/* out: the entry's row before any capture (free it with the result it goes
 * into: adm_table_result_free). */
ADM_API adm_status adm_table_plan_begin(const adm_table_plan *p, int entry, adm_table_entry *out);
/* ADM_ERR_NOMEM only; a failed unit becomes e's error. */
ADM_API adm_status adm_table_plan_add(adm_table_plan *p, int entry, int k, const adm_unit_result *r,
                                      adm_table_entry *e);
ADM_API void adm_table_plan_end(const adm_table_plan *p, int entry, adm_table_entry *e);

#ifdef __cplusplus
}
#endif
#endif
