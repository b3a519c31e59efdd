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
    ADM_GATE_COUNT = 8
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
} adm_judge_input;

typedef struct adm_gate_config {
    double magnitude_limit;   /* 1.5 */
    double bias_material;     /* 0.1: a bias component above this fraction of the reference RMS error */
    double bias_z;            /* 5: and this many standard errors from the reference's */
    /* 3: the magnitude ratios' sampling allowance: the limit is
     * magnitude_limit exp(magnitude_z / sqrt(n)) over n elements, and the
     * max's yardstick never below rms sqrt(2 ln(n / 1e-3)) (GATES.md) */
    double magnitude_z;
    double flip_limit;        /* 1.5 */
    double sharpness;         /* 1e-3: oracle bound / reference RMS error */
} adm_gate_config;
ADM_API void adm_gate_config_default(adm_gate_config *c);

typedef struct adm_gate_outcome {
    int applicable;
    int passed;
    char reason[1024];         /* whole sentences when failed (never cut mid-word), a note when not applicable */
} adm_gate_outcome;

/* Error histograms in ulps of the output format (at the scale gate 1's ulp form uses):
 * bin 0 below -ADM_HIST_RANGE, the last above +ADM_HIST_RANGE, the rest
 * of width 2 ADM_HIST_RANGE / (ADM_HIST_BINS - 2) between. */
#define ADM_HIST_BINS 34
#define ADM_HIST_RANGE 4.0

typedef struct adm_verdict {
    adm_tier tier;
    int64_t hist_r[ADM_HIST_BINS], hist_c[ADM_HIST_BINS];
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
    int ulp_gated;             /* 1: ulps at the condition scale, gated; 0: at the token/channel scale, reported only */
    /* gate 2: each as an error component (absolute, output units) */
    double mean_r, mean_c, sign_r, sign_c, gain_r, gain_c, out_rms;
    double chan_r, chan_c, row_r, row_c;
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
/* The error scale the oracle must resolve for this reference: its RMS
 * error, floored at the correctly rounded output's. */
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
} adm_run_result;

/* Runs the reference and the candidate on the inputs, on the special-value
 * probes (a NaN element, a NaN row, +Inf, -Inf, +-0, subnormals, values
 * near overflow, an empty M = 0 input) and on non-contiguous views of the
 * first input (transposed, strided, offset, broadcast), evaluates the
 * oracle and judges. reader may be NULL. */
/* Special-value probe k (0 NaN element, 1 NaN row, 2 +Inf, 3 -Inf, 4 +-0,
 * 5 subnormals, 6 near overflow, 7 empty M = 0) of x, owned. */
ADM_API adm_status adm_harness_probe(const adm_tensor *x, int k, adm_tensor *out);

/* ADM_OK when the inputs (aligned with the op's input list, NULL for an
 * absent one) fit the op under these parameters, else ADM_ERR_SHAPE saying
 * which input is missing, extra or of the wrong shape. adm_harness_run
 * checks it before any implementation reads an input. */
ADM_API adm_status adm_harness_check_inputs(const adm_op *op, const adm_op_params *p,
                                            const adm_tensor *const *inputs);

ADM_API adm_status adm_harness_run(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs,
                                   const adm_impl *ref, const adm_impl *cand, const adm_reader *reader,
                                   const adm_gate_config *gcfg, adm_run_result *out);

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

typedef struct adm_measure_result {
    adm_verdict verdict;    /* the worst over the captures: by tier, then RMS ratio */
    int64_t mpfr_refined;   /* oracle elements recomputed with MPFR, over the captures */
    const char *field;      /* on failure, the input at fault: "captures", "params", "reference" or
                               "candidate"; NULL: none */
    int capture;            /* and for "captures", which one */
    int in_run;             /* 1: it failed while the implementations ran (a plugin's crash) */
} adm_measure_result;

/* Judges cand_spec against ref_spec (registry names, or path.so:name for a
 * plugin) with adm_harness_run on each capture: its inputs, probes and
 * views. want_op (or NULL) is the op every capture must carry;
 * params_json (or NULL) overrides each capture's parameters. source names
 * the measurement in messages. */
ADM_API adm_status adm_harness_measure(const char *source, const char *want_op, const char *const *captures, int ncap,
                                       const char *params_json, const char *ref_spec, const char *cand_spec,
                                       const adm_reader *reader, adm_measure_result *out);

typedef struct adm_table_entry {
    char *name, *op, *candidate;
    adm_tier declared;
    adm_verdict verdict;    /* measured: the worst over the entry's captures */
    int64_t mpfr_refined;
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

/* Reads a fusion table (JSON, fusions/dit.json; relative capture paths are
 * relative to the table's folder), checks every entry against the schema
 * (a required field missing, an op not in the catalog, a tier, reader or
 * parameter that does not parse, static declarations that are not the
 * candidate's own: ADM_ERR_JSON naming file:line:column and the field)
 * and measures every entry. A table that does not hold to the schema is
 * refused whole (out holds no entries); an entry whose capture or
 * candidate fails while measuring gets its error and the rest go on. The caller compares each entry's verdict with its declared
 * tier (a declared tier looser than measured is unsafe). */
ADM_API adm_status adm_harness_table(const char *path, adm_table_progress_fn progress, void *user, adm_table_result *out);
ADM_API void adm_table_result_free(adm_table_result *r);

#ifdef __cplusplus
}
#endif
#endif
