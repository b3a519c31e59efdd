#!/bin/sh
# Renders the drift report's page with headless Chromium (Debian's
# chromium) to a PNG and checks that it drew the page: exit 77 (skipped)
# when chromium is absent.
# Usage: html_drift.sh ADMIT WORKDIR
set -u
admit=$1 work=$2
chrome=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chrome" ] || { echo "html_drift: no chromium: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work/profile" || exit 1
for night in 2026-11-28 2026-11-29; do
    "$admit" drift --toy --grid 8 --blocks 2 --steps 2 --depth 6 --band-tolerance 1 --history "$work/h.jsonl" \
        --date $night >/dev/null || { echo "FAIL: drift --toy"; exit 1; }
done
"$admit" drift --toy --grid 8 --blocks 2 --steps 2 --depth 6 --band-tolerance 1 --history "$work/h.jsonl" \
    --html "$work/html" >/dev/null || { echo "FAIL: drift --toy --html"; exit 1; }
timeout 60 "$chrome" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
    --disable-sync --no-first-run --user-data-dir="$work/profile" --screenshot="$work/page.png" --window-size=1400,900 \
    "file://$work/html/index.html" >"$work/chromium.log" 2>&1
[ -s "$work/page.png" ] || { echo "FAIL: chromium wrote no screenshot"; cat "$work/chromium.log"; exit 1; }
# the page drew: a PNG of the window's size whose pixels are not all one colour
/usr/bin/python3 - "$work/page.png" <<'PY' || exit 1
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1400, 900), (w, h)
idat, pos = b"", 8
while pos < len(data):
    n, = struct.unpack(">I", data[pos:pos + 4]); t = data[pos + 4:pos + 8]
    if t == b"IDAT": idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
distinct = len(set(raw[i:i + 3] for i in range(1, len(raw), 997)))
assert distinct > 20, f"only {distinct} colours sampled: the page did not render"
print(f"html_drift: rendered {w}x{h}, {distinct} colours sampled")
PY
