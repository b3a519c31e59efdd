/* The quantize oracle on the GPU: oracle/quantize.c's schemes with
 * quantize_fns.h's arithmetic (exact: bound 0), so the values are the
 * CPU's bits. The tensor's scale comes from the host, which reads every
 * element to widen it anyway; a row's or a block's amax and scale are
 * taken on the device, a thread each, in the CPU's order (a maximum does
 * not depend on it; the NaN rule does not either). */
#include <cuda_runtime.h>
#include <algorithm>

#include <mpfr.h> /* before the extern "C" block: gmp.h brings C++ headers */
extern "C" {
#include "oracle_internal.h"
}
#include "adm_cublaslt.cuh"
#include "quantize_fns.h"

namespace {

int grid_for(int64_t n) { return (int)std::min<int64_t>((n + 255) / 256, 65536); }

__global__ void q_tensor(const double *x, int64_t n, double s, double *val)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        val[i] = adm_qf_qdq(ADM_QF_E4M3, x[i], s);
}

__global__ void q_row_scales(const double *x, int64_t R, int64_t N, double *scale)
{
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < R; r += (int64_t)gridDim.x * blockDim.x) {
        double ra = 0;
        for (int64_t j = 0; j < N; j++) ra = adm_qf_amax(ra, x[r * N + j]);
        scale[r] = adm_qf_div_round(ADM_QF_FP32, ra, 448.0);
    }
}

__global__ void q_rows(const double *x, int64_t n, int64_t N, const double *scale, double *val)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        val[i] = adm_qf_qdq(ADM_QF_E4M3, x[i], scale[i / N]);
}

/* one thread per block of 16 (the shape check made N a multiple of 16) */
__global__ void q_nvfp4(const double *x, int64_t n, double g, double *val)
{
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < n / 16; b += (int64_t)gridDim.x * blockDim.x) {
        double ba = 0, sb;
        for (int64_t j = 16 * b; j < 16 * b + 16; j++) ba = adm_qf_amax(ba, x[j]);
        sb = g == 0 ? 0.0 : adm_qf_div_round(ADM_QF_E4M3, ba, 6.0 * g);
        for (int64_t j = 16 * b; j < 16 * b + 16; j++) val[j] = adm_qf_qdq(ADM_QF_E2M1, x[j], sb * g);
    }
}

} // namespace

extern "C" adm_status adm_o_cuda_quantize(int scheme, int64_t n, int64_t N, double g, const double *x, double *val)
{
    adm_lt::dmem dx, dv, ds;
    double *x_d, *v_d;
    int64_t R = N ? n / N : 0;
    if (n == 0) return ADM_OK;
    if (scheme == ADM_Q_NVFP4 && n % 16 != 0)
        return ADM_FAIL(ADM_ERR_SHAPE, "oracle quantize on the GPU: nvfp4 needs blocks of 16");
    ADM_CUDA_CHECK(cudaMalloc(&dx.p, 8 * (size_t)n));
    ADM_CUDA_CHECK(cudaMalloc(&dv.p, 8 * (size_t)n));
    ADM_CUDA_CHECK(cudaMemcpy(dx.p, x, 8 * (size_t)n, cudaMemcpyHostToDevice));
    x_d = (double *)dx.p;
    v_d = (double *)dv.p;
    switch (scheme) {
    case ADM_Q_FP8_TENSOR: q_tensor<<<grid_for(n), 256>>>(x_d, n, g, v_d); break;
    case ADM_Q_FP8_ROW:
        ADM_CUDA_CHECK(cudaMalloc(&ds.p, 8 * (size_t)(R ? R : 1)));
        q_row_scales<<<grid_for(R), 256>>>(x_d, R, N, (double *)ds.p);
        ADM_CUDA_CHECK_LAUNCH();
        q_rows<<<grid_for(n), 256>>>(x_d, n, N, (double *)ds.p, v_d);
        break;
    case ADM_Q_NVFP4: q_nvfp4<<<grid_for(n / 16), 256>>>(x_d, n, g, v_d); break;
    default: return ADM_FAIL(ADM_ERR_INVALID, "oracle quantize on the GPU: no scheme %d", scheme);
    }
    ADM_CUDA_CHECK_LAUNCH();
    ADM_CUDA_CHECK(cudaMemcpy(val, dv.p, 8 * (size_t)n, cudaMemcpyDeviceToHost));
    return ADM_OK;
}
