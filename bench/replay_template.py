#!/usr/bin/python3
"""The anchor of `replay` (issue 17): what a user would write in NumPy to
judge the candidates of a linear+GELU capture, without a certified bound,
special cases or any gate beyond RMS, max and mean error: read the file,
one fp64 GEMM, the bias and tanh-GELU, then per candidate the RMS, max and
mean of its error against that fp64 value.

usage: replay_template.py CAPTURE.h5"""
import sys

import h5py
import numpy as np


def bf16(a):
    """bf16 bit patterns (uint16) as float64."""
    return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def load(ds):
    a = ds[()]
    return bf16(a) if ds.attrs["dtype"] in ("bf16", b"bf16") else a.astype(np.float64)


def main():
    with h5py.File(sys.argv[1], "r") as f:
        x = load(f["inputs/x"])
        w = load(f["inputs/w"])
        b = load(f["inputs/bias"])
        ref = f["reference"]
        cands = {"reference": load(ref)}
        for name in f["candidates"]:
            cands[name] = load(f["candidates"][name])
    z = x @ w.T + b
    o = 0.5 * z * (1.0 + np.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3)))
    for name, c in cands.items():
        e = c - o
        print(f"{name:20s} rms {np.sqrt(np.mean(e * e)):.4g} max {np.max(np.abs(e)):.4g} mean {np.mean(e):.4g}")


if __name__ == "__main__":
    main()
