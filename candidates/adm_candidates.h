/* admit candidates: bit-faithful CPU emulations of reference paths and
 * fused kernels. Each rounds exactly where the emulated kernel rounds:
 * bf16/fp16 storage, fp32 arithmetic in a stated order. */
#ifndef ADM_CANDIDATES_H
#define ADM_CANDIDATES_H

#include "adm_export.h"

#include "adm_core.h"
#include "adm_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum adm_gelu_kind { ADM_GELU_NONE = 0, ADM_GELU_TANH = 1, ADM_GELU_ERF = 2 } adm_gelu_kind;

/* A GEMM y = x w^T (+ bias) (-> GELU) as a kernel computes it. */
typedef struct adm_gemm_emu {
    adm_dtype accumulator;  /* ADM_FP32, or ADM_BF16: the running sum rounds to it after every add */
    int splitk;             /* K split into this many chunks, each summed in fp32, partials added in order */
    int partial_round;      /* partials rounded to `out` before the split-K reduction (high-tier contrast) */
    int bias_in_accumulator;/* bias added to the fp32 sum before the output rounding (fused bias epilogue);
                               else the GEMM output rounds, then the bias add rounds again (eager) */
    adm_gelu_kind gelu;
    int gelu_fused;         /* GELU on the fp32 value, one rounding (cublasLt epilogue); else on the rounded
                               output, rounded again (eager) */
    adm_dtype operand;      /* x rounded into this (per-tensor scaled, for fp8) before the GEMM; INVALID: none */
    adm_dtype out;          /* output format */
    adm_round out_round;    /* rounding of the output (RNE; RTZ for a truncating kernel) */
    double nudge_ulps;      /* added in output ulps before the final rounding (fault injection) */
    int kblock;             /* > 0: a tensor-core MMA's order. The products of each block of kblock
                               consecutive k (exact in fp64) are summed in fp64 and the block's sum is
                               added to the fp32 accumulator, rounding to fp32 once per block; 0: one
                               fp32 add per product (the eager order) */
} adm_gemm_emu;

ADM_API void adm_gemm_emu_reference(adm_gemm_emu *e); /* eager PyTorch: fp32 accumulate, round, +bias round, gelu round */

/* x [.., K] (any strides), w [N, K], bias [N] or NULL -> out [.., N] owned. */
ADM_API adm_status adm_emu_gemm(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias,
                                const adm_gemm_emu *e, adm_tensor *out);

/* linear + tanh-GELU on the GPU through cuBLASLt (candidates/cuda_impl.cu):
 * mode 0 eager (GEMM, bias add, GELU: three roundings), 1 BIAS epilogue
 * then GELU, 2 GELU_BIAS epilogue (one rounding). ADM_ERR_NO_DEVICE
 * without a GPU. */
ADM_API adm_status adm_cuda_linear_gelu(const adm_tensor *x, const adm_tensor *w, const adm_tensor *bias, int mode,
                                        adm_tensor *out);

/* NVFP4 quantize-dequantize of x as torchao's two-level nvfp4_quantize
 * computes it, in fp32 arithmetic: g = fp32(amax / 2688) over the tensor;
 * per block of 16 along the last dimension, the block scale
 * fp32(fp32(bamax / 6) / g) clamped to [2^-6, 448] and cast to e4m3 (RNE),
 * t = fp32(g sb), q = e2m1(fp32(x / t)) (RNE, saturating at 6), and the
 * dequantized fp32(q t). An all-zero tensor (g = 0) gives zeros. x any
 * dtype and strides, the last dimension a multiple of 16; out fp32, owned.
 * It differs from the oracle's exact quantizer (oracle/quantize.c) in
 * those fp32 roundings and the clamp of small block scales. */
ADM_API adm_status adm_emu_nvfp4_qdq(const adm_tensor *x, adm_tensor *out);

/* GELU of an fp32 value in fp32 arithmetic (PyTorch's opmath formulas). */
ADM_API float adm_emu_gelu_f32(float x, adm_gelu_kind k);

/* Scaled dot-product attention as real kernels compute it
 * (candidates/attention_emu.c says where each rounds): out has q's dtype. */
typedef enum adm_attn_path {
    ADM_ATTN_MATH = 0,   /* PyTorch SDPA math backend (fp32 upcast, the default since 2.5) */
    ADM_ATTN_MATH_BF16,  /* the math backend with fp16/bf16 reductions allowed: every intermediate in bf16 */
    ADM_ATTN_FLASH,      /* FlashAttention-2's forward (the flash backend on sm80/sm90) */
    ADM_ATTN_TILED       /* an online softmax over 64-key tiles in order (the memory-efficient backend's structure) */
} adm_attn_path;
ADM_API adm_status adm_emu_attention(const adm_op_params *p, const adm_tensor *const *in, adm_attn_path path,
                                     adm_tensor *out);

/* A row sum along p->axis in fp32 (out fp32, x.sum(axis, dtype=float32)). */
typedef enum adm_sum_order {
    ADM_SUM_PAIRWISE = 0,      /* a balanced tree of fp32 additions */
    ADM_SUM_SEQUENTIAL,        /* one fp32 accumulator in index order */
    ADM_SUM_WARP,              /* 32 lanes over the elements j = lane mod 32, then a tree across the lanes */
    ADM_SUM_BF16_ACC           /* the running sum rounded to bf16 after every add */
} adm_sum_order;
ADM_API adm_status adm_emu_row_sum(const adm_op_params *p, const adm_tensor *const *in, adm_sum_order order,
                                   adm_tensor *out);

#ifdef __cplusplus
}
#endif
#endif
