/* The registry of implementations, per op, reference path first. Each is
 * a bit-faithful CPU emulation of the kernel it names (the seed's thirteen
 * request-gated fusions and their reference paths), with the static
 * declarations gate 6 reads. */
#include "adm_candidates.h"
#include "cuda_twins.h"
#include "norm_emu.h"
#include "plugin_sandbox.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- GEMM family */

static adm_status gemm_with(const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out,
                            void (*tweak)(adm_gemm_emu *), int matmul_bias_slot)
{
    adm_gemm_emu e;
    adm_gemm_emu_reference(&e);
    e.gelu = p->gelu_tanh ? ADM_GELU_TANH : ADM_GELU_ERF;
    if (!matmul_bias_slot) e.gelu = ADM_GELU_NONE;
    e.out = in[0]->dtype == ADM_FP32 ? ADM_FP32 : in[0]->dtype;
    if (tweak) tweak(&e);
    return adm_emu_gemm(in[0], in[1], in[2], &e, out);
}

static void t_fused(adm_gemm_emu *e) { e->bias_in_accumulator = 1; e->gelu_fused = 1; }
static void t_bias(adm_gemm_emu *e) { e->bias_in_accumulator = 1; }
static void t_splitk(adm_gemm_emu *e) { e->splitk = 4; }
static void t_splitk_bf16(adm_gemm_emu *e) { e->splitk = 4; e->partial_round = 1; }
static void t_bf16_accum(adm_gemm_emu *e) { e->accumulator = ADM_BF16; }
static void t_fp8(adm_gemm_emu *e) { e->operand = ADM_E4M3; }
static void t_trunc(adm_gemm_emu *e) { e->out_round = ADM_RTZ; }

#define GEMM_FN(name, tweak, gelu) \
    static adm_status name(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out) \
    { (void)self; return gemm_with(p, in, out, tweak, gelu); }
GEMM_FN(lg_eager, NULL, 1)
GEMM_FN(lg_fused, t_fused, 1)
GEMM_FN(lg_bias, t_bias, 1)
GEMM_FN(lg_splitk, t_splitk, 1)
GEMM_FN(lg_bf16_accum, t_bf16_accum, 1)
GEMM_FN(lg_fp8, t_fp8, 1)
GEMM_FN(lg_trunc, t_trunc, 1)
GEMM_FN(l_eager, NULL, 0)
GEMM_FN(l_bias, t_bias, 0)
GEMM_FN(l_splitk, t_splitk, 0)
GEMM_FN(l_splitk_bf16, t_splitk_bf16, 0)
GEMM_FN(l_bf16_accum, t_bf16_accum, 0)
GEMM_FN(l_fp8, t_fp8, 0)

/* Qwen-Image's fused added QKV: the text stream's add_q/k/v projections
 * as one GEMM over the weights stacked [Wq; Wk; Wv] (w here), where the
 * reference runs three GEMMs. The emulated eager order does not depend on
 * N, so the three reference GEMMs are the eager path over the stacked
 * weight; what the fusion moves is the accumulation order of the one wider
 * GEMM's kernel: tensor-core k-blocks of 16, each block's products summed
 * wide and added to the fp32 accumulator with one rounding. The epilogue
 * (GEMM output -> bf16, + bias -> bf16) is the reference's. */
static void t_added_qkv(adm_gemm_emu *e) { e->kblock = 16; }
GEMM_FN(l_added_qkv, t_added_qkv, 0)

/* FC2 fed an NVFP4-quantized input (FLUX.2 FC1+SwiGLU+quant): x quantized
 * and dequantized as the NVFP4 quantizer computes it in fp32
 * (adm_emu_nvfp4_qdq, not the oracle's exact quantizer), then the eager
 * GEMM on the dequantized values. */
static adm_status l_nvfp4_input(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in,
                                adm_tensor *out)
{
    adm_tensor xq;
    adm_gemm_emu e;
    adm_status st;
    (void)self;
    (void)p;
    ADM_TRY(adm_emu_nvfp4_qdq(in[0], &xq));
    adm_gemm_emu_reference(&e);
    e.out = in[0]->dtype;
    st = adm_emu_gemm(&xq, in[1], in[2], &e, out);
    adm_tensor_free(&xq);
    return st;
}

/* ---- the real kernels (CUDA); tanh-GELU only, as the cuBLASLt epilogue */

static adm_status cuda_lg(const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out, int mode)
{
    if (!p->gelu_tanh)
        return ADM_FAIL(ADM_ERR_UNSUPPORTED, "the cuBLASLt GELU epilogue is the tanh approximation");
    return adm_cuda_linear_gelu(in[0], in[1], in[2], mode, out);
}
static adm_status lg_cublas_eager(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return cuda_lg(p, in, out, 0); }
static adm_status lg_cublaslt_bias(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return cuda_lg(p, in, out, 1); }
static adm_status lg_cublaslt_gelu_bias(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in,
                                        adm_tensor *out)
{ (void)self; return cuda_lg(p, in, out, 2); }

/* ---- the CUDA twins of the emulations (candidates/cuda_twins.h): GPU
 * kernels with the emulations' bits, for a table on real kernels */

#define TWIN_FN(name, which) \
    static adm_status name(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out) \
    { (void)self; return adm_cuda_twin(which, p, in, out); }
TWIN_FN(tw_l_eager, ADM_TWIN_LINEAR_EAGER)
TWIN_FN(tw_l_bias, ADM_TWIN_LINEAR_BIAS_EPILOGUE)
TWIN_FN(tw_l_splitk, ADM_TWIN_LINEAR_SPLITK_FP32)
TWIN_FN(tw_l_splitk_bf16, ADM_TWIN_LINEAR_SPLITK_BF16)
TWIN_FN(tw_l_added_qkv, ADM_TWIN_LINEAR_ADDED_QKV)
TWIN_FN(tw_l_nvfp4_input, ADM_TWIN_LINEAR_NVFP4_INPUT)
TWIN_FN(tw_lg_eager, ADM_TWIN_LG_EAGER)
TWIN_FN(tw_lg_fused, ADM_TWIN_LG_FUSED_EPILOGUE)
TWIN_FN(tw_gr_eager, ADM_TWIN_GR_EAGER)
TWIN_FN(tw_gr_early, ADM_TWIN_GR_EARLY_ROUND)
TWIN_FN(tw_rms_eager, ADM_TWIN_RMS_EAGER)
TWIN_FN(tw_rms_fused, ADM_TWIN_RMS_FUSED_FP32)
TWIN_FN(tw_rms_bf16, ADM_TWIN_RMS_BF16_STATS)
TWIN_FN(tw_ln_eager, ADM_TWIN_LN_EAGER)
TWIN_FN(tw_ln_folded, ADM_TWIN_LN_FOLDED)
TWIN_FN(tw_la_fp32, ADM_TWIN_LA_EAGER_FP32)
TWIN_FN(tw_la_bf16, ADM_TWIN_LA_BF16_GEMM)
TWIN_FN(tw_gn_eager, ADM_TWIN_GN_EAGER)
TWIN_FN(tw_gn_fused, ADM_TWIN_GN_FUSED_TWOPASS)

/* ---- norms, residual, attention */

static adm_status rms_eager(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_rmsnorm(p, in, NORM_STATS_SEQ, 0, p->silu, out); }
static adm_status rms_fused(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_rmsnorm(p, in, NORM_STATS_BLOCKED, 1, p->silu, out); }
static adm_status rms_bf16(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_rmsnorm(p, in, NORM_STATS_BF16, 1, p->silu, out); }
static adm_status ms_eager(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_mean_sq(p, in, NORM_STATS_SEQ, out); }
static adm_status ms_bf16(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_mean_sq(p, in, NORM_STATS_BF16, out); }
static adm_status ln_eager(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_layernorm(p, in, 0, out); }
static adm_status ln_folded(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_layernorm(p, in, 1, out); }
static adm_status gn_eager(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_groupnorm(p, in, 0, out); }
static adm_status gn_fused(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_groupnorm(p, in, 1, out); }
static adm_status gr_eager(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_gated_residual(p, in, 0, out); }
static adm_status gr_early(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_gated_residual(p, in, 1, out); }
static adm_status la_fp32(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_linear_attention(p, in, 0, out); }
static adm_status la_bf16(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_linear_attention(p, in, 1, out); }

static adm_status at_math(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_attention(p, in, ADM_ATTN_MATH, out); }
static adm_status at_math_bf16(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_attention(p, in, ADM_ATTN_MATH_BF16, out); }
static adm_status at_flash(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_attention(p, in, ADM_ATTN_FLASH, out); }
static adm_status at_tiled(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_attention(p, in, ADM_ATTN_TILED, out); }

/* ---- row sums */

static adm_status rs_pairwise(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_row_sum(p, in, ADM_SUM_PAIRWISE, out); }
static adm_status rs_sequential(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_row_sum(p, in, ADM_SUM_SEQUENTIAL, out); }
static adm_status rs_bf16(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_row_sum(p, in, ADM_SUM_BF16_ACC, out); }
static adm_status rs_warp(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{ (void)self; return adm_emu_row_sum(p, in, ADM_SUM_WARP, out); }

/* accumulator, operand, intermediate, transcendental ulps, stable */
#define D_REF {ADM_FP32, ADM_BF16, ADM_FP32, 2, 1}
#define D_BF16ACC {ADM_BF16, ADM_BF16, ADM_FP32, 2, 1}
#define D_BF16MID {ADM_FP32, ADM_BF16, ADM_BF16, 2, 1}
#define D_FP8 {ADM_FP32, ADM_E4M3, ADM_FP32, 2, 1}
#define D_FP4 {ADM_FP32, ADM_E2M1, ADM_FP32, 2, 1}
#define D_PROMOTED {ADM_FP32, ADM_FP32, ADM_FP32, 2, 1}
#define D_BF16GEMM {ADM_FP32, ADM_BF16, ADM_BF16, 2, 1}
#define D_SUM {ADM_FP32, ADM_FP32, ADM_FP32, 0, 1}      /* no transcendentals */
#define D_SUM_BF16 {ADM_BF16, ADM_FP32, ADM_FP32, 0, 1}

static const adm_impl registry[] = {
    {"linear+gelu", "eager", "cpu", D_REF, lg_eager, "GEMM (fp32 accumulate) -> bf16, + bias -> bf16, GELU in fp32 -> bf16", NULL},
    {"linear+gelu", "fused_epilogue", "cpu", D_REF, lg_fused, "cublasLt GELU_BIAS epilogue: bias and GELU on the fp32 accumulator, one rounding", NULL},
    {"linear+gelu", "bias_epilogue", "cpu", D_REF, lg_bias, "cublasLt BIAS epilogue, then eager GELU", NULL},
    {"linear+gelu", "splitk4", "cpu", D_REF, lg_splitk, "split-K in 4 with fp32 partials, then the eager epilogue", NULL},
    {"linear+gelu", "bf16_accum", "cpu", D_BF16ACC, lg_bf16_accum, "accumulation rounded to bf16 after every add (high-tier contrast)", NULL},
    {"linear+gelu", "fp8_operand", "cpu", D_FP8, lg_fp8, "x quantized to fp8 e4m3 per tensor before the GEMM (high-tier contrast)", NULL},
    {"linear+gelu", "truncate", "cpu", D_REF, lg_trunc, "the output truncated instead of rounded to nearest (fault)", NULL},
    {"linear+gelu", "cublas_eager", "cuda", D_REF, lg_cublas_eager, "GPU: cuBLASLt GEMM -> bf16, bias add -> bf16, GELU -> bf16 (the eager path as it runs)", NULL},
    {"linear+gelu", "cublaslt_bias", "cuda", D_REF, lg_cublaslt_bias, "GPU: cuBLASLt BIAS epilogue, then GELU", NULL},
    {"linear+gelu", "cublaslt_gelu_bias", "cuda", D_REF, lg_cublaslt_gelu_bias, "GPU: cuBLASLt GELU_BIAS epilogue, one rounding", NULL},
    {"linear", "eager", "cpu", D_REF, l_eager, "GEMM (fp32 accumulate) -> bf16, + bias -> bf16", NULL},
    {"linear", "bias_epilogue", "cpu", D_REF, l_bias, "bias added to the fp32 accumulator before the single rounding", NULL},
    {"linear", "splitk_fp32", "cpu", D_REF, l_splitk, "split-K in 4, fp32 partials reduced in order", NULL},
    {"linear", "splitk_bf16", "cpu", D_BF16MID, l_splitk_bf16, "split-K in 4, partials rounded to bf16 before the reduction", NULL},
    {"linear", "added_qkv_fused", "cpu", D_REF, l_added_qkv, "Qwen-Image added QKV: one GEMM over the stacked Q/K/V weights, tensor-core k-blocks of 16 added to the fp32 accumulator", NULL},
    {"linear", "bf16_accum", "cpu", D_BF16ACC, l_bf16_accum, "accumulation rounded to bf16 after every add", NULL},
    {"linear", "fp8_operand", "cpu", D_FP8, l_fp8, "x quantized to fp8 e4m3 per tensor", NULL},
    {"linear", "nvfp4_input", "cpu", D_FP4, l_nvfp4_input, "FLUX.2 FC2 input quantized to NVFP4 (torchao's two-level scaling in fp32) before the bf16 intermediate exists", NULL},
    {"rmsnorm", "eager", "cpu", D_REF, rms_eager, "fp32 statistics, normalize -> bf16, * weight -> bf16 (diffusers RMSNorm)", NULL},
    {"rmsnorm", "fused_fp32", "cpu", D_REF, rms_fused, "fused RMSNorm: fp32 statistics by a 32-lane reduction, one rounding", NULL},
    {"rmsnorm", "bf16_stats", "cpu", D_BF16MID, rms_bf16, "Ideogram gate RMSNorm: the statistic accumulated through bf16", NULL},
    {"mean_sq", "eager", "cpu", D_REF, ms_eager, "the RMSNorm statistic mean(x^2): fp32 squares summed in order, / C", NULL},
    {"mean_sq", "bf16_accum", "cpu", D_BF16MID, ms_bf16, "Ideogram gate RMSNorm's statistic: the running sum of squares rounded to bf16 after every add", NULL},
    {"layernorm", "eager", "cpu", D_REF, ln_eager, "F.layer_norm -> bf16, * (1 + scale) -> bf16, + shift -> bf16", NULL},
    {"layernorm", "fused_affine_folded", "cpu", D_REF, ln_folded, "fused LayerNorm + modulate, affine folded into one fp32 expression", NULL},
    {"groupnorm", "eager", "cpu", D_REF, gn_eager, "two-pass fp32 statistics, affine -> bf16, SiLU -> bf16", NULL},
    {"groupnorm", "fused_twopass", "cpu", D_REF, gn_fused, "FLUX.2 VAE: two-pass fp32 statistics, affine folded, SiLU epilogue, one rounding", NULL},
    {"gated_residual", "eager", "cpu", D_REF, gr_eager, "x + g y as one fp32 expression (addcmul), one rounding", NULL},
    {"gated_residual", "early_round", "cpu", D_REF, gr_early, "Helios / LingBot fused gated residual: g y rounded one step earlier", NULL},
    {"linear_attention", "eager_fp32", "cpu", D_PROMOTED, la_fp32, "ReLU linear attention promoted to fp32 throughout", NULL},
    {"linear_attention", "bf16_gemm", "cpu", D_BF16GEMM, la_bf16, "SANA-Video: the kv state fed to the second GEMM in bf16", NULL},
    {"attention", "math", "cpu", D_REF, at_math, "SDPA math backend (PyTorch >= 2.5): fp32 upcast, fp32 GEMMs and softmax, one rounding", NULL},
    {"attention", "flash", "cpu", D_REF, at_flash, "FlashAttention-2 forward: key tiles (128 for D <= 64, else 64) in reverse order, online fp32 softmax, P a bf16 operand of the P V MMA", NULL},
    {"attention", "tiled64", "cpu", D_REF, at_tiled, "online softmax over 64-key tiles in order, P a bf16 operand, one fp32 row sum, a final division", NULL},
    {"attention", "math_bf16", "cpu", D_BF16MID, at_math_bf16, "SDPA math with fp16/bf16 reductions allowed: q sf, S, P and the output in bf16 (high-tier contrast)", NULL},
    {"row_sum", "pairwise", "cpu", D_SUM, rs_pairwise, "fp32 sum as a balanced tree (a GPU block reduction, cascade summation)", NULL},
    {"row_sum", "sequential", "cpu", D_SUM, rs_sequential, "fp32 sum with one accumulator in index order", NULL},
    {"row_sum", "warp", "cpu", D_SUM, rs_warp, "fp32 sum over 32 lanes (elements j = lane mod 32), then a tree across the lanes", NULL},
    {"row_sum", "bf16_acc", "cpu", D_SUM_BF16, rs_bf16, "the running sum rounded to bf16 after every add (high-tier contrast)", NULL},
    /* the CUDA twins: each the GPU kernel of the emulation it names, with its bits */
    {"linear", "cuda_eager", "cuda", D_REF, tw_l_eager, "GPU twin of linear/eager: one thread per output, k in order", NULL},
    {"linear", "cuda_bias_epilogue", "cuda", D_REF, tw_l_bias, "GPU twin of linear/bias_epilogue", NULL},
    {"linear", "cuda_splitk_fp32", "cuda", D_REF, tw_l_splitk, "GPU twin of linear/splitk_fp32", NULL},
    {"linear", "cuda_splitk_bf16", "cuda", D_BF16MID, tw_l_splitk_bf16, "GPU twin of linear/splitk_bf16", NULL},
    {"linear", "cuda_added_qkv_fused", "cuda", D_REF, tw_l_added_qkv, "GPU twin of linear/added_qkv_fused: fp64 k-blocks of 16", NULL},
    {"linear", "cuda_nvfp4_input", "cuda", D_FP4, tw_l_nvfp4_input, "GPU twin of linear/nvfp4_input: the NVFP4 quantizer, then the eager GEMM", NULL},
    {"linear+gelu", "cuda_eager", "cuda", D_REF, tw_lg_eager, "GPU twin of linear+gelu/eager (glibc's tanhf/erff, ported)", NULL},
    {"linear+gelu", "cuda_fused_epilogue", "cuda", D_REF, tw_lg_fused, "GPU twin of linear+gelu/fused_epilogue", NULL},
    {"gated_residual", "cuda_eager", "cuda", D_REF, tw_gr_eager, "GPU twin of gated_residual/eager", NULL},
    {"gated_residual", "cuda_early_round", "cuda", D_REF, tw_gr_early, "GPU twin of gated_residual/early_round", NULL},
    {"rmsnorm", "cuda_eager", "cuda", D_REF, tw_rms_eager, "GPU twin of rmsnorm/eager: one warp per row (glibc's expf for SiLU, ported)", NULL},
    {"rmsnorm", "cuda_fused_fp32", "cuda", D_REF, tw_rms_fused, "GPU twin of rmsnorm/fused_fp32: the 32-lane sum on a warp's lanes", NULL},
    {"rmsnorm", "cuda_bf16_stats", "cuda", D_BF16MID, tw_rms_bf16, "GPU twin of rmsnorm/bf16_stats", NULL},
    {"layernorm", "cuda_eager", "cuda", D_REF, tw_ln_eager, "GPU twin of layernorm/eager: one warp per row", NULL},
    {"layernorm", "cuda_fused_affine_folded", "cuda", D_REF, tw_ln_folded, "GPU twin of layernorm/fused_affine_folded", NULL},
    {"linear_attention", "cuda_eager_fp32", "cuda", D_PROMOTED, tw_la_fp32, "GPU twin of linear_attention/eager_fp32", NULL},
    {"linear_attention", "cuda_bf16_gemm", "cuda", D_BF16GEMM, tw_la_bf16, "GPU twin of linear_attention/bf16_gemm", NULL},
    {"groupnorm", "cuda_eager", "cuda", D_REF, tw_gn_eager, "GPU twin of groupnorm/eager: one warp per group", NULL},
    {"groupnorm", "cuda_fused_twopass", "cuda", D_REF, tw_gn_fused, "GPU twin of groupnorm/fused_twopass", NULL},
};
#define N_IMPL ((int)(sizeof registry / sizeof registry[0]))

int adm_impl_count(void) { return N_IMPL; }
const adm_impl *adm_impl_at(int i) { return (i >= 0 && i < N_IMPL) ? &registry[i] : NULL; }

const adm_impl *adm_impl_find(const char *op, const char *name)
{
    for (int i = 0; i < N_IMPL; i++)
        if (op && name && !strcmp(registry[i].op, op) && !strcmp(registry[i].name, name)) return &registry[i];
    return NULL;
}

const adm_impl *adm_impl_reference(const char *op)
{
    for (int i = 0; i < N_IMPL; i++)
        if (op && !strcmp(registry[i].op, op)) return &registry[i];
    return NULL;
}

adm_status adm_impl_resolve(const char *op, const char *spec, const adm_impl **out)
{
    const char *colon = strrchr(spec, ':');
    *out = NULL;
    if (adm_impl_spec_is_plugin(spec)) {
        char path[1024];
        size_t n = (size_t)(colon - spec);
        if (n >= sizeof path) return ADM_FAIL(ADM_ERR_INVALID, "plugin path too long: %s", spec);
        memcpy(path, spec, n);
        path[n] = '\0';
        ADM_TRY(adm_plugin_load(path, colon + 1, out));
        if (strcmp((*out)->op, op) != 0) {
            char got[64];
            snprintf(got, sizeof got, "%s", (*out)->op);
            adm_plugin_free(*out);
            *out = NULL;
            return ADM_FAIL(ADM_ERR_INVALID, "plugin kernel '%s' computes op '%s', not '%s'", spec, got, op);
        }
        return ADM_OK;
    }
    *out = adm_impl_find(op, spec);
    if (!*out) {
        char names[512] = "";
        for (int i = 0; i < N_IMPL; i++)
            if (!strcmp(registry[i].op, op)) {
                strncat(names, names[0] ? ", " : "", sizeof names - strlen(names) - 1);
                strncat(names, registry[i].name, sizeof names - strlen(names) - 1);
            }
        return ADM_FAIL(ADM_ERR_NOT_FOUND, "op '%s' has no implementation '%s' (registered: %s; or path.so:name)", op,
                        spec, names[0] ? names : "none");
    }
    return ADM_OK;
}
