#!/bin/sh
# GPU and CPU verdicts agree (issue 17): every bundled capture
# (captures/data) and every real-kernel capture (captures/real) replayed with
# the oracle on the CPU and on the GPU (replay --device cuda) gives the same
# verdict, claim outcome and gate outcomes for every candidate, and every
# capture the CPU judges the GPU judges too. The oracle's fp64 values differ
# between the two paths within their certified bounds, so the deciding
# numbers may differ in late digits; the verdicts may not.
# Usage: gpu_verdicts.sh ADMIT WORKDIR SRCDIR. Exit 77 (skipped) without a
# usable GPU, saying so.
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
if ! out=$("$admit" replay --device cuda "$src/captures/data/row_sum_fp32.h5" 2>&1) &&
    printf '%s' "$out" | grep -q -e 'replay --device cuda:'; then
    echo "gpu_verdicts: skipped: $(printf '%s' "$out" | grep -m1 'replay --device cuda:')"
    exit 77
fi
caps=$(ls "$src"/captures/data/*.h5 "$src"/captures/real/*.h5) || exit 1
# one capture at a time: a capture that fails alone is compared as a failure
fails=0 n=0
for c in $caps; do
    b=$(basename "$c" .h5)
    d=$(basename "$(dirname "$c")")
    "$admit" replay "$c" --device cpu --json "$work/$d-$b.cpu.json" > "$work/$d-$b.cpu.txt" 2>&1
    rc_cpu=$?
    "$admit" replay "$c" --device cuda --json "$work/$d-$b.gpu.json" > "$work/$d-$b.gpu.txt" 2>&1
    rc_gpu=$?
    n=$((n + 1))
    if [ $rc_cpu != $rc_gpu ]; then
        echo "FAIL: $d/$b: exit $rc_cpu on the CPU, $rc_gpu on the GPU"
        # the reasons first (a row marked error says why in its line), then the end
        grep -i -E '(^|[^a-z_])error|admit-kernel:' "$work/$d-$b.gpu.txt" | head -8 | sed 's/^/    gpu: /'
        sed 's/^/    gpu: /' "$work/$d-$b.gpu.txt" | tail -5
        fails=$((fails + 1))
        continue
    fi
    [ -f "$work/$d-$b.cpu.json" ] || { echo "note: $d/$b: no report on either path (exit $rc_cpu)"; continue; }
    /usr/bin/env python3 - "$work/$d-$b.cpu.json" "$work/$d-$b.gpu.json" "$d/$b" <<'PY' || fails=$((fails + 1))
import json, sys
cpu, gpu = (json.load(open(p)) for p in sys.argv[1:3])
def rows(r):
    out = {}
    for x in r["results"]:
        gates = tuple(sorted((g.get("gate"), g.get("applicable"), g.get("passed")) for g in x.get("gates", [])
                             if isinstance(g, dict)))
        out[(x["source"].split("/")[-1], x["candidate"])] = (x["verdict"], x.get("claim_holds"), gates)
    return out
a, b = rows(cpu), rows(gpu)
bad = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
for k in bad:
    print("FAIL: %s %s: CPU %s, GPU %s" % (sys.argv[3], k[1], a.get(k), b.get(k)))
print("%-48s %d rows, %s" % (sys.argv[3], len(a), "verdicts equal" if not bad else "%d differ" % len(bad)))
sys.exit(1 if bad else 0)
PY
done
echo "gpu_verdicts: $n captures, $fails differ"
[ $fails = 0 ]
