#!/usr/bin/env python3
"""admit.judge on arrays in memory against `admit-kernel replay` of the same
capture: FLUX.1's MLP up-projection at 1024 tokens (x 1024 x 3072 bf16,
w 12288 x 3072, bias, tanh-GELU: 1024 x 12288 outputs), the eager
reference and the fused epilogue's output as the one candidate.

    bench_python_judge.py make DIR     the arrays (DIR/*.npy) and the same tensors as a
                                       capture, uncompressed (DIR/fc1.h5)
    bench_python_judge.py judge DIR    load the arrays, then admit.judge them (REPS times)
    bench_python_judge.py load DIR     load the arrays only (what `judge` spends before judging)

Compare whole processes (bench/results/ says how they were timed):
    judge DIR  -  load DIR             admit.judge from memory
    admit-kernel replay DIR/fc1.h5  -  admit-kernel capture validate DIR/fc1.h5
                                       replay less its read of the file (the sandboxed read
                                       and the catalog checks, which validate does alone)
`judge` also prints each call's own seconds (time.perf_counter around admit.judge).
Needs the package on PYTHONPATH (BUILD/python) and, for make, torch."""
import os
import sys
import time

import numpy as np

import admit

TOKENS, CHANNELS, OUT = 1024, 3072, 12288
NAMES = ("x", "w", "bias", "reference", "fused")


def bf16(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)


def f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def make(d):
    import torch
    import torch.nn.functional as F

    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(2024)
    s = np.exp(0.5 * rng.standard_normal((TOKENS, 1), dtype=np.float32))
    x = s * rng.standard_normal((TOKENS, CHANNELS), dtype=np.float32)
    out = rng.choice(CHANNELS, CHANNELS // 100, replace=False)
    x[:, out] *= 8 * np.quantile(np.abs(x), 0.99) / np.abs(x[:, out]).max()
    x = bf16(x)
    w = bf16(rng.standard_normal((OUT, CHANNELS), dtype=np.float32) / np.sqrt(CHANNELS))
    b = bf16(0.02 * rng.standard_normal(OUT, dtype=np.float32))
    acc = torch.from_numpy(f32(x) @ f32(w).T + f32(b))          # the GEMM in fp32, bias added in fp32
    ref = bf16(F.gelu(torch.from_numpy(f32(bf16(acc.numpy()))), approximate="tanh").numpy())
    fused = bf16(F.gelu(acc, approximate="tanh").numpy())
    arrays = dict(zip(NAMES, (x, w, b, ref, fused)))
    for k, v in arrays.items():
        np.save(os.path.join(d, k + ".npy"), v)
    admit.write_capture(os.path.join(d, "fc1.h5"), "linear+gelu", params={"approximate": "tanh"},
                        inputs={k: admit.Bits(arrays[k], "bf16") for k in ("x", "w", "bias")},
                        reference=admit.Bits(ref, "bf16"), candidates={"fused": admit.Bits(fused, "bf16")},
                        compression=False)


def load(d):
    return {k: np.load(os.path.join(d, k + ".npy")) for k in NAMES}


def judge(d, reps):
    a = load(d)
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        v = admit.judge("linear+gelu", {"approximate": "tanh"},
                        inputs={k: (a[k], "bf16") for k in ("x", "w", "bias")},
                        reference=(a["reference"], "bf16"), candidates={"fused": (a["fused"], "bf16")})["fused"]
        print(f"admit.judge: {time.perf_counter() - t0:.3f} s wall, {time.process_time() - c0:.3f} s CPU; "
              f"{v.tier}, RMS {v.rms_ratio:.4f}x", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("make", "judge", "load"):
        sys.stderr.write(__doc__)
        sys.exit(2)
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "load":
        load(sys.argv[2])
    else:
        judge(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1)
