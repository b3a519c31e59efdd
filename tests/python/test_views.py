"""Arrays are read where they lie: transposed, strided, reversed and
broadcast NumPy views judge exactly as their contiguous copies (and as the
CLI's replay of the capture they came from), without being copied; bf16,
fp8 and fp4 bit patterns go through a capture file and back bit for bit."""
import os

import h5py
import numpy as np
import pytest

import admit
from admit import _tensors
from conftest import SOURCE, bf16, f32, read_capture, replay_json, small_linear


def _variants(a):
    """The same values behind other layouts (none of them contiguous)."""
    t = np.ascontiguousarray(a.T).T                       # transposed storage
    r = np.ascontiguousarray(a[::-1])[::-1]               # rows reversed: a negative stride
    big = np.zeros(a.shape[:-1] + (3 * a.shape[-1],), a.dtype)
    big[..., 1::3] = a
    s = big[..., 1::3]                                    # every third element, from an offset
    out = {"transposed": t, "reversed": r, "strided": s}
    for name, v in out.items():
        assert not v.flags.c_contiguous, name
        assert np.array_equal(v.view(np.uint8) if v.dtype == np.uint8 else v, a), name
    return out


def _bits(x, like):
    return admit.Bits(x, like.dtype) if isinstance(like, admit.Bits) else x


def _array(x):
    return x.array if isinstance(x, admit.Bits) else x


@pytest.mark.parametrize("layout", ["transposed", "reversed", "strided"])
def test_views_judge_as_the_capture(layout):
    path = os.path.join(SOURCE, "captures", "data", "flux_fc1_linear_small.h5")
    want = {w["candidate"]: w for w in replay_json(path)}
    c = read_capture(path)
    inputs = {k: _bits(_variants(_array(v))[layout], v) if _array(v).ndim == 2 else v for k, v in c.inputs.items()}
    cands = {k: _bits(_variants(_array(v))[layout], v) for k, v in c.candidates.items()}
    ref = _bits(_variants(_array(c.reference))[layout], c.reference)
    got = admit.judge(c.op, c.params, inputs=inputs, reference=ref, candidates=cands, special=c.special)
    for name, v in got.items():
        assert dict(v.raw, source=want[name]["source"]) == want[name], name


def test_views_are_not_copied():
    x, w, b, ref, cand = small_linear()
    for name, v in _variants(x).items():
        t, held = _tensors.describe(v, "bf16", "x")
        assert held is v, f"{name}: copied"
        lo = sum(min(0, (n - 1) * s) for n, s in zip(v.shape, v.strides))  # bytes
        assert t.data == v.ctypes.data + lo and t.offset == -lo // 2, name
    # where the library cannot read an array as it lies, a copy: byte-swapped, or strides of half elements
    sw = x.astype(">u2")
    t, held = _tensors.describe(sw, "bf16", "x")
    assert held is not sw and held.dtype.isnative and np.array_equal(held, x)
    odd = np.frombuffer(bytearray(2 * x.size + 1), np.uint8, offset=1, count=2 * x.size)
    mis = odd.view(np.uint16).reshape(x.shape)
    mis[...] = x
    assert not mis.flags.aligned
    t, held = _tensors.describe(mis, "bf16", "x")
    assert held is not mis and held.flags.aligned and np.array_equal(held, x)


def test_broadcast_and_empty():
    x, w, b, ref, cand = small_linear(seed=3)
    xb = np.broadcast_to(x[5], x.shape)                    # stride 0: every row the same
    assert xb.strides[0] == 0
    xv, wv, bv = f32(xb), f32(w), f32(b)
    r1 = bf16(xv @ wv.T + bv)
    c1 = bf16((xv.astype(np.float64) @ wv.T.astype(np.float64) + bv).astype(np.float32))
    common = dict(reference=(r1, "bf16"), candidates={"c": (c1, "bf16")})
    a = admit.judge("linear", inputs={"x": (xb, "bf16"), "w": (w, "bf16"), "bias": (b, "bf16")}, **common)
    d = admit.judge("linear", inputs={"x": (np.ascontiguousarray(xb), "bf16"), "w": (w, "bf16"),
                                      "bias": (b, "bf16")}, **common)
    assert a["c"].raw == d["c"].raw
    # an empty special case (M = 0) as well
    e = admit.judge("linear", inputs={"x": (x, "bf16"), "w": (w, "bf16"), "bias": (b, "bf16")},
                    reference=(ref, "bf16"), candidates={"c": (ref, "bf16")},
                    special={"empty": {"inputs": {"x": (x[:0], "bf16"), "w": (w, "bf16")},
                                       "reference": (ref[:0], "bf16"), "candidates": {"c": (ref[:0], "bf16")}}})
    assert e["c"].tier == "exact", e["c"]


def test_bits_round_trip(tmp_path):
    """Every bf16 and fp16 pattern (NaN payloads, -0, subnormals, Inf), every fp8
    pattern and every fp4 pattern, written by admit and read back by h5py bit for bit;
    the same bits judged from NumPy and from a file replay alike."""
    every16 = np.arange(65536, dtype=np.uint32).astype(np.uint16).reshape(256, 256)
    every8 = np.tile(np.arange(256, dtype=np.uint16).astype(np.uint8), (256, 1))
    fp4 = (every8 % 16).T
    path = tmp_path / "bits.h5"
    admit.write_capture(path, op="relu", inputs={"x": admit.Bits(every16, "bf16")},
                        reference=admit.Bits(every16, "bf16"),
                        candidates={"h": admit.Bits(every16.T, "fp16"), "e4": admit.Bits(every8, "fp8_e4m3"),
                                    "e5": (every8, "fp8_e5m2"), "e2": (fp4, "fp4_e2m1")},
                        model="m", layer="l", step=4)
    with h5py.File(path, "r") as f:
        assert f.attrs["admit_format"] in ("admit-capture", b"admit-capture")
        assert f["inputs/x"].attrs["dtype"] in ("bf16", b"bf16")
        assert np.array_equal(f["inputs/x"][()].view(np.uint16), every16)
        assert np.array_equal(f["candidates/h"][()].view(np.uint16), every16.T)
        assert np.array_equal(f["candidates/e4"][()].view(np.uint8), every8)
        assert np.array_equal(f["candidates/e5"][()].view(np.uint8), every8)
        assert np.array_equal(f["candidates/e2"][()].view(np.uint8), fp4)
        assert int(f.attrs["step"]) == 4
    # judged from NumPy as the file is replayed
    x, w, b, ref, cand = small_linear(seed=9)
    inputs = {"x": admit.Bits(x, "bf16"), "w": admit.Bits(w, "bf16"), "bias": admit.Bits(b, "bf16")}
    p2 = tmp_path / "lin.h5"
    admit.write_capture(p2, "linear", inputs, reference=admit.Bits(ref, "bf16"), candidates={"c": admit.Bits(cand, "bf16")})
    want = replay_json(str(p2))[0]
    got = admit.judge("linear", inputs=inputs, reference=admit.Bits(ref, "bf16"), candidates={"c": admit.Bits(cand, "bf16")})
    assert dict(got["c"].raw, source=want["source"]) == want
    assert not list(tmp_path.glob("*.tmp.*"))


def test_ml_dtypes_bfloat16():
    ml = pytest.importorskip("ml_dtypes")
    x, w, b, ref, cand = small_linear(seed=4)
    a = admit.judge("linear", inputs={"x": x.view(ml.bfloat16), "w": w.view(ml.bfloat16)},
                    reference=(bf16((x.astype(np.uint32) << 16).view(np.float32) @ ((w.astype(np.uint32) << 16).view(np.float32)).T), "bf16"),
                    candidates={"c": (ref, "bf16")})
    assert a["c"].tier in admit.TIERS
