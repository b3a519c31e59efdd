/* Internal: the GEMM oracle's narrow operands widened to fp64 where they
 * are stored, the same code on the host and on the device
 * (oracle/oracle_cuda.cu uploads bf16, fp16 and fp32 as stored, a quarter
 * or half of the fp64 bytes, and widens them there). Every bf16, fp16 and
 * fp32 value is an fp64, so the widening is exact; the bits are those of
 * the host's adm_o_rows (the format's adm_*_to_f32, then the float to
 * double as x86's cvtss2sd does it), a NaN's sign and payload included
 * (quieted), so the DGEMM reads what it read when the host widened:
 * tests/check_oracle.c, case Widen, compares every bf16 and fp16 pattern
 * and a sample of fp32's, on views, with adm_o_rows. Integer operations
 * only: no device rounding or flush-to-zero mode enters. */
#ifndef ADM_O_WIDEN_H
#define ADM_O_WIDEN_H

#include <stdint.h>

#include "adm_core.h"

#ifdef __CUDACC__
#define ADM_WIDEN_FN __host__ __device__ static inline
#else
#define ADM_WIDEN_FN static inline
#endif

/* An operand's view on the device: element i (row-major over shape) is
 * the stored element base + sum_d idx_d stride_d of the uploaded span. */
typedef struct adm_o_widen_src {
    int dtype, ndim, dense; /* dense: row-major without gaps, element i at base + i */
    int64_t base;
    int64_t shape[ADM_MAX_DIMS], stride[ADM_MAX_DIMS];
} adm_o_widen_src;

/* fp32 bits to fp64 bits. */
ADM_WIDEN_FN uint64_t adm_o_widen_f32(uint32_t b)
{
    uint64_t s = (uint64_t)(b >> 31) << 63, m = b & 0x7fffffu;
    uint32_t e = (b >> 23) & 0xffu;
    int sh = 0;
    if (e == 0xffu) return s | 0x7ff0000000000000ull | (m << 29) | (m ? 0x0008000000000000ull : 0);
    if (e != 0) return s | ((uint64_t)(e + 896u) << 52) | (m << 29);
    if (m == 0) return s;
    /* a subnormal m 2^-149 is a normal fp64: at most 23 shifts */
    while (!(m & 0x800000u)) {
        m <<= 1;
        sh++;
    }
    return s | ((uint64_t)(897 - sh) << 52) | ((m & 0x7fffffu) << 29);
}

/* fp16 bits to fp32 bits, as adm_fp16_to_f32. */
ADM_WIDEN_FN uint32_t adm_o_widen_fp16(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    int sh = 0;
    if (e == 0x1fu) return s | 0x7f800000u | (m << 13);
    if (e != 0) return s | ((e + 112u) << 23) | (m << 13);
    if (m == 0) return s;
    while (!(m & 0x400u)) { /* at most 10 shifts */
        m <<= 1;
        sh++;
    }
    return s | ((uint32_t)(113 - sh) << 23) | ((m & 0x3ffu) << 13);
}

/* Element i of the view: its fp64 bits. */
ADM_WIDEN_FN uint64_t adm_o_widen_elem(const void *span, const adm_o_widen_src *s, int64_t i)
{
    int64_t k = s->base;
    if (s->dense) k += i;
    else
        for (int d = s->ndim - 1; d >= 0; d--) {
            k += (i % s->shape[d]) * s->stride[d];
            i /= s->shape[d];
        }
    switch (s->dtype) {
    case ADM_BF16: return adm_o_widen_f32((uint32_t)((const uint16_t *)span)[k] << 16);
    case ADM_FP16: return adm_o_widen_f32(adm_o_widen_fp16(((const uint16_t *)span)[k]));
    default: return adm_o_widen_f32(((const uint32_t *)span)[k]);
    }
}

/* The view of t (bf16, fp16 or fp32, at least one element) and the
 * storage it reads: *span elements from element t->offset + *lo on.
 * 0 for another format or an empty tensor: the host widens those. */
static inline int adm_o_widen_plan(const adm_tensor *t, adm_o_widen_src *s, int64_t *lo, int64_t *span)
{
    int64_t l = 0, h = 0, row = 1;
    if (t->dtype != ADM_BF16 && t->dtype != ADM_FP16 && t->dtype != ADM_FP32) return 0;
    s->dtype = t->dtype;
    s->ndim = t->ndim;
    s->dense = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] <= 0) return 0;
        s->shape[d] = t->shape[d];
        s->stride[d] = t->stride[d];
        if (t->stride[d] > 0) h += (t->shape[d] - 1) * t->stride[d];
        else l += (t->shape[d] - 1) * t->stride[d];
        if (t->shape[d] > 1 && t->stride[d] != row) s->dense = 0;
        row *= t->shape[d];
    }
    s->base = -l;
    *lo = l;
    *span = h - l + 1;
    return 1;
}

#endif
