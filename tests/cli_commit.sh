#!/bin/sh
# The commit a report names is the checkout's at build time, not at
# configure time: in a git checkout, run.commit of a JSON report equals
# `git rev-parse --short HEAD`, with "-dirty" exactly where tracked files
# differ from it (a build after the last edit is assumed: ctest does not
# rebuild); ADMIT_COMMIT overrides it. Skipped (77) outside a git checkout.
# Usage: cli_commit.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
head=$(GIT_OPTIONAL_LOCKS=0 git -C "$src" rev-parse --short HEAD 2>/dev/null) || {
    echo "cli_commit: $src is not a git checkout: skipped"; exit 77; }
changes=$(GIT_OPTIONAL_LOCKS=0 git -C "$src" status --porcelain --untracked-files=no) || exit 1
stamp=$head
[ -n "$changes" ] && stamp=$head-dirty
cap=$src/captures/data/row_sum_fp32.h5
commit_of() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"]["commit"])' "$1"; }
expect 0 -- env -u ADMIT_COMMIT "$admit" replay "$cap" --json "$work/r.json"
got=$(commit_of "$work/r.json")
check "the report names commit $got, the checkout is at $stamp (rebuild after a commit or an edit)" \
    [ "$got" = "$stamp" ]
expect 0 -- env ADMIT_COMMIT=override-1 "$admit" replay "$cap" --json "$work/o.json"
check "ADMIT_COMMIT overrides the stamp" [ "$(commit_of "$work/o.json")" = override-1 ]
finish cli_commit
