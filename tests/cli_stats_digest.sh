#!/bin/sh
# The gates' numbers on every bundled capture keep their bits: a digest of
# replay's JSON results (every statistic printed to round-trip) over
# captures/data and captures/real, against tests/data/stats_digest.txt.
# A change of the statistics made on purpose updates that file (run with
# UPDATE=1) in the same commit, saying why. Usage: cli_stats_digest.sh
# ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
cd "$src" || exit 1
"$admit" replay captures/data/*.h5 captures/real/*.h5 --json "$work/all.json" > "$work/all.txt" 2>&1
rc=$?
check "replay of the bundled captures exits 0 (got $rc)" test "$rc" = 0
got=$(/usr/bin/python3 -c '
import hashlib, json, sys
r = json.load(open(sys.argv[1]))
print(hashlib.sha256(json.dumps(r["results"], sort_keys=True).encode()).hexdigest())' "$work/all.json")
if [ "${UPDATE:-0}" = 1 ]; then echo "$got" > "$src/tests/data/stats_digest.txt"; fi
want=$(cat "$src/tests/data/stats_digest.txt")
check "the digest of the bundled captures' statistics is $want (got $got)" test "$got" = "$want"
finish cli_stats_digest
