#!/bin/sh
# Captures that are valid HDF5 and hostile (issue 15, ../shared/repro/s3):
# a soft link whose way passes through an external link (another file's
# tensor, or a FIFO), a filter this libhdf5 lacks (and a library in
# HDF5_PLUGIN_PATH that must never be loaded), and resource bombs: small
# files of gzip'ed constants that declare gigabytes, refused before their
# data is read by the ratio of declared to stored bytes and by the
# commands' budgets (memory and multiply-adds, from the declared shapes).
# Usage: cli_capture_bounds.sh ADMIT WORKDIR SRCDIR HDF5_PLUGIN_DIR
set -u
admit=$1 work=$2 src=$3 h5plug=$4
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
cd "$work" || exit 1

/usr/bin/python3 - <<'PY' || { echo "FAIL: writing the captures"; exit 1; }
import os, h5py, numpy as np
from h5py import h5d, h5p, h5s, h5t, h5z
def bf16(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
def cap(path, x, extra=None):
    y = bf16(x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6))
    with h5py.File(path, 'w') as f:
        f.attrs['admit_format'] = 'admit-capture'; f.attrs['admit_version'] = np.int64(1)
        f.attrs['op'] = 'rmsnorm'; f.attrs['op_params'] = '{"eps":1e-6}'
        g = f.create_group('inputs')
        g.create_dataset('x', data=bf16(x)).attrs['dtype'] = 'bf16'
        g.create_dataset('weight', data=bf16(np.ones(16, np.float32))).attrs['dtype'] = 'bf16'
        f.create_dataset('reference', data=y).attrs['dtype'] = 'bf16'
        if extra: extra(f)
x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
xs = x.copy(); xs[0, 0] = 1234.0
cap(os.path.abspath('someone_elses.h5'), xs)
def through(target):
    def edit(f):
        f['zz'] = h5py.ExternalLink(os.path.abspath(target), '/')
        del f['inputs/x']; f['inputs/x'] = h5py.SoftLink('/zz/inputs/x')
    return edit
cap('hostile.h5', x, through('someone_elses.h5'))
cap('fifo.h5', x, through('fifo'))
# h5py writes LZF (id 32000) as an optional filter; the low-level API can
# make it mandatory.
def lzf(path, mandatory):
    with h5py.File(path, 'w') as f:
        f.attrs['admit_format'] = 'admit-capture'; f.attrs['admit_version'] = np.int64(1)
        f.attrs['op'] = 'rmsnorm'; f.attrs['op_params'] = '{"eps":1e-6}'
        g = f.create_group('inputs')
        data = np.full((64, 16), 0x3f80, np.uint16)
        if mandatory:
            dcpl = h5p.create(h5p.DATASET_CREATE); dcpl.set_chunk((64, 16)); dcpl.set_filter(h5z.FILTER_LZF, 0)
            d = h5py.Dataset(h5d.create(g.id, b'x', h5t.STD_U16LE, h5s.create_simple((64, 16)), dcpl=dcpl))
            d[...] = data
        else:
            d = g.create_dataset('x', data=data, compression='lzf', chunks=(64, 16))
        d.attrs['dtype'] = 'bf16'
        g.create_dataset('weight', data=np.full(16, 0x3f80, np.uint16)).attrs['dtype'] = 'bf16'
lzf('lzf.h5', False)
lzf('lzf_mandatory.h5', True)
PY
mkfifo fifo

# Links: /inputs/x is a soft link to /zz/inputs/x, /zz an external link.
# libhdf5 followed it into another file (inputs/x's max was that file's
# 1232) or, to a FIFO, blocked until the sandbox's wall clock (in-process:
# forever). Refused before anything is opened, sandboxed or not.
for mode in on off; do
    for cmd in "capture validate" "capture inspect" oracle; do
        expect 2 "hostile.h5: dataset '/inputs/x'" "soft link to '/zz/inputs/x' passes through 'zz', an external" \
            -- env ADM_SANDBOX=$mode timeout 20 "$admit" $cmd hostile.h5
    done
    expect 2 "fifo.h5: dataset '/inputs/x'" "passes through 'zz', an external" \
        -- env ADM_SANDBOX=$mode timeout 20 "$admit" capture validate fifo.h5
done

# A filter this libhdf5 lacks is named, and no library in
# HDF5_PLUGIN_PATH is loaded to look for it, in the sandbox's child or
# in-process.
for mode in on off; do
    rm -f mark
    expect 2 "lzf.h5: dataset '/inputs/x'" "compressed with filter 32000 (LZF), which is not available in this libhdf5" \
        -- env ADM_SANDBOX=$mode HDF5_PLUGIN_PATH="$h5plug" ADM_HDF5_PLUGIN_MARK="$work/mark" "$admit" capture validate lzf.h5
    expect 2 "lzf_mandatory.h5: dataset '/inputs/x': compressed with filter 32000 (LZF), which is not available" \
        -- env ADM_SANDBOX=$mode HDF5_PLUGIN_PATH="$h5plug" ADM_HDF5_PLUGIN_MARK="$work/mark" "$admit" oracle lzf_mandatory.h5
    check "no library of HDF5_PLUGIN_PATH is loaded (ADM_SANDBOX=$mode)" test ! -e "$work/mark"
done

# ---------------------------------------------------------------- resource bombs
# bomb.py FILE KIND ROWS COLS: gzip'ed constants, each chunk compressed
# once and written as is (a file of the reproducers' size in a moment).
cat > bomb.py <<'PY'
import sys, zlib, h5py, numpy as np
path, kind, T, C = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def put(f, name, shape, st, dt, fill):
    item = np.dtype(st).itemsize
    row = int(np.prod(shape[1:])) * item
    rows = max(1, min(shape[0], (1 << 22) // row))
    chunks = (rows,) + tuple(shape[1:])
    d = f.create_dataset(name, shape=shape, dtype=st, chunks=chunks, compression='gzip', compression_opts=9)
    z = zlib.compress(np.full(chunks, fill, st).tobytes(), 9)
    for i in range(0, shape[0], rows):
        d.id.write_direct_chunk((i,) + (0,) * (len(shape) - 1), z)
    d.attrs['dtype'] = dt
with h5py.File(path, 'w') as f:
    f.attrs['admit_format'] = 'admit-capture'; f.attrs['admit_version'] = np.int64(1)
    f.attrs['op_params'] = '{}'
    if kind == 'random':  # an honest gated_residual of random bf16, stored raw
        f.attrs['op'] = 'gated_residual'
        rng = np.random.default_rng(0)
        for name, shape in (('inputs/x', (T, C)), ('inputs/g', (T, 1)), ('inputs/y', (T, C))):
            bits = rng.standard_normal(shape, np.float32).view(np.uint32) >> 16
            f.create_dataset(name, data=bits.astype(np.uint16)).attrs['dtype'] = 'bf16'
    elif kind in ('linear', 'flux'):  # x [T, C], w [N, C] of ones (N: C, or FLUX.1's 4 C), the reference zeros
        N = 4 * C if kind == 'flux' else C
        f.attrs['op'] = 'linear+gelu' if kind == 'flux' else 'linear'
        if kind == 'flux': f.attrs['op_params'] = '{"approximate":"tanh"}'
        put(f, 'inputs/x', (T, C), np.uint16, 'bf16', 0x3f80)
        put(f, 'inputs/w', (N, C), np.uint16, 'bf16', 0x3f80)
        put(f, 'inputs/bias', (N,), np.uint16, 'bf16', 0)
        put(f, 'reference', (T, N), np.uint16, 'bf16', 0)
    else:  # gated_residual of zeros, fp8 or bf16, with one candidate
        st, dt = (np.uint8, 'fp8_e4m3') if kind == 'fp8' else (np.uint16, 'bf16')
        f.attrs['op'] = 'gated_residual'
        for name, shape in (('inputs/x', (T, C)), ('inputs/g', (T, 1)), ('inputs/y', (T, C)),
                            ('reference', (T, C)), ('candidates/fused', (T, C))):
            put(f, name, shape, st, dt, 0)
PY
mk() { /usr/bin/python3 bomb.py "$@" || { echo "FAIL: bomb.py $*"; exit 1; }; }
# measure COMMAND...: runs it; $rc, $out, $kb (the peak resident size of
# it and its children, KiB) and $ms (wall clock)
measure() {
    res=$(/usr/bin/python3 -c 'import resource, subprocess, sys, time
t = time.monotonic(); p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
sys.stdout.write(p.stdout.decode("utf-8", "replace"))
print("\n%d %d %d" % (p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, (time.monotonic() - t) * 1000))' "$@")
    set -- $(printf "%s\n" "$res" | tail -1)
    rc=$1 kb=$2 ms=$3
    out=$(printf "%s\n" "$res" | sed '$d')
}
# refused_small NEEDLE COMMAND...: exit 2 with NEEDLE, under 160 MB and 20 s
refused_small() {
    needle=$1; shift
    measure "$@"
    checks=$((checks + 1))
    case $rc:$out in
    2:*"$needle"*) [ "$kb" -lt 163840 ] && [ "$ms" -lt 20000 ] && return ;;
    esac
    echo "FAIL: exit $rc, ${kb} KiB, ${ms} ms, expected exit 2 with \"$needle\", < 160 MB, < 20 s: $*"
    printf "%s\n" "$out" | sed 's/^/    /'
    fails=$((fails + 1))
}

# At the reproducers' size: 8192 x 16384 fp8 zeros in 0.4 MB (oracle took
# 5.5 GB and 28 s), 4096 x 8192 bf16 zeros in 0.2 MB (run: 2.8 GB),
# a 2048 x 8192 x 8192 GEMM of ones in 0.2 MB (run: more than 240 s).
# Refused before a tensor is read: by the declared-to-stored ratio...
mk fp8_bomb.h5 fp8 8192 16384
mk bf16_bomb.h5 bf16 4096 8192
mk lin_bomb.h5 linear 2048 8192
ratio="more than 64 MiB + 64 x the file's size"
refused_small "fp8_bomb.h5: its datasets declare 536879104 bytes in a file of" "$admit" capture validate fp8_bomb.h5
refused_small "$ratio" "$admit" oracle fp8_bomb.h5
refused_small "$ratio" env ADM_SANDBOX=off "$admit" oracle fp8_bomb.h5
refused_small "$ratio" "$admit" run bf16_bomb.h5 --reference eager --candidate early_round
refused_small "$ratio" "$admit" replay bf16_bomb.h5
refused_small "$ratio" "$admit" run lin_bomb.h5 --reference eager --candidate splitk_fp32
# ... and, with the ratio off, by the budgets, still before the data.
export ADM_CAPTURE_MAX_RATIO=0
refused_small "fp8_bomb.h5: oracle would hold about 6.6 GiB of memory" "$admit" oracle fp8_bomb.h5 --max-memory 2G
refused_small "above the memory budget of 2.0 GiB (--max-memory, ADM_MAX_MEMORY; 0: no limit)" \
    env ADM_SANDBOX=off ADM_MAX_MEMORY=2G "$admit" oracle fp8_bomb.h5
refused_small "bf16_bomb.h5: run would hold about" env ADM_MAX_MEMORY=2G "$admit" run bf16_bomb.h5 --reference eager \
    --candidate early_round
# (the probes and views run on the first 8 of the 2048 rows and the first 64
# of the 8192 output channels)
refused_small "lin_bomb.h5: run would take about 6.87e+11 multiply-adds (the oracle 4.12e+11, 2 runs of the implementations at 1.37e+11 each and 24 on the probes' cut at 4.19e+06), above the work budget of 5e+11 (--max-work, ADM_MAX_WORK; 0: no limit)" \
    "$admit" run lin_bomb.h5 --reference eager --candidate splitk_fp32 --max-work 500G
unset ADM_CAPTURE_MAX_RATIO

# Scaled down (under the ratio's first 64 MiB), with the budgets lowered:
# every command that measures goes through them.
mk fp8_small.h5 fp8 1024 4096
mk bf16_small.h5 bf16 512 4096
mk lin_small.h5 linear 256 1024
expect 2 "fp8_small.h5: oracle would hold about" "above the memory budget of 100 MiB" \
    -- env ADM_MAX_MEMORY=100M "$admit" oracle fp8_small.h5
expect 2 "bf16_small.h5: run would hold about" "2 implementations' outputs on the inputs, probes and views" \
    -- "$admit" run bf16_small.h5 --reference eager --candidate early_round --max-memory 100M
expect 2 "bf16_small.h5: replay would hold about" "not measured" \
    -- "$admit" replay bf16_small.h5 --max-memory 100M
expect 2 "lin_small.h5: run would take about 1.36e+09 multiply-adds" "above the work budget of 1e+09" \
    -- env ADM_MAX_WORK=1G "$admit" run lin_small.h5 --reference eager --candidate splitk_fp32
# A table: the entry over budget fails alone, the other is measured.
cat > table.json <<JSON
{"admit_fusion_table": 1, "fusions": [
 {"name": "bomb", "op": "gated_residual", "reference": "eager", "candidate": "early_round", "declared": "high",
  "captures": ["bf16_small.h5"]},
 {"name": "fine", "op": "gated_residual", "reference": "eager", "candidate": "early_round", "declared": "high",
  "captures": ["$src/captures/data/dit_gated_residual.h5"]}]}
JSON
expect 2 "bf16_small.h5: run would hold about" "fine " "lossless" -- "$admit" table table.json --max-memory 100M
# The defaults on a 24 GiB machine (memory: half of it) let FLUX.1's MLP
# capture run (x 4096 x 3072, w 12288 x 3072; planned at 6.3 GiB and
# 4.3e12): the read passes the plan, and the run stops at the unknown
# candidate instead. (Inflating its 200 MB of zeros takes the sandbox's
# reader more than its 5 s of CPU in a sanitizer build.)
mk flux_shapes.h5 flux 4096 3072
expect 2 "no_such" -- env ADM_CAPTURE_MAX_RATIO=0 ADM_MAX_MEMORY=12G ADM_SANDBOX_CPU=120 ADM_SANDBOX_TIMEOUT=300 \
    "$admit" run flux_shapes.h5 --reference eager --candidate no_such
case $out in *"would "*) echo "FAIL: FLUX.1's MLP shapes are over the default budgets: $out"; fails=$((fails + 1));; esac
# The limit is the estimate itself: at it the capture runs, a unit below it
# is refused.
"$admit" capture synth -o tiny.h5 --op linear --tokens 8 --channels 32 --out-features 16 > /dev/null
w=$(ADM_MAX_WORK=1 "$admit" run tiny.h5 --reference eager --candidate splitk_fp32 2>&1 |
    sed -n 's/.*would take about \([0-9.e+]*\) multiply-adds.*/\1/p')
w=$(/usr/bin/python3 -c "print(int(float('$w')))")
expect 0 "splitk_fp32" -- "$admit" run tiny.h5 --reference eager --candidate splitk_fp32 --max-work "$w"
expect 2 "tiny.h5: run would take about" -- "$admit" run tiny.h5 --reference eager --candidate splitk_fp32 \
    --max-work $((w - 1000))

# Strict limits: a malformed option or variable is exit 2 naming it.
expect 2 "--max-memory: expected a number of bytes with an optional K, M, G or T suffix" "got '12Q'" \
    -- "$admit" oracle tiny.h5 --max-memory 12Q
expect 2 "--max-work: expected a number of multiply-adds" "got '-5'" -- "$admit" run tiny.h5 --reference eager \
    --candidate splitk_fp32 --max-work -5
expect 2 "ADM_MAX_MEMORY: expected a number of bytes" "got 'lots'" -- env ADM_MAX_MEMORY=lots "$admit" replay tiny.h5
expect 2 "--max-memory: expected a number of bytes" "got '0x10'" -- "$admit" replay tiny.h5 --max-memory 0x10
expect 2 "ADM_MAX_WORK: expected a number of multiply-adds" "got '1e400'" -- env ADM_MAX_WORK=1e400 "$admit" table table.json
expect 2 "ADM_CAPTURE_MAX_RATIO = '6x4': expected a whole number >= 0" -- env ADM_CAPTURE_MAX_RATIO=6x4 "$admit" capture validate tiny.h5

# The model bounds what a command takes: the estimate (at a budget of one
# byte, the refusal says it) against the peak resident size.
mk gr.h5 random 1024 4096
"$admit" capture synth -o rms.h5 --op rmsnorm --tokens 256 --channels 1024 > /dev/null
bound() { # bound COMMAND...: the peak of COMMAND is within its estimate
    est=$(ADM_MAX_MEMORY=1 "$@" 2>&1 | sed -n 's/.*would hold about \([0-9.]*\) \([MG]\)iB.*/\1 \2/p')
    est=$(/usr/bin/python3 -c "v, u = '$est'.split(); print(int(float(v) * (1 << (20 if u == 'M' else 30)) / 1024))")
    measure "$@"
    check "peak ${kb} KiB within the estimate ${est} KiB: $*" test "$rc" -lt 2 -a "$kb" -le "$est"
}
bound "$admit" oracle gr.h5
bound "$admit" run rms.h5 --reference eager --candidate fused_fp32

finish cli_capture_bounds
