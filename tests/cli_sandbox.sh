#!/bin/sh
# The sandboxed capture reader (captures/sandbox.c) on the files that crash,
# hang or blow up libhdf5 1.10 itself (issue 8, R5-R7; the byte-patched
# captures in tests/data/corrupt/, made by ../shared/repro/R5-R7): each
# ends with exit 2 and a message naming the file and what libhdf5 was
# reading, never a crash of admit-kernel or a sanitizer report; a table
# and a replay holding a corrupt capture fail that entry and finish.
# Plugin kernels that crash, hang, allocate without bound or write outside
# their output (tests/plugins/bad_plugin.c) fail their own row likewise.
# Usage: cli_sandbox.sh ADMIT WORKDIR SRCDIR PLUGINDIR
set -u
admit=$1 work=$2 src=$3 plug=$4
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
c=$src/tests/data/corrupt
# Limits low enough that a libhdf5 loop costs seconds on a loaded machine.
export ADM_SANDBOX_CPU=2 ADM_SANDBOX_TIMEOUT=30 ADM_SANDBOX_MEMORY=512M
clean() { # no sanitizer report, no signal: the parent stayed whole
    case $out in *"ERROR: AddressSanitizer"*|*"runtime error"*|*"LeakSanitizer"*) return 1;; esac
    [ "$rc" -lt 128 ]
}
run() { out=$("$@" 2>&1); rc=$?; }

# R5: an endless loop in H5HG_read under H5Aread of 'admit_format'.
expect 2 "capture $c/r5_hang_global_heap.h5 is corrupt: the HDF5 library failed reading attribute 'admit_format' of the root group" \
    -- "$admit" capture inspect "$c/r5_hang_global_heap.h5"
# R6: a 1.9 GB allocation in H5T__conv_vlen from a corrupted heap length:
# the child's memory limit refuses it and the attribute is named.
expect 2 "r6_vlen_2GB.h5" "attribute 'model'" -- "$admit" replay "$c/r6_vlen_2GB.h5"
expect 2 "r6_vlen_2GB.h5" "attribute 'model'" -- env ADM_SANDBOX_MEMORY=64M "$admit" capture validate "$c/r6_vlen_2GB.h5"

# R7: memory errors inside libhdf5 (overlapping memcpy, heap overflow,
# negative size, SEGV, BUS, bad free, leak), each with the command that
# met it.
for spec in "oracle r7_000079_vae_groupnorm_silu" "replay r7_002129_linear_gelu" "replay r7_001826_swiglu_noout" \
            "replay r7_000081_linear" "replay r7_000779_layernorm" "capture inspect r7_000395_gated_residual" \
            "capture inspect r7_000492_swiglu_noout" "capture validate r7_001096_sana_linear_attention"; do
    f=${spec##* }
    cmd=${spec% *}
    # shellcheck disable=SC2086
    expect 2 "$f.h5" -- "$admit" $cmd "$c/$f.h5"
    # shellcheck disable=SC2086
    run "$admit" $cmd "$c/$f.h5"
    check "$f: no crash or sanitizer report in admit-kernel itself" clean
done
# The heap overflow of r7_000864 corrupts nothing a release build notices:
# the capture reads and replays (exit 0), or the child dies under a
# sanitizer (exit 2); the parent is untouched either way.
run "$admit" replay "$c/r7_000864_sana_linear_attention.h5"
check "r7_000864: exit 0 or 2 (got $rc)" [ "$rc" = 0 -o "$rc" = 2 ]
check "r7_000864: no crash in admit-kernel itself" clean

# A corrupt capture fails its own entry: the table and the replay go on,
# write their reports with an error row, and exit 2.
cp "$c/r7_001826_swiglu_noout.h5" "$work/crash.h5"
cp "$src/captures/data/dit_gated_residual.h5" "$work/good.h5"
cat > "$work/t.json" <<'J'
{"fusions": [
 {"name": "broken", "op": "gated_residual", "reference": "eager", "candidate": "early_round", "declared": "lossless",
  "captures": ["crash.h5"]},
 {"name": "fine", "op": "gated_residual", "reference": "eager", "candidate": "early_round", "declared": "lossless",
  "captures": ["good.h5"]}]}
J
expect 2 "crash.h5 is corrupt: the HDF5 library failed reading" "not measured" "1 of 2 rows could not be measured" \
    -- "$admit" table "$work/t.json" --json "$work/t_report.json" --junit "$work/t_report.xml" --html "$work/html"
expect 2 "crash.h5 is corrupt" "1 of 2 rows" -- "$admit" replay "$work/crash.h5" "$work/good.h5" --json "$work/r_report.json"
/usr/bin/python3 - "$work/t_report.json" "$work/r_report.json" "$work/t_report.xml" <<'PY' || { echo "FAIL: reports of a run with a corrupt capture"; fails=$((fails + 1)); }
import json, sys, xml.etree.ElementTree as ET
t = {x["source"]: x for x in json.load(open(sys.argv[1]))["results"]}
assert t["broken"]["verdict"] == "error" and "is corrupt" in t["broken"]["error"]["message"], t["broken"]
assert t["broken"]["error"]["status"] == "ADM_ERR_FORMAT", t["broken"]
assert t["fine"]["verdict"] in ("exact", "lossless", "high") and "error" not in t["fine"], t["fine"]
r = json.load(open(sys.argv[2]))["results"]
assert [x["verdict"] for x in r if x["source"].endswith("crash.h5")] == ["error"], r
assert any(x["source"].endswith("good.h5") and x["verdict"] != "error" for x in r), r
s = ET.parse(sys.argv[3]).getroot().find("testsuite")
assert s.get("errors") == "1", s.attrib
PY
grep -q "not measured" "$work/html/index.html" || { echo "FAIL: the HTML report lacks the error row"; fails=$((fails + 1)); }

# The sandbox reads what the reader reads: the same inspection either way,
# and ADM_SANDBOX=off reads in-process.
g=$src/captures/data/wan_nvfp4_ff.h5
a=$("$admit" capture inspect "$g" 2>&1)
b=$(ADM_SANDBOX=off "$admit" capture inspect "$g" 2>&1)
check "sandboxed and in-process inspection agree" [ "$a" = "$b" ]
check "inspection is not empty" [ -n "$a" ]
# A hang is stopped by the wall clock too (no CPU used: a FIFO-like stall
# is refused before the fork; here the CPU limit is lifted instead).
expect 2 "no answer within 3 s" -- env ADM_SANDBOX_CPU=0 ADM_SANDBOX_TIMEOUT=3 "$admit" capture inspect "$c/r5_hang_global_heap.h5"
# Broken plugin kernels: each fails its own row, the registered candidate
# beside it is still measured, the reports are written, exit 2.
g=$src/captures/data/flux_fc1_gelu_small.h5
for spec in "segv:crashed (SIGSEGV" "loop:used its 2 s of CPU time" "alloc:crashed (SIG" \
            "oob:wrote past the end of its output" "under:wrote before the start of its output"; do
    v=${spec%%:*}
    expect 2 "plugin kernel 'bad' ${spec#*:}" "1 of 2 rows could not be measured" "fused_epilogue" \
        -- env ADM_PLUGIN_CPU=2 ADM_PLUGIN_TIMEOUT=20 ADM_PLUGIN_MEMORY=1G "$admit" run "$g" --reference eager \
           --candidate "$plug/adm_plugin_bad_$v.so:bad" --candidate fused_epilogue --json "$work/p_$v.json"
    grep -q '"verdict": "lossless"' "$work/p_$v.json" || { echo "FAIL: $v: the healthy candidate has no verdict"; fails=$((fails + 1)); }
done
# In a table: the broken plugin's entry fails, the next entry is measured.
cat > "$work/pt.json" <<J
{"fusions": [
 {"name": "broken_plugin", "op": "linear+gelu", "reference": "eager", "candidate": "$plug/adm_plugin_bad_oob.so:bad",
  "declared": "lossless", "captures": ["$g"]},
 {"name": "fine", "op": "gated_residual", "reference": "eager", "candidate": "early_round", "declared": "lossless",
  "captures": ["$work/good.h5"]}]}
J
expect 2 "wrote past the end of its output" "1 of 2 rows could not be measured" "fine " -- "$admit" table "$work/pt.json"
# The example plugin still measures through the sandbox.
expect 0 "lossless" -- "$admit" run "$g" --reference eager --candidate "$plug/adm_plugin_example.so:example_fused_gelu"
finish cli_sandbox
