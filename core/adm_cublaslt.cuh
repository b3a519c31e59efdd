/* Internal: RAII holders for the CUDA translation units that run one
 * cuBLASLt matmul (device buffers, the handle, the matmul descriptor and
 * the three layouts: each freed on every return path). */
#ifndef ADM_CUBLASLT_CUH
#define ADM_CUBLASLT_CUH

#include <cublasLt.h>
#include <cuda_runtime.h>
#include "adm_cuda_check.h"

namespace adm_lt {

struct dmem {
    void *p = nullptr;
    ~dmem() { if (p) cudaFree(p); }
};

struct state {
    cublasLtHandle_t h = nullptr;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    ~state()
    {
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (op) cublasLtMatmulDescDestroy(op);
        if (h) cublasLtDestroy(h);
    }
};

} // namespace adm_lt

#endif
