/* Scaled dot-product attention and row sums as real kernels compute them:
 * bf16 (or fp16) storage, fp32 arithmetic in each kernel's order, every
 * rounding where the kernel rounds.
 *
 * Attention (q [..., S, D], k [..., T, D], v [..., T, E]; causal is the
 * top-left aligned mask of SDPA's is_causal):
 *   math       PyTorch's SDPA math backend (>= 2.5, the default
 *              allow_fp16_bf16_reduction_math_sdp(False)): q, k, v upcast to
 *              fp32; q and k each multiplied by sf = fp32(sqrt(scale));
 *              S = q k^T an fp32 GEMM; the causal mask added as -inf;
 *              softmax in fp32 (max-subtracted, exp, sum, divide); P V an
 *              fp32 GEMM; one rounding to the output format.
 *   math_bf16  the same with allow_fp16_bf16_reduction_math_sdp(True): q sf
 *              and k sf rounded to bf16, S rounded to bf16, softmax
 *              computed in fp32 from bf16 and rounded to bf16, P V an fp32
 *              accumulation rounded to bf16 (every intermediate in bf16).
 *   flash      FlashAttention-2's forward as the flash backend runs it on
 *              sm80/sm90 (kBlockN 128 keys for D <= 64, 64 for D = 128):
 *              key tiles in reverse order; S by tensor-core MMAs (products
 *              exact, fp32 accumulation per k-chunk of 16); row max of the
 *              raw scores; p = exp2(fma(s, scale log2 e, -max scale log2 e));
 *              a running row sum kept in fp32 per thread of the quad
 *              (columns 8g + 2t, 8g + 2t + 1 go to thread t) and summed by
 *              a butterfly at the end; on a new max the sum and the fp32
 *              output accumulator are rescaled by exp2((m_old - m_new)
 *              scale log2 e); P rounded to bf16 for the P V MMA; the output
 *              multiplied by fp32(1 / sum) and rounded once.
 *   tiled      an online-softmax kernel with 64-key tiles in key order (the
 *              memory-efficient backend's structure): scores scaled by
 *              scale log2 e in fp32, p = exp2(s - m), one sequential fp32
 *              row sum, P rounded to bf16, a final division.
 * A tensor-core MMA's internal sum is modelled as exact and rounded to
 * fp32 once into the accumulator (hardware truncates some bits below fp32
 * there; the difference is far below the bf16 output rounding).
 *
 * Row sums (x [..., n, ...] along an axis, fp32 output as
 * x.sum(axis, dtype=torch.float32)):
 *   pairwise   a balanced tree of fp32 additions (halves, the shape of
 *              a GPU block reduction and of cascade summation)
 *   sequential one fp32 accumulator in index order
 *   warp       32 lanes each summing the elements j = lane mod 32 in
 *              order, then a tree across the lanes (a warp reduction)
 *   bf16_acc   the running sum rounded to bf16 after every add */
#include "adm_candidates.h"
#include "adm_fpenv.h"

#include <math.h>
#include <stdlib.h>

static float bf(float v) { return adm_bf16_to_f32(adm_bf16_from_f32(v)); }

static void put(adm_tensor *out, int64_t i, float v)
{
    uint64_t b;
    adm_format_encode(out->dtype, v, ADM_RNE, 0, &b);
    adm_tensor_set_bits(out, i, b);
}

/* A tensor-core MMA along k: chunks of 16 exact products (bf16 x bf16 is
 * exact in fp64, and so is a sum of 16 of them whose exponents lie within
 * 29 binades), each added to the fp32 accumulator with one rounding. */
static float mma_dot(const float *a, const float *b, int64_t stride_b, int64_t n, float acc)
{
    for (int64_t k0 = 0; k0 < n; k0 += 16) {
        double c = 0;
        for (int64_t k = k0; k < n && k < k0 + 16; k++) c += (double)a[k] * (double)b[k * stride_b];
        acc = (float)((double)acc + c);
    }
    return acc;
}

/* cuBLAS SGEMM's dot product, modelled as fused multiply-adds in k order. */
static float fma_dot(const float *a, const float *b, int64_t stride_b, int64_t n)
{
    float s = 0;
    for (int64_t k = 0; k < n; k++) s = fmaf(a[k], b[k * stride_b], s);
    return s;
}

typedef struct attn_dims { int64_t H, S, D, T, E; } attn_dims;

static attn_dims dims_of(const adm_tensor *q, const adm_tensor *k, const adm_tensor *v)
{
    attn_dims d;
    int r = q->ndim;
    d.S = q->shape[r - 2];
    d.D = q->shape[r - 1];
    d.T = k->shape[r - 2];
    d.E = v->shape[r - 1];
    d.H = (d.S > 0 && d.D > 0) ? adm_tensor_numel(q) / (d.S * d.D) : 0;
    return d;
}

/* The math backend, fp32 (bf16 = 0) or with bf16 reductions (bf16 = 1),
 * for one query row i of head h; s and p are scratch of T floats. */
static void math_row(const float *qh, const float *kh, const float *vh, const attn_dims *d, int64_t i, int64_t tend,
                     float sf, int bf16, float *s, float *qs, float *out)
{
    float m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < d->D; c++) {
        qs[c] = qh[i * d->D + c] * sf;
        if (bf16) qs[c] = bf(qs[c]);
    }
    for (int64_t j = 0; j < d->T; j++) {
        if (j >= tend) { s[j] = -INFINITY; continue; }
        /* k sf is formed once per key by the caller (kh holds it) */
        s[j] = fma_dot(qs, kh + j * d->D, 1, d->D);
        if (bf16) s[j] = bf(s[j]);
        m = m > s[j] ? m : s[j]; /* the CUDA softmax's max: a NaN score can become the max */
    }
    /* _safe_softmax: a row with no finite score gives 0 */
    for (int64_t j = 0; j < d->T; j++) {
        s[j] = m == -INFINITY ? 0.0f : expf(s[j] - m);
        sum += s[j];
    }
    for (int64_t j = 0; j < d->T; j++) {
        s[j] = m == -INFINITY ? 0.0f : s[j] / sum;
        if (bf16) s[j] = bf(s[j]);
    }
    for (int64_t e = 0; e < d->E; e++) out[e] = fma_dot(s, vh + e, d->E, d->T);
}

/* FlashAttention-2 (tile kn, reverse order, quad row sums, exp2 with the
 * fused multiply-add) or the tiled kernel (64, forward, one sequential row
 * sum, exp2 of pre-scaled scores, a final division), for one query row. */
static void online_row(const float *qi, const float *kh, const float *vh, const attn_dims *d, int64_t tend,
                       float scale, int flash, float *s, float *acc, float *out)
{
    int64_t kn = flash ? (d->D <= 64 ? 128 : 64) : 64, nblk = (tend + kn - 1) / kn;
    float sl2 = (float)((double)scale * 1.44269504088896340736), m = -INFINITY, lane[4] = {0, 0, 0, 0};
    float *pb = s + kn;
    for (int64_t e = 0; e < d->E; e++) acc[e] = 0;
    for (int64_t it = 0; it < nblk; it++) {
        int64_t b = flash ? nblk - 1 - it : it, j0 = b * kn, j1 = j0 + kn < tend ? j0 + kn : tend;
        float mnew = m, ms;
        for (int64_t j = j0; j < j1; j++) {
            s[j - j0] = mma_dot(qi, kh + j * d->D, 1, d->D, 0.0f);
            if (!flash) s[j - j0] = s[j - j0] * sl2;
            mnew = mnew > s[j - j0] ? mnew : s[j - j0]; /* FlashAttention's MaxOp */
        }
        /* a row whose scores are all -inf so far (masked, or -inf logits)
         * uses 0 for its max: p = exp2(-inf) = 0, the sum stays 0 and the
         * output 0 (FlashAttention's Check_inf; the reference's
         * _safe_softmax gives 0 there too) */
        if (it > 0) {
            float cur = mnew == -INFINITY ? 0.0f : mnew, r = flash ? exp2f((m - cur) * sl2) : exp2f(m - cur);
            for (int l = 0; l < 4; l++) lane[l] *= r;
            for (int64_t e = 0; e < d->E; e++) acc[e] *= r;
        }
        m = mnew;
        ms = m == -INFINITY ? 0.0f : (flash ? m * sl2 : m);
        for (int64_t j = j0; j < j1; j++) {
            float p = flash ? exp2f(fmaf(s[j - j0], sl2, -ms)) : exp2f(s[j - j0] - ms);
            if (flash) lane[(j % 8) / 2] += p;
            else lane[0] += p;
            pb[j - j0] = bf(p);
        }
        /* P V: an MMA along the keys of the tile, chunks of 16 from its start */
        for (int64_t e = 0; e < d->E; e++) acc[e] = mma_dot(pb, vh + j0 * d->E + e, d->E, j1 - j0, acc[e]);
    }
    {
        /* the quad's butterfly: xor 2, then xor 1 */
        float sum = flash ? (lane[0] + lane[2]) + (lane[1] + lane[3]) : lane[0];
        float inv = (sum == 0.0f || sum != sum) ? 1.0f : 1.0f / sum;
        for (int64_t e = 0; e < d->E; e++) out[e] = flash ? acc[e] * inv : (sum == 0.0f ? 0.0f : acc[e] / sum);
    }
}

ADM_FPENV_BODY
static adm_status emu_attention_body(const adm_op_params *p, const adm_tensor *const *in, adm_attn_path path,
                                     adm_tensor *out)
{
    const adm_tensor *q = in[0], *k = in[1], *v = in[2];
    attn_dims d = dims_of(q, k, v);
    int64_t os[ADM_MAX_DIMS], kmax = 128 > d.T ? 128 : d.T;
    double scale = p->attn_scale > 0 ? p->attn_scale : 1.0 / sqrt((double)d.D);
    float sf = (float)sqrt(scale), *qh, *kh, *vh;
    int oom = 0;
    adm_status st = ADM_OK;
    if (path < ADM_ATTN_MATH || path > ADM_ATTN_TILED)
        return ADM_FAIL(ADM_ERR_INVALID, "attention emulation: unknown path %d", (int)path);
    memcpy(os, q->shape, sizeof(int64_t) * (size_t)q->ndim);
    os[q->ndim - 1] = d.E;
    /* every head's q, k sf (math paths) and v in fp32, then the query
     * rows of all heads in parallel, each computed in its own order */
    qh = malloc(sizeof *qh * (size_t)(d.H * d.S * d.D + 1));
    kh = malloc(sizeof *kh * (size_t)(d.H * d.T * d.D + 1));
    vh = malloc(sizeof *vh * (size_t)(d.H * d.T * d.E + 1));
    if (!qh || !kh || !vh) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "attention emulation: out of memory");
        goto done;
    }
    if ((st = adm_tensor_alloc(out, q->dtype, q->ndim, os)) != ADM_OK) goto done;
    for (int64_t i = 0; i < d.H * d.S * d.D; i++) qh[i] = (float)adm_tensor_get(q, i);
    for (int64_t i = 0; i < d.H * d.T * d.D; i++) {
        kh[i] = (float)adm_tensor_get(k, i);
        if (path == ADM_ATTN_MATH || path == ADM_ATTN_MATH_BF16) kh[i] *= sf;
        if (path == ADM_ATTN_MATH_BF16) kh[i] = bf(kh[i]);
    }
    for (int64_t i = 0; i < d.H * d.T * d.E; i++) vh[i] = (float)adm_tensor_get(v, i);
#pragma omp parallel
    {
        float *s = malloc(sizeof *s * (size_t)(2 * kmax + 1)), *qs = malloc(sizeof *qs * (size_t)(d.D + 1));
        float *acc = malloc(sizeof *acc * (size_t)(d.E + 1)), *o = malloc(sizeof *o * (size_t)(d.E + 1));
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
        if (!s || !qs || !acc || !o) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(static)
        for (int64_t hi = 0; hi < d.H * d.S; hi++) {
            int64_t h = hi / d.S, i = hi % d.S, tend = p->causal ? (i + 1 < d.T ? i + 1 : d.T) : d.T;
            const float *qhh = qh + h * d.S * d.D, *khh = kh + h * d.T * d.D, *vhh = vh + h * d.T * d.E;
            if (!s || !qs || !acc || !o) continue;
            if (path == ADM_ATTN_MATH || path == ADM_ATTN_MATH_BF16)
                math_row(qhh, khh, vhh, &d, i, tend, sf, path == ADM_ATTN_MATH_BF16, s, qs, o);
            else
                online_row(qhh + i * d.D, khh, vhh, &d, tend, (float)scale, path == ADM_ATTN_FLASH, s, acc, o);
            for (int64_t e = 0; e < d.E; e++) put(out, (h * d.S + i) * d.E + e, o[e]);
        }
        adm_fpenv_leave(&fe);
        free(s);
        free(qs);
        free(acc);
        free(o);
    }
    if (oom) {
        adm_tensor_free(out);
        st = ADM_FAIL(ADM_ERR_NOMEM, "attention emulation: out of memory");
    }
done:
    free(qh);
    free(kh);
    free(vh);
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_attention(const adm_op_params *p, const adm_tensor *const *in, adm_attn_path path, adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_attention_body(p, in, path, out);
    adm_fpenv_leave(&fe);
    return rv;
}

/* ------------------------------------------------------------ row sums */

static float tree_sum(const float *x, int64_t n)
{
    if (n == 1) return x[0];
    if (n == 0) return 0.0f;
    return tree_sum(x, n / 2) + tree_sum(x + n / 2, n - n / 2);
}

ADM_FPENV_BODY
static adm_status emu_row_sum_body(const adm_op_params *p, const adm_tensor *const *in, adm_sum_order order,
                                   adm_tensor *out)
{
    const adm_tensor *x = in[0];
    int axis = p->axis < 0 ? p->axis + x->ndim : p->axis, k = 0;
    int64_t outer = 1, n, inner = 1, os[ADM_MAX_DIMS];
    int oom = 0;
    if (order < ADM_SUM_PAIRWISE || order > ADM_SUM_BF16_ACC)
        return ADM_FAIL(ADM_ERR_INVALID, "row sum emulation: unknown order %d", (int)order);
    if (axis < 0 || axis >= x->ndim)
        return ADM_FAIL(ADM_ERR_INVALID, "row sum emulation: axis %d out of range for rank %d", p->axis, x->ndim);
    n = x->shape[axis];
    for (int dd = 0; dd < x->ndim; dd++) {
        if (dd < axis) outer *= x->shape[dd];
        if (dd > axis) inner *= x->shape[dd];
        if (dd != axis) os[k++] = x->shape[dd];
    }
    ADM_TRY(adm_tensor_alloc(out, ADM_FP32, k, os));
    /* the sums in parallel, each in its own order */
#pragma omp parallel
    {
    float *row = malloc(sizeof *row * (size_t)(n + 1));
    adm_fpenv fe;
    adm_fpenv_enter(&fe);
    if (!row) {
#pragma omp atomic write
        oom = 1;
    }
#pragma omp for schedule(static)
    for (int64_t oi = 0; oi < outer * inner; oi++) {
            int64_t o = oi / inner, in_ = oi % inner;
            float s = 0, lane[32] = {0};
            if (!row) continue;
            for (int64_t j = 0; j < n; j++) row[j] = (float)adm_tensor_get(x, (o * n + j) * inner + in_);
            if (order == ADM_SUM_PAIRWISE) s = tree_sum(row, n);
            else if (order == ADM_SUM_WARP) {
                for (int64_t j = 0; j < n; j++) lane[j % 32] += row[j];
                s = tree_sum(lane, 32);
            } else
                for (int64_t j = 0; j < n; j++) {
                    s += row[j];
                    if (order == ADM_SUM_BF16_ACC) s = bf(s);
                }
            adm_tensor_set_bits(out, o * inner + in_, adm_f32_bits(s));
    }
    adm_fpenv_leave(&fe);
    free(row);
    }
    if (oom) {
        adm_tensor_free(out);
        return ADM_FAIL(ADM_ERR_NOMEM, "row sum emulation: out of memory");
    }
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_emu_row_sum(const adm_op_params *p, const adm_tensor *const *in, adm_sum_order order, adm_tensor *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = emu_row_sum_body(p, in, order, out);
    adm_fpenv_leave(&fe);
    return rv;
}
