/* Internal to the emulations: reading inputs into fp32 rows, writing
 * encoded outputs, and the vector types of the kernels that run many
 * output elements side by side. Each lane of a vector kernel performs one
 * element's operations in that element's own order (IEEE addition and
 * multiplication round per lane exactly as the scalar operations do, and
 * -ffp-contract=off keeps them unfused), so vectorising over output
 * elements changes no bit. */
#ifndef ADM_EMU_INTERNAL_H
#define ADM_EMU_INTERNAL_H

#include "adm_core.h"
#include "adm_mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef float adm_v16f __attribute__((vector_size(64)));
typedef double adm_v8d __attribute__((vector_size(64)));
typedef uint32_t adm_v16u __attribute__((vector_size(64)));
typedef int32_t adm_v16i __attribute__((vector_size(64)));

/* The kernels are compiled for AVX-512, AVX2 and the baseline, chosen at
 * load time (the same bits on each: see above). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ADM_EMU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ADM_EMU_CLONES
#endif

/* Elements first .. first + n - 1 of t (row-major logical order) as fp32,
 * as (float)adm_tensor_get gives them. */
static inline void adm_emu_load_f32(const adm_tensor *t, int64_t first, int64_t n, float *dst)
{
    if (adm_tensor_is_contiguous(t)) {
        const char *base = (const char *)t->data;
        switch (t->dtype) {
        case ADM_BF16: {
            const uint16_t *p = (const uint16_t *)base + t->offset + first;
            for (int64_t i = 0; i < n; i++) dst[i] = adm_bf16_to_f32(p[i]);
            return;
        }
        case ADM_FP16: {
            const uint16_t *p = (const uint16_t *)base + t->offset + first;
            for (int64_t i = 0; i < n; i++) dst[i] = adm_fp16_to_f32(p[i]);
            return;
        }
        case ADM_FP32:
            if (n > 0) memcpy(dst, (const float *)base + t->offset + first, sizeof *dst * (size_t)n);
            return;
        case ADM_FP64: {
            const double *p = (const double *)base + t->offset + first;
            for (int64_t i = 0; i < n; i++) dst[i] = (float)p[i];
            return;
        }
        default: break;
        }
    }
    for (int64_t i = 0; i < n; i++) dst[i] = (float)adm_tensor_get(t, first + i);
}

/* Element i of a contiguous owned output, as adm_tensor_set_bits writes it. */
static inline void adm_emu_store_bits(adm_tensor *t, int64_t i, uint64_t bits)
{
    switch (adm_format_get(t->dtype)->storage_bytes) {
    case 1: ((uint8_t *)t->data)[i] = (uint8_t)bits; return;
    case 2: ((uint16_t *)t->data)[i] = (uint16_t)bits; return;
    case 4: ((uint32_t *)t->data)[i] = (uint32_t)bits; return;
    default: ((uint64_t *)t->data)[i] = bits; return;
    }
}

/* adm_format_encode(dt, v, mode, 0) of an fp32 value: bf16 and fp32 round
 * to nearest without the generic encoder where v is not NaN (both give
 * Inf past the range; a NaN takes the format's canonical pattern there). */
static inline uint64_t adm_emu_encode(adm_dtype dt, adm_round mode, float v)
{
    uint64_t b = 0;
    if (mode == ADM_RNE && !isnan(v)) {
        if (dt == ADM_BF16) return adm_bf16_from_f32(v);
        if (dt == ADM_FP32) return adm_f32_bits(v);
    }
    adm_format_encode(dt, v, mode, 0, &b);
    return b;
}

/* 64-byte aligned, zeroed, n floats (at least one). */
static inline float *adm_emu_falloc(int64_t n)
{
    size_t bytes = ((size_t)(n > 0 ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes);
    adm_mem_huge(p, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

#endif
