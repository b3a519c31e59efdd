"""1,000 judgements in a loop hold no more memory at the end than after
the first hundred: every capture, report and JSON text the library makes
for a call is freed with it, on the error paths too."""
import gc

import numpy as np

import admit
from conftest import small_linear

PAGE = 4096


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def test_no_growth_over_1000_calls():
    x, w, b, ref, cand = small_linear(seed=8, m=16, k=32, n=8)
    kw = dict(inputs={"x": (x, "bf16"), "w": (w, "bf16"), "bias": (b, "bf16")}, reference=(ref, "bf16"),
              candidates={"c": (cand, "bf16"), "same": (ref, "bf16")})
    bad = dict(kw, candidates={"c": (cand[:, :4], "bf16")})

    def one(i):
        v = admit.judge("linear", **kw)
        assert v["same"].tier == "exact"
        if i % 10 == 0:  # a refusal now and then: ValueError and admit.Error
            try:
                admit.judge("linear", **bad)
            except ValueError:
                pass
            try:
                admit.Capture("linear", None, kw["inputs"], special={"s": {"inputs": {"x": (x, "bf16")},
                                                                           "refused": "ADM_ERR_SHAPE"}}).write("/")
            except admit.Error:
                pass

    for i in range(100):
        one(i)
    gc.collect()
    before = rss()
    for i in range(1000):
        one(i)
    gc.collect()
    grew = rss() - before
    # a leak of the smallest thing a call makes (the JSON text, ~8 KB) would be 8 MB
    assert grew < 1 << 20, f"resident memory grew by {grew / 1024:.0f} KiB over 1,000 calls"
