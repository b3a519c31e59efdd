#!/bin/sh
# A new user's first commands (issue 15): every command's --help is its
# own, `help` is a command, the report options (--json, --junit, --html,
# --strict) mean the same in replay, run and table, `version` says plainly
# when there is no GPU, and `oracle --gpu` without one is refused.
# Usage: cli_first_contact.sh ADMIT WORKDIR
set -u
admit=$1 work=$2
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
"$admit" capture synth -o "$work/rms.h5" --op rmsnorm --tokens 8 --channels 32 --with-outputs >/dev/null || exit 1

# each subcommand's help is its own (inspect and validate printed synth's)
for sub in inspect validate; do
    expect 0 "usage: admit-kernel capture $sub FILE" -- "$admit" capture $sub --help
    check "capture $sub --help does not print synth's options" sh -c "! '$admit' capture $sub --help | grep -q -e '--output FILE'"
    expect 0 "usage: admit-kernel capture $sub FILE" -- "$admit" help capture $sub
done
# help is a command: the usage, exit 0, no "unknown command"
expect 0 "commands:" "help [COMMAND]" -- "$admit" help
check "help is not an unknown command" sh -c "! '$admit' help 2>&1 | grep -q 'unknown command'"
expect 0 "usage: admit-kernel table FILE" -- "$admit" help table
expect 0 "usage: admit-kernel replay CAPTURE" -- "$admit" help replay
expect 2 "unknown command 'nosuch'" -- "$admit" help nosuch
expect 2 "unknown command 'nosuch'" -- "$admit" nosuch

# the report options: the same lines in every measuring command's help ...
for cmd in replay run table; do
    expect 0 "  --json FILE        write the full report as JSON" \
        "  --junit FILE       write a JUnit XML report (a failure per violated claim)" \
        "  --html DIR         write DIR/index.html" \
        "  --strict           exit 1 also when a verdict is stricter than its claim (promotable)" -- "$admit" $cmd --help
done
# ... and the same meaning: replay --strict and run --html were refused
expect 0 "bf16_stats             high      lossless" -- "$admit" replay "$work/rms.h5" --claim bf16_stats=high
expect 1 "stricter than the claim (promotable)" -- "$admit" replay "$work/rms.h5" --claim bf16_stats=high --strict \
    --json "$work/replay.json" --junit "$work/replay.xml" --html "$work/replay_html"
check "replay --strict writes its three reports" [ -s "$work/replay.json" -a -s "$work/replay.xml" -a -s "$work/replay_html/index.html" ]
expect 0 "fused_fp32             high      lossless" -- "$admit" run "$work/rms.h5" --reference eager --candidate fused_fp32 \
    --claim fused_fp32=high --html "$work/run_html"
check "run --html writes its page" [ -s "$work/run_html/index.html" ]
expect 1 "stricter than the claim (promotable)" -- "$admit" run "$work/rms.h5" --reference eager --candidate fused_fp32 \
    --claim fused_fp32=high --strict

# version: plainly whether a GPU is usable, never a CUDA error code's words
expect 0 "admit-kernel " "cuda: " -- "$admit" version
v=$("$admit" version 2>&1)
case $v in
*"insufficient"*) check "version says 'insufficient' ($v)" false; gpu=0 ;;
*"cuda: built, device"*) gpu=1 ;;
*"cuda: built, no GPU usable: "*|*"cuda: not built"*) gpu=0 ;;
*) check "version says neither a device nor no GPU ($v)" false; gpu=0 ;;
esac
expect 0 "usage: admit-kernel version" -- "$admit" version --help
# oracle --gpu without a GPU: refused, not a quiet run on the CPU
if [ "$gpu" = 0 ]; then
    expect 2 "oracle --gpu: " "without --gpu the oracle runs on the CPU" -- "$admit" oracle "$work/rms.h5" --gpu
else
    expect 0 "evaluated on" -- "$admit" oracle "$work/rms.h5" --gpu
fi
finish cli_first_contact
