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

/* x rounded to nearest even in dt and dt's ulp at x, fast for bf16 and
 * fp16 in their normal range (bit arithmetic on the double: the rounding
 * increment carries into the exponent as IEEE requires), the generic
 * encoder elsewhere. Equal to adm_format_round / adm_format_ulp. */
static inline double adm_h_round(adm_dtype dt, double x)
{
    int man = dt == ADM_BF16 ? 7 : dt == ADM_FP16 ? 10 : -1;
    double lo = dt == ADM_BF16 ? 0x1p-126 : 0x1p-14, hi = dt == ADM_BF16 ? 0x1p127 : 32768.0;
    if (man > 0 && fabs(x) >= lo && fabs(x) < hi) {
        uint64_t b = adm_f64_bits(x);
        int sh = 52 - man;
        b += ((1ull << (sh - 1)) - 1) + ((b >> sh) & 1);
        b &= ~((1ull << sh) - 1);
        return adm_f64_from_bits(b);
    }
    return adm_format_round(dt, x, ADM_RNE, ADM_CVT_SATFINITE);
}

static inline double adm_h_ulp(adm_dtype dt, double x)
{
    int man = dt == ADM_BF16 ? 7 : dt == ADM_FP16 ? 10 : -1;
    double lo = dt == ADM_BF16 ? 0x1p-126 : 0x1p-14, hi = dt == ADM_BF16 ? 0x1p127 : 32768.0;
    if (man > 0 && fabs(x) >= lo && fabs(x) < hi)
        return adm_f64_from_bits(((adm_f64_bits(x) >> 52 & 0x7ff) - (uint64_t)man) << 52);
    return adm_format_ulp(dt, x);
}

/* The axis adm_harness_probe_inputs cuts a first input of this shape
 * along, or -1 (the budget model counts the probes with it). */
int adm_h_probe_axis(const adm_op *op, const adm_op_params *p, int ndim, const int64_t *shape);

/* Gates 1 and 2 and the evidence gate of one capture (harness/evidence.c):
 * one pass over the output (per-row and per-channel sums together) fills
 * v->ev and the absolute
 * numbers of the verdict, then adm_h_decide_numeric decides from v->ev. */
adm_status adm_h_measure_numeric(const adm_judge_input *in, const adm_h_reader *rd, const adm_h_reader *cd,
                                 adm_verdict *v);
void adm_h_decide_numeric(adm_verdict *v, const adm_gate_config *cfg);
/* Gate 5's decision from the counts in v->ev (declared: the reader is). */
void adm_h_decide_flip(adm_verdict *v, const adm_gate_config *cfg);
/* The tier from the gates' outcomes. */
void adm_h_decide_tier(adm_verdict *v);

#endif
