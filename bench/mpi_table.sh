#!/bin/sh
# A fusion table over the ranks of an MPI job against one process (issue 19):
# 9 entries of 4 captures each (36 units of entry x capture), synthetic
# DiT-shaped activations written on the machine by admit-kernel capture
# synth, then the table run by one process and by RANKS ranks under mpirun
# (--oversubscribe; as root with Open MPI's two consent variables), each
# timed, and the reports compared byte for byte. Writes DIR/result.json:
# the wall and CPU seconds of each, the speed-up, the load average before
# and after, the machine, the date and the command.
# Usage: bench/mpi_table.sh ADMIT DIR [RANKS]   (RANKS: 2)
#   BENCH_TOKENS (default 128) scales every capture, for a quick check of
#   the script itself; results/ records the default.
set -eu
admit=$1 dir=$2 ranks=${3:-2}
tokens=${BENCH_TOKENS:-128}
mkdir -p "$dir/caps"
cd "$dir"
# 128 tokens x 256 channels (x 512 out-features for the GEMMs): about 0.5 s
# of one core for a GEMM capture's unit, 0.2 s for a reduction's
for s in 1 2 3 4; do
    [ -e caps/lin$s.h5 ] || "$admit" capture synth --op linear --tokens "$tokens" --channels 256 --out-features 512 \
        --seed $s -o caps/lin$s.h5 > /dev/null
    [ -e caps/gelu$s.h5 ] || "$admit" capture synth --op linear+gelu --tokens "$tokens" --channels 256 \
        --out-features 512 --seed $((s + 10)) -o caps/gelu$s.h5 > /dev/null
    [ -e caps/rsum$s.h5 ] || "$admit" capture synth --op row_sum --tokens $((2 * tokens)) --channels 1024 \
        --seed $((s + 20)) -o caps/rsum$s.h5 > /dev/null
    [ -e caps/msq$s.h5 ] || "$admit" capture synth --op mean_sq --tokens $((2 * tokens)) --channels 1024 \
        --seed $((s + 30)) -o caps/msq$s.h5 > /dev/null
done
entry() { # NAME OP REF CAND DECLARED CAPTURE-STEM
    printf '  {"name": "%s", "op": "%s", "reference": "%s", "candidate": "%s", "declared": "%s",\n' "$1" "$2" "$3" "$4" "$5"
    printf '   "captures": ["caps/%s1.h5", "caps/%s2.h5", "caps/%s3.h5", "caps/%s4.h5"]}' "$6" "$6" "$6" "$6"
}
{
    echo '{"admit_fusion_table": 1, "description": "bench/mpi_table.sh: 9 entries x 4 synthetic captures", "fusions": ['
    entry splitk_fp32 linear eager splitk_fp32 lossless lin; echo ,
    entry bias_epilogue linear eager bias_epilogue lossless lin; echo ,
    entry fp8_operand linear eager fp8_operand high lin; echo ,
    entry bf16_accum linear eager bf16_accum high lin; echo ,
    entry gelu_fused_epilogue linear+gelu eager fused_epilogue lossless gelu; echo ,
    entry gelu_splitk4 linear+gelu eager splitk4 lossless gelu; echo ,
    entry gelu_bias_epilogue linear+gelu eager bias_epilogue lossless gelu; echo ,
    entry warp_sum row_sum pairwise warp lossless rsum; echo ,
    entry msq_bf16 mean_sq eager bf16_accum high msq; echo
    echo ']}'
} > table.json
export SOURCE_DATE_EPOCH=1700000000 ADMIT_COMMIT=bench OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
load() { cut -d' ' -f1-3 /proc/loadavg; }
load0=$(load)
/usr/bin/time -f "%e %U %S" -o one.time "$admit" table table.json --json one.json --junit one.xml > one.txt 2> one.err \
    && rc1=0 || rc1=$?
/usr/bin/time -f "%e %U %S" -o many.time mpirun --oversubscribe -np "$ranks" "$admit" table table.json \
    --json many.json --junit many.xml > many.txt 2> many.err && rcn=0 || rcn=$?
load1=$(load)
same=true
for f in json xml txt; do cmp -s one.$f many.$f || same=false; done
[ "$rc1" = "$rcn" ] || same=false
read -r w1 u1 s1 < one.time
read -r wn un sn < many.time
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
ver=$("$admit" version | head -1)
mpi=$("$admit" version | grep '^mpi:' | head -1)
python3 - "$w1" "$u1" "$s1" "$wn" "$un" "$sn" "$ranks" "$rc1" "$rcn" "$same" "$load0" "$load1" "$cpu" "$(nproc)" \
    "$ver" "$mpi" "$tokens" <<'PY' > result.json
import json, sys, datetime
a = sys.argv[1:]
w1, u1, s1, wn, un, sn = map(float, a[0:6])
print(json.dumps({
    "benchmark": "bench/mpi_table.sh", "date_utc": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%MZ"),
    "table": {"entries": 9, "captures_per_entry": 4, "units": 36, "tokens": int(a[16])},
    "one_process": {"wall_s": w1, "user_s": u1, "sys_s": s1, "exit": int(a[7])},
    "ranks": int(a[6]),
    "mpi": {"wall_s": wn, "user_s": un, "sys_s": sn, "exit": int(a[8])},
    "speedup": round(w1 / wn, 3), "reports_identical": a[9] == "true",
    "load_before": a[10], "load_after": a[11],
    "machine": {"cpu": a[12], "cores": int(a[13])}, "admit": a[14], "mpi_library": a[15]}, indent=1))
PY
cat result.json
