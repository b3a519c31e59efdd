/* The CUDA twins of the CPU emulations of fusions/dit.json
 * (candidates/cuda_twins.h): gemm_emu.c's GEMM family (eager, bias
 * epilogue, split-K with fp32 or bf16 partials, tensor-core k-blocks,
 * NVFP4-quantized input; linear+gelu eager and fused epilogue),
 * misc_emu.c's gated residual and linear attention, norm_emu.c's
 * rmsnorm, layernorm and groupnorm.
 *
 * Bit identity, not speed, is the contract. Every kernel does its
 * emulation's operations in its order: one thread per output element for
 * the GEMMs (the k loop sequential, its operands staged through shared
 * memory in tiles that start at each split's first k, so that k-blocks
 * and splits fall where the emulation's do), one warp per row or group
 * for the norms (a statistic the emulation sums in order is summed by one
 * lane, from chunks the warp stages in shared memory; the 32-lane sum of
 * the fused RMSNorm is the warp's own lanes and the emulation's tree as
 * shuffles). Each IEEE operation is an explicitly rounded intrinsic
 * (__fadd_rn ...), which nvcc never contracts into an FMA or reorders;
 * the module is also built with -fmad=false. Roundings to bf16/fp16 are
 * the bit-level conversions of core/adm_core.h; GELU and SiLU use glibc's
 * tanhf, erff and expf as ported in adm_libm.h, in the build of expf that
 * the host's libm runs (adm_lm_host_variant), since the emulations call
 * the host's libm. Inputs reach the kernels as the emulations read them,
 * (float) of each element's exact value in logical order, contiguous: a
 * dense bf16, fp16 or fp32 input goes up as stored and is widened on the
 * device (widen_f32); a view (strided, transposed, broadcast) or another
 * dtype is read on the host and goes up in fp32. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <new>
#include <vector>

extern "C" {
#include "adm_cuda.h"
#include "cuda_twins.h"
}
#include "adm_cuda_check.h"
#include "adm_libm.h"

namespace {

/* ---------------------------------------------------------------- device arithmetic */

enum { OUT_BF16 = 0, OUT_FP16 = 1, OUT_FP32 = 2 };
enum { GELU_NONE = 0, GELU_TANH = 1, GELU_ERF = 2 };
enum { STATS_SEQ = 0, STATS_BLOCKED = 1, STATS_BF16 = 2 }; /* norm_emu.h's NORM_STATS_* */

__device__ __forceinline__ float fa(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float fs(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float fm(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float fdv(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ bool nan_f(float v) { return (__float_as_uint(v) & 0x7fffffffu) > 0x7f800000u; }

/* C99 fmaxf/fminf with quiet NaNs (glibc's): a NaN operand gives the other */
__device__ __forceinline__ float fmax_c(float a, float b)
{
    if (nan_f(a)) return b;
    if (nan_f(b)) return a;
    return a > b ? a : b;
}
__device__ __forceinline__ float fmin_c(float a, float b)
{
    if (nan_f(a)) return b;
    if (nan_f(b)) return a;
    return a < b ? a : b;
}

/* adm_bf16_from_f32 / adm_bf16_to_f32 */
__device__ __forceinline__ uint32_t bf16_bits(float f)
{
    uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
    x += 0x7fffu + ((x >> 16) & 1u);
    return x >> 16;
}
__device__ __forceinline__ float bf(float f) { return __uint_as_float(bf16_bits(f) << 16); }

/* adm_fp16_from_f32 (round to nearest) / adm_fp16_to_f32 */
__device__ uint32_t fp16_bits(float f)
{
    uint32_t x = __float_as_uint(f), s = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u) return s | (x > 0x7f800000u ? 0x7e00u | ((x >> 13) & 0x3ffu) : 0x7c00u);
    if (x >= 0x477ff000u) return s | 0x7c00u;
    if (x >= 0x38800000u) {
        uint32_t odd = (x >> 13) & 1u;
        x += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
        return s | (x >> 13);
    }
    if (x <= 0x33000000u) return s;
    {
        uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
        uint32_t sh = 126u - e, r = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return s | r;
    }
}
__device__ float fp16_value(uint32_t h)
{
    uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return __uint_as_float(s | 0x7f800000u | (m << 13));
    if (e != 0) return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return __uint_as_float(s);
    {
        int sh = 0;
        while (!(m & 0x400u)) { m <<= 1; sh++; }
        return __uint_as_float(s | ((uint32_t)(113 - sh) << 23) | ((m & 0x3ffu) << 13));
    }
}

/* round_to(out, RNE, v) of gemm_emu.c, adm_format_round of misc_emu.c */
__device__ __forceinline__ float round_out(int k, float v)
{
    if (k == OUT_BF16) return bf(v);
    if (k == OUT_FP16) return fp16_value(fp16_bits(v));
    return v;
}

/* adm_format_encode(out, v, RNE, 0): a NaN becomes the canonical quiet
 * NaN of its sign */
__device__ __forceinline__ uint32_t encode_out(int k, float v)
{
    uint32_t x = __float_as_uint(v);
    if (nan_f(v)) return k == OUT_BF16 ? ((x >> 16) & 0x8000u) | 0x7fc0u
                       : k == OUT_FP16 ? ((x >> 16) & 0x8000u) | 0x7e00u : (x & 0x80000000u) | 0x7fc00000u;
    if (k == OUT_BF16) return bf16_bits(v);
    if (k == OUT_FP16) return fp16_bits(v);
    return x;
}

__device__ __forceinline__ void store_out(void *out, int k, int64_t i, uint32_t bits)
{
    if (k == OUT_FP32) ((uint32_t *)out)[i] = bits;
    else ((uint16_t *)out)[i] = (uint16_t)bits;
}

/* gemm_emu.c's gelu_f32 */
__device__ float gelu_f32(float x, int kind, int variant)
{
    if (kind == GELU_TANH) {
        const float beta = 0.7978845608028654f, kappa = 0.044715f;
        float cube = fm(fm(x, x), x), inner = fm(beta, fa(x, fm(kappa, cube)));
        return fm(fm(0.5f, x), fa(1.0f, adm_lm_tanhf(inner)));
    }
    if (kind == GELU_ERF) return fm(fm(0.5f, x), fa(1.0f, adm_lm_erff(fm(x, 0.7071067811865476f), variant)));
    return x;
}

/* norm_emu.c's silu and rsqrt_f32 */
__device__ __forceinline__ float silu_f(float v, int variant) { return fdv(v, fa(1.0f, adm_lm_expf(-v, variant))); }
__device__ __forceinline__ float rsqrt_f32(float v)
{
    return __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn((double)v)));
}

/* ---------------------------------------------------------------- GEMM family */

struct gemm_args {
    const float *x, *w, *bias;
    void *out;
    int64_t M, N, K;
    int splits, partial_round, bias_in_acc, bf16_acc, gelu, gelu_fused, kblock, okind, variant;
};

#define TB 16 /* outputs per block side */
#define TK 32 /* k per staged tile; a multiple of every k-block */

/* One thread per output y[i, j] (block TB x TB); gemm_emu.c's loop for it. */
__global__ void __launch_bounds__(TB * TB) gemm_twin(gemm_args a)
{
    __shared__ float xs[TB][TK + 1], ws[TB][TK + 1];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TB + tx;
    const int64_t j0 = (int64_t)blockIdx.x * TB, chunk = (a.K + a.splits - 1) / a.splits;
    for (int64_t i0 = (int64_t)blockIdx.y * TB; i0 < a.M; i0 += (int64_t)gridDim.y * TB) {
        const int64_t i = i0 + ty, j = j0 + tx;
        float acc = 0.0f;
        for (int s = 0; s < a.splits; s++) {
            float part = 0.0f;
            const int64_t k0 = s * chunk, k1 = k0 + chunk < a.K ? k0 + chunk : a.K;
            for (int64_t kt = k0; kt < k1; kt += TK) {
                const int kn = (int)(k1 - kt < TK ? k1 - kt : TK);
                for (int e = tid; e < TB * TK; e += TB * TB) {
                    const int r = e / TK, c = e % TK;
                    xs[r][c] = (i0 + r < a.M && c < kn) ? a.x[(i0 + r) * a.K + kt + c] : 0.0f;
                    ws[r][c] = (j0 + r < a.N && c < kn) ? a.w[(j0 + r) * a.K + kt + c] : 0.0f;
                }
                __syncthreads();
                if (a.kblock > 0) {
                    /* products exact in fp64, a block's sum in fp64, one
                     * rounding to fp32 as it joins the accumulator */
                    for (int kb = 0; kb < kn; kb += a.kblock) {
                        const int kend = kb + a.kblock < kn ? kb + a.kblock : kn;
                        double blk = 0.0;
                        for (int k = kb; k < kend; k++)
                            blk = __dadd_rn(blk, __dmul_rn((double)xs[ty][k], (double)ws[tx][k]));
                        part = __double2float_rn(__dadd_rn((double)part, blk));
                    }
                } else {
                    for (int k = 0; k < kn; k++) {
                        part = fa(part, fm(xs[ty][k], ws[tx][k]));
                        if (a.bf16_acc) part = bf(part);
                    }
                }
                __syncthreads();
            }
            if (a.partial_round) part = round_out(a.okind, part);
            acc = s == 0 ? part : fa(acc, part);
            if (a.bf16_acc) acc = bf(acc);
        }
        if (i < a.M && j < a.N) {
            float bv = a.bias ? a.bias[j] : 0.0f, v;
            if (a.bias_in_acc) {
                v = fa(acc, bv);
            } else {
                v = round_out(a.okind, acc);
                if (a.bias) v = fa(v, bv);
            }
            if (a.gelu != GELU_NONE) {
                if (!a.gelu_fused) v = round_out(a.okind, v);
                v = gelu_f32(v, a.gelu, a.variant);
            }
            store_out(a.out, a.okind, i * a.N + j, encode_out(a.okind, v));
        }
    }
}

/* The max over |x| as bits: |x| of floats orders as their bits, and a
 * NaN (bits above +Inf's) wins, as torch.amax propagates it. */
__global__ void amax_bits(const float *x, int64_t n, unsigned int *res)
{
    unsigned int m = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        m = max(m, __float_as_uint(x[i]) & 0x7fffffffu);
    atomicMax(res, m);
}

/* RNE to e4m3's 3 fraction bits, for v in its normal range [2^-6, 448] */
__device__ __forceinline__ float e4m3_round(float v)
{
    uint32_t x = __float_as_uint(v);
    x += 0x7ffffu + ((x >> 20) & 1u);
    return __uint_as_float(x & 0xfff00000u);
}

/* RNE to e2m1 (0, 0.5, 1, 1.5, 2, 3, 4, 6; quantum 0.5 below 2, 1 below 4,
 * then 2), for |v| <= 6; the sign kept (-0 too) */
__device__ __forceinline__ float e2m1_round(float v)
{
    float a = fabsf(v), r;
    if (a < 2.0f) r = fm(rintf(fm(a, 2.0f)), 0.5f);
    else if (a < 4.0f) r = rintf(a);
    else r = fm(rintf(fm(a, 0.5f)), 2.0f);
    return copysignf(r, v);
}

/* misc_emu.c's adm_emu_nvfp4_qdq, one thread per block of 16 */
__global__ void nvfp4_qdq(const float *x, int64_t n, const unsigned int *amax, float *out)
{
    const float g = fdv(__uint_as_float(*amax), 2688.0f);
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < n / 16; b += (int64_t)gridDim.x * blockDim.x) {
        float xs[16], bamax = 0.0f, sb, t;
        for (int j = 0; j < 16; j++) {
            xs[j] = x[b * 16 + j];
            if (nan_f(xs[j]) || nan_f(bamax)) bamax = __uint_as_float(0x7fc00000u);
            else if (fabsf(xs[j]) > bamax) bamax = fabsf(xs[j]);
        }
        if (g == 0.0f) {
            for (int j = 0; j < 16; j++) out[b * 16 + j] = fm(0.0f, xs[j]);
            continue;
        }
        sb = fdv(fdv(bamax, 6.0f), g);
        if (!nan_f(sb)) sb = e4m3_round(fmin_c(fmax_c(sb, 0x1p-6f), 448.0f));
        t = fm(g, sb);
        for (int j = 0; j < 16; j++) {
            float q = fdv(xs[j], t);
            if (!nan_f(q)) q = e2m1_round(fmin_c(fmax_c(q, -6.0f), 6.0f));
            out[b * 16 + j] = fm(q, t);
        }
    }
}

/* ---------------------------------------------------------------- gated residual */

__global__ void gated_residual(const float *x, const float *g, const float *y, int64_t n, int early, int okind,
                               void *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float gy = fm(g[i], y[i]);
        if (early) gy = round_out(okind, gy);
        store_out(out, okind, i, encode_out(okind, fa(x[i], gy)));
    }
}

/* ---------------------------------------------------------------- linear attention */

/* kv[h][d][e] = sum over j in order of relu(k) v, and ks[h][d] (e == E) of
 * relu(k); rounded to bf16 for the bf16 state */
__global__ void la_state(const float *k, const float *v, int64_t H, int64_t T, int64_t D, int64_t E, int bf16_state,
                         float *kv, float *ks)
{
    const int64_t n = H * D * (E + 1);
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t e = t % (E + 1), d = (t / (E + 1)) % D, h = t / ((E + 1) * D);
        float acc = 0.0f;
        for (int64_t j = 0; j < T; j++) {
            float f = fmax_c(k[(h * T + j) * D + d], 0.0f);
            acc = e == E ? fa(acc, f) : fa(acc, fm(f, v[(h * T + j) * E + e]));
        }
        if (bf16_state) acc = bf(acc);
        if (e == E) ks[h * D + d] = acc;
        else kv[(h * D + d) * E + e] = acc;
    }
}

__global__ void la_out(const float *q, const float *kv, const float *ks, int64_t H, int64_t S, int64_t D, int64_t E,
                       float eps, uint32_t *out)
{
    const int64_t n = H * S * E;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t e = t % E, hi = t / E, h = hi / S;
        const float *qr = q + hi * D;
        float den = 0.0f, num = 0.0f;
        for (int64_t d = 0; d < D; d++) den = fa(den, fm(fmax_c(qr[d], 0.0f), ks[h * D + d]));
        den = fa(den, eps);
        for (int64_t d = 0; d < D; d++) num = fa(num, fm(fmax_c(qr[d], 0.0f), kv[(h * D + d) * E + e]));
        out[t] = __float_as_uint(fdv(num, den));
    }
}

/* ---------------------------------------------------------------- norms: one warp per row or group */

#define WARPS 8    /* warps per block */
#define STAGE 512  /* elements a warp stages for its one-lane sums */

/* The sum of f(v) over the row's elements k = 0..n-1 in order, by lane 0
 * (the others get it too): v = x[offset(k)], staged through sh. what: 0
 * v, 1 v*v, 2 v*v rounded to bf16 after each add, 3 (v - mu)^2. */
template <typename Off>
__device__ float seq_sum(const float *x, int64_t n, Off off, int what, float mu, float *sh)
{
    const int lane = threadIdx.x & 31;
    float s = 0.0f;
    for (int64_t c0 = 0; c0 < n; c0 += STAGE) {
        const int cn = (int)(n - c0 < STAGE ? n - c0 : STAGE);
        for (int k = lane; k < cn; k += 32) sh[k] = x[off(c0 + k)];
        __syncwarp();
        if (lane == 0)
            for (int k = 0; k < cn; k++) {
                const float v = sh[k];
                if (what == 0) s = fa(s, v);
                else if (what == 3) s = fa(s, fm(fs(v, mu), fs(v, mu)));
                else {
                    s = fa(s, fm(v, v));
                    if (what == 2) s = bf(s);
                }
            }
        __syncwarp();
    }
    return __shfl_sync(0xffffffffu, s, 0);
}

struct row_off {
    int64_t base;
    __device__ int64_t operator()(int64_t k) const { return base + k; }
};

__global__ void __launch_bounds__(WARPS * 32) rmsnorm_twin(const float *x, const float *w, int64_t R, int64_t C,
                                                           int how, int fused_out, int silu, float eps, int okind,
                                                           int variant, void *out)
{
    __shared__ float stage[WARPS][STAGE];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    for (int64_t r = (int64_t)blockIdx.x * WARPS + wid; r < R; r += (int64_t)gridDim.x * WARPS) {
        const float *xr = x + r * C;
        float sum, ms, rs;
        if (how == STATS_BLOCKED) {
            /* lane l sums k = l mod 32 in order; then lane[l] += lane[l + w]
             * for w = 16, 8, 4, 2, 1 */
            float s = 0.0f;
            for (int64_t k = lane; k < C; k += 32) s = fa(s, fm(xr[k], xr[k]));
            for (int wdt = 16; wdt > 0; wdt >>= 1) {
                float o = __shfl_down_sync(0xffffffffu, s, wdt);
                if (lane < wdt) s = fa(s, o);
            }
            sum = __shfl_sync(0xffffffffu, s, 0);
        } else {
            sum = seq_sum(x, C, row_off{r * C}, how == STATS_BF16 ? 2 : 1, 0.0f, stage[wid]);
        }
        ms = fdv(sum, __ll2float_rn(C));
        rs = rsqrt_f32(fa(ms, eps));
        for (int64_t k = lane; k < C; k += 32) {
            float v = fm(xr[k], rs), wk = w ? w[k] : 1.0f;
            if (fused_out) v = fm(v, wk);
            else v = bf(fm(bf(v), wk));
            if (silu) v = fused_out ? silu_f(v, variant) : silu_f(bf(v), variant);
            store_out(out, okind, r * C + k, encode_out(okind, v));
        }
    }
}

__global__ void __launch_bounds__(WARPS * 32) layernorm_twin(const float *x, const float *w, const float *b,
                                                             const float *shift, const float *scale, int64_t R,
                                                             int64_t C, int folded, int modulate, float eps,
                                                             int okind, void *out)
{
    __shared__ float stage[WARPS][STAGE];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    for (int64_t r = (int64_t)blockIdx.x * WARPS + wid; r < R; r += (int64_t)gridDim.x * WARPS) {
        const float *xr = x + r * C;
        float mu = fdv(seq_sum(x, C, row_off{r * C}, 0, 0.0f, stage[wid]), __ll2float_rn(C));
        float var = seq_sum(x, C, row_off{r * C}, 3, mu, stage[wid]);
        float rs = rsqrt_f32(fa(fdv(var, __ll2float_rn(C)), eps));
        for (int64_t k = lane; k < C; k += 32) {
            const int64_t i = r * C + k;
            float wk = w ? w[k] : 1.0f, bk = b ? b[k] : 0.0f, v;
            float s1 = modulate ? fa(1.0f, scale[i]) : 1.0f, t = modulate ? shift[i] : 0.0f;
            if (folded) {
                float av = fm(fm(rs, wk), s1), cc = fa(fm(fs(bk, fm(fm(mu, rs), wk)), s1), t);
                v = fa(fm(xr[k], av), cc);
            } else {
                v = bf(fa(fm(fm(fs(xr[k], mu), rs), wk), bk));
                if (modulate) v = bf(fa(bf(fm(v, bf(s1))), t));
            }
            store_out(out, okind, i, encode_out(okind, v));
        }
    }
}

struct gn_off {
    int64_t bb, g, cpg, L, C;
    int cl;
    __device__ int64_t chan(int64_t k) const { return g * cpg + (cl ? k % cpg : k / L); }
    __device__ int64_t operator()(int64_t k) const
    {
        const int64_t c = chan(k), l = cl ? k / cpg : k % L;
        return cl ? (bb * L + l) * C + c : (bb * C + c) * L + l;
    }
};

__global__ void __launch_bounds__(WARPS * 32) groupnorm_twin(const float *x, const float *w, const float *b,
                                                             int64_t B, int64_t C, int64_t L, int64_t G, int cl,
                                                             int fused, int silu, float eps, int okind, int variant,
                                                             void *out)
{
    __shared__ float stage[WARPS][STAGE];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const int64_t cpg = C / G, n = cpg * L;
    for (int64_t bg = (int64_t)blockIdx.x * WARPS + wid; bg < B * G; bg += (int64_t)gridDim.x * WARPS) {
        const gn_off off{bg / G, bg % G, cpg, L, C, cl};
        float mu = fdv(seq_sum(x, n, off, 0, 0.0f, stage[wid]), __ll2float_rn(n));
        float var = seq_sum(x, n, off, 3, mu, stage[wid]);
        float rs = rsqrt_f32(fa(fdv(var, __ll2float_rn(n)), eps));
        for (int64_t k = lane; k < n; k += 32) {
            const int64_t c = off.chan(k), o = off(k);
            float wk = w ? w[c] : 1.0f, bk = b ? b[c] : 0.0f, v = x[o], y;
            if (fused) {
                float s = fm(rs, wk), t = fs(bk, fm(mu, s));
                y = fa(fm(v, s), t);
            } else {
                y = bf(fa(fm(fm(fs(v, mu), rs), wk), bk));
            }
            if (silu) y = silu_f(y, variant);
            store_out(out, okind, o, encode_out(okind, y));
        }
    }
}

/* ---------------------------------------------------------------- the libm port over a range */

__global__ void libm_range(int fn, int variant, uint32_t first, uint32_t *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float x = __uint_as_float(first + (uint32_t)i), r;
        if (fn == 0) r = adm_lm_expf(x, variant);
        else if (fn == 1) r = adm_lm_tanhf(x);
        else if (fn == 2) r = adm_lm_erff(x, variant);
        else r = adm_lm_expm1f(x);
        out[i] = __float_as_uint(r);
    }
}

/* ---------------------------------------------------------------- host side */

struct dbuf {
    void *p = nullptr;
    ~dbuf() { if (p) cudaFree(p); }
    float *f() const { return (float *)p; }
};

const char *twin_names[ADM_TWIN_COUNT] = {
    "linear/cuda_eager", "linear/cuda_bias_epilogue", "linear/cuda_splitk_fp32", "linear/cuda_splitk_bf16",
    "linear/cuda_added_qkv_fused", "linear/cuda_nvfp4_input", "linear+gelu/cuda_eager",
    "linear+gelu/cuda_fused_epilogue", "gated_residual/cuda_eager", "gated_residual/cuda_early_round",
    "rmsnorm/cuda_eager", "rmsnorm/cuda_fused_fp32", "rmsnorm/cuda_bf16_stats", "layernorm/cuda_eager",
    "layernorm/cuda_fused_affine_folded", "linear_attention/cuda_eager_fp32", "linear_attention/cuda_bf16_gemm",
    "groupnorm/cuda_eager", "groupnorm/cuda_fused_twopass"};

int contiguous(const adm_tensor *t)
{
    int64_t want = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != want) return 0;
        want *= t->shape[d];
    }
    return 1;
}

/* t's elements in logical order as the emulations read them:
 * (float)adm_tensor_get, so a NaN arrives as the quiet NaN of its sign. */
adm_status host_f32(const adm_tensor *t, std::vector<float> &v)
{
    int64_t n = adm_tensor_numel(t);
    try {
        v.resize((size_t)n);
    } catch (const std::bad_alloc &) {
        return ADM_FAIL(ADM_ERR_NOMEM, "CUDA twin: out of memory for %lld input elements", (long long)n);
    }
    if (t->dtype == ADM_BF16 && contiguous(t)) {
        const uint16_t *p = (const uint16_t *)t->data + t->offset;
        for (int64_t i = 0; i < n; i++) {
            uint32_t b = (uint32_t)p[i] << 16;
            if ((b & 0x7fffffffu) > 0x7f800000u) b = (b & 0x80000000u) | 0x7fc00000u;
            memcpy(&v[(size_t)i], &b, 4);
        }
        return ADM_OK;
    }
    for (int64_t i = 0; i < n; i++) v[(size_t)i] = (float)adm_tensor_get(t, i);
    return ADM_OK;
}

enum { RAW_BF16 = 0, RAW_FP16 = 1, RAW_FP32 = 2 };

/* Dense storage in fp32, bit for bit what host_f32 gives: bf16, fp16 and
 * fp32 are exact in fp32. A NaN: bf16's as host_f32's bf16 path makes it,
 * the quiet NaN of its sign; fp16's and fp32's as (float)adm_tensor_get
 * makes it on the host (float -> double -> float keeps sign and payload
 * and sets the quiet bit: IEEE 754's conversions, x86-64's and AArch64's
 * with default NaN off). The outputs carry no input payload either way
 * (encode_out). */
__global__ void widen_f32(const void *src, int raw, int64_t n, float *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t b;
        if (raw == RAW_BF16) {
            b = (uint32_t)((const uint16_t *)src)[i] << 16;
            if ((b & 0x7fffffffu) > 0x7f800000u) b = (b & 0x80000000u) | 0x7fc00000u;
        } else {
            b = raw == RAW_FP16 ? __float_as_uint(fp16_value(((const uint16_t *)src)[i])) : ((const uint32_t *)src)[i];
            if ((b & 0x7fffffffu) > 0x7f800000u) b |= 0x00400000u;
        }
        out[i] = __uint_as_float(b);
    }
}

adm_status upload(const std::vector<float> &v, dbuf &d)
{
    ADM_CUDA_CHECK(cudaMalloc(&d.p, v.size() * sizeof(float) + 4));
    if (!v.empty()) ADM_CUDA_CHECK(cudaMemcpy(d.p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
    return ADM_OK;
}

unsigned grid_for(int64_t n, int per_block);

/* An input in fp32 on the device, contiguous; NULL stays NULL. Dense bf16,
 * fp16 and fp32 go up as stored (half the bytes of fp32 for the 16-bit
 * formats, and no pass over every element on the host) and are widened
 * there; the rest is read on the host (host_f32). */
adm_status input(const adm_tensor *t, dbuf &d)
{
    std::vector<float> v;
    int64_t n;
    if (!t) return ADM_OK;
    n = adm_tensor_numel(t);
    if (n > 0 && contiguous(t) && (t->dtype == ADM_BF16 || t->dtype == ADM_FP16 || t->dtype == ADM_FP32)) {
        int raw = t->dtype == ADM_BF16 ? RAW_BF16 : t->dtype == ADM_FP16 ? RAW_FP16 : RAW_FP32;
        size_t es = raw == RAW_FP32 ? 4 : 2;
        dbuf stored;
        ADM_CUDA_CHECK(cudaMalloc(&d.p, (size_t)n * sizeof(float) + 4));
        ADM_CUDA_CHECK(cudaMalloc(&stored.p, (size_t)n * es));
        ADM_CUDA_CHECK(cudaMemcpy(stored.p, (const char *)t->data + es * (size_t)t->offset, (size_t)n * es,
                                  cudaMemcpyHostToDevice));
        widen_f32<<<grid_for(n, 256), 256>>>(stored.p, raw, n, d.f());
        ADM_CUDA_CHECK(cudaGetLastError());
        return ADM_OK; /* stored's free waits for the kernel (cudaFree synchronizes) */
    }
    ADM_TRY(host_f32(t, v));
    return upload(v, d);
}

adm_status out_kind(adm_dtype dt, adm_twin which, int *k)
{
    if (dt == ADM_BF16) *k = OUT_BF16;
    else if (dt == ADM_FP16) *k = OUT_FP16;
    else if (dt == ADM_FP32) *k = OUT_FP32;
    else
        return ADM_FAIL(ADM_ERR_UNSUPPORTED, "CUDA twin %s writes bf16, fp16 or fp32 outputs, not %s",
                        twin_names[which], adm_dtype_name(dt));
    return ADM_OK;
}

/* out's storage on the device (zeros: the elements a kernel leaves are the
 * emulation's zero-filled ones), then back into out. */
adm_status out_alloc(const adm_tensor *out, int k, dbuf &d)
{
    size_t bytes = (size_t)adm_tensor_numel(out) * (k == OUT_FP32 ? 4 : 2);
    ADM_CUDA_CHECK(cudaMalloc(&d.p, bytes + 4));
    ADM_CUDA_CHECK(cudaMemset(d.p, 0, bytes + 4));
    return ADM_OK;
}

adm_status out_fetch(adm_tensor *out, int k, const dbuf &d)
{
    size_t bytes = (size_t)adm_tensor_numel(out) * (k == OUT_FP32 ? 4 : 2);
    ADM_CUDA_CHECK_LAUNCH();
    if (bytes) ADM_CUDA_CHECK(cudaMemcpy(out->data, d.p, bytes, cudaMemcpyDeviceToHost));
    return ADM_OK;
}

/* The build of glibc's expf the host's libm runs (adm_libm.h). */
int host_variant()
{
    static const int v = adm_lm_host_variant();
    return v < 0 ? ADM_LM_FMA : v;
}

unsigned grid_for(int64_t n, int per_block)
{
    int64_t g = (n + per_block - 1) / per_block;
    return (unsigned)(g < 1 ? 1 : g > 65535 ? 65535 : g);
}

adm_status run_gemm(adm_twin which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    const adm_tensor *x = in[0], *w = in[1], *bias = in[2];
    int64_t K = x->shape[x->ndim - 1], N = w->shape[0], M = K ? adm_tensor_numel(x) / K : 0, os[ADM_MAX_DIMS];
    gemm_args a;
    dbuf dx, dw, db, dy, dq, damax;
    adm_status st;
    int lg = which == ADM_TWIN_LG_EAGER || which == ADM_TWIN_LG_FUSED_EPILOGUE;
    memset(&a, 0, sizeof a);
    a.splits = 1;
    a.gelu = lg ? (p->gelu_tanh ? GELU_TANH : GELU_ERF) : GELU_NONE;
    a.variant = host_variant();
    switch (which) {
    case ADM_TWIN_LINEAR_BIAS_EPILOGUE: a.bias_in_acc = 1; break;
    case ADM_TWIN_LINEAR_SPLITK_FP32: a.splits = 4; break;
    case ADM_TWIN_LINEAR_SPLITK_BF16: a.splits = 4; a.partial_round = 1; break;
    case ADM_TWIN_LINEAR_ADDED_QKV: a.kblock = 16; break;
    case ADM_TWIN_LG_FUSED_EPILOGUE: a.bias_in_acc = 1; a.gelu_fused = 1; break;
    default: break;
    }
    ADM_TRY(out_kind(x->dtype, which, &a.okind));
    if (which == ADM_TWIN_LINEAR_NVFP4_INPUT) {
        int64_t n = adm_tensor_numel(x), last = x->ndim ? x->shape[x->ndim - 1] : 1;
        if (last % 16 != 0)
            return ADM_FAIL(ADM_ERR_SHAPE, "NVFP4 emulation: the last dimension (%lld) must be a multiple of the "
                            "block of 16", (long long)last);
        ADM_TRY(input(x, dq));
        ADM_CUDA_CHECK(cudaMalloc(&damax.p, 4));
        ADM_CUDA_CHECK(cudaMemset(damax.p, 0, 4));
        ADM_CUDA_CHECK(cudaMalloc(&dx.p, (size_t)n * 4 + 4));
        amax_bits<<<grid_for(n, 256), 256>>>(dq.f(), n, (unsigned int *)damax.p);
        ADM_CUDA_CHECK(cudaGetLastError());
        nvfp4_qdq<<<grid_for(n / 16, 256), 256>>>(dq.f(), n, (const unsigned int *)damax.p, dx.f());
        ADM_CUDA_CHECK(cudaGetLastError());
    }
    if (w->ndim != 2 || w->shape[1] != K)
        return ADM_FAIL(ADM_ERR_SHAPE, "emulated GEMM: w must be [N, %lld]", (long long)K);
    memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    os[x->ndim - 1] = N;
    ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, os));
    if (which != ADM_TWIN_LINEAR_NVFP4_INPUT && (st = input(x, dx)) != ADM_OK) goto fail;
    if ((st = input(w, dw)) != ADM_OK || (st = input(bias, db)) != ADM_OK ||
        (st = out_alloc(out, a.okind, dy)) != ADM_OK)
        goto fail;
    a.x = dx.f();
    a.w = dw.f();
    a.bias = bias ? db.f() : nullptr;
    a.out = dy.p;
    a.M = M;
    a.N = N;
    a.K = K;
    if (M > 0 && N > 0) {
        dim3 block(TB, TB), grid((unsigned)((N + TB - 1) / TB), grid_for(M, TB));
        if ((N + TB - 1) / TB > 0x7fffffff) {
            st = ADM_FAIL(ADM_ERR_UNSUPPORTED, "CUDA twin %s: N = %lld is too wide", twin_names[which], (long long)N);
            goto fail;
        }
        gemm_twin<<<grid, block>>>(a);
    }
    if ((st = out_fetch(out, a.okind, dy)) != ADM_OK) goto fail;
    return ADM_OK;
fail:
    adm_tensor_free(out);
    return st;
}

adm_status run_gated_residual(adm_twin which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    const adm_tensor *x = in[0], *y = in[2];
    adm_tensor g;
    int64_t n = adm_tensor_numel(x);
    int k;
    dbuf dx, dg, dy, dout;
    adm_status st;
    (void)p;
    ADM_TRY(out_kind(x->dtype, which, &k));
    ADM_TRY(adm_tensor_broadcast(in[1], x->ndim, x->shape, &g));
    ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, x->shape));
    if ((st = input(x, dx)) != ADM_OK || (st = input(&g, dg)) != ADM_OK || (st = input(y, dy)) != ADM_OK ||
        (st = out_alloc(out, k, dout)) != ADM_OK)
        goto fail;
    if (n > 0) gated_residual<<<grid_for(n, 256), 256>>>(dx.f(), dg.f(), dy.f(), n, which == ADM_TWIN_GR_EARLY_ROUND, k,
                                                          dout.p);
    if ((st = out_fetch(out, k, dout)) != ADM_OK) goto fail;
    return ADM_OK;
fail:
    adm_tensor_free(out);
    return st;
}

adm_status run_linear_attention(adm_twin which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    const adm_tensor *q = in[0], *k = in[1], *v = in[2];
    int r = q->ndim;
    int64_t S = q->shape[r - 2], D = q->shape[r - 1], T = k->shape[r - 2], E = v->shape[r - 1];
    int64_t H = (S > 0 && D > 0) ? adm_tensor_numel(q) / (S * D) : 1, os[ADM_MAX_DIMS];
    dbuf dq, dk, dv, dkv, dks, dout;
    adm_status st;
    memcpy(os, q->shape, sizeof(int64_t) * (size_t)r);
    os[r - 1] = E;
    ADM_TRY(adm_tensor_alloc(out, ADM_FP32, r, os));
    if ((st = input(q, dq)) != ADM_OK || (st = input(k, dk)) != ADM_OK || (st = input(v, dv)) != ADM_OK ||
        (st = out_alloc(out, OUT_FP32, dout)) != ADM_OK)
        goto fail;
    if (cudaMalloc(&dkv.p, (size_t)(H * D * E + 1) * 4) != cudaSuccess ||
        cudaMalloc(&dks.p, (size_t)(H * D + 1) * 4) != cudaSuccess) {
        st = ADM_FAIL(ADM_ERR_CUDA, "CUDA twin %s: cudaMalloc of the kv state failed", twin_names[which]);
        goto fail;
    }
    if (H * D * (E + 1) > 0)
        la_state<<<grid_for(H * D * (E + 1), 256), 256>>>(dk.f(), dv.f(), H, T, D, E,
                                                           which == ADM_TWIN_LA_BF16_GEMM, dkv.f(), dks.f());
    /* the heads the emulation visits (H is 1 where S or D is 0) */
    if (H * S * E > 0)
        la_out<<<grid_for(H * S * E, 256), 256>>>(dq.f(), dkv.f(), dks.f(), H, S, D, E, (float)p->eps,
                                                  (uint32_t *)dout.p);
    if ((st = out_fetch(out, OUT_FP32, dout)) != ADM_OK) goto fail;
    return ADM_OK;
fail:
    adm_tensor_free(out);
    return st;
}

adm_status run_norm(adm_twin which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    const adm_tensor *x = in[0];
    int k;
    dbuf dx, dw, db, dsh, dsc, dout;
    adm_status st;
    ADM_TRY(out_kind(x->dtype, which, &k));
    if (which == ADM_TWIN_LN_EAGER || which == ADM_TWIN_LN_FOLDED) {
        adm_tensor sh, sc;
        int64_t C = x->shape[x->ndim - 1], R = C ? adm_tensor_numel(x) / C : 0;
        if (p->modulate) {
            ADM_TRY(adm_tensor_broadcast(in[3], x->ndim, x->shape, &sh));
            ADM_TRY(adm_tensor_broadcast(in[4], x->ndim, x->shape, &sc));
        }
        ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, x->shape));
        if ((st = input(x, dx)) != ADM_OK || (st = input(in[1], dw)) != ADM_OK || (st = input(in[2], db)) != ADM_OK ||
            (p->modulate && ((st = input(&sh, dsh)) != ADM_OK || (st = input(&sc, dsc)) != ADM_OK)) ||
            (st = out_alloc(out, k, dout)) != ADM_OK)
            goto fail;
        if (R > 0)
            layernorm_twin<<<grid_for(R, WARPS), WARPS * 32>>>(dx.f(), in[1] ? dw.f() : nullptr,
                                                               in[2] ? db.f() : nullptr, dsh.f(), dsc.f(), R, C,
                                                               which == ADM_TWIN_LN_FOLDED, p->modulate,
                                                               (float)p->eps, k, dout.p);
    } else if (which == ADM_TWIN_GN_EAGER || which == ADM_TWIN_GN_FUSED_TWOPASS) {
        int cl = p->channels_last;
        int64_t B = x->shape[0], C = cl ? x->shape[2] : x->shape[1], L = cl ? x->shape[1] : x->shape[2], G = p->groups;
        ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, x->shape));
        if ((st = input(x, dx)) != ADM_OK || (st = input(in[1], dw)) != ADM_OK || (st = input(in[2], db)) != ADM_OK ||
            (st = out_alloc(out, k, dout)) != ADM_OK)
            goto fail;
        if (B * G > 0)
            groupnorm_twin<<<grid_for(B * G, WARPS), WARPS * 32>>>(dx.f(), in[1] ? dw.f() : nullptr,
                                                                   in[2] ? db.f() : nullptr, B, C, L, G, cl,
                                                                   which == ADM_TWIN_GN_FUSED_TWOPASS, p->silu,
                                                                   (float)p->eps, k, host_variant(), dout.p);
    } else {
        int64_t C = x->shape[x->ndim - 1], R = C ? adm_tensor_numel(x) / C : 0;
        int how = which == ADM_TWIN_RMS_EAGER ? STATS_SEQ : which == ADM_TWIN_RMS_FUSED_FP32 ? STATS_BLOCKED
                                                                                             : STATS_BF16;
        ADM_TRY(adm_tensor_alloc(out, x->dtype, x->ndim, x->shape));
        if ((st = input(x, dx)) != ADM_OK || (st = input(in[1], dw)) != ADM_OK ||
            (st = out_alloc(out, k, dout)) != ADM_OK)
            goto fail;
        if (R > 0)
            rmsnorm_twin<<<grid_for(R, WARPS), WARPS * 32>>>(dx.f(), in[1] ? dw.f() : nullptr, R, C, how,
                                                             which != ADM_TWIN_RMS_EAGER, p->silu, (float)p->eps, k,
                                                             host_variant(), dout.p);
    }
    if ((st = out_fetch(out, k, dout)) != ADM_OK) goto fail;
    return ADM_OK;
fail:
    adm_tensor_free(out);
    return st;
}

} // namespace

extern "C" adm_status adm_cuda_twin(adm_twin which, const adm_op_params *p, const adm_tensor *const *in,
                                    adm_tensor *out)
{
    int count = 0;
    if ((int)which < 0 || which >= ADM_TWIN_COUNT) return ADM_FAIL(ADM_ERR_INVALID, "unknown CUDA twin %d", (int)which);
    ADM_TRY(adm_cuda_device_count(&count));
    switch (which) {
    case ADM_TWIN_GR_EAGER: case ADM_TWIN_GR_EARLY_ROUND: return run_gated_residual(which, p, in, out);
    case ADM_TWIN_LA_EAGER_FP32: case ADM_TWIN_LA_BF16_GEMM: return run_linear_attention(which, p, in, out);
    case ADM_TWIN_RMS_EAGER: case ADM_TWIN_RMS_FUSED_FP32: case ADM_TWIN_RMS_BF16_STATS: case ADM_TWIN_LN_EAGER:
    case ADM_TWIN_LN_FOLDED: case ADM_TWIN_GN_EAGER: case ADM_TWIN_GN_FUSED_TWOPASS:
        return run_norm(which, p, in, out);
    default: return run_gemm(which, p, in, out);
    }
}

extern "C" adm_status adm_cuda_libm_f32_range(int fn, uint32_t first, uint32_t *out, size_t n)
{
    const size_t chunk = (size_t)1 << 26;
    int count = 0;
    dbuf d;
    if (fn < ADM_CUDA_LIBM_EXPF || fn > ADM_CUDA_LIBM_EXPM1F)
        return ADM_FAIL(ADM_ERR_INVALID, "adm_cuda_libm_f32_range: unknown function %d", fn);
    if (n > ((size_t)1 << 32) - first)
        return ADM_FAIL(ADM_ERR_INVALID, "range of %zu encodings from %u passes 2^32", n, first);
    ADM_TRY(adm_cuda_device_count(&count));
    ADM_CUDA_CHECK(cudaMalloc(&d.p, chunk * sizeof(uint32_t)));
    for (size_t done = 0; done < n; done += chunk) {
        size_t m = n - done < chunk ? n - done : chunk;
        libm_range<<<1024, 256>>>(fn, host_variant(), first + (uint32_t)done, (uint32_t *)d.p, m);
        ADM_CUDA_CHECK_LAUNCH();
        ADM_CUDA_CHECK(cudaMemcpy(out + done, d.p, m * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    }
    return ADM_OK;
}
