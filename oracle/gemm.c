/* matmul, linear, linear+gelu: fp64 GEMM through OpenBLAS DGEMM with the
 * accumulation bound in Cauchy-Schwarz form.
 *
 * Every product x_ik w_jk of fp32-or-narrower operands is exact in fp64
 * (24 + 24 <= 53 significant bits), so DGEMM's only errors are its K - 1
 * additions (in any order, with or without FMA; sums of doubles are exact
 * below the normal range):
 *     |S^ - S| <= gamma_(K-1) sum_k |x_ik w_jk| <= gamma_(K-1) ||x_i||_2 ||w_j||_2.
 * The norms cost O((M + N) K), so the bound adds almost nothing to the
 * GEMM; each is accumulated with upward rounding (squares and sums), so
 * it is >= the exact norm by construction. The bias adds one rounding
 * (u |v^|, the sum of two doubles); GELU adds its own bound at v^ plus its
 * Lipschitz constant on the interval (adm_fn_gelu_slope) times v's bound. Every
 * step of the bound rounds upward (scalar_fns.h).
 *
 * The condition scale (adm_oracle_result.cond) is sum_k |x_ik w_jk| + |b_j|,
 * through GELU max(|gelu(v)|, |gelu'(v)| that): an fp32 SGEMM on |x| and
 * |w| (abs_scaled_rows), which needs only a few bits.
 *
 * Memory beyond the inputs and the result: x in fp64 (M K doubles) and
 * fp32 (M K floats, the scale's operand), w in tiles sharing 128 MiB in
 * fp64 and 64 MiB in fp32, and per thread COND_ROWS x tile floats, so
 * FLUX.1's MLP (4096 x 3072 by 12288 x 3072) needs about 350 MiB extra. */
#include "oracle_internal.h"
#include "adm_fpenv.h"
#include "adm_mem.h"

#include <cblas.h>
#include <stdlib.h>

#define TILE_BYTES ((int64_t)64 << 20)

/* ||row||_2 of each of n rows of length K, rounded so as to be >= exact. */
static void row_norms(const double *rows, int64_t n, int64_t K, double *out, int threads)
{
#pragma omp parallel num_threads(threads)
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n; r++) {
            const double *p = rows + r * K;
            double s = 0;
            for (int64_t k = 0; k < K; k++) s = adm_add_up(s, adm_mul_up(p[k], p[k]));
            out[r] = adm_sqrt_up(s);
        }
        adm_fpenv_leave(&fe);
    }
}

/* ldexp(x, e) without the libm call where 2^e is a normal double: x 2^e
 * is then one correctly rounded multiplication, the value ldexp returns. */
static inline double pow2_scale(double x, int e)
{
    if (e >= -1022 && e <= 1023) return x * adm_f64_from_bits((uint64_t)(e + 1023) << 52);
    return ldexp(x, e);
}

/* |row| of each of n rows in fp32, scaled by a power of two 2^-ex[r] that
 * puts the row's largest finite magnitude in [1, 2): an fp32 GEMM of two
 * such operands has terms below 4 and sums below 4K (no overflow whatever
 * the inputs' range) and loses to underflow only terms 2^-126 below the
 * largest. Its positive terms accumulate with relative error at most
 * gamma_K of fp32 (under 1e-3 for K < 16000): the scale it feeds picks a
 * binade, so that is ample. Non-finite values stay non-finite. */
static void abs_scaled_rows(const double *rows, int64_t n, int64_t K, float *out, int *ex)
{
    for (int64_t r = 0; r < n; r++) {
        const double *p = rows + r * K;
        double m = 0;
        int e = 1;
        for (int64_t k = 0; k < K; k++)
            if (isfinite(p[k]) && fabs(p[k]) > m) m = fabs(p[k]);
        if (m > 0) frexp(m, &e);
        ex[r] = e - 1;
        for (int64_t k = 0; k < K; k++) out[r * K + k] = (float)pow2_scale(fabs(p[k]), -ex[r]);
    }
}

#define COND_ROWS 256 /* rows of x per fp32 GEMM of the condition scale: a tile of COND_ROWS x NT floats */

adm_status adm_o_eval_gemm(const adm_o_ctx *c, double *val, double *bnd)
{
    adm_op_id id = adm_op_id_of(c->op);
    const adm_tensor *x = c->in[0], *w = c->in[1], *bias = id == OP_MATMUL ? NULL : c->in[2];
    adm_tensor wt; /* w as [N, K] */
    int64_t K = x->shape[x->ndim - 1], M, N, NT, tile_bytes;
    double *xd = NULL, *nx = NULL, *bd = NULL, gk;
    float *xa = NULL;
    int *ex = NULL;
    int prev_threads, oom = 0;
    adm_status st = ADM_OK;

    ADM_TRY(adm_o_need_narrow(x, adm_op_name(c->op), adm_op_input_name(c->op, 0)));
    ADM_TRY(adm_o_need_narrow(w, adm_op_name(c->op), adm_op_input_name(c->op, 1)));
    if (id == OP_MATMUL) ADM_TRY(adm_tensor_transpose(w, 0, 1, &wt));
    else wt = *w;
    N = wt.shape[0];
    M = N > 0 ? c->numel / N : 0;
    if (M == 0 || N == 0) return ADM_OK;
    gk = adm_gamma_up((double)(K - 1));
    /* One thread per tile of w: each converts its rows, runs a
     * single-threaded DGEMM and the epilogue while the tile is in cache.
     * One threading system only: OpenBLAS's own workers would spin
     * against the epilogue's. The tiles share 128 MiB. */
    tile_bytes = TILE_BYTES < ((int64_t)128 << 20) / c->threads ? TILE_BYTES : ((int64_t)128 << 20) / c->threads;
    NT = K > 0 ? tile_bytes / (8 * K) : N;
    if (NT < 1) NT = 1;
    {
        /* equal tiles, a multiple of the thread count, for balance */
        int64_t tiles = (N + NT - 1) / NT;
        tiles = (tiles + c->threads - 1) / c->threads * c->threads;
        NT = (N + tiles - 1) / tiles;
        if (NT < 1) NT = 1;
    }
    xd = malloc(sizeof *xd * (size_t)(M * K + 1));
    adm_mem_huge(xd, sizeof *xd * (size_t)(M * K + 1));
    nx = malloc(sizeof *nx * (size_t)(M + 1));
    bd = malloc(sizeof *bd * (size_t)(N + 1));
    if (c->cond) {
        xa = malloc(sizeof *xa * (size_t)(M * K + 1));
        ex = malloc(sizeof *ex * (size_t)(M + 1));
    }
    if (!xd || !nx || !bd || (c->cond && (!xa || !ex))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: cannot allocate the fp64 operands", adm_op_name(c->op));
        goto done;
    }
    adm_o_rows(x, K, 0, M, xd);
    row_norms(xd, M, K, nx, c->threads);
    if (c->cond) abs_scaled_rows(xd, M, K, xa, ex);
    for (int64_t j = 0; j < N; j++) bd[j] = bias ? adm_tensor_get(bias, j) : 0.0;
    prev_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
#pragma omp parallel num_threads(c->threads)
    {
        double *wd = malloc(sizeof *wd * (size_t)(NT * K + 1)), *nw = malloc(sizeof *nw * (size_t)(NT + 1));
        float *wa = c->cond ? malloc(sizeof *wa * (size_t)(NT * K + 1)) : NULL;
        float *ct = c->cond ? malloc(sizeof *ct * (size_t)(COND_ROWS * NT + 1)) : NULL;
        int *ew = c->cond ? malloc(sizeof *ew * (size_t)(NT + 1)) : NULL;
        int ok = wd && nw && (!c->cond || (wa && ct && ew));
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
        if (!ok) {
#pragma omp atomic write
            oom = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t n0 = 0; n0 < N; n0 += NT) {
            int64_t nt = N - n0 < NT ? N - n0 : NT;
            if (!ok) continue;
            adm_o_rows(&wt, K, n0, n0 + nt, wd);
            row_norms(wd, nt, K, nw, 1);
            if (c->cond) abs_scaled_rows(wd, nt, K, wa, ew);
            if (K > 0)
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)nt, (int)K, 1.0, xd, (int)K, wd,
                            (int)K, 0.0, val + n0, (int)N);
            for (int64_t i0 = 0; i0 < M; i0 += COND_ROWS) {
                int64_t mb = M - i0 < COND_ROWS ? M - i0 : COND_ROWS;
                if (c->cond && K > 0)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mb, (int)nt, (int)K, 1.0f, xa + i0 * K,
                                (int)K, wa, (int)K, 0.0f, ct, (int)nt);
                for (int64_t i = i0; i < i0 + mb; i++) {
                    for (int64_t j = n0; j < n0 + nt; j++) {
                        double v = K > 0 ? val[i * N + j] : 0.0, b = adm_mul_up(adm_mul_up(gk, nx[i]), nw[j - n0]), e, cz = 0;
                        if (c->cond && K > 0) cz = pow2_scale((double)ct[(i - i0) * nt + (j - n0)], ex[i] + ew[j - n0]);
                        if (bias) {
                            v += bd[j];
                            b = adm_add_up(b, adm_mul_up(ADM_U, fabs(v)));
                            cz += fabs(bd[j]);
                        }
                        if (id == OP_LINEAR_GELU) {
                            double g = c->p->gelu_tanh ? adm_o_gelu_tanh(v, &e) : adm_o_gelu_erf(v, &e);
                            b = adm_add_up(e, adm_mul_up(adm_fn_gelu_slope(v, b), b));
                            if (c->cond)
                                cz = adm_o_cond_chain(g, c->p->gelu_tanh ? adm_fn_gelu_tanh_d(v) : adm_fn_gelu_erf_d(v),
                                                      cz);
                            v = g;
                        }
                        val[i * N + j] = v;
                        bnd[i * N + j] = b;
                        if (c->cond) c->cond[i * N + j] = cz;
                    }
                }
            }
        }
        adm_fpenv_leave(&fe);
        free(wd);
        free(nw);
        free(wa);
        free(ct);
        free(ew);
    }
    openblas_set_num_threads(prev_threads);
    if (oom) st = ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: cannot allocate a tile of w", adm_op_name(c->op));
done:
    free(xd);
    free(nx);
    free(bd);
    free(xa);
    free(ex);
    return st;
}

/* For the elements where the Cauchy-Schwarz form is too blunt: the value
 * recomputed in k order (its bound holds for any order) and the sharper
 * bound gamma_(K-1) sum_k |x_ik w_jk|, in O(K). */
adm_status adm_o_gemm_tighten(const adm_o_ctx *c, int64_t index, double *value, double *bound)
{
    adm_op_id id = adm_op_id_of(c->op);
    const adm_tensor *x = c->in[0], *w = c->in[1];
    adm_tensor wt;
    int64_t K = x->shape[x->ndim - 1], N, i, j;
    double s = 0, v = 0, b, gk = adm_gamma_up((double)(K - 1));
    if (id == OP_MATMUL) ADM_TRY(adm_tensor_transpose(w, 0, 1, &wt));
    else wt = *w;
    N = wt.shape[0];
    i = index / N;
    j = index % N;
    for (int64_t k = 0; k < K; k++) {
        double p = adm_tensor_get(x, i * K + k) * adm_tensor_get(&wt, j * K + k);
        s = adm_add_up(s, fabs(p)); /* >= the exact sum of |p| */
        v += p;
    }
    b = adm_mul_up(gk, s);
    if (id != OP_MATMUL && c->in[2]) {
        v += adm_tensor_get(c->in[2], j);
        b = adm_add_up(b, adm_mul_up(ADM_U, fabs(v)));
    }
    if (id == OP_LINEAR_GELU) {
        double e, g = c->p->gelu_tanh ? adm_o_gelu_tanh(v, &e) : adm_o_gelu_erf(v, &e);
        b = adm_add_up(e, adm_mul_up(adm_fn_gelu_slope(v, b), b));
        v = g;
    }
    *value = v;
    *bound = b;
    return ADM_OK;
}
