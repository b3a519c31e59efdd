#!/bin/sh
# The capture reader on the files that crash, hang or blow up libhdf5 1.10
# itself (issue 8, R5-R7; the byte-patched captures in tests/data/corrupt/,
# made by ../shared/repro/R5-R7): each ends with exit 2 and a message
# naming the file and the attribute or what libhdf5 was reading, never a
# crash of admit-kernel or a sanitizer report. Those that came from a
# string's global-heap reference are refused by its check
# (captures/heap_check.c) in the sandbox and in-process alike; the rest
# kill the sandbox's reader process. A table and a replay holding a
# corrupt capture fail that entry and finish; a stalled reader is stopped
# by the wall clock. Plugin kernels that crash, hang, allocate without
# bound or write outside their output (tests/plugins/bad_plugin.c) fail
# their own row likewise.
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

# peak_kb COMMAND...: the largest resident size (KiB) of any process the
# command ran, its children included.
peak_kb() {
    /usr/bin/python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}

# R5-R7 where libhdf5 trusts a string's global-heap reference
# (captures/heap_check.c): the reference and its collection are checked
# against the file before H5Aread, in the sandbox and in-process alike.
for mode in on off; do
    # R5: an object of size 0 in the collection (an endless loop in H5HG_read).
    expect 2 "r5_hang_global_heap.h5: root: attribute 'admit_format'" "global heap collection at address 2048" \
        "declares 0 bytes" -- env ADM_SANDBOX=$mode "$admit" capture inspect "$c/r5_hang_global_heap.h5"
    # R6: a reference declaring 1.9 GB (H5T__conv_vlen allocated it).
    expect 2 "r6_vlen_2GB.h5: root: attribute 'model'" "declares a string of 1920298867 bytes, more than 1048576" \
        -- env ADM_SANDBOX=$mode "$admit" replay "$c/r6_vlen_2GB.h5"
    # R7 raw-000864: a reference to object 0, the collection's free space
    # (H5HG_read copied 16 bytes past the collection; a release build
    # returned them as 'op_params' and replayed the capture, exit 0).
    expect 2 "r7_000864_sana_linear_attention.h5: root: attribute 'op_params'" "names object 0" \
        "the collection's free space" -- env ADM_SANDBOX=$mode "$admit" replay "$c/r7_000864_sana_linear_attention.h5"
    # Other R7 signatures that were a collection's or a reference's doing.
    expect 2 "attribute 'admit_format'" "object 15 of the global heap collection" "past the collection's end" \
        -- env ADM_SANDBOX=$mode "$admit" oracle "$c/r7_000079_vae_groupnorm_silu.h5"
    expect 2 "attribute 'admit_format'" "object 25 of the global heap collection" "past the collection's end" \
        -- env ADM_SANDBOX=$mode "$admit" replay "$c/r7_002129_linear_gelu.h5"
    expect 2 "attribute 'admit_format'" "names object 65025" "does not hold" \
        -- env ADM_SANDBOX=$mode "$admit" replay "$c/r7_001826_swiglu_noout.h5"
    expect 2 "attribute 'admit_format'" "object 2 of the global heap collection" "past the collection's end" \
        -- env ADM_SANDBOX=$mode "$admit" capture inspect "$c/r7_000395_gated_residual.h5"
done
# In-process, R6 no longer allocates: the peak stays that of reading a
# small capture (it was 2.0 GB, 16.8 s before the reference was checked).
kb=$(ADM_SANDBOX=off peak_kb "$admit" replay "$c/r6_vlen_2GB.h5")
check "r6 in-process: peak RSS ${kb} KiB, expected under 256 MiB" [ "$kb" -lt 262144 ]

# R7: memory errors inside libhdf5 (overlapping memcpy, heap overflow,
# negative size, SEGV, BUS, bad free, leak), each with the command that
# met it: exit 2 naming the file, through the sandbox.
for spec in "oracle r7_000079_vae_groupnorm_silu" "replay r7_002129_linear_gelu" "replay r7_001826_swiglu_noout" \
            "replay r7_000081_linear" "replay r7_000779_layernorm" "capture inspect r7_000395_gated_residual" \
            "capture inspect r7_000492_swiglu_noout" "capture validate r7_001096_sana_linear_attention" \
            "replay r7_000864_sana_linear_attention"; do
    f=${spec##* }
    cmd=${spec% *}
    # shellcheck disable=SC2086
    expect 2 "$f.h5" -- "$admit" $cmd "$c/$f.h5"
    # shellcheck disable=SC2086
    run "$admit" $cmd "$c/$f.h5"
    check "$f: no crash or sanitizer report in admit-kernel itself" clean
done
# Where libhdf5 still faults past those checks (a group's B-tree here),
# the reader process dies and the parent says so.
expect 2 "capture $c/r7_000081_linear.h5 is corrupt: the HDF5 library failed reading group '/special/empty/inputs'" \
    "the reader process died of SIG" -- "$admit" replay "$c/r7_000081_linear.h5"

# A corrupt capture fails its own entry: the table and the replay go on,
# write their reports with an error row, and exit 2.
cp "$c/r7_000081_linear.h5" "$work/crash.h5"
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
# A reader that stalls without using CPU is stopped by the wall clock: the
# reader process of a sound capture is stopped (SIGSTOP) as soon as it
# appears, with a CPU limit far off; tried again when the read finished
# before it could be stopped.
g=$src/captures/data/flux_fc1_linear_small.h5
stalled=no
for try in 1 2 3 4 5; do
    ADM_SANDBOX_CPU=600 ADM_SANDBOX_TIMEOUT=2 "$admit" capture inspect "$g" >"$work/stall.out" 2>&1 &
    pid=$!
    kid=
    while [ -z "$kid" ] && kill -0 "$pid" 2>/dev/null; do
        read -r kid _ 2>/dev/null <"/proc/$pid/task/$pid/children" || : # no newline after the last pid
    done
    [ -n "$kid" ] && kill -STOP "$kid" 2>/dev/null
    wait "$pid"
    rc=$?
    if [ "$rc" != 0 ]; then
        stalled=$rc
        break
    fi
done
check "a stopped reader: exit 2 (got $stalled)" [ "$stalled" = 2 ]
check "a stopped reader: the message says the wall clock ran out" grep -q "no answer within 2 s" "$work/stall.out"
# Broken plugin kernels: each fails its own row, the registered candidate
# beside it is still measured, the reports are written, exit 2.
g=$src/captures/data/flux_fc1_gelu_small.h5
for spec in "segv:crashed (SIGSEGV" "loop:used its 2 s of CPU time" "alloc:crashed (SIGABRT" \
            "oob:wrote past the end of its output" "under:wrote before the start of its output"; do
    v=${spec%%:*}
    expect 2 "plugin kernel 'bad' ${spec#*:}" "1 of 2 rows could not be measured" "fused_epilogue" \
        -- env ADM_PLUGIN_CPU=2 ADM_PLUGIN_TIMEOUT=20 ADM_PLUGIN_MEMORY=256M "$admit" run "$g" --reference eager \
           --candidate "$plug/adm_plugin_bad_$v.so:bad" --candidate fused_epilogue --json "$work/p_$v.json"
    grep -q '"verdict": "lossless"' "$work/p_$v.json" || { echo "FAIL: $v: the healthy candidate has no verdict"; fails=$((fails + 1)); }
done
# The kernel that takes memory without bound is stopped at its process's
# limit (256 MiB here), whatever the sanitizer's options: the run's largest
# process stays under 768 MiB (the kernel alone would hold 2 GiB; the CPU
# limit is raised so that only the memory limit can stop it).
kb=$(ADM_PLUGIN_CPU=60 ADM_PLUGIN_TIMEOUT=120 ADM_PLUGIN_MEMORY=256M peak_kb "$admit" run "$g" --reference eager \
     --candidate "$plug/adm_plugin_bad_alloc.so:bad")
check "alloc: peak RSS ${kb} KiB, expected under 768 MiB" [ "$kb" -lt 786432 ]
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
