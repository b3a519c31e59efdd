/* The real kernels: linear + tanh-GELU through cuBLASLt on the GPU, as a
 * runtime runs them. bf16 operands, fp32 compute, bf16 output.
 *   eager:       cuBLASLt GEMM -> bf16; bias add (fp32 math) -> bf16;
 *                GELU (PyTorch's tanh formula in fp32) -> bf16
 *   bias:        cuBLASLt BIAS epilogue -> bf16; eager GELU -> bf16
 *   gelu_bias:   cuBLASLt GELU_BIAS epilogue: one rounding
 * Inputs are copied contiguous to the device (strided views included). */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <vector>

#include <mpfr.h>
extern "C" {
#include "adm_candidates.h"
#include "adm_cuda.h"
}
#include "adm_cuda_check.h"
#include "adm_cublaslt.cuh"

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

std::vector<uint16_t> host_bf16(const adm_tensor *t)
{
    std::vector<uint16_t> v((size_t)adm_tensor_numel(t));
    for (size_t i = 0; i < v.size(); i++) v[i] = (uint16_t)adm_tensor_bits(t, (int64_t)i);
    return v;
}

} // namespace

extern "C" adm_status adm_cuda_linear_gelu(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias, int mode,
                                           adm_tensor *out)
{
    int count = 0;
    int64_t K = x->shape[x->ndim - 1], N = w->shape[0], M = K ? adm_tensor_numel(x) / K : 0, os[ADM_MAX_DIMS];
    adm_lt::dmem dx, dw, db, dy, ws;
    adm_lt::state s;
    const size_t wsize = (size_t)32 << 20;
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = mode == 2 ? CUBLASLT_EPILOGUE_GELU_BIAS : mode == 1 ? CUBLASLT_EPILOGUE_BIAS
                                                                                 : CUBLASLT_EPILOGUE_DEFAULT;
    cudaDataType_t bt = CUDA_R_16BF;
    ADM_TRY(adm_cuda_device_count(&count));
    if (x->dtype != ADM_BF16 || w->dtype != ADM_BF16 || (bias && bias->dtype != ADM_BF16))
        return ADM_FAIL(ADM_ERR_UNSUPPORTED, "cuBLASLt linear+gelu: bf16 inputs only");
    memcpy(os, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    os[x->ndim - 1] = N;
    ADM_TRY(adm_tensor_alloc(out, ADM_BF16, x->ndim, os));
    if (M == 0 || N == 0) return ADM_OK;
    if (K == 0) return ADM_FAIL(ADM_ERR_UNSUPPORTED, "cuBLASLt linear+gelu: K = 0");
    {
        std::vector<uint16_t> hx = host_bf16(x), hw = host_bf16(w), hb(N, 0);
        if (bias) hb = host_bf16(bias);
        ADM_CUDA_CHECK(cudaMalloc(&dx.p, 2 * hx.size()));
        ADM_CUDA_CHECK(cudaMalloc(&dw.p, 2 * hw.size()));
        ADM_CUDA_CHECK(cudaMalloc(&db.p, 2 * hb.size()));
        ADM_CUDA_CHECK(cudaMalloc(&dy.p, 2 * (size_t)(M * N)));
        ADM_CUDA_CHECK(cudaMalloc(&ws.p, wsize));
        ADM_CUDA_CHECK(cudaMemcpy(dx.p, hx.data(), 2 * hx.size(), cudaMemcpyHostToDevice));
        ADM_CUDA_CHECK(cudaMemcpy(dw.p, hw.data(), 2 * hw.size(), cudaMemcpyHostToDevice));
        ADM_CUDA_CHECK(cudaMemcpy(db.p, hb.data(), 2 * hb.size(), cudaMemcpyHostToDevice));
    }
    ADM_LT_CHECK(cublasLtCreate(&s.h));
    ADM_LT_CHECK(cublasLtMatmulDescCreate(&s.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (mode != 0) {
        void *bp = db.p;
        ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
        ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    }
    /* row-major y[M,N] = x[M,K] w[N,K]^T is column-major y^T[N,M] = w x^T */
    ADM_LT_CHECK(cublasLtMatrixLayoutCreate(&s.a, CUDA_R_16BF, (uint64_t)K, (uint64_t)N, K));
    ADM_LT_CHECK(cublasLtMatrixLayoutCreate(&s.b, CUDA_R_16BF, (uint64_t)K, (uint64_t)M, K));
    ADM_LT_CHECK(cublasLtMatrixLayoutCreate(&s.c, CUDA_R_16BF, (uint64_t)N, (uint64_t)M, N));
    ADM_LT_CHECK(cublasLtMatmul(s.h, s.op, &one, dw.p, s.a, dx.p, s.b, &zero, dy.p, s.c, dy.p, s.c, nullptr, ws.p,
                                wsize, 0));
    ADM_CUDA_CHECK_LAUNCH();
    if (mode == 0 && bias) {
        bias_add<<<1024, 256>>>((__nv_bfloat16 *)dy.p, (const __nv_bfloat16 *)db.p, M, N);
        ADM_CUDA_CHECK_LAUNCH();
    }
    if (mode != 2) {
        gelu_tanh<<<1024, 256>>>((__nv_bfloat16 *)dy.p, M * N);
        ADM_CUDA_CHECK_LAUNCH();
    }
    ADM_CUDA_CHECK(cudaMemcpy(out->data, dy.p, 2 * (size_t)(M * N), cudaMemcpyDeviceToHost));
    return ADM_OK;
}
