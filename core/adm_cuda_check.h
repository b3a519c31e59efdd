/* Internal: the check macros of CUDA translation units. Each records the
 * failing call, file and line in the last error and returns the code. */
#ifndef ADM_CUDA_CHECK_H
#define ADM_CUDA_CHECK_H

#include <cuda_runtime.h>
#include "adm_core.h"

#define ADM_CUDA_CHECK(call)                                                  \
    do {                                                                      \
        cudaError_t adm_ce_ = (call);                                         \
        if (adm_ce_ != cudaSuccess)                                           \
            return adm_error_set(ADM_ERR_CUDA, __FILE__, __LINE__, "%s: %s",  \
                                 #call, cudaGetErrorString(adm_ce_));         \
    } while (0)

/* After a launch: the launch error, then the kernel's own. */
#define ADM_CUDA_CHECK_LAUNCH()                                               \
    do {                                                                      \
        ADM_CUDA_CHECK(cudaGetLastError());                                   \
        ADM_CUDA_CHECK(cudaDeviceSynchronize());                              \
    } while (0)

#ifdef CUBLAS_API_H_
/* cuBLAS status, with the call that failed. */
#define ADM_CUBLAS_CHECK(call)                                                \
    do {                                                                      \
        cublasStatus_t adm_bs_ = (call);                                      \
        if (adm_bs_ != CUBLAS_STATUS_SUCCESS)                                 \
            return adm_error_set(ADM_ERR_CUDA, __FILE__, __LINE__, "%s: %s",  \
                                 #call, cublasGetStatusString(adm_bs_));      \
    } while (0)
#endif

/* cuBLASLt status, with the call that failed (expanded only where
 * cublasLt.h is included). */
#define ADM_LT_CHECK(call)                                                                   \
    do {                                                                                     \
        cublasStatus_t s_ = (call);                                                          \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                     \
            return adm_error_set(ADM_ERR_CUDA, __FILE__, __LINE__, "%s: cuBLASLt status %d", \
                                 #call, (int)s_);                                            \
    } while (0)

#endif
