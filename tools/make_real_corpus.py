#!/usr/bin/env python3
"""Make the real-kernel corpus: captures/real/*.h5 and captures/real/MANIFEST.json.

Each capture holds one op's inputs (DiT-like activations: a per-token scale
and a few outlier channels, max/p99 about 8, as captures/synth.c makes
them), the output of the path a model runs today (the reference) and the
outputs of real kernels (the candidates), each with the tier it is expected
to get. The manifest names, per capture, the op and its parameters, the
shapes, the seed, the reference path, and per candidate the kernel, its
class and the expected tier; tests/cli_real_corpus.sh replays the corpus
with `admit-kernel replay` and checks every verdict against it.

Classes (the candidates; `--list` prints them with their kernels):
  lossless  SDPA flash, memory-efficient and cuDNN backends against the math
            backend; torch.compile (Inductor/Triton) RMSNorm, LayerNorm +
            adaLN modulate, GroupNorm + SiLU, softmax, row sum (bf16, fp32),
            mean of squares, GELU (tanh, erf) against eager; the cublasLt
            GELU_BIAS epilogue (torch._addmm_activation) against eager
            linear + GELU; split-K (K chunks summed in fp32, rounded once)
            against one cuBLAS GEMM.
  high      causal mask shifted by one; softmax without the max subtraction
            on large logits; K and V through fp8 e4m3 (per-tensor scale);
            a row sum accumulated in bf16; LayerNorm statistics accumulated
            in bf16.
A candidate whose output is bit-identical to the reference is recorded as
expected "exact" (the verdict is then exact, which is stricter than the
class's tier).

Run on a machine with an NVIDIA GPU, PyTorch >= 2.5, h5py and numpy:

    python3 tools/make_real_corpus.py --out captures/real

(a few minutes at most on an H200, most of it torch.compile). It exits 1,
after writing what it could, when a class got no capture. `--device cpu`
is a dry run for machines without a GPU (Debian's python3-torch 1.13 will
do): the same plumbing with stand-ins (a pure-torch math path for SDPA, an
online-softmax emulation, fp32-fused emulations where torch.compile would
run, an fp8 emulation); every candidate is named dryrun_*, the manifest is
marked "dry_run": true, the SDPA backend classes are skipped with a
message, and captures/real is never written.

tools/false_alarm_sweep.py imports the families defined here.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time
import zlib

import numpy as np

try:  # module globals, so that torch.compile traces the functions below without an import inside
    import torch
    import torch.nn.functional as F
except ImportError:  # --list and --help work without torch
    torch = F = None

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from admit_capture import write_capture  # noqa: E402

MANIFEST_FORMAT = "admit-real-corpus"
MANIFEST_VERSION = 1


# --------------------------------------------------------------- data

def dit_activations(rng, tokens, channels, max_over_p99=8.0, outlier_fraction=0.005, token_sigma=0.35):
    """DiT-shaped activations (fp64), as captures/synth.c makes them: a
    log-normal per-token scale, and a few outlier channels whose gain is
    set so that max|x| / p99|x| is about max_over_p99."""
    n_out = int(round(outlier_fraction * channels))
    if outlier_fraction > 0 and n_out < 1:
        n_out = 1
    out = rng.choice(channels, size=n_out, replace=False) if n_out else np.zeros(0, np.int64)
    scale = np.exp(token_sigma * rng.standard_normal((tokens, 1)))
    b = scale * rng.standard_normal((tokens, channels))
    if n_out:
        is_out = np.zeros(channels, bool)
        is_out[out] = True
        max_out = np.abs(b[:, is_out]).max()
        gain = 1.0
        for _ in range(8):  # p99 moves little with the gain: a few rounds settle it
            w = b.copy()
            w[:, is_out] *= gain
            g = max(1.0, max_over_p99 * np.quantile(np.abs(w), 0.99) / max_out)
            if abs(g - gain) <= 1e-9 * gain:
                break
            gain = g
        b[:, is_out] *= gain
    return b


def seed_of(*parts):
    """A deterministic 32-bit seed from names and numbers (never Python's hash())."""
    return zlib.crc32("/".join(str(p) for p in parts).encode()) & 0x7FFFFFFF


# --------------------------------------------------------------- environment

class Env:
    """The torch runtime: device, what it offers, and the dry-run switch."""

    def __init__(self, device):
        if torch is None:
            raise SystemExit("error: PyTorch is not installed (python3 -c 'import torch' fails)")
        self.torch, self.F = torch, F
        self.device = device
        self.dry_run = device == "cpu"
        if not self.dry_run and not torch.cuda.is_available():
            raise SystemExit("error: --device cuda but torch sees no CUDA device (use --device cpu for a dry run)")
        self.has_sdpa = hasattr(F, "scaled_dot_product_attention")
        self.has_compile = hasattr(torch, "compile") and not self.dry_run
        self.has_fp8 = hasattr(torch, "float8_e4m3fn")
        self.gpu = torch.cuda.get_device_name(0) if not self.dry_run else "none (dry run on CPU)"
        self._compiled = {}
        if not self.dry_run:
            torch.set_float32_matmul_precision("highest")  # fp32 GEMMs in IEEE fp32, no TF32
            if self.has_compile:
                import torch._dynamo as dynamo
                for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                          "accumulated_recompile_limit"):
                    try:
                        if hasattr(dynamo.config, k):
                            setattr(dynamo.config, k, 4096)  # never fall back to eager silently
                    except Exception:
                        pass

    def settings(self):
        torch = self.torch
        s = {"torch": torch.__version__, "device": self.device, "gpu": self.gpu}
        if not self.dry_run:
            s["cuda"] = torch.version.cuda
            s["cudnn"] = torch.backends.cudnn.version()
            m = torch.backends.cuda.matmul
            for k, get in (("matmul.allow_tf32", lambda: m.allow_tf32),
                           ("matmul.allow_bf16_reduced_precision_reduction",
                            lambda: m.allow_bf16_reduced_precision_reduction),
                           ("math_sdp.fp16_bf16_reduction_allowed",
                            lambda: torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()),
                           ("matmul.fp32_precision", lambda: m.fp32_precision),
                           ("math_sdp.fp32_precision", lambda: torch.backends.cuda.math_sdp.fp32_precision)):
                try:
                    v = get()
                    s[k] = v if isinstance(v, str) else bool(v)
                except Exception:  # an API this version lacks or refuses: not recorded
                    pass
        return s

    def tensor(self, a, dtype):
        """A torch tensor on the device from fp64 numpy values, rounded on
        the CPU (so the inputs are the same bits on every machine)."""
        t = self.torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(dtype)
        return t.to(self.device)

    def compiled(self, key, fn, dynamic):
        """torch.compile(fn), one per key; fullgraph, so a graph break is an error."""
        k = (key, dynamic)
        if k not in self._compiled:
            self._compiled[k] = self.torch.compile(fn, fullgraph=True, dynamic=dynamic)
        return self._compiled[k]

    def sync(self):
        if not self.dry_run:
            self.torch.cuda.synchronize()


class Cand:
    """A candidate: a class of kernels, its tier, and how to run it.
    run(env, shape, inputs) returns the output; dry (optional) is the
    dry-run stand-in; applies(shape) says where the class applies; needs is
    what the real kernel requires ("sdpa:<backend>", "compile", "cuda")."""

    def __init__(self, cls, tier, kernel, run, dry=None, applies=None, needs=None):
        self.cls, self.tier, self.kernel, self.run, self.dry = cls, tier, kernel, run, dry
        self.applies = applies or (lambda sh: True)
        self.needs = needs


def compile_class(cls, run, dry):
    """The lossless class torch.compile makes of a family's eager function."""
    return Cand(cls, "lossless", "torch.compile (Inductor, Triton) of the eager function", run, dry=dry,
                needs="compile")


# --------------------------------------------------------------- helpers shared by families

def bf16_seq_sum(t):
    """Sum along the last axis with a bf16 accumulator, in order: every
    addition rounds to bf16 (the accumulate-in-the-input-dtype bug)."""
    acc = torch.zeros(t.shape[:-1], dtype=torch.bfloat16, device=t.device)
    t = t.to(torch.bfloat16)
    for k in range(t.shape[-1]):
        acc = acc + t[..., k]
    return acc


def fp8_e4m3_roundtrip(env, t):
    """t through fp8 e4m3 with one per-tensor scale amax/448, back to t's
    dtype (an fp8 K/V cache). Without torch's float8 dtype (the dry run),
    an exact emulation of the e4m3 round-to-nearest-even."""
    torch = env.torch
    s = t.float().abs().max() / 448.0
    x = t.float() / s
    if env.has_fp8:
        q = x.to(torch.float8_e4m3fn).float()
    else:
        a = x.cpu().double().numpy()
        m = np.abs(a)
        e = np.floor(np.log2(np.where(m > 0, m, 1.0)))
        step = np.exp2(np.maximum(e, -6.0) - 3.0)   # 3 mantissa bits, subnormals below 2^-6
        q = np.minimum(np.round(m / step) * step, 448.0) * np.sign(a)  # np.round: ties to even
        q = torch.from_numpy(q).float().to(t.device)
    return (q * s).to(t.dtype)


def attention_math(env, q, k, v, causal=False, mask=None):
    """The math path in fp32 (what SDPA's math backend does for bf16 since
    PyTorch 2.5), rounded once to q's dtype. The dry run's reference and the
    high classes' carrier where SDPA is absent."""
    torch = env.torch
    D = q.shape[-1]
    s = torch.matmul(q.float(), k.float().transpose(-1, -2)) * (1.0 / math.sqrt(D))
    S, T = s.shape[-2], s.shape[-1]
    if causal and mask is None:
        mask = torch.ones(S, T, dtype=torch.bool, device=q.device).tril()
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s, -1)
    return torch.matmul(p, v.float()).to(q.dtype)


def attention_blockwise(env, q, k, v, causal=False, block=64):
    """Dry-run stand-in for a fused attention kernel: FlashAttention's
    online softmax over key blocks of 64, P rounded to bf16 before the PV
    product, fp32 accumulators, one final rounding."""
    torch = env.torch
    D = q.shape[-1]
    qf, kf, vf = q.float(), k.float(), v.float()
    S, T = q.shape[-2], k.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), float("-inf"), device=q.device)
    l = torch.zeros_like(m)
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],), device=q.device)
    rows = torch.arange(S, device=q.device)[:, None]
    for j0 in range(0, T, block):
        j1 = min(T, j0 + block)
        s = torch.matmul(qf, kf[..., j0:j1, :].transpose(-1, -2)) * (1.0 / math.sqrt(D))
        if causal:
            cols = torch.arange(j0, j1, device=q.device)[None, :]
            s = s.masked_fill(cols > rows, float("-inf"))
        mn = torch.maximum(m, s.amax(-1, keepdim=True))
        safe = torch.where(torch.isinf(mn), torch.zeros_like(mn), mn)
        p = torch.exp(s - safe)
        corr = torch.exp(torch.where(torch.isinf(m), torch.full_like(m, -1e30), m) - safe)
        l = l * corr + p.sum(-1, keepdim=True)
        acc = acc * corr + torch.matmul(p.to(torch.bfloat16).float(), vf[..., j0:j1, :])
        m = mn
    return (acc / l).to(q.dtype)


def sdpa(env, q, k, v, backend, causal):
    """F.scaled_dot_product_attention restricted to one backend (no fallback)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION,
         "efficient": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    with sdpa_kernel([b]):
        return env.F.scaled_dot_product_attention(q, k, v, is_causal=causal)


# --------------------------------------------------------------- families

class Family:
    """One op with its inputs and reference path; the candidates that run
    on the same inputs. Subclasses define op, reference_path, candidates,
    corpus_shapes (each a dict with a 'tag'), sample_shape(rng) for the
    sweep, params(shape), inputs(env, shape, rng), reference(env, shape, inp)."""
    name = op = reference_path = ""
    candidates = {}
    corpus_shapes = []

    def params(self, sh):
        return {}

    def out_dtype(self, sh):
        return "bf16"


class Attention(Family):
    name = op = "attention"
    reference_path = "F.scaled_dot_product_attention under sdpa_kernel(SDPBackend.MATH) (fp32 inside, one rounding)"
    corpus_shapes = [
        dict(tag="d64_s256", B=1, H=2, S=256, T=256, D=64, causal=False),
        dict(tag="d64_s333_causal", B=1, H=2, S=333, T=333, D=64, causal=True),
        dict(tag="d128_s256_causal", B=1, H=1, S=256, T=256, D=128, causal=True),
        dict(tag="d128_s333", B=1, H=1, S=333, T=333, D=128, causal=False),
    ]

    def sample_shape(self, rng):
        D = int(rng.choice([64, 128]))
        causal = bool(rng.integers(2))
        S = int(rng.integers(1, 10) * 64) if rng.random() < 0.4 else int(rng.integers(64, 600))
        T = S if causal or rng.random() < 0.7 else int(rng.integers(64, 600))
        return dict(tag=f"d{D}_s{S}_t{T}{'_causal' if causal else ''}", B=1, H=int(rng.integers(1, 5)),
                    S=S, T=T, D=D, causal=causal)

    def params(self, sh):
        return {"causal": sh["causal"]}

    def inputs(self, env, sh, rng):
        B, H, S, T, D = sh["B"], sh["H"], sh["S"], sh["T"], sh["D"]
        # q and k after a qk-norm: tamer outliers (max/p99 4), scores of
        # standard deviation about 1.5; v with the residual stream's 8.
        q = dit_activations(rng, B * H * S, D, max_over_p99=4.0) * 1.1
        k = dit_activations(rng, B * H * T, D, max_over_p99=4.0) * 1.1
        v = dit_activations(rng, B * H * T, D)
        bf = env.torch.bfloat16
        return {"q": env.tensor(q.reshape(B, H, S, D), bf), "k": env.tensor(k.reshape(B, H, T, D), bf),
                "v": env.tensor(v.reshape(B, H, T, D), bf)}

    def reference(self, env, sh, inp):
        if env.dry_run or not env.has_sdpa:
            return attention_math(env, inp["q"], inp["k"], inp["v"], sh["causal"])
        return sdpa(env, inp["q"], inp["k"], inp["v"], "math", sh["causal"])

    @staticmethod
    def _backend(name):
        def run(env, sh, inp):
            return sdpa(env, inp["q"], inp["k"], inp["v"], name, sh["causal"])
        return run

    @staticmethod
    def _shifted(env, sh, inp):
        S, T = sh["S"], sh["T"]
        mask = env.torch.ones(S, T, dtype=env.torch.bool, device=inp["q"].device).tril(diagonal=1)
        if env.dry_run or not env.has_sdpa:
            return attention_math(env, inp["q"], inp["k"], inp["v"], mask=mask)
        return env.F.scaled_dot_product_attention(inp["q"], inp["k"], inp["v"], attn_mask=mask)

    @staticmethod
    def _fp8_kv(env, sh, inp):
        k8, v8 = fp8_e4m3_roundtrip(env, inp["k"]), fp8_e4m3_roundtrip(env, inp["v"])
        if env.dry_run or not env.has_sdpa:
            return attention_math(env, inp["q"], k8, v8, sh["causal"])
        return env.F.scaled_dot_product_attention(inp["q"], k8, v8, is_causal=sh["causal"])

    @staticmethod
    def _blockwise(env, sh, inp):
        return attention_blockwise(env, inp["q"], inp["k"], inp["v"], sh["causal"])

    candidates = {
        "sdpa_flash": Cand("sdpa_flash", "lossless", "SDPBackend.FLASH_ATTENTION", _backend.__func__("flash"),
                           needs="sdpa:flash"),
        "sdpa_efficient": Cand("sdpa_efficient", "lossless", "SDPBackend.EFFICIENT_ATTENTION (memory-efficient)",
                               _backend.__func__("efficient"), needs="sdpa:efficient"),
        "sdpa_cudnn": Cand("sdpa_cudnn", "lossless", "SDPBackend.CUDNN_ATTENTION", _backend.__func__("cudnn"),
                           needs="sdpa:cudnn"),
        "blockwise": Cand("attention_blockwise", "lossless",
                          "dry-run stand-in: pure-torch online softmax, P rounded to bf16", None,
                          dry=_blockwise.__func__, needs="dryrun"),
        "causal_shift": Cand("attn_causal_shift", "high",
                             "SDPA with a causal mask shifted by one (tril(diagonal=1): one future key)",
                             _shifted.__func__, dry=_shifted.__func__, applies=lambda sh: sh["causal"]),
        "fp8_kv": Cand("attn_fp8_kv", "high",
                       "K and V through fp8 e4m3 (per-tensor scale amax/448), then SDPA (default backend)",
                       _fp8_kv.__func__, dry=_fp8_kv.__func__, applies=lambda sh: not sh["causal"]),
    }


def _rmsnorm_eager(x, w, eps=1e-6):
    # diffusers RMSNorm: statistics in fp32, normalized value rounded to
    # the weight's dtype, then the weight
    xf = x.float()
    y = xf * (xf.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    return y.to(w.dtype) * w


class RMSNorm(Family):
    name, op = "rmsnorm", "rmsnorm"
    reference_path = "eager diffusers RMSNorm: fp32 statistics, y.to(bf16) * weight"
    corpus_shapes = [dict(tag="qk_c128", N=256, C=128)]

    def sample_shape(self, rng):
        C = int(rng.choice([64, 128, 256, 1152, 3072]))
        N = int(rng.integers(16, max(17, min(1024, 400_000 // C))))
        return dict(tag=f"n{N}_c{C}", N=N, C=C)

    def params(self, sh):
        return {"eps": 1e-6}

    def inputs(self, env, sh, rng):
        bf = env.torch.bfloat16
        x = dit_activations(rng, sh["N"], sh["C"])
        w = np.exp(0.3 * rng.standard_normal(sh["C"]))
        return {"x": env.tensor(x, bf), "weight": env.tensor(w, bf)}

    def reference(self, env, sh, inp):
        return _rmsnorm_eager(inp["x"], inp["weight"])

    @staticmethod
    def _compiled(env, sh, inp):
        return env.compiled("rmsnorm", _rmsnorm_eager, env.dynamic)(inp["x"], inp["weight"])

    @staticmethod
    def _dry(env, sh, inp):
        x, w = inp["x"].float(), inp["weight"].float()
        return (x * (x.pow(2).mean(-1, keepdim=True) + 1e-6).rsqrt() * w).to(inp["x"].dtype)

    candidates = {"compile": compile_class("compile_rmsnorm", _compiled.__func__, _dry.__func__)}


def _adaln_eager(x, shift, scale):
    # diffusers AdaLayerNormZero: LayerNorm(elementwise_affine=False, eps=1e-6), then modulate
    y = F.layer_norm(x, (x.shape[-1],), eps=1e-6)
    return y * (1 + scale) + shift


class AdaLN(Family):
    name, op = "adaln", "layernorm"
    reference_path = "eager F.layer_norm(x, eps=1e-6) * (1 + scale) + shift in bf16"
    corpus_shapes = [dict(tag="dit_c1152", B=1, L=32, C=1152)]

    def sample_shape(self, rng):
        C = int(rng.choice([768, 1152, 1536, 3072]))
        B = int(rng.integers(1, 3))
        L = int(rng.integers(8, max(9, 400_000 // (B * C))))
        return dict(tag=f"b{B}_l{L}_c{C}", B=B, L=L, C=C)

    def params(self, sh):
        return {"eps": 1e-6, "modulate": True}

    def inputs(self, env, sh, rng):
        bf = env.torch.bfloat16
        B, L, C = sh["B"], sh["L"], sh["C"]
        x = dit_activations(rng, B * L, C).reshape(B, L, C)
        # the modulation is a linear of the timestep embedding: per channel,
        # a few channels large
        shift = (dit_activations(rng, B, C, max_over_p99=6.0) * 0.5).reshape(B, 1, C)
        scale = (dit_activations(rng, B, C, max_over_p99=6.0) * 0.3).reshape(B, 1, C)
        return {"x": env.tensor(x, bf), "shift": env.tensor(shift, bf), "scale": env.tensor(scale, bf)}

    def reference(self, env, sh, inp):
        return _adaln_eager(inp["x"], inp["shift"], inp["scale"])

    @staticmethod
    def _compiled(env, sh, inp):
        return env.compiled("adaln", _adaln_eager, env.dynamic)(inp["x"], inp["shift"], inp["scale"])

    @staticmethod
    def _dry(env, sh, inp):
        return _adaln_eager(inp["x"].float(), inp["shift"].float(), inp["scale"].float()).to(inp["x"].dtype)

    @staticmethod
    def _bf16_stats(env, sh, inp):
        torch = env.torch
        x, C = inp["x"], sh["C"]
        mu = (bf16_seq_sum(x) / C).to(torch.bfloat16)
        d = x.float() - mu.float()[..., None]
        var = (bf16_seq_sum(d * d) / C).to(torch.bfloat16)
        rstd = torch.rsqrt(var.float() + 1e-6)[..., None]
        y = d * rstd * (1 + inp["scale"].float()) + inp["shift"].float()
        return y.to(x.dtype)

    candidates = {
        "compile": compile_class("compile_adaln", _compiled.__func__, _dry.__func__),
        "bf16_stats": Cand("ln_bf16_stats", "high", "LayerNorm whose mean and variance are accumulated in bf16 "
                           "(one running bf16 sum per row), the rest fused in fp32", _bf16_stats.__func__,
                           dry=_bf16_stats.__func__),
    }


class GroupNormSiLU(Family):
    name, op = "groupnorm_silu", "groupnorm"
    reference_path = "eager F.silu(F.group_norm(x, 32, weight, bias, eps=1e-6)) in bf16 (VAE decoder)"
    corpus_shapes = [dict(tag="c64_16x16", B=1, C=64, H=16, W=16, channels_last=False),
                     dict(tag="c64_16x16_cl", B=1, C=64, H=16, W=16, channels_last=True)]

    def sample_shape(self, rng):
        C = int(rng.choice([64, 128, 256, 512]))
        H = int(rng.choice([8, 16, 24, 32]))
        cl = bool(rng.integers(2))
        return dict(tag=f"c{C}_{H}x{H}{'_cl' if cl else ''}", B=1, C=C, H=H, W=H, channels_last=cl)

    def params(self, sh):
        return {"groups": 32, "eps": 1e-6, "silu": True, "channels_last": sh["channels_last"]}

    def inputs(self, env, sh, rng):
        bf = env.torch.bfloat16
        B, C, L = sh["B"], sh["C"], sh["H"] * sh["W"]
        x = dit_activations(rng, B * L, C).reshape(B, L, C)       # tokens x channels
        if not sh["channels_last"]:
            x = np.ascontiguousarray(x.transpose(0, 2, 1))        # [B, C, L]
        w = np.exp(0.3 * rng.standard_normal(C))
        b = 0.3 * rng.standard_normal(C)
        return {"x": env.tensor(x, bf), "weight": env.tensor(w, bf), "bias": env.tensor(b, bf)}

    @staticmethod
    def _as4d(sh, x):
        B, C, H, W = sh["B"], sh["C"], sh["H"], sh["W"]
        if sh["channels_last"]:   # [B, L, C] in memory: NCHW with channels_last strides
            return x.reshape(B, H, W, C).permute(0, 3, 1, 2)
        return x.reshape(B, C, H, W)

    @staticmethod
    def _back(sh, y):
        B, C, L = sh["B"], sh["C"], sh["H"] * sh["W"]
        if sh["channels_last"]:
            return y.permute(0, 2, 3, 1).reshape(B, L, C).contiguous()
        return y.reshape(B, C, L).contiguous()

    @staticmethod
    def _fn(x, w, b):
        return F.silu(F.group_norm(x, 32, w, b, 1e-6))

    def reference(self, env, sh, inp):
        return self._back(sh, self._fn(self._as4d(sh, inp["x"]), inp["weight"], inp["bias"]))

    @staticmethod
    def _compiled(env, sh, inp):
        f = env.compiled("groupnorm_silu", GroupNormSiLU._fn, env.dynamic)
        return GroupNormSiLU._back(sh, f(GroupNormSiLU._as4d(sh, inp["x"]), inp["weight"], inp["bias"]))

    @staticmethod
    def _dry(env, sh, inp):
        y = GroupNormSiLU._fn(GroupNormSiLU._as4d(sh, inp["x"].float()), inp["weight"].float(), inp["bias"].float())
        return GroupNormSiLU._back(sh, y).to(inp["x"].dtype)

    candidates = {"compile": compile_class("compile_groupnorm_silu", _compiled.__func__, _dry.__func__)}


def _softmax(x):
    return x.softmax(-1)


def _row_sum(x):
    return x.sum(-1)


def _mean_sq(x):
    return x.float().pow(2).mean(-1)


def _gelu(approximate):
    def fn(x):
        return F.gelu(x, approximate=approximate)
    return fn


class RowOp(Family):
    """A one-input op along the last axis of x [R, L], the reference path
    the eager function `fn`, torch.compile of it the lossless class and
    `dry` its dry-run stand-in; `extra` more classes. The shape names the
    row length `length` (T, K or C) and its tag is r{R}_{length}{L}; the
    sweep draws L from `lengths` (a (low, high) range, or a list to choose
    from), then R from [rows[0], max(rows[0] + 1, min(rows[1], rows[2] //
    L))) (rows[1] None: no cap). x(rng, sh) makes x's values (default: DiT
    activations), stored as `dtype`; the output is `out`."""

    def __init__(self, name, op, reference_path, corpus_shapes, fn, dry, length, lengths, rows, params,
                 x=None, dtype="bf16", out="bf16", extra=None):
        self.name, self.op, self.reference_path, self.corpus_shapes = name, op, reference_path, corpus_shapes
        self.fn, self.dry_fn, self.length, self.lengths, self.rows = fn, dry, length, lengths, rows
        self._params, self.x, self.dtype, self.out = params, x, dtype, out
        self.candidates = {"compile": compile_class(f"compile_{name}", self._compiled, self._dry)}
        self.candidates.update(extra or {})

    def out_dtype(self, sh):
        return self.out

    def sample_shape(self, rng):
        if isinstance(self.lengths, tuple):
            L = int(rng.integers(*self.lengths))
        else:
            L = int(rng.choice(self.lengths))
        lo, cap, budget = self.rows
        R = int(rng.integers(lo, max(lo + 1, budget // L if cap is None else min(cap, budget // L))))
        return {"tag": f"r{R}_{self.length.lower()}{L}", "R": R, self.length: L}

    def params(self, sh):
        return dict(self._params)

    def inputs(self, env, sh, rng):
        x = self.x(rng, sh) if self.x else dit_activations(rng, sh["R"], sh[self.length])
        return {"x": env.tensor(x, env.torch.bfloat16 if self.dtype == "bf16" else env.torch.float32)}

    def reference(self, env, sh, inp):
        return self.fn(inp["x"])

    def _compiled(self, env, sh, inp):
        return env.compiled(self.name, self.fn, env.dynamic)(inp["x"])

    def _dry(self, env, sh, inp):
        return self.dry_fn(inp["x"])


class Softmax(RowOp):
    """Softmax over rows of logits; half the sweep's shapes have large logits (the no-max class)."""

    def __init__(self):
        super().__init__("softmax", "softmax", "eager torch.softmax(x, -1) in bf16",
                         [dict(tag="r128_t333", R=128, T=333, large=False),
                          dict(tag="r64_t256_large", R=64, T=256, large=True)],
                         _softmax, lambda x: x.float().softmax(-1).to(x.dtype), "T", (64, 1200), (16, 512, 300_000),
                         {"axis": -1}, x=self._logits,
                         extra={"nomax": Cand("softmax_no_max", "high", "softmax without the max subtraction: exp(x) "
                                              "/ sum exp(x) in fp32", self._nomax, dry=self._nomax,
                                              applies=lambda sh: sh["large"])})

    def sample_shape(self, rng):
        sh = super().sample_shape(rng)
        sh["large"] = bool(rng.integers(2))
        if sh["large"]:
            sh["tag"] += "_large"
        return sh

    @staticmethod
    def _logits(rng, sh):
        x = dit_activations(rng, sh["R"], sh["T"], max_over_p99=4.0)
        if sh["large"]:
            # logits of a model without qk-norm: row maxima from 20 to 200,
            # about a third of the rows beyond fp32's exp range (88.7)
            top = np.maximum(x.max(axis=1, keepdims=True), 1e-3)
            return x * np.exp(rng.uniform(np.log(20.0), np.log(200.0), (sh["R"], 1))) / top
        return x * 1.5

    @staticmethod
    def _nomax(env, sh, inp):
        e = inp["x"].float().exp()
        return (e / e.sum(-1, keepdim=True)).to(inp["x"].dtype)


def row_sum(dtype):
    bf16_acc = Cand("row_sum_bf16_acc", "high", "row sum accumulated in bf16, in order",
                    lambda env, sh, inp: bf16_seq_sum(inp["x"]), dry=lambda env, sh, inp: bf16_seq_sum(inp["x"]))
    return RowOp(f"row_sum_{dtype}", "row_sum", f"eager torch.sum(x, -1) in {dtype}",
                 [dict(tag="r64_k1024", R=64, K=1024)] if dtype == "bf16" else [dict(tag="r64_k512", R=64, K=512)],
                 _row_sum, lambda x: x.double().sum(-1).float().to(x.dtype), "K", (64, 4096), (16, 256, 400_000),
                 {"axis": -1}, dtype=dtype, out=dtype, extra={"bf16_acc": bf16_acc} if dtype == "bf16" else None)


def mean_sq():
    return RowOp("mean_sq", "mean_sq", "eager x.float().pow(2).mean(-1) (RMSNorm's statistic; fp32 out)",
                 [dict(tag="r64_k1024", R=64, K=1024)], _mean_sq, lambda x: x.double().pow(2).mean(-1).float(),
                 "K", (64, 4096), (16, 256, 400_000), {"axis": -1}, out="fp32")


def gelu(approximate):
    fn = _gelu(approximate)
    # fc1 outputs: centred a little below zero, DiT-like spread
    return RowOp(f"gelu_{approximate}", "gelu", f"eager F.gelu(x, approximate='{approximate}') in bf16",
                 [dict(tag="r64_c512", R=64, C=512)], fn, lambda x: fn(x.float()).to(x.dtype), "C",
                 [256, 768, 1152, 3072, 12288], (4, None, 300_000), {"approximate": approximate},
                 x=lambda rng, sh: dit_activations(rng, sh["R"], sh["C"]) * 1.2 - 0.3)


class LinearGelu(Family):
    name, op = "linear_gelu", "linear+gelu"
    reference_path = "eager F.gelu(F.linear(x, w, b), approximate='tanh') in bf16 (cuBLAS GEMM, then GELU)"
    corpus_shapes = [dict(tag="m64_k512_n128", M=64, K=512, N=128)]

    def sample_shape(self, rng):
        K = int(rng.choice([256, 512, 1024, 3072]))
        N = int(rng.choice([128, 256, 512, 1024]))
        M = int(rng.integers(16, max(17, min(512, 2_000_000 // K))))
        return dict(tag=f"m{M}_k{K}_n{N}", M=M, K=K, N=N)

    def params(self, sh):
        return {"approximate": "tanh"}

    def inputs(self, env, sh, rng):
        bf = env.torch.bfloat16
        M, K, N = sh["M"], sh["K"], sh["N"]
        x = dit_activations(rng, M, K)
        w = rng.standard_normal((N, K)) / math.sqrt(K)
        b = 0.1 * rng.standard_normal(N)
        return {"x": env.tensor(x, bf), "w": env.tensor(w, bf), "bias": env.tensor(b, bf)}

    def reference(self, env, sh, inp):
        return env.F.gelu(env.F.linear(inp["x"], inp["w"], inp["bias"]), approximate="tanh")

    @staticmethod
    def _epilogue(env, sh, inp):
        return env.torch._addmm_activation(inp["bias"], inp["x"], inp["w"].t(), use_gelu=True)

    @staticmethod
    def _dry(env, sh, inp):
        y = env.F.linear(inp["x"].float(), inp["w"].float(), inp["bias"].float())
        return env.F.gelu(y, approximate="tanh").to(inp["x"].dtype)

    candidates = {"epilogue": Cand("cublaslt_gelu_epilogue", "lossless", "torch._addmm_activation(bias, x, w.t(), "
                                   "use_gelu=True): cublasLt GELU_BIAS epilogue", _epilogue.__func__,
                                   dry=_dry.__func__, needs="cuda")}


class SplitK(Family):
    name, op = "splitk", "matmul"
    reference_path = "torch.matmul(a, b) in bf16 (one cuBLAS GEMM)"
    corpus_shapes = [dict(tag="m32_k1024_n96_s4", M=32, K=1024, N=96, splits=4)]

    def sample_shape(self, rng):
        K = int(rng.choice([512, 1024, 2048, 3072, 4096]))
        N = int(rng.choice([64, 128, 256, 512]))
        M = int(rng.integers(16, 257))
        s = int(rng.integers(2, 9))
        return dict(tag=f"m{M}_k{K}_n{N}_s{s}", M=M, K=K, N=N, splits=s)

    def inputs(self, env, sh, rng):
        bf = env.torch.bfloat16
        M, K, N = sh["M"], sh["K"], sh["N"]
        a = dit_activations(rng, M, K)
        b = rng.standard_normal((K, N)) / math.sqrt(K)
        return {"a": env.tensor(a, bf), "b": env.tensor(b, bf)}

    def reference(self, env, sh, inp):
        return env.torch.matmul(inp["a"], inp["b"])

    @staticmethod
    def _splitk(env, sh, inp):
        # every chunk an fp32 cuBLAS GEMM of the bf16 values (products exact
        # in fp32, TF32 off), the partials summed in fp32, one rounding
        a, b, K, s = inp["a"], inp["b"], sh["K"], sh["splits"]
        edges = [K * i // s for i in range(s + 1)]
        acc = None
        for i in range(s):
            p = env.torch.matmul(a[:, edges[i]:edges[i + 1]].float(), b[edges[i]:edges[i + 1]].float())
            acc = p if acc is None else acc + p
        return acc.to(a.dtype)

    candidates = {"splitk": Cand("splitk", "lossless", "K split into chunks, fp32 cuBLAS GEMM per chunk, "
                                 "partials summed in fp32, rounded once", _splitk.__func__, dry=_splitk.__func__)}


FAMILIES = [Attention(), RMSNorm(), AdaLN(), GroupNormSiLU(), Softmax(), row_sum("bf16"), row_sum("fp32"),
            mean_sq(), gelu("tanh"), gelu("none"), LinearGelu(), SplitK()]


def classes():
    """(family, key, Cand) for every class."""
    return [(f, k, c) for f in FAMILIES for k, c in f.candidates.items()]


# --------------------------------------------------------------- building one capture

def _bits_equal(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    ia = {2: "int16", 4: "int32", 8: "int64"}[a.element_size()]
    return bool(torch.equal(a.contiguous().view(getattr(torch, ia)), b.contiguous().view(getattr(torch, ia))))


def _admit_dtype(t):
    return {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.float64: "fp64"}[t.dtype]


def build(env, fam, sh, seed, want_tiers=("lossless", "high")):
    """Runs the family's reference and every applicable candidate on one
    shape. Returns (inputs, reference, [(name, Cand, output, expected)],
    skipped [(name, why)]). Candidate names are the class names (dryrun_*
    in a dry run)."""
    rng = np.random.default_rng(seed)
    inp = fam.inputs(env, sh, rng)
    ref = fam.reference(env, sh, inp)
    env.sync()
    want = _admit_dtype(ref)
    if want != fam.out_dtype(sh):
        raise RuntimeError(f"{fam.name}: the reference path wrote {want}, expected {fam.out_dtype(sh)}")
    cands, skipped = [], []
    for key, c in fam.candidates.items():
        if c.tier not in want_tiers or not c.applies(sh):
            continue
        if env.dry_run:
            if c.dry is None:
                skipped.append((c.cls, f"dry run: {c.needs} needs the GPU build of PyTorch"))
                continue
            run, name = c.dry, "dryrun_" + c.cls
        else:
            if c.run is None:
                continue  # a dry-run-only stand-in
            if c.needs and c.needs.startswith("sdpa:") and not env.has_sdpa:
                skipped.append((c.cls, "this PyTorch has no scaled_dot_product_attention"))
                continue
            if c.needs == "compile" and not env.has_compile:
                skipped.append((c.cls, "this PyTorch has no torch.compile"))
                continue
            run, name = c.run, c.cls
        try:
            out = run(env, sh, inp)
            env.sync()
        except Exception as e:  # a backend that refuses this shape: recorded, not fatal
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            skipped.append((name, f"{type(e).__name__}: {msg[:200]}"))
            continue
        if tuple(out.shape) != tuple(ref.shape) or out.dtype != ref.dtype:
            raise RuntimeError(f"{fam.name}/{name}: output {tuple(out.shape)} {out.dtype}, "
                               f"reference {tuple(ref.shape)} {ref.dtype}")
        expected = "exact" if _bits_equal(out, ref) else c.tier
        cands.append((name, c, out, expected))
    return inp, ref, cands, skipped


def write(path, fam, sh, inp, ref, cands, source, compression=True):
    write_capture(path, op=fam.op, params=fam.params(sh), inputs=inp, reference=ref,
                  candidates={name: out for name, _, out, _ in cands},
                  model="DiT-like synthetic activations", layer=fam.name, source=source,
                  compression=compression)


def _diff(out, ref):
    o, r = out.double(), ref.double()
    fin = o.isfinite() & r.isfinite()
    nonfin = int((~fin).sum())
    if fin.any():
        d = (o - r)[fin]
        rms = float(d.pow(2).mean().sqrt()) / max(float(r[fin].pow(2).mean().sqrt()), 1e-300)
        mx = float(d.abs().max())
    else:
        rms = mx = float("nan")
    return f"rel. RMS diff {rms:.2e}, max diff {mx:.3g}" + (f", {nonfin} non-finite" if nonfin else "")


# --------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring (python3 -c 'help(...)') or tools/README.md.")
    ap.add_argument("--out", default=os.path.join(REPO, "captures", "real"), help="output folder (captures/real)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: a dry run with stand-ins")
    ap.add_argument("--only", default="", help="comma-separated families (default: all; --list names them)")
    ap.add_argument("--replace", action="store_true", help="delete the folder's earlier *.h5 and MANIFEST.json first")
    ap.add_argument("--list", action="store_true", help="print the families and classes and exit")
    a = ap.parse_args(argv)

    if a.list:
        for f in FAMILIES:
            print(f"{f.name:16s} op {f.op:12s} reference: {f.reference_path}")
            for _, c in f.candidates.items():
                print(f"    {c.cls:26s} {c.tier:9s} {c.kernel}")
        return 0
    fams = FAMILIES
    if a.only:
        names = a.only.split(",")
        unknown = [n for n in names if n not in {f.name for f in FAMILIES}]
        if unknown:
            print(f"error: --only: unknown families {unknown}; known: {[f.name for f in FAMILIES]}", file=sys.stderr)
            return 2
        fams = [f for f in FAMILIES if f.name in names]
    out = os.path.abspath(a.out)
    if a.device == "cpu" and os.path.realpath(out) == os.path.realpath(os.path.join(REPO, "captures", "real")):
        print("error: a dry run (--device cpu) never writes captures/real; give --out another folder",
              file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    old = [n for n in os.listdir(out) if n.endswith(".h5") or n == "MANIFEST.json"]
    if old and not a.replace:
        print(f"error: {out} already holds {len(old)} capture(s) or a manifest; --replace deletes them first",
              file=sys.stderr)
        return 2
    for n in old:
        os.unlink(os.path.join(out, n))

    env = Env(a.device)
    env.dynamic = False
    st = env.settings()
    tag = "DRY RUN (CPU stand-ins, not real kernels)" if env.dry_run else f"torch {st['torch']}, {env.gpu}"
    print(f"make_real_corpus: {tag} -> {out}")
    t0 = time.time()
    entries, failed = [], []
    for fam in fams:
        for sh in fam.corpus_shapes:
            seed = seed_of(fam.name, sh["tag"])
            fname = f"{fam.name}_{sh['tag']}.h5"
            print(f"{fname}: op {fam.op} {json.dumps(fam.params(sh))}")
            try:
                inp, ref, cands, skipped = build(env, fam, sh, seed)
            except Exception as e:  # the reference path failed: no capture, said below
                failed.append(f"{fname}: {type(e).__name__}: {str(e).strip()[:300]}")
                print(f"  FAILED: {failed[-1]}")
                continue
            for name, why in skipped:
                print(f"  skipped {name}: {why}")
            if not cands:
                print(f"  no candidate ran: {fname} not written")
                continue
            for name, c, o, exp in cands:
                print(f"  {name:28s} expected {exp:9s} {_diff(o, ref)}")
            source = f"tools/make_real_corpus.py ({tag})"
            write(os.path.join(out, fname), fam, sh, inp, ref, cands, source)
            entries.append({
                "file": fname, "family": fam.name, "op": fam.op, "params": fam.params(sh), "seed": seed,
                "shape": {k: v for k, v in sh.items() if k != "tag"},
                "shapes": dict({k: list(v.shape) for k, v in inp.items()}, output=list(ref.shape)),
                "dtypes": dict({k: _admit_dtype(v) for k, v in inp.items()}, output=_admit_dtype(ref)),
                "reference": {"name": "reference", "path": fam.reference_path},
                "candidates": [{"name": n, "class": c.cls, "kernel": c.kernel, "class_tier": c.tier,
                                "expected": e} for n, c, _, e in cands],
                "skipped": [{"name": n, "why": w} for n, w in skipped],
                "torch": st["torch"], "gpu": env.gpu, "dry_run": env.dry_run,
            })
    manifest = {
        "format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "generator": "tools/make_real_corpus.py",
        "command": " ".join(["python3", "tools/make_real_corpus.py"] + list(sys.argv[1:] if argv is None else argv)),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "dry_run": env.dry_run, "settings": st, "captures": entries,
    }
    tmp = os.path.join(out, "MANIFEST.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(out, "MANIFEST.json"))
    size = sum(os.path.getsize(os.path.join(out, e["file"])) for e in entries)
    ncand = sum(len(e["candidates"]) for e in entries)
    print(f"{len(entries)} captures, {ncand} candidates, {size / 1e6:.2f} MB, {time.time() - t0:.0f} s")
    made = {c["class"] for e in entries for c in e["candidates"]}
    missing = [c.cls for f in fams for c in f.candidates.values()
               if c.cls not in made and (c.dry is not None if env.dry_run else c.run is not None)]
    for f in failed:
        print(f"FAILED: {f}")
    if missing:
        print(f"MISSING: no capture of the classes {missing} (see the skips above)")
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
