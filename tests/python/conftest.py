"""Shared by the admit package's tests (run by ctest: PYTHONPATH names the
build tree's package, ADMIT_KERNEL the CLI, ADMIT_SOURCE the checkout)."""
import json
import os
import subprocess

import h5py
import numpy as np
import pytest

import admit

SOURCE = os.environ.get("ADMIT_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
KERNEL = os.environ.get("ADMIT_KERNEL", os.path.join(SOURCE, "build", "admit-kernel"))

_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
            "float64": "fp64", "double": "fp64", "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2",
            "float4_e2m1fn": "fp4_e2m1"}
_WIDTH = {2: np.uint16, 1: np.uint8, 4: np.uint32, 8: np.uint64}


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _tensor(ds):
    """A dataset as a user holds it: floats as floats, the rest as bits."""
    dt = _text(ds.attrs["dtype"])
    dt = _ALIASES.get(dt, dt)
    a = ds[()]
    if dt in ("fp32", "fp64"):
        return a
    return admit.Bits(a.view(_WIDTH[a.dtype.itemsize]), dt)


def _group(g):
    return {name: _tensor(g[name]) for name in g} if g is not None else {}


def read_capture(path):
    """An h5py read of a capture file into an admit.Capture of NumPy arrays,
    independent of libadmit's reader."""
    with h5py.File(path, "r") as f:
        special = {}
        for case in (f["special"] if "special" in f else {}):
            cg = f["special"][case]
            spec = {"inputs": _group(cg.get("inputs"))}
            if "reference" in cg:
                spec["reference"] = _tensor(cg["reference"])
            if "reference_refused" in cg.attrs:
                spec["refused"] = _text(cg.attrs["reference_refused"])
            if "candidates" in cg:
                spec["candidates"] = _group(cg["candidates"])
            special[case] = spec
        return admit.Capture(
            op=_text(f.attrs["op"]), params=_text(f.attrs.get("op_params", "{}")), inputs=_group(f["inputs"]),
            reference=_tensor(f["reference"]) if "reference" in f else None,
            candidates=_group(f.get("candidates")), oracle=_tensor(f["oracle"]) if "oracle" in f else None,
            special=special or None)


def replay_json(*paths, extra=()):
    """admit-kernel replay's JSON rows for these captures."""
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"admit_pytest_replay_{os.getpid()}.json")
    try:
        r = subprocess.run([KERNEL, "replay", *paths, "--json", out, *extra], capture_output=True, text=True)
        assert r.returncode in (0, 1), r.stderr
        with open(out) as f:
            return json.load(f)["results"]
    finally:
        if os.path.exists(out):
            os.unlink(out)


@pytest.fixture
def source():
    return SOURCE


@pytest.fixture
def kernel():
    return KERNEL


def small_linear(seed=0, m=32, k=64, n=16):
    """A small bf16 linear capture's tensors: x, w, bias, the fp32-accumulated
    reference and a candidate that accumulates in a different order."""
    rng = np.random.default_rng(seed)
    x = bf16(rng.standard_normal((m, k)).astype(np.float32))
    w = bf16((rng.standard_normal((n, k)) / 8).astype(np.float32))
    b = bf16((rng.standard_normal(n) / 50).astype(np.float32))
    xf, wf, bf = f32(x), f32(w), f32(b)
    ref = bf16(xf @ wf.T + bf)
    half = k // 2
    cand = bf16((xf[:, :half] @ wf[:, :half].T + xf[:, half:] @ wf[:, half:].T) + bf)
    return x, w, b, ref, cand


def bf16(a):
    """float32 -> bf16 bit patterns, round to nearest even."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def f32(bits):
    """bf16 bit patterns -> float32 values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
