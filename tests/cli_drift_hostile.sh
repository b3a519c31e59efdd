#!/bin/sh
# admit-kernel drift against hostile inputs (issue 15, ../shared/repro/s3/drift_*.sh): each
# CASE ends with exit 2 and a message naming the file and the field, or a correct report,
# within bounded time and memory (peak RSS measured by /usr/bin/time, sandbox children
# included).
#   data_range_array  'data_range' as an array attribute (it overwrote the stack)
#   layout_array      'layout' as an array of strings (it overflowed the heap)
#   external_link     an arm that is, or goes through, an external link (read another file)
#   not_sandboxed     the repository's corrupt R7 raw-000081 as an arm (crashed admit)
#   frames_memory     frames listed many times over (limits were per file, not per arm)
#   many_arms         a spec of 100k arms, too many pairs, too much to compare
#   special_files     --spec and --history as a FIFO, /dev/zero, too large
#   spec_escapes      names that write control sequences or break the Markdown table;
#                     duplicate keys; the spec's version
#   html_all_or_nothing  an HTML report that cannot be written leaves no JSON, no
#                     history row, no images
# Usage: cli_drift_hostile.sh CASE ADMIT WORKDIR SRCDIR
set -u
case=$1 admit=$2 work=$3 src=$4
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
py=/usr/bin/python3
cd "$work" || exit 1
# peak KB LIMIT: the peak RSS of the last measured command (rss.txt) is below LIMIT KB
peak() {
    kb=$(tail -n 1 rss.txt)
    echo "peak RSS $kb KB (limit $1 KB)"
    checks=$((checks + 1))
    if [ "$kb" -ge "$1" ] 2>/dev/null || [ -z "$kb" ]; then
        echo "FAIL: peak RSS ${kb} KB, expected below $1 KB"; fails=$((fails + 1))
    fi
}
T="/usr/bin/time -f %M -o rss.txt timeout -s KILL 60"
# a.h5:/img, a random 64 x 64 uint8 image, and a.png, the same image
$py - <<'PY' || exit 1
import struct, zlib, h5py, numpy as np
img = np.random.default_rng(1).integers(0, 256, (64, 64), dtype=np.uint8)
with h5py.File('a.h5', 'w') as f: f['img'] = img
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
def png(path, a):
    h, w = a.shape
    raw = b''.join(b'\x00' + a[y].tobytes() for y in range(h))
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0))
                           + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
png('a.png', img)
PY

case $case in
data_range_array)
    $py - <<'PY' || exit 1
import h5py, numpy as np
img = h5py.File('a.h5', 'r')['img'][()]
with h5py.File('b.h5', 'w', libver='latest') as f:    # dense attribute storage: a big attribute
    f.create_dataset('img', data=img).attrs['data_range'] = np.full(100000, 255.0)
with h5py.File('c.h5', 'w') as f:
    f.create_dataset('img', data=img).attrs['data_range'] = np.full(64, 255.0)
with h5py.File('s.h5', 'w') as f:
    f.create_dataset('img', data=img).attrs['data_range'] = 'wide'
with h5py.File('ok.h5', 'w') as f:
    f.create_dataset('img', data=img).attrs['data_range'] = np.float32(255)
PY
    expect 2 "arm 'b'" "b.h5: dataset '/img': attribute 'data_range' must be one positive number" "not one element" -- \
        $T "$admit" drift --arm a=a.h5:/img --arm b=b.h5:/img --control a:b
    # in-process too: the attribute is checked before H5Aread, not contained by a sandbox
    ADM_SANDBOX=off expect 2 "b.h5: dataset '/img': attribute 'data_range'" -- \
        "$admit" drift --arm a=a.h5:/img --arm b=b.h5:/img --control a:b
    ADM_SANDBOX=off expect 2 "c.h5: dataset '/img': attribute 'data_range'" "not one element" -- \
        "$admit" drift --arm a=a.h5:/img --arm c=c.h5:/img --control a:c
    expect 2 "s.h5: dataset '/img': attribute 'data_range'" "not a number" -- \
        "$admit" drift --arm a=a.h5:/img --arm s=s.h5:/img --control a:s
    expect 0 "bit-identical" "verdict: pass" -- "$admit" drift --arm a=a.h5:/img --arm o=ok.h5:/img --control a:o
    ;;
layout_array)
    $py - <<'PY' || exit 1
import h5py, numpy as np
img = h5py.File('a.h5', 'r')['img'][()]
with h5py.File('b.h5', 'w', libver='latest') as f:
    f.create_dataset('img', data=img).attrs.create('layout', np.array([b'HW' * 8] * 20000, dtype='S16'))
with h5py.File('v.h5', 'w') as f:
    f.create_dataset('img', data=img).attrs['layout'] = ['HW', 'HW', 'HW']   # variable-length strings
with h5py.File('l.h5', 'w') as f:
    f.create_dataset('img', data=img).attrs.create('layout', np.bytes_(b'HW' * 40))
with h5py.File('ok.h5', 'w') as f:
    f.create_dataset('img', data=img).attrs['layout'] = 'HW'
PY
    expect 2 "arm 'b'" "b.h5: dataset '/img': attribute 'layout' must be one string" "not one element" -- \
        $T "$admit" drift --arm a=a.h5:/img --arm b=b.h5:/img --control a:b
    ADM_SANDBOX=off expect 2 "b.h5: dataset '/img': attribute 'layout'" -- \
        "$admit" drift --arm a=a.h5:/img --arm b=b.h5:/img --control a:b
    ADM_SANDBOX=off expect 2 "v.h5: dataset '/img': attribute 'layout'" "not one element" -- \
        "$admit" drift --arm a=a.h5:/img --arm v=v.h5:/img --control a:v
    expect 2 "l.h5: dataset '/img': attribute 'layout' is a string of 80 bytes" -- \
        "$admit" drift --arm a=a.h5:/img --arm l=l.h5:/img --control a:l
    expect 0 "bit-identical" -- "$admit" drift --arm a=a.h5:/img --arm o=ok.h5:/img --control a:o
    ;;
external_link)
    $py - <<'PY' || exit 1
import h5py, numpy as np
img = h5py.File('a.h5', 'r')['img'][()]
with h5py.File('victim_private.h5', 'w') as f:
    s = np.zeros((64, 64), np.uint8); s[0, :8] = np.frombuffer(b'SECRET!!', np.uint8); f['private'] = s
    f.create_group('g')['private'] = s
with h5py.File('b.h5', 'w') as f:                      # the dataset itself
    f['img'] = h5py.ExternalLink('victim_private.h5', '/private')
with h5py.File('c.h5', 'w') as f:                      # a soft link through an external one
    f['zz'] = h5py.ExternalLink('victim_private.h5', '/g')
    f['img'] = h5py.SoftLink('/zz/private')
with h5py.File('d.h5', 'w') as f:                      # a group on the way
    f['zz'] = h5py.ExternalLink('victim_private.h5', '/g')
with h5py.File('ok.h5', 'w') as f:                     # soft links within the file are fine
    f.create_group('g').create_dataset('real', data=img)
    f['g']['rel'] = h5py.SoftLink('real')
    f['abs'] = h5py.SoftLink('/g/rel')
    f['loop1'] = h5py.SoftLink('/loop2'); f['loop2'] = h5py.SoftLink('/loop1')
PY
    expect 2 "arm 'b'" "b.h5: dataset '/img': '/img' is an external link" "external links are not allowed" -- \
        "$admit" drift --arm a=a.h5:/img --arm b=b.h5:/img --control a:b --json out.json
    check "no JSON report of the foreign file" test ! -e out.json
    expect 2 "c.h5: dataset '/img': '/zz' is an external link" -- \
        "$admit" drift --arm a=a.h5:/img --arm c=c.h5:/img --control a:c
    ADM_SANDBOX=off expect 2 "c.h5: dataset '/img': '/zz' is an external link" -- \
        "$admit" drift --arm a=a.h5:/img --arm c=c.h5:/img --control a:c
    expect 2 "d.h5: dataset '/zz/private': '/zz' is an external link" -- \
        "$admit" drift --arm a=a.h5:/img --arm d=d.h5:/zz/private --control a:d
    expect 0 "bit-identical" -- "$admit" drift --arm a=a.h5:/img --arm o=ok.h5:/abs --control a:o
    expect 2 "ok.h5: dataset '/loop1': more than 16 soft links" -- \
        "$admit" drift --arm a=a.h5:/img --arm o=ok.h5:/loop1 --control a:o
    ;;
not_sandboxed)
    bad=$src/tests/data/corrupt/r7_000081_linear.h5
    expect 2 "arm 'b'" "r7_000081_linear.h5 is corrupt" "failed reading the link '/special/empty/inputs'" \
        "the reader process died" -- $T "$admit" drift --arm a=a.h5:/img --arm b=$bad:/special/empty/inputs/x --control a:b
    # in a spec, the message names the spec and the field
    printf '{"admit_drift_spec": 1, "arms": {"a": "a.h5:/img", "b": "%s:/special/empty/inputs/x"}, "control": [["a", "b"]]}' \
        "$bad" >s.json
    expect 2 "s.json: field 'arms.b': $bad is corrupt" -- "$admit" drift --spec s.json
    # a reader that stalls without using CPU is ended by the wall clock: the first reader process is
    # stopped (SIGSTOP) as soon as it appears; tried again when it finished before it could be stopped
    stalled=no
    for try in 1 2 3 4 5; do
        ADM_SANDBOX_CPU=600 ADM_SANDBOX_TIMEOUT=2 "$admit" drift --arm a=a.h5:/img --arm b=a.png --control a:b >stall.out 2>&1 &
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
    check "a stopped reader: the message says the wall clock ran out" grep -q "no answer within 2 s" stall.out
    ;;
frames_memory)
    # z.png: 4096 x 4096 black in 17 KB (the reproducer's 8192 x 8192, scaled down with the limit)
    $py - <<'PY' || exit 1
import struct, zlib, json
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
def black(path, w):
    raw = (b'\x00' + b'\x00' * w) * w
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, w, 8, 0, 0, 0, 0))
                           + chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))
black('z.png', 4096)
black('big.png', 8192)
json.dump({"admit_drift_spec": 1, "arms": {"a": ["big.png"] * 20, "b": ["big.png"] * 20},
           "control": [["a", "b"]]}, open('twenty.json', 'w'))
PY
    # 4 x 2^24 values (512 MiB as doubles) against a limit of 2^25: refused before a frame is decoded
    ADM_DRIFT_MAX_VALUES=32M expect 2 "arm 'b': 3 frames of 4096 x 4096 x 1 from z.png and on" \
        "bring the arms of this run to 67108864 values, above the limit of 33554432 (ADM_DRIFT_MAX_VALUES" -- \
        $T "$admit" drift --arm a=z.png --arm b=z.png,z.png,z.png --control a:b
    peak 65536
    ADM_DRIFT_MAX_VALUES=32M expect 2 "arm 'b': 2 frames" -- \
        "$admit" drift --arm a=z.png --arm b=z.png,z.png --control a:b
    # the reproducer's spec of 20 frames of 8192 x 8192 per arm (25 GB before) at the defaults: one arm is
    # past the limit of an arm
    expect 2 "twenty.json: field 'arms.a': 17 frames of 8192 x 8192 x 1" "2^30, the limit of an arm" -- \
        $T "$admit" drift --spec twenty.json
    peak 65536
    expect 2 "ADM_DRIFT_MAX_VALUES='lots'" -- env ADM_DRIFT_MAX_VALUES=lots "$admit" drift --arm a=a.png --arm b=a.png --control a:b
    ADM_DRIFT_MAX_VALUES=8192 expect 0 "bit-identical" -- "$admit" drift --arm a=a.png --arm b=a.png --control a:b
    ;;
many_arms)
    $py - <<'PY' || exit 1
import json
arms = {"a%d" % i: "a.png" for i in range(100000)}
json.dump({"admit_drift_spec": 1, "arms": arms, "control": [["a0", "a1"]]}, open('arms.json', 'w'))
json.dump({"admit_drift_spec": 1, "arms": {"a": "a.png", "b": "a.png"}, "control": [["a", "b"]] * 600,
           "compare": [["a", "b"]] * 600}, open('pairs.json', 'w'))
PY
    expect 2 "arms.json: field 'arms': 100000 arms, more than the 256 a run may have (ADM_DRIFT_MAX_ARMS)" -- \
        $T "$admit" drift --spec arms.json
    peak 131072
    expect 2 "pairs.json: field 'compare'" "ADM_DRIFT_MAX_PAIRS" -- "$admit" drift --spec pairs.json
    A=""; for i in $(seq 1 257); do A="$A --arm a$i=a.png"; done
    expect 2 "arm 'a257': more than 256 arms (ADM_DRIFT_MAX_ARMS)" -- "$admit" drift $A --control a1:a2
    # the values the pairs compare, before the first comparison
    ADM_DRIFT_MAX_COMPARED=4K expect 2 "pair 'b vs a'" "compare 8192 values" \
        "above the limit of 4096 (ADM_DRIFT_MAX_COMPARED)" -- \
        "$admit" drift --arm a=a.png --arm b=a.png --control a:b --control b:a
    ADM_DRIFT_MAX_COMPARED=4K expect 0 "bit-identical" -- "$admit" drift --arm a=a.png --arm b=a.png --control a:b
    ;;
special_files)
    mkfifo fifo
    expect 2 "fifo: a drift spec must be a regular file, this is a FIFO" -- $T "$admit" drift --spec fifo
    expect 2 "fifo: a drift history must be a regular file, this is a FIFO" -- \
        $T "$admit" drift --arm a=a.png --arm b=a.png --control a:b --history fifo
    expect 2 "/dev/zero: a drift history must be a regular file, this is a character device" -- \
        $T "$admit" drift --arm a=a.png --arm b=a.png --control a:b --history /dev/zero
    peak 65536
    expect 2 "a drift spec must be a regular file, this is a directory" -- "$admit" drift --spec .
    # past the documented sizes (sparse: nothing is read)
    truncate -s 17M big.json big.jsonl
    expect 2 "big.json: 17825792 bytes, more than the 16777216 bytes a drift spec may have" -- $T "$admit" drift --spec big.json
    expect 2 "big.jsonl: 17825792 bytes, more than the 16777216 bytes a drift history may have" -- \
        $T "$admit" drift --arm a=a.png --arm b=a.png --control a:b --history big.jsonl
    peak 65536
    expect 0 "verdict: pass" -- "$admit" drift --arm a=a.png --arm b=a.png --control a:b --history h.jsonl
    check "a history row" test "$(wc -l <h.jsonl)" = 1
    ;;
spec_escapes)
    $py - <<'PY' || exit 1
import json
json.dump({"admit_drift_spec": 1, "title": "T\x1b[2J", "arms": {"a": "a.h5:/img", "b": "a.h5:/img"},
           "compare": [{"name": "x\n\x1b[32mverdict: pass\x1b[0m\ny", "a": "a", "b": "b"},
                       {"name": "p|q\r\n| forged | row |", "a": "a", "b": "b"}]}, open('esc.json', 'w'))
open('dup.json', 'w').write('{"admit_drift_spec": 1, "arms": {"a": "a.h5:/img", "b": "a.h5:/img", "n": "a.png"},'
                            ' "compare": [["a", "n"]], "compare": [["a", "b"]]}')
open('duparm.json', 'w').write('{"admit_drift_spec": 1, "arms": {"a": "a.h5:/img", "a": "a.png"}, "control": [["a", "a"]]}')
open('v2.json', 'w').write('{"admit_drift_spec": 2, "arms": {"a": "a.png", "b": "a.png"}, "control": [["a", "b"]]}')
open('v0.json', 'w').write('{"arms": {"a": "a.png", "b": "a.png"}, "control": [["a", "b"]]}')
PY
    "$admit" drift --spec esc.json >term.txt 2>&1
    checks=$((checks + 1))
    if grep -q "$(printf '\033')" term.txt || [ "$(grep -c '^verdict' term.txt)" != 1 ] ||
        ! grep -qF 'T\x1b[2J' term.txt || ! grep -qF 'x\n\x1b[32mverdict: pass\x1b[0m\ny' term.txt; then
        echo "FAIL: the terminal report prints a name raw:"; cat -A term.txt | sed 's/^/    /'; fails=$((fails + 1))
    fi
    "$admit" drift --spec esc.json --markdown >md.txt 2>&1
    checks=$((checks + 1))
    # every table row has its 7 cells (the margin among them): 8 unescaped '|'
    rows=$(grep '^|' md.txt | sed 's/\\|//g' | awk -F'|' 'NF != 9' | wc -l)
    if grep -q "$(printf '\033')" md.txt || [ "$rows" != 0 ] || [ "$(grep -c '^|' md.txt)" != 4 ] ||
        ! grep -qF 'p\|q\\r\\n\| forged \| row \|' md.txt; then
        echo "FAIL: the Markdown report lets a name break the table:"; cat -A md.txt | sed 's/^/    /'; fails=$((fails + 1))
    fi
    expect 2 "dup.json" "duplicate object key" "compare" -- "$admit" drift --spec dup.json
    expect 2 "duparm.json" "duplicate object key" "\"a\"" -- "$admit" drift --spec duparm.json
    expect 2 "v2.json: field 'admit_drift_spec': version 2, written for a newer admit" -- "$admit" drift --spec v2.json
    expect 2 "v0.json: field 'admit_drift_spec': missing" -- "$admit" drift --spec v0.json
    expect 2 "arm 'a' is given twice" -- "$admit" drift --arm a=a.png --arm a=a.h5:/img --control a:a
    ;;
html_all_or_nothing)
    "$admit" drift --arm a=a.png --arm b=a.png --control a:b --history h.jsonl >/dev/null || exit 1
    cp h.jsonl h0.jsonl
    touch notadir
    # the folder cannot be made: nothing is written
    expect 2 "notadir: the report folder exists and is not a folder" -- \
        "$admit" drift --arm a=a.png --arm b=a.png --control a:b --json out.json --history h.jsonl --html notadir
    check "no JSON after a failed HTML report" test ! -e out.json
    check "no history row after a failed HTML report" cmp -s h.jsonl h0.jsonl
    expect 2 "nowhere/page: cannot create the report folder" -- \
        "$admit" drift --arm a=a.png --arm b=a.png --control a:b --json out.json --history h.jsonl --html nowhere/page
    check "no JSON after a failed HTML report" test ! -e out.json
    check "no history row after a failed HTML report" cmp -s h.jsonl h0.jsonl
    # an image cannot be written (a folder is in its way) after the JSON and the first image were
    mkdir -p page/arm-b.png
    expect 2 "page/arm-b.png: is a directory; a report replaces only a regular file" -- \
        "$admit" drift --arm a=a.png --arm b=a.png --control a:b --json out.json --history h.jsonl --html page
    check "no JSON after a failed HTML report" test ! -e out.json
    check "no history row after a failed HTML report" cmp -s h.jsonl h0.jsonl
    check "no images after a failed HTML report" test -z "$(find . -name '*.png' -type f | grep -v '^./a.png$')"
    check "no page after a failed HTML report" test ! -e page/index.html
    rmdir page/arm-b.png
    # a report's target that is not a regular file (--json /dev/null as root) is refused, not replaced
    mkfifo out.fifo
    expect 2 "out.fifo: is a FIFO; a report replaces only a regular file" -- \
        "$admit" drift --arm a=a.png --arm b=a.png --control a:b --json out.fifo --history h.jsonl
    check "the FIFO is still a FIFO" test -p out.fifo
    check "no history row after a failed JSON report" cmp -s h.jsonl h0.jsonl
    expect 0 "verdict: pass" -- "$admit" drift --arm a=a.png --arm b=a.png --control a:b --json out.json --history h.jsonl --html page
    check "all of them when it can" test -s out.json -a -s page/index.html -a -s page/arm-a.png -a -s page/diff-0.png
    check "tonight's row" test "$(wc -l <h.jsonl)" = 2
    ;;
*) echo "unknown case $case"; exit 2 ;;
esac
finish "cli_drift_hostile $case"
