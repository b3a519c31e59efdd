#!/bin/sh
# The power benchmark of issue 16 in one run, its rows as separate processes
# (a row's samples are seeded by op, seed and capture alone, so they are the
# same whichever process runs it), joined by power_merge.py.
#   bench/run_power.sh BUILD OUTDIR [SEEDS [FA_SEEDS [JOBS]]]
# writes OUTDIR/power.md, OUTDIR/power.json and OUTDIR/summary.md (the 50%
# points against issue 16's goals); each row's JSON and log stay in
# OUTDIR/parts/. POWER_RESUME=1 keeps the rows already finished there (a
# run taken up again with the same arguments). The fp32 row sum at 10^6
# outputs (a 10^6 x 64 input, about a minute per sample on one core, where
# the synthesis dominates) runs only with POWER_ROW_SUM_1E6=1; POWER_BIG=0
# leaves out every row at 10^6; POWER_MAX_N=1024 stops the small rows and
# the false-alarm rows there (a re-run of the small sizes; bench_power
# --min-n 16384 --max-n 16384 --only OP,KIND spot-checks the next size);
# POWER_LIMIT=1 adds bench_power --limit (the best test's 50% points beside
# admit's, with the spread known and estimated).
set -eu
build=$1 out=$2 seeds=${3:-20} fa=${4:-150} jobs=${5:-2}
max_n=${POWER_MAX_N:-16384}
big_ops="1 2 3 4 5"; [ "${POWER_ROW_SUM_1E6:-0}" = 1 ] && big_ops="0 1 2 3 4 5"
[ "${POWER_BIG:-1}" = 0 ] && big_ops=""
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/parts"
[ "${POWER_RESUME:-0}" = 1 ] || rm -f "$out"/parts/*.json "$out"/parts/*.log
rows() { # the small sizes first: their cells carry most of the goals
    for op in 0 1 2 3 4 5; do
        kinds="0 1 2 3 4 5"; [ $op = 0 ] && kinds="0 1 2 3"
        for k in $kinds; do echo "small-$op-$k --only $op,$k --no-fa --max-n $max_n"; done
    done
    for op in 0 1 2 3 4 5; do echo "fa-$op --fa-only --only $op,-1 --max-n $max_n"; done
    for op in $big_ops; do echo "fa-big-$op --fa-only --only $op,-1 --min-n 1000000"; done
    for op in $big_ops; do
        kinds="0 1 2 3 4 5"; [ $op = 0 ] && kinds="0 1 2 3"
        for k in $kinds; do echo "big-$op-$k --only $op,$k --no-fa --min-n 1000000"; done
    done
}
rows | while read -r tag args; do
    [ "${POWER_RESUME:-0}" = 1 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out/parts/$tag.json" </dev/null \
        2>/dev/null && continue
    [ "${POWER_LIMIT:-0}" = 1 ] && case $tag in small-* | big-*) args="$args --limit" ;; esac
    echo "$build/bench_power $args --seeds $seeds --fa-seeds $fa --json $out/parts/$tag.json --out /dev/null 2>$out/parts/$tag.log"
done >"$out/parts/commands"
start=$(date +%s)
xargs -P "$jobs" -I{} sh -c '{}' <"$out/parts/commands" || {
    echo "run_power.sh: a row failed; see $out/parts/*.log" >&2
    exit 1
}
end=$(date +%s)
python3 "$here/power_merge.py" --seconds $((end - start)) --jobs "$jobs" --out "$out/power.md" --json "$out/power.json" \
    --summary "$out/summary.md" "$out"/parts/*.json
