#!/bin/sh
# The terminal report follows its terminal (issue 18): the width from
# COLUMNS, else the TTY's; names never cut (they were cut at 30
# characters: "sana_video_bf16_linear_attenti"); reasons wrapped at spaces
# within the width, a number never parted from its unit; colour only on a
# TTY, never with NO_COLOR, red only for a violated claim; the summary line
# last; drift's progress on a TTY as table's. A TTY is util-linux's
# `script`. Two entries of fusions/dit.json: seconds.
# Usage: cli_terminal.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
. "$(dirname "$0")/cli_lib.sh"
rm -rf "$work" && mkdir -p "$work" || exit 1
/usr/bin/python3 - "$src" "$work" <<'PY' || exit 1
import json, sys
src, work = sys.argv[1], sys.argv[2]
t = json.load(open(src + "/fusions/dit.json"))
t["fusions"] = [e for e in t["fusions"] if e["name"] in ("sana_video_bf16_linear_attention", "splitk_fp32_partials")]
for e in t["fusions"]:
    e["captures"] = [c.replace("../captures", src + "/captures") for c in e["captures"]]
json.dump(t, open(work + "/two.json", "w"), indent=1)
for e in t["fusions"]:
    if e["declared"] == "high":
        e["declared"] = "lossless"
json.dump(t, open(work + "/lying.json", "w"), indent=1)
PY
long=sana_video_bf16_linear_attention
sgr=$(printf '\033\\[[0-9;]*m')
red=$(printf '\033\\[1;31m')

# 80 columns: every line fits, names whole on a line of their own
expect 0 "summary: 2 entries: 1 holds, 1 promotable, 0 unsafe, 0 errors. Every" -- env COLUMNS=80 "$admit" table "$work/two.json"
printf "%s\n" "$out" > "$work/80.txt"
check "80 columns: no line is longer" sh -c "! awk 'length(\$0) > 80' '$work/80.txt' | grep -q ."
check "80 columns: the long name is whole" grep -q "^$long  bf16_gemm\$" "$work/80.txt"
check "80 columns: no unit starts a line apart from its number" sh -c "! grep -Eq '^ +(x|D|dB|ulps?)([ ,.;:)]|\$)' '$work/80.txt'"
# 200 columns: one line a row, the claim beside the name
expect 0 "" -- env COLUMNS=200 "$admit" table "$work/two.json"
printf "%s\n" "$out" > "$work/200.txt"
check "200 columns: a row is one line" grep -Eq "^$long +bf16_gemm +high +high +holds " "$work/200.txt"
check "200 columns: no line is longer" sh -c "! awk 'length(\$0) > 200' '$work/200.txt' | grep -q ."
check "200 columns: reasons use the width" sh -c "awk 'length(\$0) > 150' '$work/200.txt' | grep -q ."
check "a pipe gets no colour" sh -c "! grep -q '$sgr' '$work/80.txt' '$work/200.txt'"

# A TTY: its own width (stty cols 130, COLUMNS unset: past the default 120), colour, and none
# with NO_COLOR; red only for the violated claims
script -qec "stty cols 130; env -u COLUMNS -u NO_COLOR '$admit' table '$work/two.json'" /dev/null > "$work/tty.txt" 2>&1
tr -d '\r' < "$work/tty.txt" | sed "s/$sgr//g" > "$work/tty.plain"
check "a TTY of 130 columns: no line is longer" sh -c "! awk 'length(\$0) > 130' '$work/tty.plain' | grep -q ."
check "a TTY of 130 columns: reasons use its width" sh -c "awk 'length(\$0) > 120' '$work/tty.plain' | grep -q ."
check "a TTY of 130 columns: rows are one line" grep -Eq "^$long +bf16_gemm +high +high +holds " "$work/tty.plain"
check "a TTY gets colour" grep -q "$sgr" "$work/tty.txt"
check "a table whose claims hold has no red" sh -c "! grep -q '$red' '$work/tty.txt'"
script -qec "env -u COLUMNS NO_COLOR=1 '$admit' table '$work/two.json'" /dev/null > "$work/nocolor.txt" 2>&1
check "NO_COLOR: no colour on a TTY" sh -c "! grep -q '$sgr' '$work/nocolor.txt'"
script -qec "env -u COLUMNS -u NO_COLOR '$admit' table '$work/lying.json'" /dev/null > "$work/lying.txt" 2>&1
check "an unsafe claim is red" grep -q "${red}unsafe" "$work/lying.txt"
check "the summary of a violated table is red" grep -q "${red}summary: .* 1 claim is violated" "$work/lying.txt"

# drift shows its progress on a TTY, as table does
script -qec "'$admit' drift --toy --grid 8 --blocks 2 --steps 2 --depth 2 --band-tolerance 1" /dev/null > "$work/drift.txt" 2>&1
check "drift shows its progress on a TTY" grep -q '\[1/15\] arm exact_tp1' "$work/drift.txt"
check "drift's progress counts the comparisons" grep -q '\[6/6\] the high tier' "$work/drift.txt"
expect 0 "" -- "$admit" drift --toy --grid 8 --blocks 2 --steps 2 --depth 2 --band-tolerance 1
check "no progress through a pipe" sh -c "! printf '%s' \"\$1\" | grep -q '\\[1/'" - "$out"
finish cli_terminal
