#!/bin/sh
# admit-kernel capture on good and malformed files: exit codes, messages,
# and nothing written on failure. Usage: cli_capture.sh ADMIT MAKE_BAD WORKDIR SRCDIR
set -u
admit=$1 make_bad=$2 work=$3 src=$4
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"


"$make_bad" "$work" > "$work/cases.tsv" || { echo "FAIL: make_bad_captures"; exit 1; }
tab=$(printf '\t')
while IFS="$tab" read -r file n1 n2; do
    expect 2 "admit-kernel: $work/$file" "$n1" "$n2" -- "$admit" capture validate "$work/$file"
done < "$work/cases.tsv"

# Not a regular file (R2): refused at once, never a blocking open.
mkfifo "$work/fifo.h5"
expect 2 "fifo.h5: the capture must be a regular file, this is a FIFO" -- timeout 20 "$admit" capture validate "$work/fifo.h5"
expect 2 "fifo.h5: the capture must be a regular file, this is a FIFO" -- timeout 20 "$admit" capture inspect "$work/fifo.h5"
expect 2 "fifo.h5: the capture must be a regular file, this is a FIFO" -- timeout 20 "$admit" oracle "$work/fifo.h5"
expect 2 "fifo.h5: the capture must be a regular file, this is a FIFO" -- timeout 20 "$admit" replay "$work/fifo.h5"
expect 2 "fifo.h5: the capture must be a regular file, this is a FIFO" -- timeout 20 "$admit" run "$work/fifo.h5" \
    --reference eager --candidate fused_epilogue
expect 2 "/dev/zero: the capture must be a regular file, this is a character device" -- timeout 20 "$admit" capture validate /dev/zero
expect 2 "the capture must be a regular file, this is a directory" -- "$admit" capture validate "$work"
# Control characters from a path are escaped in the one-line message (R11).
expect 2 'a\nb\x01.h5: cannot open' -- "$admit" capture validate "$work/a
b$(printf '\001').h5"
[ "$("$admit" capture validate "$work/a
b.h5" 2>&1 | wc -l)" = 1 ] || { echo "FAIL: a newline in a path splits the message"; fails=$((fails + 1)); }
checks=$((checks + 1))

# One bad file among good ones: the good ones are still reported, exit 2.
expect 2 "$work/base.h5: valid" "$work/shape_w.h5" -- "$admit" capture validate "$work/base.h5" "$work/shape_w.h5"
expect 0 "op       linear+gelu" "inputs/x" "special/nan/reference" -- "$admit" capture inspect "$work/base.h5"

# Usage errors.
expect 2 "usage" -- "$admit"
expect 2 "unknown command 'frobnicate'" -- "$admit" frobnicate
expect 2 "unknown subcommand 'explode'" -- "$admit" capture explode
expect 2 "expected one FILE" -- "$admit" capture inspect
expect 2 "-o FILE is required" -- "$admit" capture synth
expect 2 "--tokens: expected 1 to 2^24" -- "$admit" capture synth -o "$work/s.h5" --tokens 0
expect 2 "--tokens: expected 1 to 2^24" -- "$admit" capture synth -o "$work/s.h5" --tokens 12abc
expect 2 "needs a value" -- "$admit" capture synth -o "$work/s.h5" --seed
expect 2 "op 'bogus' is not in the catalog" -- "$admit" capture synth -o "$work/s.h5" --op bogus
expect 2 "--with-outputs: op 'matmul' has no registered implementation" -- "$admit" capture synth -o "$work/s.h5" --op matmul --tokens 4 --channels 8 --with-outputs
expect 2 "'approximate' must be" -- "$admit" capture synth -o "$work/s.h5" --params '{"approximate":"x"}'
expect 2 "not valid JSON" -- "$admit" capture synth -o "$work/s.h5" --params '{'
expect 2 "unknown dtype 'int4'" -- "$admit" capture synth -o "$work/s.h5" --dtype int4
expect 2 "outside [1, 1e4]" -- "$admit" capture synth -o "$work/s.h5" --max-over-p99 0.5 --tokens 4 --channels 8
[ -e "$work/s.h5" ] && { echo "FAIL: a refused synth left $work/s.h5"; fails=$((fails + 1)); }
expect 2 "cannot create a temporary file" -- "$admit" capture synth -o /nonexistent-admit-dir/s.h5 --tokens 4 --channels 8

# A good synth, then inspect and validate it.
expect 0 "wrote $work/s.h5" -- "$admit" capture synth -o "$work/s.h5" --tokens 64 --channels 128 --out-features 32 --seed 5 --model FLUX.1-dev --layer ff --step 3
expect 0 "valid admit-capture v1, op linear+gelu, 3 input(s)" -- "$admit" capture validate "$work/s.h5"
expect 0 "model    FLUX.1-dev" "step     3" "inputs/w" "[32, 128]" -- "$admit" capture inspect "$work/s.h5"
expect 0 "wrote" -- "$admit" capture synth -o "$work/g.h5" --op gelu --tokens 16 --channels 32
expect 0 "op gelu, 1 input(s)" -- "$admit" capture validate "$work/g.h5"
expect 0 "wrote" -- "$admit" capture synth -o "$work/a.h5" --op attention --params '{"causal":true}' --tokens 16 --channels 8
expect 0 "op attention, 3 input(s)" -- "$admit" capture validate "$work/a.h5"
expect 0 "wrote" -- "$admit" capture synth -o "$work/gn.h5" --op groupnorm --params '{"groups":4}' --tokens 16 --channels 8 --with-outputs
# --backend picks whose implementations --with-outputs runs (issue 17)
expect 2 "capture synth: --backend: expected cpu or cuda, got 'tpu'" -- "$admit" capture synth -o "$work/b.h5" --backend tpu --with-outputs
expect 0 "wrote" -- "$admit" capture synth -o "$work/bcpu.h5" --tokens 4 --channels 16 --out-features 8 --with-outputs --backend cpu
if ! "$admit" version 2>&1 | grep -q 'device .*(sm_'; then
    expect 2 "capture synth: --backend cuda: " -- "$admit" capture synth -o "$work/bcuda.h5" --tokens 4 --channels 16 --out-features 8 --with-outputs --backend cuda
    [ -e "$work/bcuda.h5" ] && { echo "FAIL: a refused --backend cuda wrote a capture"; fails=$((fails + 1)); }
fi
expect 0 "op groupnorm, 3 input(s), reference, 1 candidate(s), 2 special case(s)" -- "$admit" capture validate "$work/gn.h5"
# The special cases hold the first 8 rows of x and leave w and the bias to
# /inputs (version 2): the weights are stored once, and replay reads it.
expect 0 "wrote" -- "$admit" capture synth -o "$work/lo.h5" --tokens 64 --channels 128 --out-features 32 --with-outputs
expect 0 "valid admit-capture v2, op linear+gelu, 3 input(s), reference, 6 candidate(s), 2 special case(s)" -- \
    "$admit" capture validate "$work/lo.h5"
expect 0 "special/nan_row/inputs/x     bf16      [8, 128]" "special/nan_row/reference    bf16      [8, 32]" \
    "special/empty/inputs/x       bf16      [0, 128]" -- "$admit" capture inspect "$work/lo.h5"
out=$("$admit" capture inspect "$work/lo.h5" 2>&1)
case $out in *"special/nan_row/inputs/w"*|*"special/empty/inputs/bias"*)
    echo "FAIL: a special case stores the weights again"; fails=$((fails + 1));; esac
expect 0 "fused_epilogue" "lossless" -- "$admit" replay "$work/lo.h5"

# getopt_long: --opt=V and --opt V alike, `--` ends the options, -h on each
# subcommand.
expect 0 "wrote $work/eq.h5" -- "$admit" capture synth --output="$work/eq.h5" --tokens=16 --channels 32 --op=gelu --seed=2
expect 0 "op gelu, 1 input(s)" -- "$admit" capture validate -- "$work/eq.h5"
expect 0 "inputs/x" -- "$admit" capture inspect -- "$work/eq.h5"
expect 2 "capture synth: unexpected argument 'extra'" -- "$admit" capture synth -o "$work/never.h5" --tokens 4 --channels 8 -- extra
[ -e "$work/never.h5" ] && { echo "FAIL: a refused synth wrote $work/never.h5"; fails=$((fails + 1)); }
expect 2 "--gzip: expected 0 to 9, got '10'" -- "$admit" capture synth -o "$work/never.h5" --gzip=10
expect 2 "capture synth: option '--op' needs a value" -- "$admit" capture synth -o "$work/never.h5" --op
expect 2 "capture synth: unknown option '--frob'" -- "$admit" capture synth -o "$work/never.h5" --frob=1
expect 2 "--tokens: expected 1 to 2^24, got ''" -- "$admit" capture synth -o "$work/never.h5" --tokens=
expect 2 "$work/-odd.h5: cannot open" -- "$admit" capture validate -- "$work/-odd.h5"
expect 2 "capture validate: unknown option '--frob'" -- "$admit" capture validate --frob "$work/eq.h5"
expect 2 "capture inspect: unknown option '-x'" -- "$admit" capture inspect -x "$work/eq.h5"
for sub in synth inspect validate; do
    expect 0 "usage: admit-kernel capture $sub" -- "$admit" capture $sub -h
    expect 0 "usage: admit-kernel capture $sub" -- "$admit" capture $sub --help
done
expect 0 "usage: admit-kernel capture synth" -- "$admit" capture -h

# The bundled captures are valid.
for f in "$src"/captures/data/*.h5; do
    [ -e "$f" ] || continue
    expect 0 "valid admit-capture" -- "$admit" capture validate "$f"
done

finish cli_capture
