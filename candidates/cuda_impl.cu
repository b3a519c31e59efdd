/* The real kernels: linear + tanh-GELU through cuBLASLt on the GPU, as a
 * runtime runs them. bf16 operands, fp32 compute, bf16 output.
 *   eager:       cuBLASLt GEMM -> bf16; bias add (fp32 math) -> bf16;
 *                GELU (PyTorch's tanh formula in fp32) -> bf16
 *   bias:        cuBLASLt BIAS epilogue -> bf16; eager GELU -> bf16
 *   gelu_bias:   cuBLASLt GELU_BIAS epilogue: one rounding
 * A dense input goes up as it lies; a view (strided, transposed,
 * broadcast) is gathered on the host first. */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <mutex>
#include <vector>

#include <mpfr.h>
extern "C" {
#include "adm_candidates.h"
#include "adm_cuda.h"
#include "candidates_cuda.h"
#include "adm_trace.h"
}
#include "adm_cuda_check.h"
#include "adm_cublaslt.cuh"
#include "adm_per_device.cuh"

namespace {

__global__ void bias_add(__nv_bfloat16 *y, const __nv_bfloat16 *b, int64_t M, int64_t N)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < M * N; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16_rn(__bfloat162float(y[i]) + __bfloat162float(b[i % N]));
}

__global__ void gelu_tanh(__nv_bfloat16 *y, int64_t n)
{
    const float kBeta = 0.7978845608028654f, kKappa = 0.044715f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float x = __bfloat162float(y[i]), cube = x * x * x;
        y[i] = __float2bfloat16_rn(0.5f * x * (1.0f + tanhf(kBeta * (x + kKappa * cube))));
    }
}

/* Row-major dense from its offset (a size-1 extent's stride is free). */
bool dense(const adm_tensor *t)
{
    int64_t want = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != want) return false;
        want *= t->shape[d];
    }
    return true;
}

/* t's bf16 bits on the device in row-major order: a dense tensor goes up
 * as it lies (a full-size w, 75 MB at FLUX.1's MLP, took some 0.1 s
 * element by element through the host's accessor); a view is gathered on
 * the host first. */
adm_status upload_bf16(const adm_tensor *t, adm_lt::dmem *d, size_t n)
{
    ADM_CUDA_CHECK(cudaMalloc(&d->p, 2 * (n ? n : 1)));
    if (n == 0) return ADM_OK;
    if (dense(t)) {
        ADM_CUDA_CHECK(cudaMemcpy(d->p, (const uint16_t *)t->data + t->offset, 2 * n, cudaMemcpyHostToDevice));
    } else {
        std::vector<uint16_t> v(n);
        for (size_t i = 0; i < n; i++) v[i] = (uint16_t)adm_tensor_bits(t, (int64_t)i);
        ADM_CUDA_CHECK(cudaMemcpy(d->p, v.data(), 2 * n, cudaMemcpyHostToDevice));
    }
    return ADM_OK;
}

/* The process's cuBLASLt handle of each device (core/adm_per_device.cuh);
 * each call brings its own workspace. */
adm_per_device<cublasLtHandle_t> lt_handles;

adm_status lt_create(cublasLtHandle_t *h)
{
    double t = adm_trace_ms();
    ADM_LT_CHECK(cublasLtCreate(h));
    adm_trace_part("cublaslt.create", t, -1);
    return ADM_OK;
}

adm_status lt_get(cublasLtHandle_t *h) { return lt_handles.get(h, "cuBLASLt linear+gelu", lt_create); }

/* y[M,N] = x[M,K] w[N,K]^T through cuBLASLt, bf16 in and out, fp32
 * compute, with mode's epilogue (0 none, 1 BIAS, 2 GELU_BIAS; db: N bf16)
 * and a workspace of wsize bytes; on the default stream. */
adm_status lt_matmul(cublasLtHandle_t h, int mode, const void *dx, const void *dw, const void *db, void *dy, int64_t M,
                     int64_t K, int64_t N, void *ws, size_t wsize)
{
    adm_lt::state s; /* s.h stays NULL: the handle is the device's (lt_get) */
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = mode == 2 ? CUBLASLT_EPILOGUE_GELU_BIAS : mode == 1 ? CUBLASLT_EPILOGUE_BIAS
                                                                                 : CUBLASLT_EPILOGUE_DEFAULT;
    cudaDataType_t bt = CUDA_R_16BF;
    ADM_LT_CHECK(cublasLtMatmulDescCreate(&s.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (mode != 0) {
        const void *bp = db;
        ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
        ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
    /* row-major y[M,N] = x[M,K] w[N,K]^T is column-major y^T[N,M] = w x^T */
    ADM_LT_CHECK(cublasLtMatrixLayoutCreate(&s.a, CUDA_R_16BF, (uint64_t)K, (uint64_t)N, K));
    ADM_LT_CHECK(cublasLtMatrixLayoutCreate(&s.b, CUDA_R_16BF, (uint64_t)K, (uint64_t)M, K));
    ADM_LT_CHECK(cublasLtMatrixLayoutCreate(&s.c, CUDA_R_16BF, (uint64_t)N, (uint64_t)M, N));
    ADM_LT_CHECK(cublasLtMatmul(h, s.op, &one, dw, s.a, dx, s.b, &zero, dy, s.c, dy, s.c, nullptr, ws, wsize, 0));
    return ADM_OK;
}

} // namespace

/* The handle, and cuBLASLt's first matmul of the process (some 100 ms on
 * an H200 beyond its arithmetic: kernels loaded lazily, the library set
 * up) paid on the warm-up thread: one of each epilogue, on zeros of
 * 2048^3, results not read. */
extern "C" adm_status adm_cuda_impl_warm(void)
{
    cublasLtHandle_t h = nullptr;
    const int64_t n = 2048;
    const size_t wsize = (size_t)32 << 20;
    adm_lt::dmem a, y, ws;
    double t;
    ADM_TRY(lt_get(&h));
    t = adm_trace_ms();
    ADM_CUDA_CHECK(cudaMalloc(&a.p, 2 * (size_t)(n * n)));
    ADM_CUDA_CHECK(cudaMalloc(&y.p, 2 * (size_t)(n * n)));
    ADM_CUDA_CHECK(cudaMalloc(&ws.p, wsize));
    ADM_CUDA_CHECK(cudaMemset(a.p, 0, 2 * (size_t)(n * n)));
    for (int mode = 0; mode < 3; mode++) ADM_TRY(lt_matmul(h, mode, a.p, a.p, a.p, y.p, n, n, n, ws.p, wsize));
    ADM_CUDA_CHECK(cudaDeviceSynchronize());
    adm_trace_part("impl.lt_warm", t, -1);
    return ADM_OK;
}

extern "C" adm_status adm_cuda_linear_gelu(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias, int mode,
                                           adm_tensor *out)
{
    int count = 0;
    int64_t K = x->shape[x->ndim - 1], N = w->shape[0], M = K ? adm_tensor_numel(x) / K : 0, os[ADM_MAX_DIMS];
    adm_lt::dmem dx, dw, db, dy, ws;
    cublasLtHandle_t h = nullptr;
    const size_t wsize = (size_t)32 << 20;
    ADM_TRY(adm_cuda_device_count(&count));
    if (x->dtype != ADM_BF16 || w->dtype != ADM_BF16 || (bias && bias->dtype != ADM_BF16))
        return ADM_FAIL(ADM_ERR_UNSUPPORTED, "cuBLASLt linear+gelu: bf16 inputs only");
    memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    os[x->ndim - 1] = N;
    ADM_TRY(adm_tensor_alloc(out, ADM_BF16, x->ndim, os));
    if (M == 0 || N == 0) return ADM_OK;
    if (K == 0) return ADM_FAIL(ADM_ERR_UNSUPPORTED, "cuBLASLt linear+gelu: K = 0");
    double t = adm_trace_ms(), t1;
    ADM_TRY(upload_bf16(x, &dx, (size_t)(M * K)));
    ADM_TRY(upload_bf16(w, &dw, (size_t)(N * K)));
    if (bias) {
        ADM_TRY(upload_bf16(bias, &db, (size_t)N));
    } else {
        ADM_CUDA_CHECK(cudaMalloc(&db.p, 2 * (size_t)N));
        ADM_CUDA_CHECK(cudaMemset(db.p, 0, 2 * (size_t)N));
    }
    ADM_CUDA_CHECK(cudaMalloc(&dy.p, 2 * (size_t)(M * N)));
    ADM_CUDA_CHECK(cudaMalloc(&ws.p, wsize));
    adm_trace_part("impl.upload_alloc", t, -1);
    t1 = adm_trace_ms();
    ADM_TRY(lt_get(&h));
    ADM_TRY(lt_matmul(h, mode, dx.p, dw.p, db.p, dy.p, M, K, N, ws.p, wsize));
    ADM_CUDA_CHECK_LAUNCH();
    if (mode == 0 && bias) {
        bias_add<<<1024, 256>>>((__nv_bfloat16 *)dy.p, (const __nv_bfloat16 *)db.p, M, N);
        ADM_CUDA_CHECK_LAUNCH();
    }
    if (mode != 2) {
        gelu_tanh<<<1024, 256>>>((__nv_bfloat16 *)dy.p, M * N);
        ADM_CUDA_CHECK_LAUNCH();
    }
    if (adm_trace_on()) {
        ADM_CUDA_CHECK(cudaDeviceSynchronize());
        adm_trace_part("impl.gemm", t1, -1);
    }
    t1 = adm_trace_ms();
    ADM_CUDA_CHECK(cudaMemcpy(out->data, dy.p, 2 * (size_t)(M * N), cudaMemcpyDeviceToHost));
    adm_trace_part("impl.download", t1, -1);
    adm_trace_part("impl.linear_gelu", t, -1);
    return ADM_OK;
}
