#!/bin/sh
# ci/fuzz's judge of whose fault a finding is (ci/fuzz-classify) on stored
# reports (tests/data/fuzz_traces/VERDICT_*.txt, recorded under the root
# /src/admit; README.txt there says where each comes from): the first word
# it prints must be the file's VERDICT. Among them: a fault inside libhdf5
# under a sanitizer allocator frame (__asan::Allocator::Deallocate, the
# frame the one-frame filter took for admit's), under libc's memcpy, and in
# an unnamed libhdf5 frame; admit's own code faulting, calling memcpy that
# faults, tripping UBSan, leaking, unsymbolized, as a callback that
# libhdf5 calls, and handing libhdf5 a buffer too small (libhdf5's memcpy
# overruns memory admit allocated). Then the capture the smoke first met that way
# (tests/data/corrupt/ci_fuzz_capture_libhdf5_free.h5) is contained:
# `capture validate` exits 2 with a message naming the file.
# Usage: fuzz_classify.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
cls=$src/ci/fuzz-classify
traces=$src/tests/data/fuzz_traces
n=0
for f in "$traces"/*_*.txt; do
    want=$(basename "$f" | cut -d_ -f1)
    got=$("$cls" /src/admit "$f" 2>&1)
    check "$(basename "$f"): expected $want, got: $got" [ "${got%% *}" = "$want" ]
    n=$((n + 1))
done
check "at least 14 stored traces (found $n)" [ "$n" -ge 14 ]
# The root decides what is admit's: under another one, admit's frames are
# anybody's, and the sanitizer's frame above libhdf5 still is not admit's.
got=$("$cls" /elsewhere "$traces/admit_calls_memcpy_that_faults.txt")
check "another root: expected unknown, got: $got" [ "${got%% *}" = unknown ]
got=$("$cls" /src/admit/build-fuzz "$traces/libhdf5_asan_deallocate_on_top.txt")
check "the binary's own folder as the root: expected libhdf5, got: $got" [ "${got%% *}" = libhdf5 ]
expect 2 "usage" -- "$cls"
expect 2 "absolute" -- "$cls" relative/root "$traces/admit_leak.txt"

# The input the smoke first met (ASan: SEGV in H5MM_xfree under
# H5Lget_name_by_idx, called from capture_read.c): contained by the sandbox.
cp "$src/tests/data/corrupt/ci_fuzz_capture_libhdf5_free.h5" "$work/free.h5"
expect 2 "$work/free.h5" "group '/candidates'" -- "$admit" capture validate "$work/free.h5"
finish fuzz_classify
