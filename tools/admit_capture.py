#!/usr/bin/env python3
"""Write admit captures (HDF5, format v1: captures/FORMAT.md) from PyTorch or NumPy.

Kernel authors call this where the tensors live:

    from admit_capture import write_capture
    write_capture("fc1.h5", op="linear+gelu", params={"approximate": "tanh"},
                  inputs={"x": x, "w": fc1.weight, "bias": fc1.bias},
                  reference=y_ref, candidates={"fused": y_fused},
                  model="FLUX.1-dev", layer="transformer_blocks.0.ff", step=12)

Tensors may be torch tensors (bf16, fp16, fp32, fp64, float8_e4m3fn, float8_e5m2;
moved to the CPU, made contiguous, and written by their bit patterns, so bf16
needs no NumPy support), NumPy arrays (float16/32/64), or ``Bits(array, dtype)``
for raw patterns of any admit dtype (fp4_e2m1: one pattern per byte, 0..15).
Only h5py and numpy are required; torch is used when importable.

The file is written to a temporary name beside the target and renamed into
place, so a failure never leaves a partial capture.
"""
import json
import os
import tempfile

import h5py
import numpy as np

MAGIC = "admit-capture"
VERSION = 1

# admit dtype -> (storage numpy dtype, element bits)
_STORAGE = {
    "bf16": np.uint16,
    "fp16": np.uint16,
    "fp32": np.float32,
    "fp64": np.float64,
    "fp8_e4m3": np.uint8,
    "fp8_e5m2": np.uint8,
    "fp4_e2m1": np.uint8,
}

_STATUS_NAMES = {
    "ADM_ERR_INVALID", "ADM_ERR_NOMEM", "ADM_ERR_OVERFLOW", "ADM_ERR_RANGE", "ADM_ERR_DTYPE",
    "ADM_ERR_SHAPE", "ADM_ERR_IO", "ADM_ERR_FORMAT", "ADM_ERR_VERSION", "ADM_ERR_NOT_FOUND",
    "ADM_ERR_UNSUPPORTED", "ADM_ERR_HDF5", "ADM_ERR_JSON", "ADM_ERR_CUDA", "ADM_ERR_NO_DEVICE",
    "ADM_ERR_INTERNAL",
}


class Bits:
    """Raw encodings of an admit dtype, e.g. Bits(u16_array, "bf16")."""

    def __init__(self, array, dtype):
        if dtype not in _STORAGE:
            raise ValueError(f"unknown admit dtype {dtype!r}; expected one of {sorted(_STORAGE)}")
        storage = _STORAGE[dtype]
        a = np.ascontiguousarray(array)
        if a.dtype.itemsize != np.dtype(storage).itemsize:
            raise ValueError(f"{dtype} patterns need {np.dtype(storage).itemsize}-byte elements, got {a.dtype}")
        self.array = a.view(storage)
        if dtype == "fp4_e2m1" and self.array.size and int(self.array.max()) > 15:
            raise ValueError("fp4_e2m1 patterns must be 0..15 (one per byte)")
        self.dtype = dtype


def bf16_bits_from_float32(a):
    """Round float32 values to bf16 (round to nearest even), as patterns."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def _from_torch(t):
    import torch  # only reached for torch tensors

    t = t.detach().to("cpu").contiguous()
    table = {
        torch.bfloat16: ("bf16", torch.int16),
        torch.float16: ("fp16", torch.int16),
        torch.float32: ("fp32", None),
        torch.float64: ("fp64", None),
    }
    for name, dt in (("float8_e4m3fn", "fp8_e4m3"), ("float8_e5m2", "fp8_e5m2")):
        if hasattr(torch, name):
            table[getattr(torch, name)] = (dt, torch.int8)
    if t.dtype not in table:
        raise ValueError(f"torch dtype {t.dtype} has no admit counterpart")
    dtype, view = table[t.dtype]
    data = t.view(view).numpy() if view is not None else t.numpy()
    return Bits(data, dtype) if view is not None else (data, dtype)


def _tensor(value, what):
    """(storage array, admit dtype) for a tensor argument."""
    if isinstance(value, Bits):
        return value.array, value.dtype
    if type(value).__module__.startswith("torch"):
        r = _from_torch(value)
        return (r.array, r.dtype) if isinstance(r, Bits) else r
    a = np.asarray(value)
    if a.dtype == np.float16:
        return np.ascontiguousarray(a).view(np.uint16), "fp16"
    if a.dtype == np.float32:
        return np.ascontiguousarray(a), "fp32"
    if a.dtype == np.float64:
        return np.ascontiguousarray(a), "fp64"
    if a.dtype.name == "bfloat16":  # ml_dtypes
        return np.ascontiguousarray(a).view(np.uint16), "bf16"
    raise ValueError(f"{what}: cannot tell the admit dtype of a {a.dtype} array; wrap it as Bits(array, dtype)")


def _check_name(name, what):
    ok = name and len(name) <= 128 and all(c.isalnum() or c in "_-.+" for c in name) and name.isascii()
    if not ok:
        raise ValueError(f"{what}: name {name!r} may hold only letters, digits and _ - . + (1-128 chars)")


def _write_group(parent, gname, tensors, compression, what):
    g = parent.create_group(gname, track_order=True)
    for name, value in tensors.items():
        _check_name(name, what)
        _write_dataset(g, name, value, compression, f"{what}/{name}")
    return g


def _write_dataset(parent, name, value, compression, what):
    data, dtype = _tensor(value, what)
    kw = {}
    if compression and data.size and data.ndim:
        kw = {"compression": "gzip", "compression_opts": 4, "shuffle": True}
    d = parent.create_dataset(name, data=data, track_times=False, **kw)
    d.attrs["dtype"] = dtype
    return d


def write_capture(path, op, inputs, params=None, reference=None, candidates=None, oracle=None,
                  special=None, model="", layer="", step=None, source="tools/admit_capture.py",
                  compression=True):
    """Write one capture. special maps a case name to a dict with keys
    "inputs" (dict, required), "reference" (tensor) or "refused" (an
    ADM_ERR_* status name, when the reference path refuses the case), and
    "candidates" (dict)."""
    if not inputs:
        raise ValueError("a capture needs at least one input")
    params_text = json.dumps(params or {}, separators=(",", ":"))
    if oracle is not None:
        _, odt = _tensor(oracle, "oracle")
        if odt != "fp64":
            raise ValueError(f"oracle must be fp64, got {odt}")
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=directory)
    os.close(fd)
    try:
        with h5py.File(tmp, "w", track_order=True) as f:
            f.attrs["admit_format"] = MAGIC
            f.attrs["admit_version"] = np.int64(VERSION)
            f.attrs["op"] = op
            f.attrs["op_params"] = params_text
            if model:
                f.attrs["model"] = model
            if layer:
                f.attrs["layer"] = layer
            if source:
                f.attrs["source"] = source
            if step is not None:
                f.attrs["step"] = np.int64(step)
            _write_group(f, "inputs", inputs, compression, "/inputs")
            if reference is not None:
                _write_dataset(f, "reference", reference, compression, "/reference")
            if candidates:
                _write_group(f, "candidates", candidates, compression, "/candidates")
            if oracle is not None:
                _write_dataset(f, "oracle", oracle, compression, "/oracle")
            if special:
                sg = f.create_group("special", track_order=True)
                for cname, case in special.items():
                    _check_name(cname, "/special")
                    cg = sg.create_group(cname, track_order=True)
                    _write_group(cg, "inputs", case["inputs"], compression, f"/special/{cname}/inputs")
                    if "reference" in case and "refused" in case:
                        raise ValueError(f"/special/{cname}: give a reference or a refusal, not both")
                    if "reference" in case:
                        _write_dataset(cg, "reference", case["reference"], compression,
                                       f"/special/{cname}/reference")
                    if "refused" in case:
                        if case["refused"] not in _STATUS_NAMES:
                            raise ValueError(f"/special/{cname}: refused must be one of {sorted(_STATUS_NAMES)}")
                        cg.attrs["reference_refused"] = case["refused"]
                    if case.get("candidates"):
                        _write_group(cg, "candidates", case["candidates"], compression,
                                     f"/special/{cname}/candidates")
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


if __name__ == "__main__":
    import sys

    sys.stderr.write(__doc__)
    sys.exit(2)
