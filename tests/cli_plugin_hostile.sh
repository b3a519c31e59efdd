#!/bin/sh
# Plugins that attack admit's process instead of failing their own run
# (issue 15; tests/plugins/hostile_plugin.c): a query or a constructor
# that exits, crashes or loops fails its own entry, and the entries
# before and after are still judged and reported; a query or a kernel
# that sets FTZ/DAZ or a rounding mode changes no verdict but its own
# kernel's; a kernel that forks daemons costs no timeout and leaves no
# process behind; a query that answers differently later, and kernel
# structs with bad fields, are refused naming the field.
# Usage: cli_plugin_hostile.sh ADMIT WORKDIR SRCDIR PLUGINDIR
set -u
admit=$1 work=$2 src=$3 plug=$4
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
L=$src/captures/data/flux_fc1_linear_small.h5
R=$src/captures/data/row_sum_fp32.h5
h() { echo "$plug/adm_plugin_hostile_$1.so:k"; }

# A query that exits, crashes or loops, or a constructor that exits, fails
# its own entry: the entry before it (a violation) is judged, the reports
# are written, exit 2 (was: exit 0 with no report, 139, or a hang).
E1='{"name": "bad_fusion_declared_exact", "op": "linear", "reference": "eager", "candidate": "splitk_bf16", "declared": "exact", "captures": ["'$L'"]}'
for spec in "query_exit:its query for kernel 'k' ended its process (exit status 0)" \
            "query_crash:its query for kernel 'k' crashed (SIGSEGV" \
            "query_loop:its query for kernel 'k' used its 1 s of CPU time" \
            "ctor_exit:loading it ended its process (exit status 0)"; do
    v=${spec%%:*}
    printf '{"fusions": [%s, {"name": "their_plugin", "op": "linear", "reference": "eager", "candidate": "%s", "declared": "exact", "captures": ["%s"]}]}\n' \
        "$E1" "$(h "$v")" "$L" > "$work/t_$v.json"
    expect 2 "${spec#*:}" "looser than declared (unsafe)" "1 of 2 rows could not be measured" \
        -- env ADM_PLUGIN_CPU=1 ADM_PLUGIN_TIMEOUT=10 timeout 60 "$admit" table "$work/t_$v.json" \
           --json "$work/t_$v.out.json" --junit "$work/t_$v.out.xml"
    check "$v: the JUnit report is written" test -s "$work/t_$v.out.xml"
    check "$v: the JSON report has the violation and the error" /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
assert [x["verdict"] for x in r] == ["high", "error"], r
assert not r[0]["claim_holds"]' "$work/t_$v.out.json"
done
# the same when the entry declares static precisions (read from the plugin too)
printf '{"fusions": [{"name": "p", "op": "row_sum", "reference": "pairwise", "candidate": "%s", "declared": "high", "static": {"accumulator": "fp32"}, "captures": ["%s"]}]}\n' \
    "$(h query_exit)" "$R" > "$work/static.json"
expect 2 "fusions[0].candidate: entry 'p': plugin $plug/adm_plugin_hostile_query_exit.so: its query for kernel 'k' ended its process" \
    "1 of 1 rows could not be measured" -- "$admit" table "$work/static.json"
# a query that blocks without using CPU meets the wall clock; one that stops
# the process watching it meets admit's own deadline for that process
expect 2 "its query for kernel 'k' did not finish within 2 s (ADM_PLUGIN_TIMEOUT)" \
    -- env ADM_PLUGIN_CPU=100 ADM_PLUGIN_TIMEOUT=2 timeout 60 "$admit" run "$R" --reference pairwise --candidate "$(h query_loop)"
expect 2 "its query for kernel 'k': the process watching it ended abnormally (it did not end)" \
    -- env ADM_PLUGIN_TIMEOUT=1 timeout 60 "$admit" run "$R" --reference pairwise --candidate "$(h query_stop)"
# in run: the plugin's row fails, the registered candidate beside it is measured
expect 2 "its query for kernel 'k' ended its process (exit status 0)" "1 of 2 rows could not be measured" \
    "row_sum_fp32.h5  sequential
    -         high      -" -- "$admit" run "$R" --reference pairwise --candidate "$(h query_exit)" \
    --candidate sequential

# The floating-point environment. A kernel that flushes subnormals is high
# on subnormal sums (about 1e7 x the reference's error), also when its
# query sets FTZ/DAZ in the process that judges it (was: exact,
# "bit-identical [certified]"), in the sandbox and in-process.
/usr/bin/python3 - "$work/sub.h5" <<'PY' || exit 1
import sys
import h5py, numpy as np
rng = np.random.default_rng(3)
bits = rng.integers(1, 0x007fffff, (64, 512), dtype=np.uint32) | (rng.integers(0, 2, (64, 512), dtype=np.uint32) << 31)
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["admit_format"] = "admit-capture"
    f.attrs["admit_version"] = np.int64(1)
    f.attrs["op"] = "row_sum"
    f.attrs["op_params"] = "{}"
    f.create_group("inputs").create_dataset("x", data=bits.view(np.float32)).attrs["dtype"] = "fp32"
PY
for mode in on off; do
    expect 1 " exact     high " "looser than the claim (unsafe)" -- env ADM_PLUGIN_SANDBOX=$mode "$admit" run "$work/sub.h5" \
        --reference pairwise --candidate "$(h ftz)" --claim k=exact
done
# What a query sets is not its kernel's environment either: the kernel of
# the query that sets the rounding mode upward measures as the registered
# sequential sum does, bit for bit, beside it and alone (was: both
# measured upward, 11x the reference's error where alone it is 4.4x). A
# constructor's FTZ/DAZ is (as -ffast-math's would be in a runtime): that
# kernel flushes, high.
"$admit" run "$R" --reference pairwise --candidate sequential --json "$work/sequential.json" > /dev/null 2>&1
for mode in on off; do
    env ADM_PLUGIN_SANDBOX=$mode "$admit" run "$R" --reference pairwise --candidate "$(h round)" --candidate sequential \
        --json "$work/round_$mode.json" > /dev/null 2>&1
    check "round ($mode): the kernel measures as the sequential sum alone" /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
alone = json.load(open(sys.argv[2]))["results"][0]["numbers"]
assert len(r) == 2 and r[0]["numbers"] == r[1]["numbers"] == alone, \
    [x["rms_ratio"] for x in (r[0]["numbers"], r[1]["numbers"], alone)]' "$work/round_$mode.json" "$work/sequential.json"
    expect 1 " exact     high " -- env ADM_PLUGIN_SANDBOX=$mode "$admit" run "$work/sub.h5" --reference pairwise \
        --candidate "$(h ctor_ftz)" --claim k=exact
done
# A query that sets the rounding mode upward leaves the next entry's
# verdict alone: splitk_fp32 is exact after it as it is alone (was: lossless).
printf '{"fusions": [{"name": "their_plugin", "op": "row_sum", "reference": "pairwise", "candidate": "%s", "declared": "high", "captures": ["%s"]},
 {"name": "splitk_exact", "op": "linear", "reference": "eager", "candidate": "splitk_fp32", "declared": "exact", "captures": ["%s"]}]}\n' \
    "$(h round)" "$R" "$L" > "$work/round.json"
for mode in on off; do
    # (the plugin's path, whole, is wider than the row: each row's names take a line of their own)
    expect 0 "splitk_exact  splitk_fp32
    exact     exact     holds " \
        -- env ADM_PLUGIN_SANDBOX=$mode "$admit" table "$work/round.json"
done

# A kernel that leaves processes running (a child, a setsid daemon, a
# double-forked one) on each of its calls: the run takes no timeout per
# call (was: the whole ADM_PLUGIN_TIMEOUT on each of ~14 calls) and none of
# them outlives admit (was: every one, 30 s).
# (admit's output goes to a file: a pipe would be held open by the processes)
mkdir "$work/pids"
t0=$(date +%s)
env ADM_TEST_DIR="$work/pids" ADM_PLUGIN_TIMEOUT=10 timeout 200 "$admit" run "$R" --reference pairwise \
    --candidate "$(h fork)" --json "$work/fork.json" > "$work/fork.out" 2>&1
rc=$?
t1=$(date +%s)
check "fork: exit $rc, expected 0" [ "$rc" = 0 ]
check "fork: the kernel is measured" grep -q '"verdict": "high"' "$work/fork.json"
check "fork: the run took $((t1 - t0)) s (under 60 s; a timeout per call: 140 s)" [ $((t1 - t0)) -lt 60 ]
started=$(ls "$work/pids" | wc -l)
check "fork: the kernel started its processes ($started pid files)" [ "$started" -ge 3 ]
alive=0
for f in "$work/pids"/pid.*; do
    p=$(cat "$f")
    # ours: a process with this test's environment (a pid may have been reused)
    if grep -qz "ADM_TEST_DIR=$work/pids" "/proc/$p/environ" 2>/dev/null; then
        alive=$((alive + 1))
        kill -9 "$p" 2>/dev/null
    fi
done
check "fork: $alive of the kernel's $started processes outlived admit" [ "$alive" = 0 ]

# A query that describes another kernel when asked again (its output dtype
# changes) is refused, not run with an output of the wrong size.
mkdir "$work/flip"
expect 2 "its query for kernel 'k' now describes another kernel than when it was loaded" \
    -- env ADM_TEST_DIR="$work/flip" "$admit" run "$R" --reference pairwise --candidate "$(h flip)"

# The kernel's struct is checked field by field.
for spec in "desc_escape:kernel 'k': its description holds control characters or malformed UTF-8" \
            "desc_dtype:kernel 'k': it declares accumulator 'fp33', not a dtype name" \
            "desc_long_op:kernel 'k': its op is longer than 63 bytes" \
            "desc_nan:kernel 'k': it declares transcendental_ulps nan"; do
    expect 2 "${spec#*:}" "1 of 2 rows could not be measured" -- "$admit" run "$R" --reference pairwise \
        --candidate "$(h "${spec%%:*}")" --candidate sequential
done
finish cli_plugin_hostile
