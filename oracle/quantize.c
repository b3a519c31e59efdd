/* Quantize-dequantize, evaluated exactly (bound 0).
 *
 * fp8_e4m3_tensor: s = fp32(amax / 448) over the tensor; q = e4m3(x / s),
 *   round to nearest even, saturating at 448; out = q s.
 * fp8_e4m3_row: the same with one amax and scale per row.
 * nvfp4: g = fp32(amax / (6 * 448)) over the tensor; per block of 16 along
 *   the last dimension, sb = e4m3(bamax / (6 g)) (RNE, saturating);
 *   q = e2m1(x / (sb g)) (RNE, saturating at 6); out = q sb g.
 * A zero scale (an all-zero tensor, row or block) gives out = 0.
 *
 * Every rounding is of an exact real quotient, done exactly: the fp64
 * quotient finds the two neighbours in the target format, and the midpoint
 * m between them is compared with the dividend as m * divisor, a product
 * of at most 5 + 28 significant bits, exact in fp64. The dequantized value
 * is a product of at most 2 + 4 + 24 bits: exact. So the oracle's value is
 * the exact value of the quantizer's math. */
#include "oracle_internal.h"

#include <stdlib.h>

/* round(a / b) into dt, RNE, saturating; a/b's divisor b > 0 finite; both
 * with few enough significant bits that m * b is exact (see above). */
static double div_round(adm_dtype dt, double a, double b)
{
    double qd = a / b, lo, hi, m, mb;
    const adm_format_info *f = adm_format_get(dt);
    uint64_t bits;
    if (isnan(qd)) return qd;
    if (fabs(qd) >= f->max_finite) return copysign(f->max_finite, qd);
    if (adm_format_neighbors(dt, qd, &lo, &hi) != ADM_OK) return NAN;
    if (lo == hi) {
        /* qd is representable, but a/b may differ from it in the last bit
         * of fp64: then the exact quotient is within half an fp64 ulp of a
         * format value, far from any midpoint, and rounds to it */
        return lo;
    }
    m = (lo + hi) / 2;
    mb = m * b;
    if (a > mb) return hi;
    if (a < mb) return lo;
    (void)adm_format_encode(dt, lo, ADM_RNE, 0, &bits);
    return (bits & 1) ? hi : lo;
}

/* fp32(a / b) correctly rounded, for the scales: a has <= 24 bits, b is
 * 448 or 6 * 448 (few bits), so the midpoint test is exact. */
static double div_fp32(double a, double b)
{
    return div_round(ADM_FP32, a, b);
}

static double qdq(adm_dtype dt, double x, double scale)
{
    if (scale == 0) return 0.0 * x;
    return div_round(dt, x, scale) * scale;
}

adm_status adm_o_eval_quantize(const adm_o_ctx *c, double *val, double *bnd)
{
    const adm_tensor *x = c->in[0];
    int64_t n = c->numel, N = x->ndim ? x->shape[x->ndim - 1] : 1, R = N ? n / N : 0;
    double *xd = malloc(sizeof *xd * (size_t)(n ? n : 1)), amax = 0;
    if (!xd) return ADM_FAIL(ADM_ERR_NOMEM, "oracle quantize: out of memory");
    adm_tensor_to_f64(x, xd);
    for (int64_t i = 0; i < n; i++) {
        if (isnan(xd[i])) amax = NAN;
        if (!isnan(amax)) amax = fmax(amax, fabs(xd[i]));
    }
    switch (c->p->scheme) {
    case ADM_Q_FP8_TENSOR: {
        double s = div_fp32(amax, 448.0);
        for (int64_t i = 0; i < n; i++) val[i] = qdq(ADM_E4M3, xd[i], s);
        break;
    }
    case ADM_Q_FP8_ROW:
        for (int64_t r = 0; r < R; r++) {
            double ra = 0, s;
            for (int64_t j = 0; j < N; j++) ra = isnan(xd[r * N + j]) ? NAN : fmax(ra, fabs(xd[r * N + j]));
            s = div_fp32(ra, 448.0);
            for (int64_t j = 0; j < N; j++) val[r * N + j] = qdq(ADM_E4M3, xd[r * N + j], s);
        }
        break;
    case ADM_Q_NVFP4: {
        double g = div_fp32(amax, 6.0 * 448.0);
        for (int64_t b0 = 0; b0 < n; b0 += 16) {
            double ba = 0, sb;
            for (int64_t j = b0; j < b0 + 16; j++) ba = isnan(xd[j]) ? NAN : fmax(ba, fabs(xd[j]));
            sb = g == 0 ? 0.0 : div_round(ADM_E4M3, ba, 6.0 * g);
            for (int64_t j = b0; j < b0 + 16; j++) val[j] = qdq(ADM_E2M1, xd[j], sb * g);
        }
        break;
    }
    default:
        free(xd);
        return ADM_FAIL(ADM_ERR_INVALID, "oracle quantize: no scheme");
    }
    for (int64_t i = 0; i < n; i++) bnd[i] = 0;
    free(xd);
    return ADM_OK;
}
