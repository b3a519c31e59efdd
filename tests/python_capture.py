#!/usr/bin/env python3
"""Writes tests/python_capture's fixture with tools/admit_capture.py; the C
reader (check_capture, case Python) re-derives every tensor from the same
formulas and compares bits. Usage: python_capture.py OUT.h5 [--torch]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from admit_capture import Bits, bf16_bits_from_float32, write_capture  # noqa: E402


def tensors():
    ar = np.arange(1024)
    x = Bits(np.arange(65536, dtype=np.uint32).astype(np.uint16).reshape(256, 256), "bf16")
    w = ((ar * 97) % 65536).astype(np.uint16).view(np.float16).reshape(4, 256)  # IEEE half storage
    bias = np.array([1.5, -0.0, np.inf, 1e-45], dtype=np.float32)
    ref = (ar * 0.25 - 100).astype(np.float32).reshape(256, 4)
    cands = {
        "e4m3": Bits((ar % 256).astype(np.uint8).reshape(256, 4), "fp8_e4m3"),
        "e5m2": Bits(((ar * 3) % 256).astype(np.uint8).reshape(256, 4), "fp8_e5m2"),
        "e2m1": Bits((ar % 16).astype(np.uint8).reshape(256, 4), "fp4_e2m1"),
        "rounded": Bits(bf16_bits_from_float32(ref), "bf16"),
    }
    oracle = (ar / 3.0).reshape(256, 4)
    special = {
        "empty": {"inputs": {"x": Bits(np.zeros((0, 256), np.uint16), "bf16"), "w": w},
                  "reference": Bits(np.zeros((0, 4), np.uint16), "bf16")},
        "refused": {"inputs": {"x": Bits(np.zeros((3, 5), np.uint16), "bf16"), "w": w},
                    "refused": "ADM_ERR_SHAPE"},
    }
    return x, w, bias, ref, cands, oracle, special


def main():
    out = sys.argv[1]
    x, w, bias, ref, cands, oracle, special = tensors()
    if "--torch" in sys.argv:
        import torch

        # The same bits through torch: bf16 via its pattern.
        x = torch.from_numpy(x.array.view(np.int16).copy()).view(torch.bfloat16)
    write_capture(out, op="linear", params={}, inputs={"x": x, "w": w, "bias": bias}, reference=ref,
                  candidates=cands, oracle=oracle, special=special, model="pytest-model",
                  layer="blocks.0.mlp", step=7)
    # A bad request is refused before anything is written.
    bad = out + ".bad.h5"
    try:
        write_capture(bad, op="linear", inputs={"x": np.zeros(3, np.int32)})
    except ValueError as e:
        assert "Bits(array, dtype)" in str(e), e
    else:
        raise SystemExit("an int32 tensor without a dtype was accepted")
    assert not os.path.exists(bad), "a refused capture left a file behind"
    leftovers = [f for f in os.listdir(os.path.dirname(os.path.abspath(out))) if ".tmp." in f]
    assert not leftovers, leftovers
    print("wrote", out)


if __name__ == "__main__":
    main()
