"""The seed's quality-tier admission template (test/quality_tier_admission.py
in the serving runtime), done with admit: each of the six transformations
it measured is scored against admit's fp64 oracle of the same math, relative
to the path the model runs today, and must land in the tier the seed gave it.

    transformation                                seed        here        tier
    fused linear+GELU (cublasLt epilogue)         0.66x       0.66x       lossless
    reassociated fp32 reduction (split-K shape)   0.98x       1.00x       lossless
    per-token gated residual (Helios / LingBot)   1.01x       1.05x       lossless
    bf16-accumulated norm statistics (Ideogram)   ~3.8e4 x    8e6 x       high
    BF16-input attention GEMM (SANA-Video)        ~9.9e3 x    6.9e3 x     high
    quantized FC2 input (FLUX.2 NVFP4)            ~6.9e5 x    7.2e5 x     high

(RMS error against the reference path's; "here": this file on Debian 12's
torch 1.13, CPU, whose fp32 sum for the norm statistic is more accurate
than the seed's reference, hence the larger ratio.) The tensors are DiT-shaped
activations (a log-normal per-token scale, outlier channels at max/p99 = 8,
as FLUX.1's MLP input) made here with torch on the CPU; on a GPU the same
tests take the kernels' real outputs. Run: pytest examples/ (with the
package on PYTHONPATH: BUILD/python, or installed).
"""
import math

import pytest
import torch
import torch.nn.functional as F

import admit

TOKENS, CHANNELS, OUT = 256, 3072, 768


def dit_activations(seed, tokens=TOKENS, channels=CHANNELS, max_over_p99=8.0):
    """x[t, c] = s_t z[t, c] g_c in bf16: z standard normal, s_t log-normal,
    g_c = 1 except on 1% of channels, whose gain puts max|x| / p99|x| at
    max_over_p99."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(tokens, channels, generator=g, dtype=torch.float64)
    s = torch.exp(0.5 * torch.randn(tokens, 1, generator=g, dtype=torch.float64))
    x = s * z
    outliers = torch.randperm(channels, generator=g)[: max(1, channels // 100)]
    p99 = torch.quantile(x.abs().flatten()[:1 << 20].float(), 0.99).item()
    x[:, outliers] *= max_over_p99 * p99 / x[:, outliers].abs().max().item()
    return x.to(torch.bfloat16)


def gaussian(seed, *shape, sigma=1.0):
    g = torch.Generator().manual_seed(seed)
    return (sigma * torch.randn(*shape, generator=g, dtype=torch.float64)).to(torch.bfloat16)


@pytest.fixture(scope="module")
def x():
    return dit_activations(77)


@pytest.fixture(scope="module")
def fc1():
    return gaussian(78, OUT, CHANNELS, sigma=1 / math.sqrt(CHANNELS)), gaussian(79, OUT, sigma=0.02)


def test_fused_linear_gelu_is_lossless(x, fc1):
    """The epilogue rounds once where the eager path rounds the GEMM output,
    then the GELU output: more accurate than the reference chain."""
    w, b = fc1
    eager = F.gelu(F.linear(x, w, b), approximate="tanh")                       # bf16 linear, then bf16 GELU
    fused = F.gelu(F.linear(x.float(), w.float(), b.float()), approximate="tanh").to(torch.bfloat16)
    v = admit.assert_tier("linear+gelu", {"approximate": "tanh"}, inputs={"x": x, "w": w, "bias": b},
                          reference=eager, candidates={"fused_epilogue": fused}, tier="lossless")
    assert v["fused_epilogue"].rms_ratio < 1


def test_reassociated_fp32_reduction_is_lossless(x, fc1):
    """Split-K: four fp32 partial GEMMs summed in fp32, then one rounding."""
    w, b = fc1
    eager = F.linear(x, w, b)
    k = CHANNELS // 4
    parts = [F.linear(x[:, i:i + k].float(), w[:, i:i + k].float()) for i in range(0, CHANNELS, k)]
    splitk = (((parts[0] + parts[1]) + (parts[2] + parts[3])) + b.float()).to(torch.bfloat16)
    admit.assert_tier("linear", inputs={"x": x, "w": w, "bias": b}, reference=eager,
                      candidates={"splitk_fp32": splitk}, tier="lossless")


def test_gated_residual_is_lossless(x):
    """x + g y with a per-token gate: the reference evaluates it as one fp32
    expression (addcmul); the fused kernel rounds g y to bf16 one step
    earlier. Only measurement admits it."""
    gate = gaussian(80, TOKENS, 1, sigma=0.3)
    y = dit_activations(81)
    eager = (x.float() + gate.float() * y.float()).to(torch.bfloat16)
    early = (x.float() + (gate.float() * y.float()).to(torch.bfloat16).float()).to(torch.bfloat16)
    admit.assert_tier("gated_residual", inputs={"x": x, "g": gate, "y": y}, reference=eager,
                      candidates={"early_round": early}, tier="lossless")


def test_bf16_norm_statistics_are_high(x):
    """RMSNorm's statistic mean(x^2) with its running sum rounded to bf16
    after every add, where F.rms_norm keeps it in fp32."""
    xf = x.float()
    eager = (xf * xf).sum(-1) / CHANNELS
    acc = torch.zeros(TOKENS, dtype=torch.bfloat16)
    for c in range(CHANNELS):
        acc = (acc.float() + xf[:, c] * xf[:, c]).to(torch.bfloat16)
    bf16_stats = acc.float() / CHANNELS
    v = admit.assert_tier("mean_sq", inputs={"x": x}, reference=eager, candidates={"bf16_accum": bf16_stats},
                          tier="high", strict=True)
    assert v["bf16_accum"].rms_ratio > 100


def test_bf16_input_attention_gemm_is_high():
    """SANA-Video's ReLU linear attention feeding its kv state to the second
    GEMM in bf16, where the reference promotes to fp32."""
    q, k, val = (gaussian(s, 256, 64) for s in (82, 83, 84))
    eps = 1e-6

    def linear_attention(state_dtype):
        pk = F.relu(k.float())
        kv, ks = (pk.T @ val.float()).to(state_dtype).float(), pk.sum(0).to(state_dtype).float()
        pq = F.relu(q.float())
        return (pq @ kv) / (pq @ ks + eps)[:, None]

    v = admit.assert_tier("linear_attention", {"eps": eps}, inputs={"q": q, "k": k, "v": val},
                          reference=linear_attention(torch.float32),
                          candidates={"bf16_gemm": linear_attention(torch.bfloat16)}, tier="high", strict=True)
    assert v["bf16_gemm"].rms_ratio > 100


def _round_to_grid(v, man_bits, emin, vmax):
    """Round to nearest even on a binary float grid (man_bits stored
    fraction bits, smallest normal exponent emin), saturating at vmax."""
    a = v.abs().clamp(min=2.0 ** (emin - man_bits - 1))
    e = torch.floor(torch.log2(a)).clamp(min=emin)
    q = 2.0 ** (e - man_bits)
    return (torch.round(v / q) * q).clamp(-vmax, vmax)


def nvfp4(x32):
    """NVFP4 quantize and dequantize along the last axis: e2m1 values in
    blocks of 16, an e4m3 scale per block, an fp32 global scale amax/(6 448)."""
    rows, cols = x32.shape
    blocks = x32.reshape(rows, cols // 16, 16)
    glob = x32.abs().max() / (6 * 448)
    scale = _round_to_grid(blocks.abs().amax(-1, keepdim=True) / 6 / glob, 3, -6, 448) * glob
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = _round_to_grid(blocks / scale, 1, 0, 6)
    return (q * scale).reshape(rows, cols)


def test_quantized_fc2_input_is_high(x):
    """FLUX.2's FC1+SwiGLU+quant: FC2's input quantized to NVFP4 before the
    reference's bf16 intermediate exists (the input in fp32 here, so the
    GEMM's fp32 output keeps the reference's fp32 error)."""
    x32 = x.float()
    w2 = gaussian(85, 256, CHANNELS, sigma=1 / math.sqrt(CHANNELS))
    eager = F.linear(x32, w2.float())
    quantized = F.linear(nvfp4(x32), w2.float())
    v = admit.assert_tier("linear", inputs={"x": x32, "w": w2}, reference=eager,
                          candidates={"nvfp4_input": quantized}, tier="high", strict=True)
    assert v["nvfp4_input"].rms_ratio > 1000
