#!/bin/sh
# The same inputs give the same verdicts and report bytes at any thread
# count: the fusion table (OMP_NUM_THREADS=1 and 2) and a replay of every
# bundled capture (1, 2 and 3) for the gates' reductions, and the oracle with
# --threads 1 and 3 (its tiles). Usage: cli_determinism.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
export SOURCE_DATE_EPOCH=1700000000
for t in 1 2 3; do
    [ $t = 3 ] || OMP_NUM_THREADS=$t "$admit" table "$src/fusions/dit.json" --json "$work/t$t.json" --junit "$work/t$t.xml" \
        --html "$work/h$t" > "$work/t$t.txt" 2>&1
    OMP_NUM_THREADS=$t "$admit" replay "$src"/captures/data/*.h5 --json "$work/r$t.json" > "$work/r$t.txt" 2>&1
done
# the phases' wall times are the one part of a report that may differ
for t in 1 2 3; do
    /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r.pop("timings")
json.dump(r, open(sys.argv[1], "w"), indent=2)' "$work/r$t.json" || { echo "FAIL: r$t.json has no timings"; fails=$((fails + 1)); }
done
for t in 2 3; do
    fs="r$t.json r$t.txt"
    [ $t = 3 ] || fs="$fs t$t.json t$t.xml t$t.txt h$t/index.html"
    for f in $fs; do
        one=$(echo "$f" | sed "s/$t/1/")
        check "$f is byte-identical to $one" cmp "$work/$one" "$work/$f"
    done
done
for t in 1 3; do
    "$admit" oracle "$src/captures/data/flux_fc1_gelu_small.h5" --threads $t -o "$work/o$t.h5" > /dev/null
done
check "the oracle's values and bounds are byte-identical with 1 and 3 threads" cmp "$work/o1.h5" "$work/o3.h5"
finish cli_determinism
