/* Internal to the harness: the gates' allocator, with a failure-injection
 * hook so tests can show that running out of memory is an error
 * (ADM_ERR_NOMEM), never a verdict. */
#ifndef ADM_HARNESS_INTERNAL_H
#define ADM_HARNESS_INTERNAL_H

#include "adm_harness.h"

/* calloc, unless an injected failure is due. Thread-safe (the numeric
 * gates allocate per OpenMP thread). */
void *adm_h_calloc(size_t n, size_t size);

/* Test hook: the nth call of adm_h_calloc from now (1: the next) returns
 * NULL; 0 disarms (keeping the count). adm_h_injected reports how many
 * injected failures have fired since the last arming. */
void adm_h_inject_alloc_failure(int nth);
int adm_h_injected(void);


#include <math.h>
#include <string.h>

#include "stat_elem.h"

/* Mutation testing (tests/mutation.sh): in a build of the gates made for
 * it (ADM_MUTATION, the admit_mutant library of the test tree, never
 * libadmit), ADM_MUTANT("mean") is 1 when the environment's ADM_MUTANT
 * names that statistic, which is then forced to pass; the suite must go
 * red for every name. Elsewhere it is the constant 0. */
#ifdef ADM_MUTATION
int adm_h_mutant(const char *name);
#define ADM_MUTANT(name) adm_h_mutant(name)
#else
#define ADM_MUTANT(name) 0
#endif

/* Adds a sentence to gate g's reason and fails it (whole sentences only);
 * adm_h_note_gate marks g not applicable with a note. */
void adm_h_fail_gate(adm_verdict *v, int g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void adm_h_note_gate(adm_verdict *v, int g, const char *note);

/* Element i of an output, exactly; contiguous tensors of the common
 * formats without the generic index arithmetic. */
typedef struct adm_h_reader { const void *base; adm_dtype dt; int contig; const adm_tensor *t; } adm_h_reader;

static inline adm_h_reader adm_h_reader_of(const adm_tensor *t)
{
    adm_h_reader r;
    r.t = t;
    r.dt = t->dtype;
    r.contig = adm_tensor_is_contiguous(t);
    r.base = (const char *)t->data + (size_t)t->offset * (size_t)adm_format_get(t->dtype)->storage_bytes;
    return r;
}

static inline double adm_h_at(const adm_h_reader *r, int64_t i)
{
    if (r->contig) {
        switch (r->dt) {
        case ADM_BF16: return adm_bf16_to_f32(((const uint16_t *)r->base)[i]);
        case ADM_FP16: return adm_fp16_to_f32(((const uint16_t *)r->base)[i]);
        case ADM_FP32: return ((const float *)r->base)[i];
        case ADM_FP64: return ((const double *)r->base)[i];
        default: break;
        }
    }
    return adm_tensor_get(r->t, i);
}

/* x rounded to nearest even in dt (saturating) and dt's ulp at x: equal
 * to adm_format_round(dt, x, ADM_RNE, ADM_CVT_SATFINITE) and
 * adm_format_ulp, fast for bf16 and fp16 in their normal range
 * (harness/stat_elem.h, shared with the GPU). */
static inline double adm_h_round(adm_dtype dt, double x)
{
    return isfinite(x) ? adm_se_round(dt, x) : adm_format_round(dt, x, ADM_RNE, ADM_CVT_SATFINITE);
}

static inline double adm_h_ulp(adm_dtype dt, double x) { return adm_se_ulp(dt, x); }

/* The axis adm_harness_probe_inputs cuts a first input of this shape
 * along, or -1 (the budget model counts the probes with it). */
int adm_h_probe_axis(const adm_op *op, const adm_op_params *p, int ndim, const int64_t *shape);

/* The axis of input i that run's probes and views cut to its first
 * ADM_PROBE_COLS entries (the GEMM family's output features), or -1. */
int adm_h_probe_col_axis(const adm_op *op, int i);

/* The raw sums of gates 1 and 2 over one output of R rows x N channels
 * (harness/stat_elem.h's layout): R x RAW_NS per row, ns stripes of
 * N x RAW_NS per channel, nb blocks of MG_NS magnitude numbers and
 * HIST_BLOCK histogram counts. Filled on the CPU (adm_h_measure_numeric)
 * or on the GPU (adm_h_measure_numeric_dev), finished by the same code. */
typedef struct adm_h_stats_raw {
    int64_t R, N, ns, nb;
    double *rows, *chans, *mg;
    int64_t *ph;
    double bytes;               /* what adm_h_stats_alloc asked calloc for */
    int merged;                 /* 1: chans holds the stripes' sum (adm_h_stats_merge done) */
    /* gates 3 and 7's scans where the GPU measured (else -1): the first
     * element whose kind differs from the reference's, the first whose
     * bits do (-1: formats differ); R N where none */
    int64_t first_kind, first_bits;
} adm_h_stats_raw;

/* Zeroed arrays for the shape (ADM_ERR_NOMEM, nothing held, when short). */
adm_status adm_h_stats_alloc(adm_h_stats_raw *s, int64_t R, int64_t N);
/* What the statistics of R rows of N channels hold, for harness/budget.c:
 * one candidate's raw sums and adm_h_measure_raw's per-channel RMS (at most
 * 64 MiB of channel stripes past the per-row sums), and the most replay's
 * batch holds at once for nc candidates (at most 192 MiB past one
 * candidate's: adm_h_stats_batch_open). Upper bounds of what is
 * allocated (check_harness StatsBatch holds them to it). */
double adm_h_stats_raw_bytes(int64_t R, int64_t N);
double adm_h_stats_batch_bytes(int64_t R, int64_t N, int nc);
void adm_h_stats_free(adm_h_stats_raw *s);
/* The raw sums of in on the CPU into s (allocated for its shape). */
adm_status adm_h_measure_raw(const adm_judge_input *in, const adm_h_reader *rd, const adm_h_reader *cd,
                             adm_h_stats_raw *s);
/* From the raw sums to v->ev, the absolute numbers and the histograms of
 * the verdict (merges the stripes into the first, in stripe order). fmt:
 * the reference's format; has_cnd: the ulps were taken at the oracle's
 * condition scale. */
void adm_h_stats_finish(adm_h_stats_raw *s, adm_dtype fmt, int has_cnd, adm_verdict *v);
/* The stripes' channel sums added into the first, in stripe order (once:
 * sets merged). */
void adm_h_stats_merge(adm_h_stats_raw *s);

/* Gates 1 and 2 and the evidence gate of one capture (harness/evidence.c):
 * one pass over the output (per-row and per-channel sums together) fills
 * v->ev and the absolute
 * numbers of the verdict, then adm_h_decide_numeric decides from v->ev. */
adm_status adm_h_measure_numeric(const adm_judge_input *in, const adm_h_reader *rd, const adm_h_reader *cd,
                                 adm_verdict *v);
void adm_h_decide_numeric(adm_verdict *v, const adm_gate_config *cfg);

/* The same sums on the GPU (harness/stats_dev.c, harness/stats_cuda.cu):
 * open uploads the oracle (dense fp64), its condition scale (NULL: none)
 * and the reference once, but borrows the oracle and scale where the GPU
 * oracle still holds them on the device (the arrays of its last result,
 * unmodified since: oracle_internal.h, adm_o_cuda_forget); ADM_ERR_UNSUPPORTED for a reference other than
 * contiguous bf16, fp16, fp32 or fp64, ADM_ERR_NO_DEVICE without a GPU.
 * serves: whether in (its oracle, scale, reference and candidate) can be
 * measured there. */
typedef struct adm_h_stats_dev adm_h_stats_dev;
/* Seconds on the monotonic clock, for the reports' phase timings. */
double adm_h_now(void);
adm_status adm_h_stats_dev_open(const adm_tensor *oracle, const adm_tensor *cond, const adm_tensor *ref,
                                adm_h_stats_dev **out);
/* adm_h_stats_dev_open where the GPU can take the outputs: *out NULL (and
 * ADM_OK) for outputs it does not read or without a device, so the
 * statistics stay on the CPU; any other failure is returned. */
adm_status adm_h_stats_dev_try(const adm_tensor *oracle, const adm_tensor *cond, const adm_tensor *ref,
                               adm_h_stats_dev **out);
void adm_h_stats_dev_free(adm_h_stats_dev *d);
/* adm_judge_resolve_scale on the device, over the session's oracle values
 * and reference: the same bits (the same blocks, added in the same order
 * by adm_h_scale_from_blocks, the host's sum of nb blocks' 2 sums). */
adm_status adm_h_stats_dev_resolve_scale(adm_h_stats_dev *d, double *scale);
double adm_h_scale_from_blocks(const double *part, int64_t nb);
/* Gate 5's counts (ties, decisions, the reference's and the candidate's
 * flips) for a quantize or threshold reader on the device, over the
 * candidate the session measured last (adm_h_stats_dev_raw): the host's
 * (harness/stat_elem.h, adm_se_flip; the quantize scale from the max |o|
 * of the finite values, a max in any order). ADM_ERR_UNSUPPORTED, no
 * error set, where the session cannot (no session, a top-k reader,
 * another candidate). */
adm_status adm_h_stats_dev_flip(adm_h_stats_dev *d, const adm_judge_input *in, const adm_reader *rd, int64_t cnt[4]);
/* The reader in stat_elem.h's form, at the quantize scale `scale`. */
adm_se_reader adm_h_se_reader(const adm_reader *rd, double scale);
/* An oracle result made sharp to the reference's error scale (replay and
 * run): where it is on the device (keep_on_device) and a GPU session
 * (opened here into *sdev) measures every candidate, the resolve scale
 * there and the result left there; else fetched, and the scale on the
 * host; then refined. *sdev NULL where no session stands for the final
 * values (the caller opens one after, as without). */
struct adm_oracle;
struct adm_oracle_result;
adm_status adm_h_oracle_sharpen(struct adm_oracle *o, const adm_op *op, const adm_op_params *p,
                                const adm_tensor *const *in, struct adm_oracle_result *orc, const adm_tensor *ref,
                                const adm_tensor *const *cands, int nc, adm_h_stats_dev **sdev);
/* 1 where val's host arrays are stale, the oracle's result on the device
 * (oracle/oracle_internal.h): whatever reads them on the host refuses. */
int adm_o_cuda_stale(const double *val);
/* 1 where open borrowed the GPU oracle's device copies instead of
 * uploading the oracle and its scale. */
int adm_h_stats_dev_borrowed(const adm_h_stats_dev *d);
int adm_h_stats_dev_serves(const adm_h_stats_dev *d, const adm_judge_input *in);
/* The judge's max bound over the finite oracle values, kept for the
 * session's oracle (its values and bound do not change while it is open:
 * replay judges every candidate of a capture against one oracle result).
 * max_bound: 1 and *mb where kept for in's bound; keep: keeps it (d NULL
 * or another oracle: nothing). */
int adm_h_stats_dev_max_bound(const adm_h_stats_dev *d, const adm_judge_input *in, double *mb);
void adm_h_stats_dev_keep_max_bound(adm_h_stats_dev *d, const adm_judge_input *in, double mb);
/* first[2]: the raw sums' first_kind and first_bits (gates 3 and 7 take
 * them instead of scanning the outputs on the host). */
adm_status adm_h_measure_numeric_dev(adm_h_stats_dev *d, const adm_judge_input *in, adm_verdict *v, int64_t first[2]);
/* Gate 3's and 7's host scans (harness/gates.c): the first element of n
 * whose kind (finite, NaN, +Inf, -Inf) differs between r and c, n where
 * none; whether a and b are the same bits (NaN payloads aside), *where
 * the first that is not. */
int64_t adm_h_first_kind_diff(const adm_h_reader *r, const adm_h_reader *c, int64_t n);
int adm_h_bits_identical(const adm_tensor *a, const adm_tensor *b, int64_t *where);
/* The raw sums of in on the GPU into s (allocated for its shape; in
 * served by d), its channel stripes merged on the device (s->merged). */
adm_status adm_h_stats_dev_raw(adm_h_stats_dev *d, const adm_judge_input *in, adm_h_stats_raw *s);
/* The same sums on the CPU for the candidates of one capture at once
 * (harness/stats_batch.c): the oracle's and the reference's terms once per
 * element, then each candidate's update, the bits of adm_h_measure_raw's.
 * open: *out NULL (and ADM_OK) where it would not serve at least two of
 * cands (contiguous bf16, fp16, fp32 or fp64 outputs of the reference's
 * shape, the reference one too, a dense fp64 oracle); it holds the
 * pointers, and at most 192 MiB of raw sums (candidates measured in
 * groups that fit). serves: whether in is one of them (with the batch's
 * oracle, scale and reference). raw copies in's sums into s (allocated
 * for its shape); measure_numeric finishes them into v. */
typedef struct adm_h_stats_batch adm_h_stats_batch;
adm_status adm_h_stats_batch_open(const adm_tensor *oracle, const adm_tensor *cond, const adm_tensor *ref,
                                  const adm_tensor *const *cands, int nc, adm_h_stats_batch **out);
void adm_h_stats_batch_free(adm_h_stats_batch *b);
int adm_h_stats_batch_serves(const adm_h_stats_batch *b, const adm_judge_input *in);
adm_status adm_h_stats_batch_raw(adm_h_stats_batch *b, const adm_judge_input *in, adm_h_stats_raw *s);
adm_status adm_h_measure_numeric_batch(adm_h_stats_batch *b, const adm_judge_input *in, adm_verdict *v);
/* Test hook: batches opened from now measure at most g candidates a pass
 * (0: as memory allows), so that small outputs exercise the groups. */
void adm_h_stats_batch_cap(int g);
/* The bytes a batch holds now (its slots' raw sums and per-channel RMS). */
double adm_h_stats_batch_held(const adm_h_stats_batch *b);
/* Gate 5's decision from the counts in v->ev (declared: the reader is). */
void adm_h_decide_flip(adm_verdict *v, const adm_gate_config *cfg);
/* The tier from the gates' outcomes. */
void adm_h_decide_tier(adm_verdict *v);

#endif
