/* admit's CUDA runtime surface: what the C library can ask of a GPU
 * without including any CUDA header. Built with or without the toolkit:
 * without it, or without a device, every call answers ADM_ERR_NO_DEVICE,
 * so tests that need a GPU can skip cleanly. */
#ifndef ADM_CUDA_H
#define ADM_CUDA_H

#include "adm_export.h"

#include "adm_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when libadmit was built with the CUDA toolkit. */
ADM_API int adm_cuda_built(void);
/* ADM_OK and *count >= 1 when a usable device exists; ADM_ERR_NO_DEVICE
 * (with the reason in the message) when none does. Never fatal. */
ADM_API adm_status adm_cuda_device_count(int *count);
/* Makes GPU `device` (0 .. count - 1, as CUDA numbers the visible ones)
 * the one this thread's later GPU work runs on; ADM_ERR_NO_DEVICE naming
 * the count when there is no such device. */
ADM_API adm_status adm_cuda_select(int device);
/* Starts making GPU `device` (as adm_cuda_select numbers them; -1: the
 * current one) ready on a thread of its own: the CUDA module loaded, the
 * driver initialized, the device's context created, and for what (bits):
 * ADM_CUDA_WARM_IMPL the cuBLASLt implementations' handle and their first
 * matmul of each epilogue, ADM_CUDA_WARM_ORACLE the GPU oracle's cuBLAS
 * handle, its first DGEMM and bf16 GEMM and its download buffers (first
 * uses that cost tens of milliseconds each), so that a program overlaps
 * that start-up (hundreds of milliseconds on a large GPU) with other work,
 * such as reading a capture. It reports nothing: the calls that need the
 * GPU report what fails, as without it, and find done whatever it has
 * done. At most one at a time; call it and adm_cuda_warm_wait from one
 * thread. Built without CUDA: nothing. (Defined in harness/cuda_warm.c,
 * which knows the parts it warms; core does not.) */
enum { ADM_CUDA_WARM_ORACLE = 1, ADM_CUDA_WARM_IMPL = 2 };
ADM_API void adm_cuda_warm_start(int device, unsigned what);
/* Like adm_cuda_warm_start, but the thread starts in the calling process
 * right after its next sandbox fork (the first capture's reader), so that
 * the reader's child never inherits a lock the start-up holds (no fork
 * may overlap it: core/adm_child.h) and the read still overlaps it. Where
 * no such fork comes before adm_cuda_warm_wait, the start-up is dropped;
 * the calls that need the GPU do it then. */
ADM_API void adm_cuda_warm_start_after_fork(int device, unsigned what);
/* Waits for adm_cuda_warm_start's thread to end (nothing where none
 * runs). Call it before the process exits while one may run. */
ADM_API void adm_cuda_warm_wait(void);
/* The device's name and compute capability, for reports. */
ADM_API adm_status adm_cuda_device_name(char *buf, size_t n, int *cc_major, int *cc_minor);

/* Converts fp32 inputs with the device's own conversion instructions
 * (cvt.rn/rz.bf16.f32, cvt.rn/rz.f16.f32, the cuda_fp8.h and cuda_fp4.h
 * conversions), writing each result's encoding to out[i]. Supported:
 * bf16 and fp16 with ADM_RNE or ADM_RTZ; fp8_e4m3, fp8_e5m2 and fp4_e2m1
 * with ADM_RNE, saturating or not (ADM_CVT_SATFINITE). Host buffers. */
ADM_API adm_status adm_cuda_convert_f32(adm_dtype dt, adm_round mode, unsigned flags,
                                        const float *in, uint16_t *out, size_t n);
/* The same over the consecutive fp32 encodings first, first+1, ...,
 * first+n-1, generated on the device (so 2^32 inputs need no upload). */
ADM_API adm_status adm_cuda_convert_f32_range(adm_dtype dt, adm_round mode, unsigned flags,
                                              uint32_t first, uint16_t *out, size_t n);

/* The float functions the CPU emulations take from the host's libm, as
 * the GPU kernels that twin them compute them: admit's port of glibc's
 * expf, tanhf, erff and expm1f (candidates/adm_libm.h, in the build of
 * expf the host's libm runs), on the device over the consecutive fp32
 * encodings first, first+1, ..., first+n-1; out[i] is the result's
 * encoding. For tests that prove the port on a machine's libm. (Defined
 * in candidates/cuda_impl_load.c: the candidates' part of the module.) */
enum { ADM_CUDA_LIBM_EXPF = 0, ADM_CUDA_LIBM_TANHF = 1, ADM_CUDA_LIBM_ERFF = 2, ADM_CUDA_LIBM_EXPM1F = 3 };
ADM_API adm_status adm_cuda_libm_f32_range(int fn, uint32_t first, uint32_t *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
