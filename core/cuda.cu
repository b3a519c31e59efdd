/* CUDA surface of libadmit: device discovery and the device's own format
 * conversions, against which the CPU formats are proven bit-exact. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_fp4.h>
#include <stdio.h>
#include <stdlib.h>

#include "adm_cuda.h"
#include "adm_cuda_module.h"
#include "adm_cuda_check.h"
#include "adm_trace.h"

namespace {

enum conv_kind { K_BF16_RN, K_BF16_RZ, K_F16_RN, K_F16_RZ, K_E4M3, K_E4M3_SAT,
                 K_E5M2, K_E5M2_SAT, K_E2M1 };

__device__ uint16_t convert_one(int kind, float x)
{
    switch (kind) {
    case K_BF16_RN: return __bfloat16_as_ushort(__float2bfloat16_rn(x));
    case K_BF16_RZ: return __bfloat16_as_ushort(__float2bfloat16_rz(x));
    case K_F16_RN: return __half_as_ushort(__float2half_rn(x));
    case K_F16_RZ: return __half_as_ushort(__float2half_rz(x));
    case K_E4M3: return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3);
    case K_E4M3_SAT: return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    case K_E5M2: return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2);
    case K_E5M2_SAT: return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
    default: return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
    }
}

__global__ void convert_buffer(int kind, const float *in, uint16_t *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = convert_one(kind, in[i]);
}

__global__ void convert_range(int kind, uint32_t first, uint16_t *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = convert_one(kind, __uint_as_float(first + (uint32_t)i));
}

adm_status kind_of(adm_dtype dt, adm_round mode, unsigned flags, int *kind)
{
    int sat = (flags & ADM_CVT_SATFINITE) != 0;
    if (dt == ADM_BF16 && !sat && (mode == ADM_RNE || mode == ADM_RTZ)) {
        *kind = mode == ADM_RNE ? K_BF16_RN : K_BF16_RZ;
        return ADM_OK;
    }
    if (dt == ADM_FP16 && !sat && (mode == ADM_RNE || mode == ADM_RTZ)) {
        *kind = mode == ADM_RNE ? K_F16_RN : K_F16_RZ;
        return ADM_OK;
    }
    if (mode == ADM_RNE && dt == ADM_E4M3) { *kind = sat ? K_E4M3_SAT : K_E4M3; return ADM_OK; }
    if (mode == ADM_RNE && dt == ADM_E5M2) { *kind = sat ? K_E5M2_SAT : K_E5M2; return ADM_OK; }
    if (mode == ADM_RNE && dt == ADM_E2M1) { *kind = K_E2M1; return ADM_OK; }
    return ADM_FAIL(ADM_ERR_UNSUPPORTED, "no device conversion to %s with mode %d flags %u",
                    adm_dtype_name(dt), (int)mode, flags);
}

struct device_buffer {
    void *p = nullptr;
    ~device_buffer() { if (p) cudaFree(p); }
};

const size_t chunk = (size_t)1 << 26;

} // namespace

extern "C" adm_status adm_cuda_device_count(int *count)
{
    double t = adm_trace_ms();
    cudaError_t e = cudaGetDeviceCount(count);
    int drv = 0, rt = 0;
    adm_trace_part("cuda.device_count", t, -1);
    if (e == cudaSuccess && *count > 0) return ADM_OK;
    *count = 0;
    /* The runtime answers "insufficient driver" when there is no driver
     * at all: a driver version of 0 tells that case from an old driver. */
    if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&drv) == cudaSuccess && drv == 0)
        return ADM_FAIL(ADM_ERR_NO_DEVICE, "no GPU/driver found (no NVIDIA driver is installed)");
    if (e == cudaErrorInsufficientDriver && cudaRuntimeGetVersion(&rt) == cudaSuccess)
        return ADM_FAIL(ADM_ERR_NO_DEVICE, "the NVIDIA driver supports CUDA %d.%d, older than this build's CUDA "
                        "runtime %d.%d", drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    if (e == cudaSuccess || e == cudaErrorNoDevice)
        return ADM_FAIL(ADM_ERR_NO_DEVICE, "no GPU/driver found (the NVIDIA driver sees no device)");
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "no usable GPU: %s", cudaGetErrorString(e));
}

extern "C" adm_status adm_cuda_device_name(char *buf, size_t n, int *cc_major, int *cc_minor)
{
    int count = 0, dev = 0;
    cudaDeviceProp prop;
    ADM_TRY(adm_cuda_device_count(&count));
    ADM_CUDA_CHECK(cudaGetDevice(&dev));
    ADM_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    snprintf(buf, n, "%s", prop.name);
    *cc_major = prop.major;
    *cc_minor = prop.minor;
    return ADM_OK;
}

extern "C" adm_status adm_cuda_select(int device)
{
    int count = 0;
    ADM_TRY(adm_cuda_device_count(&count));
    if (device < 0 || device >= count)
        return ADM_FAIL(ADM_ERR_NO_DEVICE, "GPU %d asked for, %d present (numbered from 0)", device, count);
    {
        double t = adm_trace_ms();
        ADM_CUDA_CHECK(cudaSetDevice(device));
        adm_trace_part("cuda.set_device", t, -1);
    }
    return ADM_OK;
}

/* The module's side of adm_cuda_warm_device: the device selected where
 * device >= 0 (on the calling thread) and its context created; what else
 * a program warms is its parts' (harness/cuda_warm.c). */
extern "C" adm_status adm_cuda_warm_module(int device)
{
    int count = 0;
    double t;
    ADM_TRY(adm_cuda_device_count(&count));
    if (device >= 0) ADM_TRY(adm_cuda_select(device));
    t = adm_trace_ms();
    ADM_CUDA_CHECK(cudaFree(0)); /* the context, where cudaSetDevice has not made it */
    adm_trace_part("cuda.warm_context", t, -1);
    return ADM_OK;
}

extern "C" adm_status adm_cuda_convert_f32(adm_dtype dt, adm_round mode, unsigned flags,
                                           const float *in, uint16_t *out, size_t n)
{
    int kind = 0, count = 0;
    device_buffer din, dout;
    ADM_TRY(kind_of(dt, mode, flags, &kind));
    ADM_TRY(adm_cuda_device_count(&count));
    ADM_CUDA_CHECK(cudaMalloc(&din.p, chunk * sizeof(float)));
    ADM_CUDA_CHECK(cudaMalloc(&dout.p, chunk * sizeof(uint16_t)));
    for (size_t done = 0; done < n; done += chunk) {
        size_t m = n - done < chunk ? n - done : chunk;
        ADM_CUDA_CHECK(cudaMemcpy(din.p, in + done, m * sizeof(float), cudaMemcpyHostToDevice));
        convert_buffer<<<1024, 256>>>(kind, (const float *)din.p, (uint16_t *)dout.p, m);
        ADM_CUDA_CHECK_LAUNCH();
        ADM_CUDA_CHECK(cudaMemcpy(out + done, dout.p, m * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    }
    return ADM_OK;
}

extern "C" adm_status adm_cuda_convert_f32_range(adm_dtype dt, adm_round mode, unsigned flags,
                                                 uint32_t first, uint16_t *out, size_t n)
{
    int kind = 0, count = 0;
    device_buffer dout;
    ADM_TRY(kind_of(dt, mode, flags, &kind));
    ADM_TRY(adm_cuda_device_count(&count));
    if (n > ((size_t)1 << 32) - first)
        return ADM_FAIL(ADM_ERR_INVALID, "range of %zu encodings from %u passes 2^32", n, first);
    ADM_CUDA_CHECK(cudaMalloc(&dout.p, chunk * sizeof(uint16_t)));
    for (size_t done = 0; done < n; done += chunk) {
        size_t m = n - done < chunk ? n - done : chunk;
        convert_range<<<1024, 256>>>(kind, first + (uint32_t)done, (uint16_t *)dout.p, m);
        ADM_CUDA_CHECK_LAUNCH();
        ADM_CUDA_CHECK(cudaMemcpy(out + done, dout.p, m * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    }
    return ADM_OK;
}
