#!/bin/sh
# Captures that are valid HDF5 and hostile (issue 15, ../shared/repro/s3):
# a soft link whose way passes through an external link (another file's
# tensor, or a FIFO), a filter this libhdf5 lacks (and a library in
# HDF5_PLUGIN_PATH that must never be loaded).
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

finish cli_capture_bounds
