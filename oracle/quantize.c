/* Quantize-dequantize, evaluated exactly (bound 0).
 *
 * fp8_e4m3_tensor: s = fp32(amax / 448) over the tensor; q = e4m3(x / s),
 *   round to nearest even, saturating at 448; out = q s.
 * fp8_e4m3_row: the same with one amax and scale per row.
 * nvfp4: g = fp32(amax / (6 * 448)) over the tensor; per block of 16 along
 *   the last dimension, sb = e4m3(bamax / (6 g)) (RNE, saturating);
 *   q = e2m1(x / (sb g)) (RNE, saturating at 6); out = q sb g.
 * A zero scale (an all-zero tensor, row or block) gives out = 0. A NaN
 * anywhere in the tensor, row or block its scale is taken over makes
 * that scale NaN, and every output it scales NaN (torch.amax's rule).
 *
 * Every rounding is of an exact real quotient, done exactly: the fp64
 * quotient finds the two neighbours in the target format, and the midpoint
 * m between them is compared with the dividend as m * divisor, a product
 * of at most 5 + 28 significant bits, exact in fp64. The dequantized value
 * is a product of at most 2 + 4 + 24 bits: exact. So the oracle's value is
 * the exact value of the quantizer's math. The arithmetic is
 * oracle/quantize_fns.h's, which the GPU (oracle/quantize_cuda.cu) runs
 * too: the same bits on either. */
#include "oracle_internal.h"
#include "quantize_fns.h"

#include <stdlib.h>

adm_status adm_o_eval_quantize(const adm_o_ctx *c, double *val, double *bnd)
{
    const adm_tensor *x = c->in[0];
    int64_t n = c->numel, N = x->ndim ? x->shape[x->ndim - 1] : 1, R = N ? n / N : 0;
    double *xd = malloc(sizeof *xd * (size_t)(n ? n : 1)), amax = 0, g = 0;
    adm_status st = ADM_OK;
    if (!xd) return ADM_FAIL(ADM_ERR_NOMEM, "oracle quantize: out of memory");
    adm_tensor_to_f64(x, xd);
    /* the tensor's amax: per tensor and nvfp4's global scale (per row: each row's own) */
    if (c->p->scheme != ADM_Q_FP8_ROW)
        for (int64_t i = 0; i < n; i++) amax = adm_qf_amax(amax, xd[i]);
    switch (c->p->scheme) {
    case ADM_Q_FP8_TENSOR: g = adm_qf_div_round(ADM_QF_FP32, amax, 448.0); break;
    case ADM_Q_FP8_ROW: break;
    case ADM_Q_NVFP4: g = adm_qf_div_round(ADM_QF_FP32, amax, 6.0 * 448.0); break;
    default:
        free(xd);
        return ADM_FAIL(ADM_ERR_INVALID, "oracle quantize: no scheme");
    }
    if (c->use_gpu && n > 0) {
        st = adm_o_cuda_quantize(c->p->scheme, n, N, g, xd, val);
    } else {
        switch (c->p->scheme) {
        case ADM_Q_FP8_TENSOR:
            for (int64_t i = 0; i < n; i++) val[i] = adm_qf_qdq(ADM_QF_E4M3, xd[i], g);
            break;
        case ADM_Q_FP8_ROW:
            for (int64_t r = 0; r < R; r++) {
                double ra = 0, s;
                for (int64_t j = 0; j < N; j++) ra = adm_qf_amax(ra, xd[r * N + j]);
                s = adm_qf_div_round(ADM_QF_FP32, ra, 448.0);
                for (int64_t j = 0; j < N; j++) val[r * N + j] = adm_qf_qdq(ADM_QF_E4M3, xd[r * N + j], s);
            }
            break;
        default: /* ADM_Q_NVFP4: the shape check made N a multiple of 16 */
            for (int64_t b0 = 0; b0 < n; b0 += 16) {
                double ba = 0, sb;
                for (int64_t j = b0; j < b0 + 16; j++) ba = adm_qf_amax(ba, xd[j]);
                sb = g == 0 ? 0.0 : adm_qf_div_round(ADM_QF_E4M3, ba, 6.0 * g);
                for (int64_t j = b0; j < b0 + 16; j++) val[j] = adm_qf_qdq(ADM_QF_E2M1, xd[j], sb * g);
            }
            break;
        }
    }
    for (int64_t i = 0; i < n; i++) bnd[i] = 0;
    free(xd);
    return st;
}
