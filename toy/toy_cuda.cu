/* The toy's GPU pieces: the FC2 GEMM through cuBLASLt (bf16 operands, fp32
 * compute, one rounding to bf16: the GEMM of the eager path) and NCCL,
 * loaded with dlopen so that a build runs where libnccl is absent or lives
 * elsewhere (ADM_NCCL_LIB names it; PyTorch's wheel ships one). */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#if ADM_HAVE_NCCL_H
#include <nccl.h>
#endif

extern "C" {
#include "adm_cuda.h"
#include "adm_toy.h"
}
#include "adm_cuda_check.h"
#include "adm_cublaslt.cuh"

/* core/cuda.cu's, beside it in the module */
extern "C" adm_status adm_toy_cuda_select(int device)
{
    ADM_TRY(adm_cuda_select(device));
    return ADM_OK;
}

extern "C" adm_status adm_toy_cuda_gemm_bf16(const uint16_t *x, const uint16_t *w, int64_t M, int64_t K, int64_t N,
                                             uint16_t *y)
{
    adm_lt::dmem dx, dw, dy, ws;
    adm_lt::state s;
    const size_t wsize = (size_t)32 << 20;
    const float one = 1.0f, zero = 0.0f;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    if (M <= 0 || N <= 0 || K <= 0) return ADM_FAIL(ADM_ERR_SHAPE, "toy GEMM: empty extents");
    ADM_CUDA_CHECK(cudaMalloc(&dx.p, 2 * (size_t)(M * K)));
    ADM_CUDA_CHECK(cudaMalloc(&dw.p, 2 * (size_t)(N * K)));
    ADM_CUDA_CHECK(cudaMalloc(&dy.p, 2 * (size_t)(M * N)));
    ADM_CUDA_CHECK(cudaMalloc(&ws.p, wsize));
    ADM_CUDA_CHECK(cudaMemcpy(dx.p, x, 2 * (size_t)(M * K), cudaMemcpyHostToDevice));
    ADM_CUDA_CHECK(cudaMemcpy(dw.p, w, 2 * (size_t)(N * K), cudaMemcpyHostToDevice));
    ADM_LT_CHECK(cublasLtCreate(&s.h));
    ADM_LT_CHECK(cublasLtMatmulDescCreate(&s.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    ADM_LT_CHECK(cublasLtMatmulDescSetAttribute(s.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    /* row-major y[M,N] = x[M,K] w[N,K]^T is column-major y^T[N,M] = w x^T */
    ADM_LT_CHECK(cublasLtMatrixLayoutCreate(&s.a, CUDA_R_16BF, (uint64_t)K, (uint64_t)N, K));
    ADM_LT_CHECK(cublasLtMatrixLayoutCreate(&s.b, CUDA_R_16BF, (uint64_t)K, (uint64_t)M, K));
    ADM_LT_CHECK(cublasLtMatrixLayoutCreate(&s.c, CUDA_R_16BF, (uint64_t)N, (uint64_t)M, N));
    ADM_LT_CHECK(cublasLtMatmul(s.h, s.op, &one, dw.p, s.a, dx.p, s.b, &zero, dy.p, s.c, dy.p, s.c, nullptr, ws.p, wsize,
                                0));
    ADM_CUDA_CHECK_LAUNCH();
    ADM_CUDA_CHECK(cudaMemcpy(y, dy.p, 2 * (size_t)(M * N), cudaMemcpyDeviceToHost));
    return ADM_OK;
}

#if ADM_HAVE_NCCL_H

namespace {

struct nccl_api {
    void *lib = nullptr;
    ncclResult_t (*get_unique_id)(ncclUniqueId *) = nullptr;
    ncclResult_t (*comm_init_rank)(ncclComm_t *, int, ncclUniqueId, int) = nullptr;
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                               cudaStream_t) = nullptr;
    ncclResult_t (*comm_destroy)(ncclComm_t) = nullptr;
    const char *(*error_string)(ncclResult_t) = nullptr;
};

nccl_api api;

adm_status nccl_load()
{
    const char *env = getenv("ADM_NCCL_LIB");
    const char *names[3] = {env, "libnccl.so.2", "libnccl.so"};
    if (api.lib) return ADM_OK;
    for (const char *n : names) {
        if (!n || !*n) continue;
        if ((api.lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
    }
    if (!api.lib)
        return ADM_FAIL(ADM_ERR_NO_DEVICE, "NCCL: cannot load %s (set ADM_NCCL_LIB to libnccl.so.2): %s",
                        env && *env ? env : "libnccl.so.2", dlerror());
    *(void **)&api.get_unique_id = dlsym(api.lib, "ncclGetUniqueId");
    *(void **)&api.comm_init_rank = dlsym(api.lib, "ncclCommInitRank");
    *(void **)&api.all_reduce = dlsym(api.lib, "ncclAllReduce");
    *(void **)&api.comm_destroy = dlsym(api.lib, "ncclCommDestroy");
    *(void **)&api.error_string = dlsym(api.lib, "ncclGetErrorString");
    if (!api.get_unique_id || !api.comm_init_rank || !api.all_reduce || !api.comm_destroy || !api.error_string) {
        dlclose(api.lib);
        api.lib = nullptr;
        return ADM_FAIL(ADM_ERR_NO_DEVICE, "NCCL: the library lacks ncclGetUniqueId, ncclCommInitRank, ncclAllReduce, "
                        "ncclCommDestroy or ncclGetErrorString");
    }
    return ADM_OK;
}

#define TOY_NCCL_CHECK(call)                                                                               \
    do {                                                                                                   \
        ncclResult_t r_ = (call);                                                                          \
        if (r_ != ncclSuccess)                                                                             \
            return adm_error_set(ADM_ERR_CUDA, __FILE__, __LINE__, "%s: NCCL: %s", #call, api.error_string(r_)); \
    } while (0)

} // namespace

static_assert(sizeof(ncclUniqueId) == ADM_TOY_NCCL_ID_BYTES, "ncclUniqueId is 128 bytes");

extern "C" adm_status adm_toy_nccl_unique_id(unsigned char id[ADM_TOY_NCCL_ID_BYTES])
{
    ncclUniqueId u;
    ADM_TRY(nccl_load());
    TOY_NCCL_CHECK(api.get_unique_id(&u));
    memcpy(id, &u, sizeof u);
    return ADM_OK;
}

extern "C" adm_status adm_toy_nccl_init(const unsigned char id[ADM_TOY_NCCL_ID_BYTES], int rank, int world, void **comm)
{
    ncclUniqueId u;
    ncclComm_t c;
    ADM_TRY(nccl_load());
    memcpy(&u, id, sizeof u);
    TOY_NCCL_CHECK(api.comm_init_rank(&c, world, u, rank));
    *comm = c;
    return ADM_OK;
}

extern "C" adm_status adm_toy_nccl_allreduce_bf16(void *comm, uint16_t *buf, int64_t n)
{
    adm_lt::dmem d;
    ADM_TRY(nccl_load());
    ADM_CUDA_CHECK(cudaMalloc(&d.p, 2 * (size_t)n));
    ADM_CUDA_CHECK(cudaMemcpy(d.p, buf, 2 * (size_t)n, cudaMemcpyHostToDevice));
    TOY_NCCL_CHECK(api.all_reduce(d.p, d.p, (size_t)n, ncclBfloat16, ncclSum, (ncclComm_t)comm, 0));
    ADM_CUDA_CHECK(cudaStreamSynchronize(0));
    ADM_CUDA_CHECK(cudaMemcpy(buf, d.p, 2 * (size_t)n, cudaMemcpyDeviceToHost));
    return ADM_OK;
}

extern "C" void adm_toy_nccl_free(void *comm)
{
    if (comm && api.lib) api.comm_destroy((ncclComm_t)comm);
}

#else

extern "C" adm_status adm_toy_nccl_unique_id(unsigned char id[ADM_TOY_NCCL_ID_BYTES])
{
    (void)id;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without nccl.h");
}
extern "C" adm_status adm_toy_nccl_init(const unsigned char id[ADM_TOY_NCCL_ID_BYTES], int rank, int world, void **comm)
{
    (void)id; (void)rank; (void)world; (void)comm;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without nccl.h");
}
extern "C" adm_status adm_toy_nccl_allreduce_bf16(void *comm, uint16_t *buf, int64_t n)
{
    (void)comm; (void)buf; (void)n;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without nccl.h");
}
extern "C" void adm_toy_nccl_free(void *comm) { (void)comm; }

#endif
