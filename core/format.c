/* Generic, exact rounding into every admit format.
 *
 * This is the definition the fast inline conversions and the CUDA
 * intrinsics are tested against, so it is written for evident correctness:
 * a value is scaled by a power of two (exact) into units of the format's
 * quantum in its binade, rounded to an integer by the mode, and scaled
 * back (exact). No step but the integer rounding loses information.
 */
#include "adm_core.h"

#include <math.h>
#include <string.h>

static const adm_format_info formats[ADM_DTYPE_COUNT] = {
    [ADM_BF16] = {"bf16", 16, 8, 7, 127, -126, 127, 1, 1, 2,
                  0x1.fep127, 0x1p-126, 0x1p-133, 0x7f80, 0x7fc0, 0x7f7f},
    [ADM_FP16] = {"fp16", 16, 5, 10, 15, -14, 15, 1, 1, 2,
                  65504.0, 0x1p-14, 0x1p-24, 0x7c00, 0x7e00, 0x7bff},
    [ADM_FP32] = {"fp32", 32, 8, 23, 127, -126, 127, 1, 1, 4,
                  0x1.fffffep127, 0x1p-126, 0x1p-149, 0x7f800000, 0x7fc00000, 0x7f7fffff},
    [ADM_FP64] = {"fp64", 64, 11, 52, 1023, -1022, 1023, 1, 1, 8,
                  0x1.fffffffffffffp1023, 0x1p-1022, 0x1p-1074,
                  0x7ff0000000000000ull, 0x7ff8000000000000ull, 0x7fefffffffffffffull},
    /* e4m3fn: exponent field 15 is a normal binade except S.1111.111 (NaN) */
    [ADM_E4M3] = {"fp8_e4m3", 8, 4, 3, 7, -6, 8, 0, 1, 1,
                  448.0, 0x1p-6, 0x1p-9, 0, 0x7f, 0x7e},
    [ADM_E5M2] = {"fp8_e5m2", 8, 5, 2, 15, -14, 15, 1, 1, 1,
                  57344.0, 0x1p-14, 0x1p-16, 0x7c, 0x7e, 0x7b},
    [ADM_E2M1] = {"fp4_e2m1", 4, 2, 1, 1, 0, 2, 0, 0, 1,
                  6.0, 1.0, 0.5, 0, 0, 0x7},
};

const adm_format_info *adm_format_get(adm_dtype dt)
{
    if (dt <= ADM_DTYPE_INVALID || dt >= ADM_DTYPE_COUNT) return NULL;
    return &formats[dt];
}

const char *adm_dtype_name(adm_dtype dt)
{
    const adm_format_info *f = adm_format_get(dt);
    return f ? f->name : "invalid";
}

adm_status adm_dtype_from_name(const char *name, adm_dtype *out)
{
    static const struct { const char *alias; adm_dtype dt; } aliases[] = {
        {"bfloat16", ADM_BF16}, {"float16", ADM_FP16}, {"half", ADM_FP16},
        {"float32", ADM_FP32}, {"float", ADM_FP32}, {"float64", ADM_FP64},
        {"double", ADM_FP64}, {"float8_e4m3fn", ADM_E4M3}, {"e4m3", ADM_E4M3},
        {"float8_e5m2", ADM_E5M2}, {"e5m2", ADM_E5M2},
        {"float4_e2m1fn", ADM_E2M1}, {"e2m1", ADM_E2M1},
    };
    if (!name) return ADM_FAIL(ADM_ERR_DTYPE, "no dtype name");
    for (int d = ADM_DTYPE_INVALID + 1; d < ADM_DTYPE_COUNT; d++)
        if (strcmp(name, formats[d].name) == 0) { *out = (adm_dtype)d; return ADM_OK; }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) { *out = aliases[i].dt; return ADM_OK; }
    return ADM_FAIL(ADM_ERR_DTYPE,
                    "unknown dtype '%s' (expected one of bf16, fp16, fp32, fp64, "
                    "fp8_e4m3, fp8_e5m2, fp4_e2m1)", name);
}

int adm_format_isnan(adm_dtype dt, uint64_t bits)
{
    const adm_format_info *f = adm_format_get(dt);
    uint64_t mag;
    if (!f || !f->has_nan) return 0;
    mag = bits & ((1ull << (f->bits - 1)) - 1);
    if (dt == ADM_E4M3) return mag == 0x7f;
    return (mag >> f->man_bits) == ((1ull << f->exp_bits) - 1) &&
           (mag & ((1ull << f->man_bits) - 1)) != 0;
}

int adm_format_isinf(adm_dtype dt, uint64_t bits)
{
    const adm_format_info *f = adm_format_get(dt);
    if (!f || !f->has_inf) return 0;
    return (bits & ((1ull << (f->bits - 1)) - 1)) == f->inf_bits;
}

double adm_format_decode(adm_dtype dt, uint64_t bits)
{
    const adm_format_info *f = adm_format_get(dt);
    uint64_t sign, e, m;
    double v;
    if (!f) return NAN;
    if (dt == ADM_FP64) return adm_f64_from_bits(bits);
    bits &= (f->bits == 64) ? ~0ull : ((1ull << f->bits) - 1);
    sign = bits >> (f->bits - 1);
    if (adm_format_isnan(dt, bits)) return sign ? -NAN : NAN;
    if (adm_format_isinf(dt, bits)) return sign ? -INFINITY : INFINITY;
    e = (bits >> f->man_bits) & ((1ull << f->exp_bits) - 1);
    m = bits & ((1ull << f->man_bits) - 1);
    if (e == 0)
        v = ldexp((double)m, f->emin - f->man_bits);
    else
        v = ldexp((double)(m | (1ull << f->man_bits)), (int)e - f->bias - f->man_bits);
    return sign ? -v : v;
}

/* Rounds the magnitude a > 0 (finite) to an integer multiple of the
 * quantum of its binade; `up` says whether a directed mode rounds the
 * magnitude away from zero. Exact: a/q and r*q only move the exponent. */
static double round_magnitude(const adm_format_info *f, double a, adm_round mode, int negative)
{
    int e2;
    double q, n, fl, frac, r;
    (void)frexp(a, &e2);            /* a = fr * 2^e2, fr in [0.5, 1) */
    e2 -= 1;                        /* floor(log2 a) */
    if (e2 < f->emin) e2 = f->emin; /* gradual underflow: fixed quantum */
    q = ldexp(1.0, e2 - f->man_bits);
    n = a / q;
    fl = floor(n);
    frac = n - fl;
    switch (mode) {
    case ADM_RTZ: r = fl; break;
    case ADM_RDN: r = negative ? (frac > 0 ? fl + 1 : fl) : fl; break;
    case ADM_RUP: r = negative ? fl : (frac > 0 ? fl + 1 : fl); break;
    case ADM_RNE:
    default:
        if (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) != 0.0)) r = fl + 1;
        else r = fl;
        break;
    }
    return r * q;
}

static uint64_t encode_finite(const adm_format_info *f, double v)
{
    int e2;
    uint64_t m;
    if (v == 0) return 0;
    (void)frexp(v, &e2);
    e2 -= 1;
    if (e2 < f->emin) return (uint64_t)ldexp(v, f->man_bits - f->emin);
    m = (uint64_t)ldexp(v, f->man_bits - e2) - (1ull << f->man_bits);
    return ((uint64_t)(e2 + f->bias) << f->man_bits) | m;
}

adm_status adm_format_encode(adm_dtype dt, double x, adm_round mode,
                             unsigned flags, uint64_t *bits)
{
    const adm_format_info *f = adm_format_get(dt);
    uint64_t sign;
    double a, v;
    int negative, toward_overflow;
    if (!f) return ADM_FAIL(ADM_ERR_DTYPE, "encode: invalid dtype %d", (int)dt);
    if ((unsigned)mode > ADM_RUP) return ADM_FAIL(ADM_ERR_INVALID, "encode: invalid rounding mode %d", (int)mode);
    if (dt == ADM_FP64) {
        *bits = adm_f64_bits(x);
        if (isnan(x)) *bits |= 0x0008000000000000ull;
        return ADM_OK;
    }
    negative = signbit(x) != 0;
    sign = negative ? 1ull << (f->bits - 1) : 0;
    if (isnan(x)) {
        if (!f->has_nan)
            return ADM_FAIL(ADM_ERR_RANGE, "%s has no NaN encoding", f->name);
        *bits = sign | f->nan_bits;
        return ADM_OK;
    }
    a = fabs(x);
    toward_overflow = mode == ADM_RNE || (mode == ADM_RUP && !negative) ||
                      (mode == ADM_RDN && negative);
    if (isinf(a)) {
        v = INFINITY;
    } else {
        v = round_magnitude(f, a, mode, negative);
        if (v <= f->max_finite) {
            *bits = sign | encode_finite(f, v);
            return ADM_OK;
        }
    }
    /* Overflow, or an infinite input. An infinite input stays infinite
     * where the format has Inf, whatever the rounding mode. */
    if ((flags & ADM_CVT_SATFINITE) || (!toward_overflow && !isinf(a)))
        *bits = sign | f->max_bits;
    else if (f->has_inf)
        *bits = sign | f->inf_bits;
    else if (f->has_nan)
        *bits = sign | f->nan_bits;
    else
        *bits = sign | f->max_bits;
    return ADM_OK;
}

double adm_format_round(adm_dtype dt, double x, adm_round mode, unsigned flags)
{
    uint64_t b;
    if (adm_format_encode(dt, x, mode, flags, &b) != ADM_OK) return NAN;
    return adm_format_decode(dt, b);
}

double adm_format_ulp(adm_dtype dt, double x)
{
    const adm_format_info *f = adm_format_get(dt);
    int e2;
    if (!f || isnan(x) || isinf(x)) return NAN;
    if (x == 0) return f->min_subnormal;
    (void)frexp(fabs(x), &e2);
    e2 -= 1;
    if (e2 < f->emin) e2 = f->emin;
    if (e2 > f->emax) e2 = f->emax;
    return ldexp(1.0, e2 - f->man_bits);
}

adm_status adm_format_neighbors(adm_dtype dt, double x, double *below, double *above)
{
    uint64_t b;
    const adm_format_info *f = adm_format_get(dt);
    if (!f) return ADM_FAIL(ADM_ERR_DTYPE, "neighbors: invalid dtype %d", (int)dt);
    if (isnan(x)) return ADM_FAIL(ADM_ERR_RANGE, "neighbors of NaN");
    if (!f->has_inf && fabs(x) > f->max_finite)
        return ADM_FAIL(ADM_ERR_RANGE, "%g is beyond the range of %s, which has no Inf", x, f->name);
    ADM_TRY(adm_format_encode(dt, x, ADM_RDN, 0, &b));
    *below = adm_format_decode(dt, b);
    ADM_TRY(adm_format_encode(dt, x, ADM_RUP, 0, &b));
    *above = adm_format_decode(dt, b);
    return ADM_OK;
}

adm_status adm_format_next(adm_dtype dt, uint64_t bits, int dir, uint64_t *out)
{
    const adm_format_info *f = adm_format_get(dt);
    uint64_t signbit, mag, top;
    if (!f) return ADM_FAIL(ADM_ERR_DTYPE, "next: invalid dtype %d", (int)dt);
    if (dir == 0) return ADM_FAIL(ADM_ERR_INVALID, "next: direction 0");
    if (adm_format_isnan(dt, bits)) return ADM_FAIL(ADM_ERR_RANGE, "next of NaN");
    signbit = 1ull << (f->bits - 1);
    mag = bits & (signbit - 1);
    top = f->has_inf ? f->inf_bits : f->max_bits;
    /* Sign-magnitude: moving away from zero increments the magnitude. */
    if (mag == 0) {
        *out = (dir > 0) ? 1 : (signbit | 1);
        return ADM_OK;
    }
    if (((bits & signbit) == 0) == (dir > 0)) {
        if (mag == top)
            return ADM_FAIL(ADM_ERR_RANGE, "next: already at the end of %s", f->name);
        *out = (bits & signbit) | (mag + 1);
    } else {
        *out = (bits & signbit) | (mag - 1); /* nextUp(-min) is -0 */
    }
    return ADM_OK;
}
