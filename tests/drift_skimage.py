#!/usr/bin/python3
"""admit-kernel drift against Debian's scikit-image on the same inputs.

Writes arms as PNG (8-bit RGB, RGBA, palette, 16-bit gray; written here
with zlib, read by admit through libpng) and HDF5 (float HWC and CHW
latents, a uint8 video with a frame axis, the same video as PNG frames),
runs `admit-kernel drift --spec`, and checks every pair's PSNR
(peak_signal_noise_ratio with data_range), SSIM (structural_similarity with
its defaults, channel_axis=-1; video: per frame, then the mean) and mean
absolute difference against scikit-image and numpy to 1e-6.

Usage: drift_skimage.py ADMIT-KERNEL WORKDIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib

import h5py
import numpy as np
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

TOL = 1e-6


def png(path, arr, palette=None):
    """A PNG of a uint8 (gray, RGB, RGBA) or uint16 (gray) array, or palette indices."""
    h, w = arr.shape[:2]
    ch = 1 if arr.ndim == 2 else arr.shape[2]
    depth = 16 if arr.dtype == np.uint16 else 8
    ctype = 3 if palette is not None else {1: 0, 3: 2, 4: 6}[ch]
    rows = arr.astype(">u2") if depth == 16 else arr
    raw = b"".join(b"\x00" + rows[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0))
    if palette is not None:
        out += chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    out += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(out)


def smooth(rng, shape, scale):
    """Structure plus noise, so that SSIM is neither 0 nor 1."""
    yy, xx = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    base = 0.5 + 0.3 * np.sin(0.21 * xx + 0.13 * yy)
    if len(shape) == 3:
        base = np.stack([np.roll(base, 3 * c, axis=1) for c in range(shape[2])], axis=-1)
    return np.clip(base + scale * rng.standard_normal(shape), 0, 1)


def main():
    admit, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = np.random.default_rng(7)
    expect = {}  # pair name -> (psnr, ssim, mad)

    def want(name, a, b, rng_, video=False):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        psnr = peak_signal_noise_ratio(a64, b64, data_range=rng_)
        if video:
            ssim = float(np.mean([structural_similarity(a64[f], b64[f], data_range=rng_, channel_axis=-1)
                                  for f in range(a.shape[0])]))
        elif a.ndim == 3:
            ssim = structural_similarity(a64, b64, data_range=rng_, channel_axis=-1)
        else:
            ssim = structural_similarity(a64, b64, data_range=rng_)
        expect[name] = (psnr, ssim, float(np.mean(np.abs(a64 - b64))))

    arms = {}
    # 8-bit RGB, and the same image moved by noise
    a = (255 * smooth(rng, (48, 64, 3), 0.05)).round().astype(np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-6, 7, a.shape), 0, 255).astype(np.uint8)
    png(f"{work}/rgb_a.png", a)
    png(f"{work}/rgb_b.png", b)
    arms.update(rgb_a="rgb_a.png", rgb_b="rgb_b.png", rgb_a2="rgb_a.png")
    want("rgb", a, b, 255)
    want("identical", a, a, 255)
    # RGBA: the alpha channel is dropped
    alpha = rng.integers(0, 256, a.shape[:2] + (1,)).astype(np.uint8)
    png(f"{work}/rgba_b.png", np.concatenate([b, alpha], axis=-1))
    arms["rgba_b"] = "rgba_b.png"
    want("rgba", a, b, 255)
    # palette: indices into 256 colours, expanded to RGB
    pal = rng.integers(0, 256, (256, 3))
    idx_a = rng.integers(0, 256, (30, 41)).astype(np.uint8)
    idx_b = np.where(rng.random(idx_a.shape) < 0.1, (idx_a.astype(int) + 1) % 256, idx_a).astype(np.uint8)
    png(f"{work}/pal_a.png", idx_a, palette=pal)
    png(f"{work}/pal_b.png", idx_b, palette=pal)
    arms.update(pal_a="pal_a.png", pal_b="pal_b.png")
    want("palette", pal[idx_a].astype(np.uint8), pal[idx_b].astype(np.uint8), 255)
    # 16-bit gray
    g = (65535 * smooth(rng, (40, 40), 0.02)).round().astype(np.uint16)
    g2 = np.clip(g.astype(int) + rng.integers(-900, 901, g.shape), 0, 65535).astype(np.uint16)
    png(f"{work}/g16_a.png", g)
    png(f"{work}/g16_b.png", g2)
    arms.update(g16_a="g16_a.png", g16_b="g16_b.png")
    want("gray16", g, g2, 65535)
    # float HWC with a data_range attribute; a CHW latent with a layout attribute
    with h5py.File(f"{work}/arms.h5", "w") as f:
        fa = smooth(rng, (33, 29, 3), 0.1)
        fb = np.clip(fa + 0.02 * rng.standard_normal(fa.shape), 0, 1)
        for k, v in (("fa", fa), ("fb", fb)):
            f[k] = v
            f[k].attrs["data_range"] = 1.0
        want("float", fa, fb, 1.0)
        la = 2 * rng.standard_normal((16, 24, 24))
        lb = la + 0.05 * rng.standard_normal(la.shape)
        for k, v in (("la", la), ("lb", lb)):
            f[k] = v.astype(np.float32)
            f[k].attrs["layout"] = "CHW"
            f[k].attrs["data_range"] = 8.0
        want("latent", np.moveaxis(la.astype(np.float32), 0, -1), np.moveaxis(lb.astype(np.float32), 0, -1), 8.0)
        # a video with a frame axis, and the same frames moved, as PNG files
        va = (255 * smooth(rng, (32, 40, 3), 0.05)).round().astype(np.uint8)
        vid = np.stack([np.roll(va, 2 * k, axis=1) for k in range(4)])
        vid2 = np.clip(vid.astype(int) + rng.integers(-4, 5, vid.shape), 0, 255).astype(np.uint8)
        f["video"] = vid
    frames = []
    for k in range(4):
        png(f"{work}/frame{k}.png", vid2[k])
        frames.append(f"frame{k}.png")
    arms.update(fa="arms.h5:/fa", fb="arms.h5:/fb", la="arms.h5:/la", lb="arms.h5:/lb", vid_a="arms.h5:/video",
                vid_b=frames)
    want("video", vid, vid2, 255, video=True)

    pairs = {"rgb": ("rgb_a", "rgb_b"), "identical": ("rgb_a", "rgb_a2"), "rgba": ("rgb_a", "rgba_b"),
             "palette": ("pal_a", "pal_b"), "gray16": ("g16_a", "g16_b"), "float": ("fa", "fb"),
             "latent": ("la", "lb"), "video": ("vid_a", "vid_b")}
    spec = {"admit_drift_spec": 1, "title": "skimage agreement", "kind": "image", "arms": arms,
            "compare": [{"name": k, "a": a_, "b": b_} for k, (a_, b_) in pairs.items()]}
    with open(f"{work}/spec.json", "w") as f:
        json.dump(spec, f)
    r = subprocess.run([admit, "drift", "--spec", f"{work}/spec.json", "--json", f"{work}/out.json"],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        print(r.stdout, r.stderr)
        print(f"FAIL: admit-kernel drift exited {r.returncode}")
        return 1
    got = {p["name"]: p for p in json.load(open(f"{work}/out.json"))["pairs"]}
    fails = 0
    print(f"{'pair':10} {'metric':5} {'admit':>22} {'scikit-image':>22} {'diff':>9}")
    for name, (psnr, ssim, mad) in expect.items():
        p = got[name]
        for metric, ref in (("psnr", psnr), ("ssim", ssim), ("mad", mad)):
            v = p[metric]
            if v == "inf":
                v = float("inf")
            ok = (v == ref) if np.isinf(ref) else abs(v - ref) <= TOL
            diff = 0.0 if np.isinf(ref) and v == ref else abs(v - ref)
            print(f"{name:10} {metric:5} {v:22.15g} {ref:22.15g} {diff:9.2g}{'' if ok else '  FAIL'}")
            fails += not ok
    print(f"drift_skimage: {3 * len(expect) - fails} agree, {fails} differ (tolerance {TOL})")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
