# Writes a small gzip'd linear capture whose exact outputs are all 0 (rows of
# x alternate +1/-1, w all ones) while its stored reference is the smallest
# bf16 subnormal: the error scale to resolve is ~9e-41, so every output element
# needs MPFR over K terms (issue 8, R8). Usage: mpfr_amplify.py OUT M N K
import sys
import h5py
import numpy as np

path, M, N, K = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
x = np.tile(np.array([0x3f80, 0xbf80], np.uint16), (M, K // 2))
w = np.full((N, K), 0x3f80, np.uint16)
ref = np.full((M, N), 0x0001, np.uint16)
cand = np.zeros((M, N), np.uint16)
with h5py.File(path, "w", track_order=True) as f:
    f.attrs["admit_format"] = "admit-capture"
    f.attrs["admit_version"] = 1
    f.attrs["op"] = "linear"
    f.attrs["op_params"] = "{}"
    kw = dict(compression="gzip", compression_opts=9, shuffle=True)
    for name, a in (("inputs/x", x), ("inputs/w", w), ("reference", ref), ("candidates/c", cand)):
        f.create_dataset(name, data=a, chunks=tuple(min(s, 1024) for s in a.shape), **kw).attrs["dtype"] = "bf16"
