#!/bin/sh
# Messages about files at long paths (issue 15; PATH_MAX is 4096) keep the
# field and the reason: the sandboxed reader's refusal, the in-process
# reader's, a table's schema error and an entry's error, in the terminal
# and in the reports.
# Usage: cli_long_messages.sh ADMIT WORKDIR
set -u
admit=$1 work=$2
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
py=/usr/bin/python3
# a folder about 3.3 KB deep (components of 250 bytes)
deep=$work/$($py -c 'print("/".join(c * 250 for c in "defghijklmnop"), end="")')
mkdir -p "$deep" || exit 1
"$admit" capture synth -o "$deep/rms.h5" --op rmsnorm --tokens 8 --channels 32 --with-outputs >/dev/null || exit 1
# a capture whose input is an external link: refused by the reader
$py - "$deep/x.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w') as f:
    f.attrs['admit_format'] = 'admit-capture'; f.attrs['admit_version'] = np.int64(1)
    f.attrs['op'] = 'rmsnorm'; f.attrs['op_params'] = '{}'
    g = f.create_group('inputs'); g['x'] = h5py.ExternalLink('other.h5', '/x')
PY
for mode in on off; do
    expect 2 "$deep/x.h5: dataset '/inputs/x': external" "not allowed" -- env ADM_SANDBOX=$mode "$admit" capture validate "$deep/x.h5"
done
# replay's row for it: the terminal's "not measured" and the JSON keep the reason
# (on a terminal wide enough for the 4 KB path: a narrower one wraps the
# reason at its spaces, the path whole on a line of its own)
expect 2 "not measured: $deep/x.h5: dataset '/inputs/x': external" -- env COLUMNS=10000 "$admit" replay "$deep/x.h5" --json "$work/x.json"
check "the JSON report keeps the reason" grep -q "dataset '/inputs/x': external" "$work/x.json"

# A table at the long path: a schema error keeps its field and reason ...
printf '{"fusions": [\n {"name": "a", "op": "rmsnorm", "reference": "eager", "candidate": "fused_fp32", "captures": ["rms.h5"]}]}\n' > "$deep/schema.json"
expect 2 "$deep/schema.json:2:2: fusions[0].declared: required, a string" -- "$admit" table "$deep/schema.json"
# ... and an entry whose capture path (3.9 KB from the table's folder) does
# not exist names the table, the entry's field, the capture and the reason
pad=$($py -c 'print("./" * 300, end="")')
printf '{"fusions": [{"name": "a", "op": "rmsnorm", "reference": "eager", "candidate": "fused_fp32", "declared": "lossless", "captures": ["%s"]}]}\n' \
    "${pad}missing.h5" > "$deep/entry.json"
expect 2 "$deep/entry.json:1:118: fusions[0].captures[0]: entry 'a': $deep/${pad}missing.h5: cannot open the capture: No such file or directory" \
    -- "$admit" table "$deep/entry.json" --junit "$work/entry.xml"
check "the JUnit report keeps the reason" grep -q "missing.h5: cannot open the capture: No such file or directory" "$work/entry.xml"
finish cli_long_messages
