/* The oracle on the GPU: linear, linear+gelu and matmul through cuBLAS
 * DGEMM (native fp64 on Hopper: exact products, fp64 sums, any order, so
 * the accumulation bound of oracle/gemm.c holds unchanged) and CUDA
 * kernels for the conversion, the norms and the epilogue with the bound.
 * The reductions and norms run oracle/line_fns.h, a thread a line: the
 * same code and order of operations as the CPU's. The scalar functions
 * are oracle/scalar_fns.h, the same code and derivation as on the CPU; this file is built with -fmad=false so each
 * operation rounds once, as derived. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>
#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <string.h>
#include <thread>

#include <mpfr.h> /* before the extern "C" block: gmp.h brings C++ headers */
extern "C" {
#include "oracle_internal.h"
#include "oracle_cuda.h"
#include "adm_trace.h"
}
#include "adm_cuda_check.h"
#include "adm_per_device.cuh"
#include "scalar_fns.h"
#include "line_fns.h"
#include "widen.h"

namespace {

struct dev {
    void *p = nullptr;
    ~dev() { if (p) cudaFree(p); }
    double *d() { return (double *)p; }
    void release() { if (p) cudaFree(p); p = nullptr; }
};

/* ADM_CUDA_TRACE (core/adm_trace.h): each part's wall time and device
 * time (CUDA events), the device synchronized at each mark; only while
 * tracing (on), else every call returns at once. The first tracer of the
 * process times the CUDA context's creation (cudaFree(0)) on its own. */
struct tracer {
    bool on;
    double t0 = 0;
    cudaEvent_t a = nullptr, b = nullptr;
    tracer() : on(adm_trace_on() != 0)
    {
        static std::once_flag ctx;
        if (!on) return;
        std::call_once(ctx, [] {
            double t = adm_trace_ms();
            cudaFree(0);
            adm_trace_part("cuda.context", t, -1);
        });
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        start();
    }
    ~tracer()
    {
        if (a) cudaEventDestroy(a);
        if (b) cudaEventDestroy(b);
    }
    void start()
    {
        if (!on) return;
        cudaDeviceSynchronize();
        t0 = adm_trace_ms();
        cudaEventRecord(a);
    }
    void mark(const char *part)
    {
        float ms = -1;
        if (!on) return;
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        cudaDeviceSynchronize();
        if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) ms = -1;
        adm_trace_part(part, t0, ms);
        start();
    }
};

/* The process's cuBLAS handle of each device (core/adm_per_device.cuh). */
adm_per_device<cublasHandle_t> blas_handles;

adm_status blas_create(cublasHandle_t *h)
{
    double t = adm_trace_ms();
    ADM_CUBLAS_CHECK(cublasCreate(h));
    adm_trace_part("cublas.create", t, -1);
    return ADM_OK;
}

adm_status blas_get(cublasHandle_t *h) { return blas_handles.get(h, "oracle on the GPU", blas_create); }

/* Device-to-host copies of the oracle's results: 403 MB an array at
 * FLUX.1's MLP, into freshly allocated pageable pages. cudaMemcpy to
 * pageable memory goes through the driver's own staging, one thread,
 * which also takes every page fault of the destination; here the bytes
 * go in chunks through pinned staging buffers, one a thread, each thread
 * copying its chunk on to the destination, so that the faults and the
 * host copies run DL_THREADS wide while the DMA engine works. Bytes are
 * copied, not converted: the host gets the same bits. The buffers are
 * the process's (made by the first large copy or by adm_o_cuda_warm),
 * used by one copy at a time. */
enum { DL_THREADS = 8 };
const size_t DL_CHUNK = (size_t)16 << 20;
const size_t DL_MIN = (size_t)64 << 20; /* below it, cudaMemcpy */
std::mutex dl_mu;
void *dl_stage[DL_THREADS];
bool dl_failed;

/* dl_mu held: the staging buffers, or false where they cannot be had. */
bool dl_stages()
{
    if (dl_failed) return false;
    for (int t = 0; t < DL_THREADS; t++)
        if (!dl_stage[t] && cudaHostAlloc(&dl_stage[t], DL_CHUNK, cudaHostAllocPortable) != cudaSuccess) {
            cudaGetLastError();
            dl_stage[t] = nullptr;
            dl_failed = true;
            return false;
        }
    return true;
}

adm_status d2h(void *dst, const void *src, size_t bytes)
{
    std::unique_lock<std::mutex> g(dl_mu, std::defer_lock);
    if (bytes >= DL_MIN) g.lock();
    if (bytes < DL_MIN || !dl_stages()) {
        ADM_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
        return ADM_OK;
    }
    {
        int dev = 0, nt = (int)std::min<size_t>(DL_THREADS, (bytes + DL_CHUNK - 1) / DL_CHUNK);
        std::atomic<size_t> next{0};
        cudaError_t err[DL_THREADS];
        std::vector<std::thread> th;
        ADM_CUDA_CHECK(cudaGetDevice(&dev));
        for (int t = 0; t < nt; t++) {
            err[t] = cudaSuccess;
            th.emplace_back([&, t] {
                cudaStream_t s = nullptr;
                /* a blocking stream: ordered after the legacy default
                 * stream's work, which made src */
                if ((err[t] = cudaSetDevice(dev)) != cudaSuccess || (err[t] = cudaStreamCreate(&s)) != cudaSuccess)
                    return;
                for (size_t c; (c = next.fetch_add(1)) * DL_CHUNK < bytes;) {
                    size_t off = c * DL_CHUNK, n = std::min(DL_CHUNK, bytes - off);
                    if ((err[t] = cudaMemcpyAsync(dl_stage[t], (const char *)src + off, n, cudaMemcpyDeviceToHost,
                                                  s)) != cudaSuccess ||
                        (err[t] = cudaStreamSynchronize(s)) != cudaSuccess)
                        break;
                    memcpy((char *)dst + off, dl_stage[t], n);
                }
                cudaStreamDestroy(s);
            });
        }
        for (auto &x : th) x.join();
        for (int t = 0; t < nt; t++) ADM_CUDA_CHECK(err[t]);
    }
    return ADM_OK;
}

struct events {
    cudaEvent_t a = nullptr, b = nullptr;
    ~events() { if (a) cudaEventDestroy(a); if (b) cudaEventDestroy(b); }
};

__global__ void bf16_to_f64(const uint16_t *in, double *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = (double)__uint_as_float((uint32_t)in[i] << 16);
}

/* ||row||_2 >= exact (oracle/gemm.c): squares, sums and root rounded
 * upward by the instructions themselves; one block per row. */
__global__ void row_norms(const double *rows, int64_t n, int64_t K, double *out)
{
    __shared__ double part[256];
    for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
        double s = 0;
        for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
            double v = rows[r * K + k];
            s = __dadd_ru(s, __dmul_ru(v, v));
        }
        part[threadIdx.x] = s;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w >>= 1) {
            if ((int)threadIdx.x < w) part[threadIdx.x] = __dadd_ru(part[threadIdx.x], part[threadIdx.x + w]);
            __syncthreads();
        }
        if (threadIdx.x == 0) out[r] = __dsqrt_ru(part[0]);
        __syncthreads();
    }
}

/* The condition scale's operand (oracle/gemm.c, harness/GATES.md): each
 * row's magnitudes times 2^-e, e the exponent of its largest finite
 * magnitude (0 for a row without one), so that every product and sum of
 * the scale's GEMM stays far from fp32's overflow and underflow. As bf16
 * (tf32 = 0) or as fp32 for a TF32 GEMM (tf32 = 1). The scaling by a
 * power of two is exact; so is bf16 for a bf16 input (its 8 bits fit),
 * and fp32 for an fp32 or narrower one; the TF32 GEMM then reads 10 bits
 * of each, a relative error of at most 2^-10. One block per row. */
__global__ void cond_operand(const double *rows, int64_t n, int64_t K, void *out, int *ex, int tf32)
{
    __shared__ double part[256];
    for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
        double m = 0;
        int e;
        for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
            double a = fabs(rows[r * K + k]);
            if (a <= DBL_MAX && a > m) m = a;
        }
        part[threadIdx.x] = m;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w >>= 1) {
            if ((int)threadIdx.x < w) part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + w]);
            __syncthreads();
        }
        e = part[0] > 0 ? ilogb(part[0]) : 0;
        for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
            float a = (float)scalbn(fabs(rows[r * K + k]), -e);
            if (tf32) ((float *)out)[r * K + k] = a;
            else ((__nv_bfloat16 *)out)[r * K + k] = __float2bfloat16_rn(a);
        }
        if (threadIdx.x == 0) ex[r] = e;
        __syncthreads();
    }
}

/* v = DGEMM + bias (one rounding), bound gamma_(K-1) ||x_i|| ||w_j|| + u|v|,
 * every step rounded upward (__dmul_ru, __dadd_ru);
 * GELU's own bound plus its Lipschitz constant times v's. The condition
 * scale (oracle/gemm.c): condf holds the scale's GEMM of the scaled |x|
 * and |w| (cond_operand), ex their rows' exponents (x's M, then w's N);
 * scaled back exactly, + |bias|, then through GELU. */
__global__ void epilogue(double *val, double *bnd, double *cond, const float *condf, const int *ex, const double *nx,
                         const double *nw, const double *bias, int64_t M, int64_t N, double gk, int gelu)
{
    size_t total = (size_t)M * (size_t)N;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        int64_t i = (int64_t)(idx / (size_t)N), j = (int64_t)(idx % (size_t)N);
        double v = val[idx], b = __dmul_ru(__dmul_ru(gk, nx[i]), nw[j]), e;
        double cz = cond ? scalbn((double)condf[idx], ex[i] + ex[M + j]) : 0.0;
        if (bias) {
            v = v + bias[j];
            b = __dadd_ru(b, __dmul_ru(ADM_FN_U, fabs(v)));
            cz = cz + fabs(bias[j]);
        }
        if (gelu) {
            double g = gelu == 1 ? adm_fn_gelu_tanh(v, &e) : adm_fn_gelu_erf(v, &e);
            b = __dadd_ru(e, __dmul_ru(adm_fn_gelu_slope(v, b), b));
            cz = adm_fn_cond_chain(g, gelu == 1 ? adm_fn_gelu_tanh_d(v) : adm_fn_gelu_erf_d(v), cz);
            v = g;
        }
        val[idx] = v;
        bnd[idx] = b;
        if (cond) cond[idx] = cz;
    }
}

int grid_for(size_t n) { size_t g = (n + 255) / 256; return (int)(g > 65536 ? 65536 : (g ? g : 1)); }

/* An operand's n elements in fp64 (oracle/widen.h: exact, the host's bits). */
__global__ void widen(const void *span, adm_o_widen_src s, size_t n, double *out)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __longlong_as_double((long long)adm_o_widen_elem(span, &s, (int64_t)i));
}

/* The rows of t seen as [R, K] in fp64 into out (device, R K doubles;
 * an elementwise op's operand as one row). bf16, fp16 and fp32 go up as
 * stored, into *stored (kept until the caller's kernels have read it),
 * and are widened on the device; another format, or a view whose storage
 * spans more than twice its elements (a slice of a larger tensor), is
 * widened on the host (adm_o_rows, adm_tensor_to_f64's bits) and goes up
 * in fp64. */
adm_status operand_up(const adm_tensor *t, int64_t R, int64_t K, dev *stored, double *out, tracer *tr,
                      const char *up_part, const char *widen_part)
{
    size_t n = (size_t)(R * K);
    adm_o_widen_src s;
    int64_t lo = 0, span = 0;
    if (adm_o_widen_plan(t, &s, &lo, &span) && (uint64_t)span <= 2 * (uint64_t)n + 64) {
        size_t es = t->dtype == ADM_FP32 ? 4 : 2;
        ADM_CUDA_CHECK(cudaMalloc(&stored->p, es * (size_t)span));
        ADM_CUDA_CHECK(cudaMemcpy(stored->p, (const char *)t->data + es * (size_t)(t->offset + lo), es * (size_t)span,
                                  cudaMemcpyHostToDevice));
        if (tr) tr->mark(up_part);
        widen<<<grid_for(n), 256>>>(stored->p, s, n, out);
        ADM_CUDA_CHECK(cudaGetLastError());
        if (tr) tr->mark(widen_part);
        return ADM_OK;
    }
    {
        std::vector<double> h(n);
        adm_o_rows(t, K, 0, R, h.data());
        if (tr) tr->mark(widen_part);
        ADM_CUDA_CHECK(cudaMemcpy(out, h.data(), sizeof(double) * n, cudaMemcpyHostToDevice));
        if (tr) tr->mark(up_part);
    }
    return ADM_OK;
}

/* The condition scale's buffers on the device: the scaled |x| and |w|
 * (4 bytes an element: bf16 uses half), the rows' exponents, the GEMM's
 * fp32 result. */
struct cond_room {
    void *xa, *wa;
    int *ex;
    float *cf;
    int tf32;
};

/* The condition scale's GEMM into cr->cf (see pipeline). */
adm_status cond_scale(cublasHandle_t h, int64_t M, int64_t K, int64_t N, const double *xd, const double *wd,
                      const cond_room *cr, tracer *tr = nullptr)
{
    const float onef = 1.0f, zerof = 0.0f;
    cudaDataType_t t = cr->tf32 ? CUDA_R_32F : CUDA_R_16BF;
    cond_operand<<<(int)std::min<int64_t>(M, 65536), 256>>>(xd, M, K, cr->xa, cr->ex, cr->tf32);
    ADM_CUDA_CHECK(cudaGetLastError());
    cond_operand<<<(int)std::min<int64_t>(N, 65536), 256>>>(wd, N, K, cr->wa, cr->ex + M, cr->tf32);
    ADM_CUDA_CHECK(cudaGetLastError());
    if (tr) tr->mark("oracle.cond_operand");
    ADM_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &onef, cr->wa, t, (int)K, cr->xa,
                                  t, (int)K, &zerof, cr->cf, CUDA_R_32F, (int)N,
                                  cr->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (tr) tr->mark("oracle.cond_gemm");
    return ADM_OK;
}

/* The device pipeline on fp64 operands already resident: norms, DGEMM,
 * epilogue; with cond, the condition scale by a GEMM on the tensor cores
 * (harness/GATES.md, "condition scale"): bf16 |x|, |w| where both inputs
 * are bf16 (exact operands), else TF32 (10 bits of each fp32 operand);
 * products exact in fp32, fp32 sums. Every term is non-negative, so the
 * computed sum is within c (1 +- gamma_K) of the operands' exact one,
 * with u = 2^-23 (the tensor cores' accumulation truncates: one fp32 ulp
 * at most per addition): 3.7e-4 at K = 3072; with TF32's operands
 * another 2^-9 (two roundings to 10 bits): the scale picks an element's
 * binade, which only a relative error of that size near a power of two
 * can move, and by one binade. Where DGEMM costs 62 TFLOP/s on the H200,
 * the bf16 GEMM costs about a tenth of it. */
adm_status pipeline(cublasHandle_t h, int64_t M, int64_t K, int64_t N, const double *xd, const double *wd,
                    const double *bias, int gelu, double *nx, double *nw, double *val, double *bnd,
                    const cond_room *cr, double *cond, tracer *tr = nullptr)
{
    const double one = 1.0, zero = 0.0;
    row_norms<<<(int)std::min<int64_t>(M, 65536), 256>>>(xd, M, K, nx);
    ADM_CUDA_CHECK(cudaGetLastError());
    row_norms<<<(int)std::min<int64_t>(N, 65536), 256>>>(wd, N, K, nw);
    ADM_CUDA_CHECK(cudaGetLastError());
    if (tr) tr->mark("oracle.row_norms");
    /* row-major val[M,N] = x[M,K] w[N,K]^T is column-major val^T = w x^T */
    ADM_CUBLAS_CHECK(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one, wd, (int)K, xd, (int)K,
                                 &zero, val, (int)N));
    if (tr) tr->mark("oracle.dgemm");
    if (cond) ADM_TRY(cond_scale(h, M, K, N, xd, wd, cr, tr));
    epilogue<<<grid_for((size_t)M * N), 256>>>(val, bnd, cond, cond ? cr->cf : nullptr, cond ? cr->ex : nullptr, nx,
                                               nw, bias, M, N, adm_gamma_up((double)(K - 1)), gelu);
    ADM_CUDA_CHECK(cudaGetLastError());
    if (tr) tr->mark("oracle.epilogue");
    return ADM_OK;
}

/* Room for the condition scale of an M x K by N x K GEMM. */
adm_status cond_alloc(int64_t M, int64_t K, int64_t N, int tf32, dev *xa, dev *wa, dev *ex, dev *cf, cond_room *cr)
{
    size_t es = tf32 ? 4 : 2;
    ADM_CUDA_CHECK(cudaMalloc(&xa->p, es * (size_t)(M * K)));
    ADM_CUDA_CHECK(cudaMalloc(&wa->p, es * (size_t)(N * K)));
    ADM_CUDA_CHECK(cudaMalloc(&ex->p, sizeof(int) * (size_t)(M + N)));
    ADM_CUDA_CHECK(cudaMalloc(&cf->p, sizeof(float) * (size_t)(M * N)));
    *cr = cond_room{xa->p, wa->p, (int *)ex->p, (float *)cf->p, tf32};
    return ADM_OK;
}

/* The elementwise ops with their bounds (oracle/elementwise.c, the same
 * formulas): x and the second operand resident in fp64; g broadcast
 * beforehand on the host. */
__global__ void elementwise(int id, int gelu_tanh, double factor, const double *x, const double *y, const double *g,
                            double *val, double *bnd, double *cond, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double v = 0, e = 0, s, prod = 0;
        switch (id) {
        case OP_RELU: v = x[i] > 0 ? x[i] : (isnan(x[i]) ? x[i] : 0.0); e = 0; break;
        case OP_SCALE:
            v = x[i] * factor;
            e = adm_rn_err(v);
            break;
        case OP_GELU: v = gelu_tanh ? adm_fn_gelu_tanh(x[i], &e) : adm_fn_gelu_erf(x[i], &e); break;
        case OP_SILU: v = adm_fn_silu(x[i], &e); break;
        case OP_SWIGLU:
            s = adm_fn_silu(x[i], &e);
            v = s * y[i];
            e = adm_add_up(adm_mul_up(fabs(y[i]), e), adm_rn_err(v));
            break;
        case OP_GATED_RESIDUAL:
            prod = g[i] * y[i];
            v = x[i] + prod;
            e = adm_add_up(adm_rn_err(prod), adm_mul_up(ADM_FN_U, fabs(v)));
            break;
        default: break;
        }
        val[i] = v;
        bnd[i] = e;
        if (cond) cond[i] = id == OP_GATED_RESIDUAL ? fabs(x[i]) + fabs(prod) : fabs(v);
    }
}

/* A thread a line (oracle/line_fns.h): adjacent threads take adjacent
 * lines, whose terms are adjacent where the axis is not the last. */
__global__ void reduce_lines(adm_o_reduce_job j, const double *x, double *val, double *bnd, double *cond)
{
    int64_t lines = j.outer * j.inner;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < lines; t += (int64_t)gridDim.x * blockDim.x)
        adm_o_reduce_line(&j, x, t / j.inner, t % j.inner, val, bnd, cond);
}

__global__ void norm_sets(adm_o_norm_job j, const double *x, const double *w, const double *b, const double *shift,
                          const double *scale, double *y, double *bd, double *cd)
{
    for (int64_t s = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; s < j.sets; s += (int64_t)gridDim.x * blockDim.x)
        adm_o_norm_set(&j, s, x, w, b, shift, scale, y, bd, cd);
}

/* Lines [t0, t0 + nl) of the attention, a thread a line; line t0 + r's
 * scratch is scratch + 4 T r. */
__global__ void attention_lines(adm_o_attn_job j, const double *q, const double *k, const double *v, int64_t t0,
                                int64_t nl, double *scratch, double *val, double *bnd, double *cond)
{
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < nl; r += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = t0 + r;
        adm_o_attention_line(&j, q, k, v, t / j.S, t % j.S, scratch + 4 * j.T * r, val, bnd, cond);
    }
}

/* Head h's KV, KA (a thread per (d, e), keys in order) and ks (d < D). */
__global__ void linattn_kv(adm_o_linattn_job j, const double *k, const double *v, int64_t h, double *kv, double *ka,
                           double *ks)
{
    int64_t D = j.D, E = j.E, T = j.T;
    for (int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; x < D * E + D;
         x += (int64_t)gridDim.x * blockDim.x) {
        if (x < D * E) {
            int64_t d = x / E, e = x % E;
            double s = 0, a = 0;
            for (int64_t t = 0; t < T; t++)
                adm_o_linattn_add(fmax(k[(h * T + t) * D + d], 0.0), v[(h * T + t) * E + e], &s, &a);
            kv[x] = s;
            ka[x] = a;
        } else {
            int64_t d = x - D * E;
            double s = 0;
            for (int64_t t = 0; t < T; t++) s += fmax(k[(h * T + t) * D + d], 0.0);
            ks[d] = s;
        }
    }
}

__global__ void linattn_lines(adm_o_linattn_job j, const double *q, const double *kv, const double *ka,
                              const double *ks, int64_t h, double *val, double *bnd, double *cond)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < j.S; i += (int64_t)gridDim.x * blockDim.x)
        adm_o_linattn_line(&j, q, kv, ka, ks, h, i, val, bnd, cond);
}

/* The last result's value and condition scale on the device
 * (oracle_internal.h, adm_o_cuda_forget): at most one held by the module,
 * shared with the statistics sessions that borrow it
 * (harness/stats_cuda.cu) and freed when the last of them lets go, so
 * that a session outlives a forget or a later evaluation safely. A
 * resident result (adm_o_ctx.resident) also keeps its bound, and its host
 * arrays are not filled (stale) until fetched: kept_fetch. */
struct kept {
    int device;
    const double *hval, *hcond;
    size_t n;
    void *val, *cond;
    int refs;
    double *hbnd;
    void *bnd;
    bool stale;
};
std::mutex kept_mu;
kept *kept_last;

void kept_unref(kept *k) /* kept_mu held */
{
    if (k && --k->refs == 0) {
        cudaFree(k->val);
        cudaFree(k->cond);
        cudaFree(k->bnd);
        delete k;
    }
}

/* A stale result's host arrays filled from the device (kept_mu held). */
adm_status kept_fill(kept *k)
{
    if (!k->stale) return ADM_OK;
    ADM_TRY(d2h((void *)k->hval, k->val, 8 * k->n));
    ADM_TRY(d2h(k->hbnd, k->bnd, 8 * k->n));
    if (k->hcond) ADM_TRY(d2h((void *)k->hcond, k->cond, 8 * k->n));
    k->stale = false;
    return ADM_OK;
}

/* The module's copy dropped: a new evaluation's buffers do not sit beside
 * it (device memory for one resident result, not two). A resident
 * result's host arrays are filled first: its caller still holds them. */
adm_status kept_drop()
{
    std::lock_guard<std::mutex> g(kept_mu);
    if (kept_last && kept_last->stale) {
        int cur = 0;
        adm_status st;
        ADM_CUDA_CHECK(cudaGetDevice(&cur));
        ADM_CUDA_CHECK(cudaSetDevice(kept_last->device));
        st = kept_fill(kept_last);
        ADM_CUDA_CHECK(cudaSetDevice(cur));
        ADM_TRY(st);
    }
    kept_unref(kept_last);
    kept_last = nullptr;
    return ADM_OK;
}

/* dv and (where cond) dc, just computed for val and cond, kept in place
 * of the last result, and with resident db for bnd as well; nothing kept
 * where the bookkeeping cannot be had (the statistics then upload, as
 * without). 1 where kept. */
bool keep(dev *dv, dev *db, dev *dc, size_t n, const double *val, double *bnd, const double *cond, bool resident)
{
    int d = 0;
    kept *k;
    if (cudaGetDevice(&d) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    if (!(k = new (std::nothrow) kept{d, val, cond, n, dv->p, cond ? dc->p : nullptr, 1, bnd,
                                      resident ? db->p : nullptr, resident}))
        return false;
    dv->p = nullptr;
    if (cond) dc->p = nullptr;
    if (resident) db->p = nullptr;
    std::lock_guard<std::mutex> g(kept_mu);
    kept_unref(kept_last);
    kept_last = k;
    return true;
}

/* The oracle's n values, bounds and (where wanted: cond) condition scales
 * back to the host, the values and scales also staying on the device
 * (keep); resident: all three stay there and nothing comes back (the
 * host's arrays stale until kept_fill), unless they cannot be kept. */
adm_status download(dev &dv, dev &db, dev &dc, size_t n, double *val, double *bnd, double *cond,
                    tracer *tr = nullptr, bool resident = false)
{
    if (resident && n > 0 && keep(&dv, &db, &dc, n, val, bnd, cond, true)) {
        if (tr) tr->mark("oracle.keep_resident");
        return ADM_OK;
    }
    ADM_TRY(d2h(val, dv.p, 8 * n));
    if (tr) tr->mark("oracle.download_val");
    ADM_TRY(d2h(bnd, db.p, 8 * n));
    if (tr) tr->mark("oracle.download_bnd");
    if (cond) ADM_TRY(d2h(cond, dc.p, 8 * n));
    if (tr && cond) tr->mark("oracle.download_cond");
    keep(&dv, &db, &dc, n, val, bnd, cond, false);
    return ADM_OK;
}

/* The count of finite values whose bound exceeds thr and the largest
 * bound of a finite value (0 where none), as oracle.c's refine scans
 * them on the host: a count and a max are the same in any order. A
 * bound is >= 0; only one > 0 can raise the max from 0 (as on the host,
 * where -0 > 0 is false), and the bits of positive doubles order as the
 * doubles, so atomicMax on them is the max. */
__global__ void blunt_scan(const double *val, const double *bnd, size_t n, double thr, unsigned long long *out)
{
    unsigned long long cnt = 0, mx = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double v = val[i], b = bnd[i];
        if (!isfinite(v)) continue;
        cnt += b > thr;
        if (b > 0 && (unsigned long long)__double_as_longlong(b) > mx) mx = (unsigned long long)__double_as_longlong(b);
    }
    for (int o = 16; o > 0; o /= 2) {
        unsigned long long c2 = __shfl_down_sync(0xffffffffu, cnt, o), m2 = __shfl_down_sync(0xffffffffu, mx, o);
        cnt += c2;
        if (m2 > mx) mx = m2;
    }
    if ((threadIdx.x & 31) == 0) {
        if (cnt) atomicAdd(&out[0], cnt);
        if (mx) atomicMax(&out[1], mx);
    }
}

/* n doubles up to the device (nothing for NULL). */
adm_status upload(dev *d, const double *h, size_t n)
{
    if (!h) return ADM_OK;
    ADM_CUDA_CHECK(cudaMalloc(&d->p, 8 * (n ? n : 1)));
    ADM_CUDA_CHECK(cudaMemcpy(d->p, h, 8 * n, cudaMemcpyHostToDevice));
    return ADM_OK;
}

} // namespace

extern "C" void adm_o_cuda_forget(const double *val)
{
    std::lock_guard<std::mutex> g(kept_mu);
    if (kept_last && kept_last->hval == val) {
        kept_unref(kept_last);
        kept_last = nullptr;
    }
}

extern "C" int adm_o_cuda_stale(const double *val)
{
    std::lock_guard<std::mutex> g(kept_mu);
    return kept_last && kept_last->hval == val && kept_last->stale;
}

extern "C" adm_status adm_o_cuda_fetch(const double *val)
{
    std::lock_guard<std::mutex> g(kept_mu);
    if (!kept_last || kept_last->hval != val) return ADM_OK;
    ADM_CUDA_CHECK(cudaSetDevice(kept_last->device));
    return kept_fill(kept_last);
}

extern "C" adm_status adm_o_cuda_scan(const double *val, double thr, int64_t *blunt, double *maxb)
{
    unsigned long long h[2] = {0, 0};
    dev out;
    std::lock_guard<std::mutex> g(kept_mu);
    kept *k = kept_last;
    if (!k || k->hval != val || !k->bnd)
        return adm_error_set(ADM_ERR_NOT_FOUND, __FILE__, __LINE__,
                             "oracle on the GPU: no resident result for these values");
    ADM_CUDA_CHECK(cudaSetDevice(k->device));
    ADM_CUDA_CHECK(cudaMalloc(&out.p, sizeof h));
    ADM_CUDA_CHECK(cudaMemset(out.p, 0, sizeof h));
    blunt_scan<<<grid_for(k->n), 256>>>((const double *)k->val, (const double *)k->bnd, k->n, thr,
                                        (unsigned long long *)out.p);
    ADM_CUDA_CHECK_LAUNCH();
    ADM_CUDA_CHECK(cudaMemcpy(h, out.p, sizeof h, cudaMemcpyDeviceToHost));
    *blunt = (int64_t)h[0];
    memcpy(maxb, &h[1], 8);
    return ADM_OK;
}

extern "C" void *adm_o_cuda_kept_take(const double *val, const double *cond, int64_t n, const double **dval,
                                      const double **dcond)
{
    int d = 0;
    kept *k;
    if (cudaGetDevice(&d) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    std::lock_guard<std::mutex> g(kept_mu);
    k = kept_last;
    if (!k || k->device != d || k->hval != val || k->n != (size_t)n || (cond && k->hcond != cond)) return nullptr;
    k->refs++;
    *dval = (const double *)k->val;
    *dcond = cond ? (const double *)k->cond : nullptr;
    return k;
}

extern "C" void adm_o_cuda_kept_put(void *k)
{
    std::lock_guard<std::mutex> g(kept_mu);
    kept_unref((kept *)k);
}

extern "C" adm_status adm_o_cuda_elementwise(const adm_o_ctx *c, double *val, double *bnd)
{
    adm_op_id id = adm_op_id_of(c->op);
    size_t n = (size_t)c->numel;
    dev dx, dy, dg, dv, db, dc, sx, sy, sg;
    ADM_TRY(kept_drop());
    if (n == 0) return ADM_OK;
    ADM_CUDA_CHECK(cudaMalloc(&dx.p, 8 * n));
    ADM_CUDA_CHECK(cudaMalloc(&dv.p, 8 * n));
    ADM_CUDA_CHECK(cudaMalloc(&db.p, 8 * n));
    if (c->cond) ADM_CUDA_CHECK(cudaMalloc(&dc.p, 8 * n));
    ADM_TRY(operand_up(c->in[0], 1, (int64_t)n, &sx, dx.d(), nullptr, nullptr, nullptr));
    if (id == OP_SWIGLU || id == OP_GATED_RESIDUAL) {
        ADM_CUDA_CHECK(cudaMalloc(&dy.p, 8 * n));
        ADM_TRY(operand_up(c->in[id == OP_SWIGLU ? 1 : 2], 1, (int64_t)n, &sy, dy.d(), nullptr, nullptr, nullptr));
    }
    if (id == OP_GATED_RESIDUAL) {
        adm_tensor gv;
        ADM_TRY(adm_tensor_broadcast(c->in[1], c->ndim, c->shape, &gv));
        ADM_CUDA_CHECK(cudaMalloc(&dg.p, 8 * n));
        ADM_TRY(operand_up(&gv, 1, (int64_t)n, &sg, dg.d(), nullptr, nullptr, nullptr)); /* a broadcast: stride 0, widened where stored */
    }
    elementwise<<<grid_for(n), 256>>>((int)id, c->p->gelu_tanh, c->p->factor, dx.d(), dy.d(), dg.d(), dv.d(), db.d(),
                                      dc.d(), n);
    ADM_CUDA_CHECK_LAUNCH();
    ADM_TRY(download(dv, db, dc, n, val, bnd, c->cond, nullptr, c->resident));
    return ADM_OK;
}

/* The first DGEMM and tensor-core GEMM of a process cost some 50 ms each
 * beyond their arithmetic (H200, FLUX.1's MLP: cuBLAS loads its kernels
 * lazily and sets itself up on first use): paid here, on the warm-up
 * thread, with the DGEMM and the bf16 GEMM (the condition scale of bf16
 * inputs, DiT's) on zeros of a size whose kernels are the large shapes'
 * (2048^3; H200: the first DGEMM of a FLUX.1 MLP replay then took 5.0 ms
 * against 48.5, its condition GEMM 0.65 against 47.1). The TF32 GEMM of
 * other formats is left to its first use. Results are not read. */
static adm_status gemm_warm(cublasHandle_t h)
{
    const int n = 2048;
    const double one = 1.0, zero = 0.0;
    const float onef = 1.0f, zerof = 0.0f;
    dev a, b, c;
    double t = adm_trace_ms();
    ADM_CUDA_CHECK(cudaMalloc(&a.p, 8 * (size_t)n * n));
    ADM_CUDA_CHECK(cudaMalloc(&b.p, 8 * (size_t)n * n));
    ADM_CUDA_CHECK(cudaMalloc(&c.p, 8 * (size_t)n * n));
    ADM_CUDA_CHECK(cudaMemset(a.p, 0, 8 * (size_t)n * n));
    ADM_CUDA_CHECK(cudaMemset(b.p, 0, 8 * (size_t)n * n));
    ADM_CUBLAS_CHECK(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, a.d(), n, b.d(), n, &zero, c.d(), n));
    ADM_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &onef, a.p, CUDA_R_16BF, n, b.p, CUDA_R_16BF,
                                  n, &zerof, c.p, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    ADM_CUDA_CHECK(cudaDeviceSynchronize());
    adm_trace_part("oracle.gemm_warm", t, -1);
    return ADM_OK;
}

/* CUDA loads a kernel on its first launch (lazy loading, the default):
 * on the H200 the first widening of a FLUX.1 MLP replay took 0.6-0.8 ms
 * for x's 12.6 M elements, the same kernel 0.16 ms for w's 37.7 M right
 * after. Asking for the attributes of the linear oracle's kernels loads
 * them here, on the warm-up thread. */
static adm_status kernels_warm(void)
{
    const void *k[] = {(const void *)widen, (const void *)bf16_to_f64, (const void *)row_norms,
                       (const void *)cond_operand, (const void *)epilogue, (const void *)blunt_scan};
    cudaFuncAttributes fa;
    double t = adm_trace_ms();
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) ADM_CUDA_CHECK(cudaFuncGetAttributes(&fa, k[i]));
    adm_trace_part("oracle.kernels_warm", t, -1);
    return ADM_OK;
}

/* The download buffers are pinned on a thread of their own (65 ms on the
 * H200, host work) while the GEMMs warm up on the device. */
extern "C" adm_status adm_o_cuda_warm(void)
{
    cublasHandle_t h = nullptr;
    adm_status st;
    int dev = 0;
    ADM_CUDA_CHECK(cudaGetDevice(&dev));
    std::thread stage([dev] {
        std::lock_guard<std::mutex> g(dl_mu);
        double t = adm_trace_ms();
        /* this thread's device: no context made on another */
        if (cudaSetDevice(dev) == cudaSuccess) dl_stages();
        else cudaGetLastError();
        adm_trace_part("oracle.staging_alloc", t, -1);
    });
    if ((st = blas_get(&h)) == ADM_OK) st = gemm_warm(h);
    if (st == ADM_OK) st = kernels_warm();
    stage.join();
    return st;
}

extern "C" int adm_o_cuda_usable(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/* adm_o_cuda_gemm's work; tr marks its parts. */
static adm_status gemm_run(const adm_o_ctx *c, double *val, double *bnd, tracer *tr)
{
    adm_op_id id = adm_op_id_of(c->op);
    const adm_tensor *x = c->in[0], *w = c->in[1], *bias = id == OP_MATMUL ? nullptr : c->in[2];
    adm_tensor wt;
    int64_t K = x->shape[x->ndim - 1], N, M;
    int gelu = id == OP_LINEAR_GELU ? (c->p->gelu_tanh ? 1 : 2) : 0;
    dev xd, wd, bd, nx, nw, vd, bnd_d, xa, wa, exd, cf, cd, xs, ws;
    cond_room cr{};
    cublasHandle_t h = nullptr;
    ADM_TRY(kept_drop());
    ADM_TRY(adm_o_need_narrow(x, adm_op_name(c->op), adm_op_input_name(c->op, 0)));
    ADM_TRY(adm_o_need_narrow(w, adm_op_name(c->op), adm_op_input_name(c->op, 1)));
    if (id == OP_MATMUL) ADM_TRY(adm_tensor_transpose(w, 0, 1, &wt));
    else wt = *w;
    N = wt.shape[0];
    M = N > 0 ? c->numel / N : 0;
    if (M == 0 || N == 0) return ADM_OK;
    if (K == 0) return ADM_FAIL(ADM_ERR_UNSUPPORTED, "oracle on the GPU: K = 0");
    tr->mark("oracle.setup");
    ADM_CUDA_CHECK(cudaMalloc(&xd.p, sizeof(double) * (size_t)(M * K)));
    ADM_CUDA_CHECK(cudaMalloc(&wd.p, sizeof(double) * (size_t)(N * K)));
    ADM_CUDA_CHECK(cudaMalloc(&bd.p, sizeof(double) * (size_t)N));
    ADM_CUDA_CHECK(cudaMalloc(&nx.p, sizeof(double) * (size_t)M));
    ADM_CUDA_CHECK(cudaMalloc(&nw.p, sizeof(double) * (size_t)N));
    ADM_CUDA_CHECK(cudaMalloc(&vd.p, sizeof(double) * (size_t)(M * N)));
    ADM_CUDA_CHECK(cudaMalloc(&bnd_d.p, sizeof(double) * (size_t)(M * N)));
    if (c->cond) {
        ADM_TRY(cond_alloc(M, K, N, !(x->dtype == ADM_BF16 && wt.dtype == ADM_BF16), &xa, &wa, &exd, &cf, &cr));
        ADM_CUDA_CHECK(cudaMalloc(&cd.p, sizeof(double) * (size_t)(M * N)));
    }
    tr->mark("oracle.alloc");
    ADM_TRY(operand_up(x, M, K, &xs, xd.d(), tr, "oracle.upload_x", "oracle.widen_x"));
    ADM_TRY(operand_up(&wt, N, K, &ws, wd.d(), tr, "oracle.upload_w", "oracle.widen_w"));
    if (bias) {
        std::vector<double> hb((size_t)N);
        for (int64_t j = 0; j < N; j++) hb[(size_t)j] = adm_tensor_get(bias, j);
        ADM_CUDA_CHECK(cudaMemcpy(bd.p, hb.data(), sizeof(double) * hb.size(), cudaMemcpyHostToDevice));
    }
    tr->mark("oracle.upload_bias");
    ADM_TRY(blas_get(&h));
    tr->mark("oracle.blas_get");
    ADM_TRY(pipeline(h, M, K, N, xd.d(), wd.d(), bias ? bd.d() : nullptr, gelu, nx.d(), nw.d(), vd.d(), bnd_d.d(), &cr,
                     cd.d(), tr));
    ADM_CUDA_CHECK(cudaDeviceSynchronize());
    ADM_TRY(download(vd, bnd_d, cd, (size_t)(M * N), val, bnd, c->cond, tr, c->resident));
    if (tr->on) { /* what the destructors would free, timed */
        for (dev *d : {&xd, &wd, &bd, &nx, &nw, &vd, &bnd_d, &xa, &wa, &exd, &cf, &cd, &xs, &ws}) d->release();
        tr->mark("oracle.free");
    }
    return ADM_OK;
}

extern "C" adm_status adm_o_cuda_gemm(const adm_o_ctx *c, double *val, double *bnd)
{
    double t = adm_trace_ms();
    adm_status st;
    {
        tracer tr;
        st = gemm_run(c, val, bnd, &tr);
    }
    adm_trace_part("oracle.gemm_total", t, -1);
    return st;
}


extern "C" adm_status adm_o_cuda_bench_gemm(int64_t M, int64_t K, int64_t N, int reps, double *ms)
{
    dev xb, wb, xd, wd, bd, nx, nw, vd, bnd_d, cd, xa, wa, exd, cf, cnd;
    cond_room cr{};
    cublasHandle_t h = nullptr;
    events ev;
    std::vector<uint16_t> hx((size_t)(M * K)), hw((size_t)(N * K));
    std::vector<double> hb((size_t)N), t[5], hv((size_t)(M * N)), hbd((size_t)(M * N));
    const double one = 1.0, zero = 0.0;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    if (reps < 1) reps = 1;
    for (auto &v : hx) { s = s * 6364136223846793005ull + 1442695040888963407ull; v = adm_bf16_from_f32((float)((int64_t)(s >> 40) - (1 << 23)) * 0x1p-22f); }
    for (auto &v : hw) { s = s * 6364136223846793005ull + 1442695040888963407ull; v = adm_bf16_from_f32((float)((int64_t)(s >> 40) - (1 << 23)) * 0x1p-28f); }
    for (auto &v : hb) v = 0.01;
    ADM_CUDA_CHECK(cudaMalloc(&xb.p, 2 * hx.size()));
    ADM_CUDA_CHECK(cudaMalloc(&wb.p, 2 * hw.size()));
    ADM_CUDA_CHECK(cudaMalloc(&xd.p, 8 * hx.size()));
    ADM_CUDA_CHECK(cudaMalloc(&wd.p, 8 * hw.size()));
    ADM_CUDA_CHECK(cudaMalloc(&bd.p, 8 * hb.size()));
    ADM_CUDA_CHECK(cudaMalloc(&nx.p, 8 * (size_t)M));
    ADM_CUDA_CHECK(cudaMalloc(&nw.p, 8 * (size_t)N));
    ADM_CUDA_CHECK(cudaMalloc(&vd.p, 8 * (size_t)(M * N)));
    ADM_CUDA_CHECK(cudaMalloc(&bnd_d.p, 8 * (size_t)(M * N)));
    ADM_CUDA_CHECK(cudaMalloc(&cd.p, 8 * (size_t)(M * N)));
    ADM_TRY(cond_alloc(M, K, N, 0, &xa, &wa, &exd, &cf, &cr));
    ADM_CUDA_CHECK(cudaMalloc(&cnd.p, 8 * (size_t)(M * N)));
    ADM_CUDA_CHECK(cudaMemcpy(bd.p, hb.data(), 8 * hb.size(), cudaMemcpyHostToDevice));
    ADM_TRY(blas_get(&h));
    ADM_CUDA_CHECK(cudaEventCreate(&ev.a));
    ADM_CUDA_CHECK(cudaEventCreate(&ev.b));
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        float f;
        ADM_CUDA_CHECK(cudaEventRecord(ev.a));
        ADM_CUDA_CHECK(cudaMemcpy(xb.p, hx.data(), 2 * hx.size(), cudaMemcpyHostToDevice));
        ADM_CUDA_CHECK(cudaMemcpy(wb.p, hw.data(), 2 * hw.size(), cudaMemcpyHostToDevice));
        ADM_CUDA_CHECK(cudaEventRecord(ev.b));
        ADM_CUDA_CHECK(cudaEventSynchronize(ev.b));
        ADM_CUDA_CHECK(cudaEventElapsedTime(&f, ev.a, ev.b));
        if (r >= 0) t[2].push_back(f);
        /* one DGEMM alone, operands resident in fp64 */
        ADM_CUDA_CHECK(cudaEventRecord(ev.a));
        ADM_CUBLAS_CHECK(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one, wd.d(), (int)K,
                                     xd.d(), (int)K, &zero, cd.d(), (int)N));
        ADM_CUDA_CHECK(cudaEventRecord(ev.b));
        ADM_CUDA_CHECK(cudaEventSynchronize(ev.b));
        ADM_CUDA_CHECK(cudaEventElapsedTime(&f, ev.a, ev.b));
        if (r >= 0) t[0].push_back(f);
        /* the oracle from resident bf16 */
        ADM_CUDA_CHECK(cudaEventRecord(ev.a));
        bf16_to_f64<<<grid_for(hx.size()), 256>>>((const uint16_t *)xb.p, xd.d(), hx.size());
        bf16_to_f64<<<grid_for(hw.size()), 256>>>((const uint16_t *)wb.p, wd.d(), hw.size());
        ADM_CUDA_CHECK(cudaGetLastError());
        ADM_TRY(pipeline(h, M, K, N, xd.d(), wd.d(), bd.d(), 1, nx.d(), nw.d(), vd.d(), bnd_d.d(), &cr, cnd.d()));
        ADM_CUDA_CHECK(cudaEventRecord(ev.b));
        ADM_CUDA_CHECK(cudaEventSynchronize(ev.b));
        ADM_CUDA_CHECK(cudaEventElapsedTime(&f, ev.a, ev.b));
        if (r >= 0) t[1].push_back(f);
        /* the condition scale alone: operands and its GEMM */
        ADM_CUDA_CHECK(cudaEventRecord(ev.a));
        ADM_TRY(cond_scale(h, M, K, N, xd.d(), wd.d(), &cr));
        ADM_CUDA_CHECK(cudaEventRecord(ev.b));
        ADM_CUDA_CHECK(cudaEventSynchronize(ev.b));
        ADM_CUDA_CHECK(cudaEventElapsedTime(&f, ev.a, ev.b));
        if (r >= 0) t[4].push_back(f);
        ADM_CUDA_CHECK(cudaEventRecord(ev.a));
        ADM_CUDA_CHECK(cudaMemcpy(hv.data(), vd.p, 8 * hv.size(), cudaMemcpyDeviceToHost));
        ADM_CUDA_CHECK(cudaMemcpy(hbd.data(), bnd_d.p, 8 * hbd.size(), cudaMemcpyDeviceToHost));
        ADM_CUDA_CHECK(cudaEventRecord(ev.b));
        ADM_CUDA_CHECK(cudaEventSynchronize(ev.b));
        ADM_CUDA_CHECK(cudaEventElapsedTime(&f, ev.a, ev.b));
        if (r >= 0) t[3].push_back(f);
    }
    for (int k = 0; k < 5; k++) {
        std::sort(t[k].begin(), t[k].end());
        ms[k < 4 ? k : 5] = t[k][t[k].size() / 2];
    }
    ms[4] = 0;
    for (double b : hbd) ms[4] = std::max(ms[4], b);
    return ADM_OK;
}

extern "C" adm_status adm_o_cuda_reduce(const adm_o_reduce_job *j, int64_t total, const double *x, double *val,
                                        double *bnd, double *cond)
{
    int64_t lines = j->outer * j->inner;
    size_t nout = (size_t)(j->kind == ADM_O_SOFTMAX ? total : lines);
    dev dx, dv, db, dc;
    ADM_TRY(kept_drop());
    if (lines == 0 || nout == 0) return ADM_OK;
    ADM_TRY(upload(&dx, x, (size_t)total));
    ADM_CUDA_CHECK(cudaMalloc(&dv.p, 8 * nout));
    ADM_CUDA_CHECK(cudaMalloc(&db.p, 8 * nout));
    if (cond) ADM_CUDA_CHECK(cudaMalloc(&dc.p, 8 * nout));
    reduce_lines<<<(int)std::min<int64_t>((lines + 63) / 64, 65536), 64>>>(*j, dx.d(), dv.d(), db.d(), dc.d());
    ADM_CUDA_CHECK_LAUNCH();
    ADM_TRY(download(dv, db, dc, nout, val, bnd, cond));
    return ADM_OK;
}

extern "C" adm_status adm_o_cuda_norm(const adm_o_norm_job *j, int64_t total, const double *x, const double *w,
                                      const double *b, const double *shift, const double *scale, double *val,
                                      double *bnd, double *cond)
{
    size_t n = (size_t)total;
    dev dx, dw, dbias, dsh, dsc, dv, db, dc;
    ADM_TRY(kept_drop());
    if (j->sets == 0 || n == 0) return ADM_OK;
    ADM_TRY(upload(&dx, x, n));
    ADM_TRY(upload(&dw, w, (size_t)j->C));
    ADM_TRY(upload(&dbias, b, (size_t)j->C));
    ADM_TRY(upload(&dsh, shift, n));
    ADM_TRY(upload(&dsc, scale, n));
    ADM_CUDA_CHECK(cudaMalloc(&dv.p, 8 * n));
    ADM_CUDA_CHECK(cudaMalloc(&db.p, 8 * n));
    if (cond) ADM_CUDA_CHECK(cudaMalloc(&dc.p, 8 * n));
    norm_sets<<<(int)std::min<int64_t>((j->sets + 63) / 64, 65536), 64>>>(*j, dx.d(), dw.d(), dbias.d(), dsh.d(),
                                                                          dsc.d(), dv.d(), db.d(), dc.d());
    ADM_CUDA_CHECK_LAUNCH();
    ADM_TRY(download(dv, db, dc, n, val, bnd, cond));
    return ADM_OK;
}

/* The attention's scratch: 4 T doubles a line in flight, at most this much
 * in all (lines go in chunks). */
#define ATTN_SCRATCH_BYTES ((int64_t)256 << 20)

extern "C" adm_status adm_o_cuda_attention(const adm_o_attn_job *j, const double *q, const double *k,
                                           const double *v, double *val, double *bnd, double *cond)
{
    int64_t lines = j->H * j->S, nout = lines * j->E, chunk;
    dev dq, dk, dv, dval, db, dc, scr;
    ADM_TRY(kept_drop());
    if (nout == 0) return ADM_OK;
    chunk = ATTN_SCRATCH_BYTES / (32 * (j->T > 0 ? j->T : 1));
    if (chunk < 1) chunk = 1;
    if (chunk > lines) chunk = lines;
    ADM_TRY(upload(&dq, q, (size_t)(lines * j->D)));
    ADM_TRY(upload(&dk, k, (size_t)(j->H * j->T * j->D)));
    ADM_TRY(upload(&dv, v, (size_t)(j->H * j->T * j->E)));
    ADM_CUDA_CHECK(cudaMalloc(&dval.p, 8 * (size_t)nout));
    ADM_CUDA_CHECK(cudaMalloc(&db.p, 8 * (size_t)nout));
    if (cond) ADM_CUDA_CHECK(cudaMalloc(&dc.p, 8 * (size_t)nout));
    ADM_CUDA_CHECK(cudaMalloc(&scr.p, 32 * (size_t)(j->T > 0 ? j->T : 1) * (size_t)chunk));
    for (int64_t t0 = 0; t0 < lines; t0 += chunk) {
        int64_t nl = lines - t0 < chunk ? lines - t0 : chunk;
        attention_lines<<<(int)std::min<int64_t>((nl + 63) / 64, 65536), 64>>>(*j, dq.d(), dk.d(), dv.d(), t0, nl,
                                                                                scr.d(), dval.d(), db.d(), dc.d());
        ADM_CUDA_CHECK(cudaGetLastError());
    }
    ADM_CUDA_CHECK_LAUNCH();
    ADM_TRY(download(dval, db, dc, (size_t)nout, val, bnd, cond));
    return ADM_OK;
}

extern "C" adm_status adm_o_cuda_linattn(const adm_o_linattn_job *j, const double *q, const double *k,
                                         const double *v, double *val, double *bnd, double *cond)
{
    int64_t nout = j->H * j->S * j->E, de = j->D * j->E;
    dev dq, dk, dv, dval, db, dc, kv;
    ADM_TRY(kept_drop());
    if (nout == 0) return ADM_OK;
    ADM_TRY(upload(&dq, q, (size_t)(j->H * j->S * j->D)));
    ADM_TRY(upload(&dk, k, (size_t)(j->H * j->T * j->D)));
    ADM_TRY(upload(&dv, v, (size_t)(j->H * j->T * j->E)));
    ADM_CUDA_CHECK(cudaMalloc(&dval.p, 8 * (size_t)nout));
    ADM_CUDA_CHECK(cudaMalloc(&db.p, 8 * (size_t)nout));
    if (cond) ADM_CUDA_CHECK(cudaMalloc(&dc.p, 8 * (size_t)nout));
    ADM_CUDA_CHECK(cudaMalloc(&kv.p, 8 * (size_t)(2 * de + j->D + 1)));
    for (int64_t h = 0; h < j->H; h++) {
        linattn_kv<<<(int)std::min<int64_t>((de + j->D + 63) / 64, 65536), 64>>>(*j, dk.d(), dv.d(), h, kv.d(),
                                                                                 kv.d() + de, kv.d() + 2 * de);
        ADM_CUDA_CHECK(cudaGetLastError());
        linattn_lines<<<(int)std::min<int64_t>((j->S + 63) / 64, 65536), 64>>>(*j, dq.d(), kv.d(), kv.d() + de,
                                                                                kv.d() + 2 * de, h, dval.d(), db.d(),
                                                                                dc.d());
        ADM_CUDA_CHECK(cudaGetLastError());
    }
    ADM_CUDA_CHECK_LAUNCH();
    ADM_TRY(download(dval, db, dc, (size_t)nout, val, bnd, cond));
    return ADM_OK;
}
