"""Torch tensors (Debian's python3-torch, CPU): judged without the user
converting them, bf16 by its bits; a forward-hook capture of a small
Linear+GELU module written as a capture file that the CLI replays."""
import subprocess

import h5py
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import admit
from admit import _tensors
from conftest import KERNEL, replay_json, small_linear


def _t(bits):
    return torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16)


def test_torch_equals_numpy():
    x, w, b, ref, cand = small_linear(seed=5)
    npv = admit.judge("linear", inputs={"x": (x, "bf16"), "w": (w, "bf16"), "bias": (b, "bf16")},
                      reference=(ref, "bf16"), candidates={"c": (cand, "bf16")})
    tw = nn.Parameter(_t(w))                               # requires_grad: detached, not refused
    tv = admit.judge("linear", inputs={"x": _t(x), "w": tw, "bias": _t(b)}, reference=_t(ref),
                     candidates={"c": _t(cand)})
    assert tv["c"].raw == npv["c"].raw
    # transposed torch storage, read in place
    xt = _t(np.ascontiguousarray(x.T)).t()
    assert not xt.is_contiguous()
    a, dt = _tensors.array_of(xt, "x")
    t, held = _tensors.describe(a, dt, "x")
    assert dt == "bf16" and t.data == xt.data_ptr() and held.base is not None
    tv2 = admit.judge("linear", inputs={"x": xt, "w": _t(w), "bias": _t(b)}, reference=_t(ref),
                      candidates={"c": _t(cand)})
    assert tv2["c"].raw == npv["c"].raw
    # bf16 kept bit-exact, NaN payloads included
    every = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    a, dt = _tensors.array_of(every, "x")
    assert dt == "bf16" and np.array_equal(a.view(np.uint16), np.arange(65536, dtype=np.uint16))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_torch_float_dtypes(dtype):
    torch.manual_seed(0)
    x = torch.randn(16, 32, dtype=dtype)
    y = F.relu(x.double()).to(dtype)  # (torch 1.13 has no CPU relu for float16)
    v = admit.judge("relu", inputs={"x": x}, reference=y, candidates={"same": y.clone()})
    assert v["same"].tier == "exact"


def test_torch_refused_dtypes():
    with pytest.raises(ValueError, match=r"inputs\['x'\].*torch dtype torch.int32"):
        admit.judge("relu", inputs={"x": torch.zeros(4, 4, dtype=torch.int32)}, reference=torch.zeros(4, 4),
                    candidates={"c": torch.zeros(4, 4)})
    with pytest.raises(ValueError, match=r"^reference: cannot bring a meta tensor to the host"):
        admit.judge("relu", inputs={"x": torch.zeros(4, 4)}, reference=torch.zeros(4, 4, device="meta"),
                    candidates={"c": torch.zeros(4, 4)})
    with pytest.raises(ValueError, match=r"candidates\['c'\]"):
        admit.judge("relu", inputs={"x": torch.zeros(4, 4)}, reference=torch.zeros(4, 4),
                    candidates={"c": torch.zeros(4, 4, dtype=torch.complex64)})


class FF(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(64, elementwise_affine=False)
        self.ff = nn.Sequential(nn.Linear(64, 96), nn.GELU(approximate="tanh"))

    def forward(self, x):
        return self.ff(self.norm(x))


def fused(x, w, bias):
    """The cublasLt epilogue's math: GEMM, bias and GELU in fp32, one rounding."""
    return F.gelu(F.linear(x.float(), w.float(), bias.float()), approximate="tanh").to(torch.bfloat16)


def test_hook_capture_replays(tmp_path):
    torch.manual_seed(1)
    model = FF().to(torch.bfloat16)
    x = torch.randn(4, 32, 64).to(torch.bfloat16)
    path = tmp_path / "ff.h5"
    with torch.no_grad(), admit.capture(model, "ff", path, model="toy-dit", step=7,
                                        candidates={"fused": fused}) as cap:
        y = model(x)
        model(x)                                            # a second call: the first is kept
    assert cap.calls == 2 and cap.op == "linear+gelu"
    assert torch.equal(cap.reference.view(torch.int16), y.view(torch.int16))
    assert cap.inputs["x"].shape == (4, 32, 64) and cap.inputs["w"].dtype == torch.bfloat16
    with h5py.File(path, "r") as f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        assert attrs["op"] == "linear+gelu" and attrs["model"] == "toy-dit" and attrs["layer"] == "ff"
        assert int(attrs["step"]) == 7 and '"approximate":"tanh"' in attrs["op_params"]
        assert np.array_equal(f["reference"][()].view(np.uint16), y.view(torch.int16).numpy().view(np.uint16))
    # the CLI replays it, and finds what admit.judge finds in memory
    r = subprocess.run([KERNEL, "replay", str(path), "--claim", "fused=lossless"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    want = replay_json(str(path))[0]
    got = cap.judge()["fused"]
    assert want["verdict"] == got.tier == "lossless", got
    assert dict(got.raw, source=want["source"]) == want
    # a candidate given after the block, judged and written
    trunc = (cap.reference.view(torch.int16) & ~1).view(torch.bfloat16)
    assert cap.judge(candidates={"trunc": trunc})["trunc"].tier == "high"
    cap.write(tmp_path / "ff2.h5", candidates={"trunc": trunc})
    assert replay_json(str(tmp_path / "ff2.h5"))[1]["candidate"] == "trunc"


def test_hook_capture_errors(tmp_path):
    model = FF()
    with pytest.raises(ValueError, match="site: 'nope'"):
        admit.capture(model, "nope")
    with pytest.raises(ValueError, match="op: cannot tell the op of a FF"):
        admit.capture(model, "")
    with pytest.raises(ValueError, match="inputs: with op= given"):
        admit.capture(model, "", op="linear")
    with pytest.raises(RuntimeError, match="called 0 time"):
        with admit.capture(model, "ff.0", tmp_path / "never.h5"):
            pass
    assert not (tmp_path / "never.h5").exists()
    # an exception inside the block propagates; the hook is gone either way
    with pytest.raises(KeyError):
        with admit.capture(model, "ff.0") as cap:
            raise KeyError("in the block")
    assert not model.ff[0]._forward_hooks
    # explicit op and inputs, a plain Linear's parameters by name
    with torch.no_grad(), admit.capture(model, "ff.0", op="linear", inputs={"x": "arg:0", "w": "weight"}) as cap:
        model(torch.randn(3, 64))
    assert set(cap.inputs) == {"x", "w"}
