#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_png (fuzz/seeds/png/): small PNGs (16 x 12
and smaller, a few hundred bytes) of every colour type and bit depth the
reader meets: gray 1/2/4/8/16 bits, gray+alpha, RGB 8/16, RGBA 8/16, palette
1/2/4/8 bits with and without tRNS, gray with tRNS, Adam7 interlaced gray and
RGB, all five row filters, and ancillary chunks (gAMA, tEXt, zTXt, pHYs).
Pure Python (zlib, struct), deterministic: rerun it and the bytes are the
same. Usage: fuzz/seeds/make_png.py [OUTDIR]"""
import os
import struct
import sys
import zlib

W, H = 16, 12


def chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def channels(ctype):
    return {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]


def pack_row(vals, depth):
    """Samples of one row into bytes (big-endian 16 bits; low depths packed MSB first)."""
    if depth == 16:
        return b"".join(struct.pack(">H", v) for v in vals)
    if depth == 8:
        return bytes(vals)
    per = 8 // depth
    out = bytearray()
    for i in range(0, len(vals), per):
        byte = 0
        for k in range(per):
            v = vals[i + k] if i + k < len(vals) else 0
            byte |= v << (8 - depth * (k + 1))
        out.append(byte)
    return bytes(out)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def filter_rows(rows, bpp, ftype):
    """Filters each row (ftype None: the row number mod 5, every filter)."""
    out, prev = bytearray(), bytes(len(rows[0])) if rows else b""
    for y, row in enumerate(rows):
        f = y % 5 if ftype is None else ftype
        line = bytearray()
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            pred = (0, a, b, (a + b) // 2, paeth(a, b, c))[f]
            line.append((x - pred) & 0xFF)
        out += bytes([f]) + line
        prev = row
    return bytes(out)


def sample(x, y, c, depth, ctype, npal):
    top = npal - 1 if ctype == 3 else (1 << depth) - 1
    return (x * 7 + y * 13 + c * 29 + x * y) % (top + 1)


def image(w, h, depth, ctype, npal=0):
    ch = channels(ctype)
    return [[sample(x, y, c, depth, ctype, npal) for x in range(w) for c in range(ch)] for y in range(h)]


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def png(w, h, depth, ctype, interlace=0, ftype=None, npal=0, trns=None, extra=b"", level=9):
    ch = channels(ctype)
    bpp = max(1, ch * depth // 8)
    img = image(w, h, depth, ctype, npal)
    if interlace:
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            xs, ys = range(x0, w, dx), range(y0, h, dy)
            if not xs or not ys:
                continue
            rows = [pack_row([img[y][x * ch + c] for x in xs for c in range(ch)], depth) for y in ys]
            raw += filter_rows(rows, bpp, ftype)
    else:
        raw = filter_rows([pack_row(r, depth) for r in img], bpp, ftype)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, interlace))
    out += extra
    if ctype == 3:
        out += chunk(b"PLTE", b"".join(bytes((i * 37 % 256, i * 91 % 256, 255 - i)) for i in range(npal)))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    data = zlib.compress(raw, level)
    # two IDAT chunks when there is enough data: the reader must join them
    half = len(data) // 2 if len(data) > 64 else len(data)
    out += chunk(b"IDAT", data[:half])
    if half < len(data):
        out += chunk(b"IDAT", data[half:])
    return out + chunk(b"IEND", b"")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "png")
    os.makedirs(out, exist_ok=True)
    anc = (chunk(b"gAMA", struct.pack(">I", 45455)) + chunk(b"pHYs", struct.pack(">IIB", 2835, 2835, 1))
           + chunk(b"tEXt", b"Comment\0admit fuzz seed")
           + chunk(b"zTXt", b"Title\0\0" + zlib.compress(b"a compressed text chunk")))
    seeds = {
        "gray1.png": png(W, H, 1, 0),
        "gray2.png": png(W, H, 2, 0),
        "gray4.png": png(W, H, 4, 0),
        "gray8.png": png(W, H, 8, 0, extra=anc),
        "gray16.png": png(W, H, 16, 0),
        "gray8_trns.png": png(W, H, 8, 0, trns=struct.pack(">H", 7)),
        "graya8.png": png(W, H, 8, 4),
        "graya16.png": png(8, 6, 16, 4),
        "rgb8.png": png(W, H, 8, 2),
        "rgb16.png": png(8, 6, 16, 2),
        "rgb8_trns.png": png(W, H, 8, 2, trns=struct.pack(">HHH", 1, 2, 3)),
        "rgba8.png": png(W, H, 8, 6),
        "rgba16.png": png(8, 6, 16, 6),
        "palette1.png": png(W, H, 1, 3, npal=2),
        "palette2.png": png(W, H, 2, 3, npal=4),
        "palette4.png": png(W, H, 4, 3, npal=11),
        "palette8.png": png(W, H, 8, 3, npal=40),
        "palette8_trns.png": png(W, H, 8, 3, npal=40, trns=bytes(range(0, 200, 10))),
        "interlaced_gray8.png": png(W, H, 8, 0, interlace=1),
        "interlaced_rgb16.png": png(9, 7, 16, 2, interlace=1),
        "interlaced_palette4.png": png(W, H, 4, 3, interlace=1, npal=9),
        "tiny_1x1.png": png(1, 1, 8, 0),
        "wide_33x1_gray1.png": png(33, 1, 1, 0),
        "stored_rgb8.png": png(5, 4, 8, 2, ftype=0, level=0),
    }
    for name, data in sorted(seeds.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
