/* Internal: the CUDA twins of the CPU emulations (candidates/cuda_twins.cu).
 *
 * Each twin is a GPU kernel that performs its emulation's arithmetic in
 * its order, rounding where it rounds, so that its output has the
 * emulation's bits (NaN: any NaN for any NaN; IEEE 754 does not fix the
 * sign or payload an operation gives a NaN, and x86 and the GPU differ).
 * The transcendentals are glibc's, ported (candidates/adm_libm.h). The
 * registry names them "cuda_<emulation>" with backend "cuda"; without
 * CUDA, or without a device, they refuse with ADM_ERR_NO_DEVICE. */
#ifndef ADM_CUDA_TWINS_H
#define ADM_CUDA_TWINS_H

#include "adm_core.h"
#include "adm_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum adm_twin {
    ADM_TWIN_LINEAR_EAGER = 0,    /* linear: eager */
    ADM_TWIN_LINEAR_BIAS_EPILOGUE, /* linear: bias_epilogue */
    ADM_TWIN_LINEAR_SPLITK_FP32,  /* linear: splitk_fp32 */
    ADM_TWIN_LINEAR_SPLITK_BF16,  /* linear: splitk_bf16 */
    ADM_TWIN_LINEAR_ADDED_QKV,    /* linear: added_qkv_fused */
    ADM_TWIN_LINEAR_NVFP4_INPUT,  /* linear: nvfp4_input */
    ADM_TWIN_LG_EAGER,            /* linear+gelu: eager */
    ADM_TWIN_LG_FUSED_EPILOGUE,   /* linear+gelu: fused_epilogue */
    ADM_TWIN_GR_EAGER,            /* gated_residual: eager */
    ADM_TWIN_GR_EARLY_ROUND,      /* gated_residual: early_round */
    ADM_TWIN_RMS_EAGER,           /* rmsnorm: eager */
    ADM_TWIN_RMS_FUSED_FP32,      /* rmsnorm: fused_fp32 */
    ADM_TWIN_RMS_BF16_STATS,      /* rmsnorm: bf16_stats */
    ADM_TWIN_LN_EAGER,            /* layernorm: eager */
    ADM_TWIN_LN_FOLDED,           /* layernorm: fused_affine_folded */
    ADM_TWIN_LA_EAGER_FP32,       /* linear_attention: eager_fp32 */
    ADM_TWIN_LA_BF16_GEMM,        /* linear_attention: bf16_gemm */
    ADM_TWIN_GN_EAGER,            /* groupnorm: eager */
    ADM_TWIN_GN_FUSED_TWOPASS,    /* groupnorm: fused_twopass */
    ADM_TWIN_COUNT
} adm_twin;

/* Runs twin `which` on the op's inputs (any dtypes and strides: each is
 * read as the emulation reads it, (float) of its exact value, into a
 * contiguous copy on the device) and allocates out as the emulation does.
 * The output format must be bf16, fp16 or fp32 (ADM_ERR_UNSUPPORTED
 * otherwise); the emulation's own refusals (shapes, NVFP4 blocks) are
 * the twin's. In the default floating-point environment. */
adm_status adm_cuda_twin(adm_twin which, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out);

#ifdef __cplusplus
}
#endif
#endif
