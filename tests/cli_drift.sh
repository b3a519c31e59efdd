#!/bin/sh
# admit-kernel drift: exit codes (0 pass, 1 a comparison fails, 2 bad
# input), bad input naming the file and the field, the outputs (JSON,
# history, HTML, Markdown), and the toy (its TP2 over two processes is the
# emulated TP2 bit for bit).
# Usage: cli_drift.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
py=/usr/bin/python3
# arms: a, a copy, b moved by 2 everywhere (the band), c by 1 (inside), d by 4 (outside)
$py - "$work" <<'PY' || exit 1
import struct, sys, zlib
import h5py, numpy as np
w = sys.argv[1]
def png(path, a):
    h, wd = a.shape[:2]
    raw = b"".join(b"\x00" + a[y].tobytes() for y in range(h))
    ch = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + ch(b"IHDR", struct.pack(">IIBBBBB", wd, h, 8, 2, 0, 0, 0))
                           + ch(b"IDAT", zlib.compress(raw)) + ch(b"IEND", b""))
rng = np.random.default_rng(3)
a = rng.integers(40, 200, (24, 32, 3)).astype(np.uint8)
sign = np.where(rng.random(a.shape) < 0.5, -1, 1)
for name, k in (("a", 0), ("a2", 0), ("b", 2), ("c", 1), ("d", 4)):
    png(f"{w}/{name}.png", (a.astype(int) + k * sign).astype(np.uint8))
png(f"{w}/small.png", a[:, :20])
with h5py.File(f"{w}/arms.h5", "w") as f:
    f["a"] = a
    f["float"] = a / 255.0
PY
A="--arm a=$work/a.png --arm a2=$work/a2.png --arm b=$work/b.png --arm c=$work/c.png --arm d=$work/d.png"
# pass: the control is identical, c sits inside the band of b
expect 0 "bit-identical" "inside the band" "verdict: pass" -- "$admit" drift $A --control a:a2 --band a:b --compare a:c
# fail: d is outside the band; as a high claim it passes on the floors
expect 1 "FAIL: outside the band" "verdict: FAIL" -- "$admit" drift $A --band a:b --compare a:d
expect 0 "outside the band (high: allowed)" -- "$admit" drift $A --band a:b --compare a:d@high
expect 0 "within the tolerance" -- "$admit" drift $A --band a:b --compare a:d --band-tolerance 6.1
expect 1 "FAIL: not identical" -- "$admit" drift $A --control a:c
expect 1 "below the floors" -- "$admit" drift $A --compare a:d --psnr-floor 60
# an HDF5 arm against a PNG arm of the same values
expect 0 "inf dB" -- "$admit" drift --arm p=$work/a.png --arm h=$work/arms.h5:/a --control p:h
# bad input: exit 2, naming the file and the field
expect 2 "missing.png" "cannot open" -- "$admit" drift --arm a=$work/missing.png --arm b=$work/b.png --compare a:b
expect 2 "arms.h5" "no dataset '/nope'" -- "$admit" drift --arm a=$work/arms.h5:/nope --arm b=$work/b.png --compare a:b
expect 2 "name the dataset" -- "$admit" drift --arm a=$work/arms.h5 --arm b=$work/b.png --compare a:b
expect 2 "a.png" "small.png" "24 x 32 x 3" -- "$admit" drift --arm a=$work/a.png --arm s=$work/small.png --compare a:s
expect 2 "holds floats of no declared range" -- "$admit" drift --arm f=$work/arms.h5:/float --arm g=$work/arms.h5:/float --compare f:g
expect 0 "inf dB" -- "$admit" drift --arm f=$work/arms.h5:/float --arm g=$work/arms.h5:/float --compare f:g --data-range 1
expect 2 "no arm named 'zz'" -- "$admit" drift $A --compare a:zz
expect 2 "expected A:B" -- "$admit" drift $A --compare a
expect 2 "TIER must be lossless or high" -- "$admit" drift $A --compare a:b@exact
expect 2 "give arms" -- "$admit" drift
expect 2 "unknown option" -- "$admit" drift $A --compare a:b --bogus
printf '{"admit_drift_spec": 1, "arms": {"a": "a.png", "b": "b.png"}, "band": [["a", "b"]], "compare": [["a"]]}' >"$work/s1.json"
expect 2 "s1.json" "field 'compare[0]'" -- "$admit" drift --spec "$work/s1.json"
printf '{"admit_drift_spec": 1, "arms": {"a": "a.png", "b": "b.png"}, "compare": [["a", "b"]], "floor": 3}' >"$work/s2.json"
expect 2 "s2.json" "field 'floor'" "unknown key" -- "$admit" drift --spec "$work/s2.json"
printf '{"admit_drift_spec": 1, "arms": {"a": "a.png",' >"$work/s3.json"
expect 2 "s3.json" "not valid JSON" -- "$admit" drift --spec "$work/s3.json"
printf '{"admit_drift_spec": 1, "arms": {"a": "a.png", "b": "nothere.png"}, "compare": [["a", "b"]]}' >"$work/s4.json"
expect 2 "s4.json" "field 'arms.b'" "nothere.png" -- "$admit" drift --spec "$work/s4.json"
# a spec that holds: frames as a list make a video
printf '{"admit_drift_spec": 1, "arms": {"a": "a.png", "a2": "a2.png", "b": "b.png", "c": "c.png", "v1": ["a.png", "b.png"], "v2": ["a.png", "c.png"]},
  "control": [["a", "a2"]], "band": [{"name": "tp", "a": "a", "b": "b"}], "compare": [{"name": "tier", "a": "a", "b": "c"}, ["v1", "v2"]]}' >"$work/ok.json"
expect 0 "tp " "tier " "v1 vs v2" "(video)" -- "$admit" drift --spec "$work/ok.json"
# outputs: history rows, JSON, HTML, Markdown; a malformed history writes nothing
expect 0 "| tier | lossless |" "**Verdict: pass**" -- "$admit" drift --spec "$work/ok.json" --markdown --history "$work/h.jsonl" \
    --date 2026-11-29 --commit abc --json "$work/d.json" --html "$work/html"
expect 0 "" -- "$admit" drift --spec "$work/ok.json" --history "$work/h.jsonl" --date 2026-11-30 --commit def --html "$work/html"
check "two history rows" test "$(wc -l <"$work/h.jsonl")" = 2
check "the page plots both nights" grep -q "2026-11-29" "$work/html/index.html"
check "a heat map per pair" test -f "$work/html/diff-3.png"
$py -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['pairs'][0]['psnr']=='inf' and d['band']['psnr']>0, d" \
    "$work/d.json" || { echo "FAIL: drift JSON"; fails=$((fails + 1)); }
checks=$((checks + 1))
echo '{"date": broken' >>"$work/h.jsonl"
rm -f "$work/d2.json"
expect 2 "h.jsonl: line 3" -- "$admit" drift --spec "$work/ok.json" --history "$work/h.jsonl" --json "$work/d2.json"
check "nothing written after a malformed history" test ! -e "$work/d2.json"
# the toy, small: TP2 over two processes equals the emulated TP2
T="--toy --grid 8 --blocks 2 --steps 2 --depth 6"
expect 0 "control: exact TP1 vs exact TP1 again" "the band: exact TP1 vs exact TP2" "both at once" "the high tier" \
    "layers" "steps" -- "$admit" drift $T --band-tolerance 1 --save-arms "$work/em" --json "$work/toy.json" --html "$work/toyhtml"
expect 0 "two processes over pipes" -- "$admit" drift $T --band-tolerance 1 --tp2 processes --save-arms "$work/pr"
check "TP2 over processes is the emulated TP2" cmp "$work/em/exact_tp2.png" "$work/pr/exact_tp2.png"
check "the lossless TP2 arm too" cmp "$work/em/lossless_tp2.png" "$work/pr/lossless_tp2.png"
expect 0 "fc1        linear+gelu" -- "$admit" drift --toy --sites
# The default table: never a path compiled in. From another working folder
# an admit-kernel in a build folder of the checkout finds the checkout's;
# one where no table is (a copy in bin/ of a bare folder) names the places
# it tried and --table, exit 2.
if [ "$(cd "$(dirname "$admit")/.." && pwd -P)" = "$(cd "$src" && pwd -P)" ]; then
    # (a wide terminal: the report wraps its notes at the terminal's width)
    expect 0 "Tiers from $(cd "$src" && pwd -P)/fusions/toy.json" -- \
        env COLUMNS=1000 sh -c 'cd "$1" && shift && exec "$@"' - "$work" "$admit" drift $T --depth 2 --band-tolerance 1
fi
mkdir -p "$work/bare/bin" && cp "$admit" "$work/bare/bin/"
bare=$(cd "$work/bare" && pwd -P)
expect 2 "not in ./fusions/toy.json, $bare/fusions/toy.json or $bare/share/admit/fusions/toy.json" \
    "give one with --table FILE" -- sh -c 'cd "$1" && shift && exec "$@"' - "$bare" "$bare/bin/admit-kernel" drift $T
expect 0 "Tiers from $src/fusions/toy.json" -- \
    env COLUMNS=1000 sh -c 'cd "$1" && shift && exec "$@"' - "$bare" "$bare/bin/admit-kernel" drift $T --depth 2 --band-tolerance 1 --table "$src/fusions/toy.json"
expect 2 "site 'fc1'" "no implementation 'nope'" -- "$admit" drift $T --mount fc1=nope
expect 2 "no entry named 'nope'" -- "$admit" drift $T --high nope
expect 2 "--toy makes its own arms" -- "$admit" drift $T --arm a=$work/a.png
# getopt_long: --opt=V and --opt V alike, `--` ends the options, -h
expect 0 "inside the band" "verdict: pass" -- "$admit" drift --arm=a=$work/a.png --arm b=$work/b.png --arm=c=$work/c.png --band=a:b --compare a:c
expect 2 "drift: unexpected argument '--compare'" -- "$admit" drift $A --band a:b -- --compare a:c
expect 2 "--psnr-floor: expected a number of dB >= 0, got '-1'" -- "$admit" drift $A --compare a:c --psnr-floor=-1
expect 2 "drift: option '--json' needs a value" -- "$admit" drift $A --compare a:c --json
expect 2 "drift: unknown option '-x'" -- "$admit" drift -x $A --compare a:c
expect 0 "usage: admit-kernel drift" -- "$admit" drift -h
expect 0 "usage: admit-kernel drift" -- "$admit" drift $A --help
finish cli_drift
