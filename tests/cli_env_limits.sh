#!/bin/sh
# The ADM_* limits and budgets from the environment (issue 15): each is
# parsed strictly, in its range, or refused with exit 2 naming the
# variable; none silently switches itself off (0, a value that wraps), is
# ignored (garbage), or is so low that the reader dies and the file takes
# the blame.
# Usage: cli_env_limits.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
cap=$src/captures/data/dit_rmsnorm.h5
# A capture whose soft link leads through an external link to a FIFO:
# without any CPU or wall-clock limit its reader would block forever.
mkfifo "$work/fifo"
/usr/bin/python3 - "$work" <<'PY'
import os, sys, h5py, numpy as np
with h5py.File(sys.argv[1] + '/fifo.h5', 'w') as f:
    f.attrs['admit_format'] = 'admit-capture'; f.attrs['admit_version'] = np.int64(1)
    f.attrs['op'] = 'rmsnorm'; f.attrs['op_params'] = '{"eps":1e-6}'
    g = f.create_group('inputs')
    g.create_dataset('weight', data=np.full(16, 0x3f80, np.uint16)).attrs['dtype'] = 'bf16'
    f['zz'] = h5py.ExternalLink(os.path.abspath(sys.argv[1] + '/fifo'), '/')
    g['x'] = h5py.SoftLink('/zz/x')
PY
for e in ADM_SANDBOX_TIMEOUT=0 ADM_SANDBOX_CPU=0 ADM_SANDBOX_CPU=4294967296 ADM_SANDBOX_CPU=4294967297 ADM_SANDBOX_CPU=-5 \
         ADM_SANDBOX_CPU=5s ADM_SANDBOX_CPU=5K ADM_SANDBOX_CPU=0x10 ADM_SANDBOX_CPU=+5 "ADM_SANDBOX_CPU= 5"; do
    expect 2 "environment variable ${e%%=*}='${e#*=}': expected 1 to" -- timeout 20 env "$e" "$admit" capture validate "$work/fifo.h5"
done
# far too little memory for the reader to start: refused naming the
# variable (it was "capture ... is corrupt ... SIGSEGV", blaming the file)
for m in 1 1K 15M 99999999999999999G 1X; do
    expect 2 "environment variable ADM_SANDBOX_MEMORY='$m': expected 16M to" "too little to start" \
        -- env ADM_SANDBOX_MEMORY=$m "$admit" capture validate "$cap"
done
check "ADM_SANDBOX_MEMORY=1: the file is not blamed" sh -c "! ADM_SANDBOX_MEMORY=1 '$admit' capture validate '$cap' 2>&1 | grep -q corrupt"
expect 0 "valid admit-capture" -- env ADM_SANDBOX_MEMORY=16M ADM_SANDBOX_CPU=2592000 ADM_SANDBOX_TIMEOUT=60 "$admit" capture validate "$cap"
expect 0 "valid admit-capture" -- env ADM_SANDBOX_MEMORY=1g "$admit" capture validate "$cap"
# the plugin sandbox's and the reader's other limits, the switches
for e in ADM_PLUGIN_CPU=0 ADM_PLUGIN_TIMEOUT=0 ADM_PLUGIN_MEMORY=1 ADM_PLUGIN_CPU=4294967296 ADM_CAPTURE_MAX_BYTES=0 \
         ADM_CAPTURE_MAX_BYTES=-1 ADM_SANDBOX=false ADM_PLUGIN_SANDBOX=disabled; do
    expect 2 "environment variable ${e%%=*}='${e#*=}': expected" -- env "$e" "$admit" replay "$cap"
done
expect 0 "fused_fp32" -- env ADM_SANDBOX=off ADM_PLUGIN_SANDBOX=0 ADM_CAPTURE_MAX_BYTES=64M "$admit" replay "$cap"
# ADM_MPFR_BUDGET is refused like --mpfr-budget (it was ignored)
for b in garbage -5 1e3 ""1.5; do
    expect 2 "environment variable ADM_MPFR_BUDGET='$b': expected 0 to" -- env ADM_MPFR_BUDGET=$b "$admit" replay "$cap"
done
expect 2 "--mpfr-budget: expected a number of terms >= 0" -- "$admit" replay "$cap" --mpfr-budget garbage
expect 0 "fused_fp32" -- env ADM_MPFR_BUDGET=0 "$admit" replay "$cap"
# help and version need no valid environment
expect 0 "commands:" -- env ADM_SANDBOX_CPU=0 "$admit" help
expect 0 "admit-kernel " -- env ADM_SANDBOX_CPU=0 "$admit" version
finish cli_env_limits
