#!/bin/sh
# One capture replayed N times with the oracle on the GPU (replay --device
# cuda), to tell a flaky GPU replay from a deterministic one: each run's exit
# status, and for every run that differs from the CPU's exit status its
# error lines (the JSON's results[].error and the report's error lines).
# ADM_CUDA_MODULE, when set, swaps the device module alone (the host code
# stays the binary's), so a failure can be laid at the host's door or the
# module's. Usage: gpu_replay_repeat.sh ADMIT CAPTURE N WORKDIR. Exit 0
# when every GPU run's exit status equals the CPU run's, 1 otherwise, 77
# (skipped) without a usable GPU, 2 on a usage error.
set -u
[ $# -eq 4 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
admit=$1 cap=$2 n=$3 work=$4
case $n in '' | *[!0-9]*) echo "gpu_replay_repeat: N must be a count (got '$n')" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] || { echo "gpu_replay_repeat: N must be a count of 1 or more (got '$n')" >&2; exit 2; }
[ -f "$cap" ] || { echo "gpu_replay_repeat: $cap: no such capture" >&2; exit 2; }
rm -rf "$work" && mkdir -p "$work" || exit 2
"$admit" replay "$cap" --device cpu --json "$work/cpu.json" > "$work/cpu.txt" 2>&1
want=$?
bad=0 i=1
while [ "$i" -le "$n" ]; do
    "$admit" replay "$cap" --device cuda --json "$work/gpu$i.json" > "$work/gpu$i.txt" 2>&1
    rc=$?
    # the first run says whether there is a GPU at all
    if [ "$i" = 1 ] && grep -q -e 'replay --device cuda:' "$work/gpu1.txt"; then
        echo "gpu_replay_repeat: skipped: $(grep -m1 'replay --device cuda:' "$work/gpu1.txt")"
        exit 77
    fi
    if [ "$rc" != "$want" ]; then
        bad=$((bad + 1))
        echo "run $i: exit $rc (the CPU's: $want)"
        grep -i -E '(^|[^a-z_])error|admit-kernel:' "$work/gpu$i.txt" | head -8 | sed 's/^/    /'
        /usr/bin/env python3 -c '
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit("    no JSON report: %s" % e)
for x in r.get("results", []):
    if x.get("error"):
        print("    %s: %s" % (x.get("candidate"), x["error"]))' "$work/gpu$i.json"
    fi
    i=$((i + 1))
done
echo "gpu_replay_repeat: $cap: $bad of $n GPU replays differ from the CPU's exit status $want${ADM_CUDA_MODULE:+ (module $ADM_CUDA_MODULE)}"
[ "$bad" = 0 ]
