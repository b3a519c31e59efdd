#!/bin/sh
# admit-kernel oracle: on a bundled capture, with -o, refinement, and errors.
# Usage: cli_oracle.sh ADMIT WORKDIR SRCDIR
set -u
admit=$1 work=$2 src=$3
rm -rf "$work" && mkdir -p "$work" || exit 1
. "$(dirname "$0")/cli_lib.sh"
cap=$src/captures/data/flux_fc1_gelu_small.h5
expect 0 "op             linear+gelu" "output         [96, 256] fp64" "MPFR refined   0 element(s)" "wrote          $work/o.h5" \
    "bounds         assuming libm's exp within 1 ulp" \
    -- "$admit" oracle "$cap" -o "$work/o.h5"
expect 0 "oracle (admit, certified)" "oracle_bound" -- "$admit" capture inspect "$work/o.h5"
expect 0 "valid admit-capture v1" -- "$admit" capture validate "$work/o.h5"
# -o writes without a filter, contiguous (at the disk's speed, issue 17)
check "oracle -o: /oracle and /oracle_bound contiguous, unfiltered" /usr/bin/python3 -c "
import h5py, sys
f = h5py.File(sys.argv[1], 'r')
sys.exit(any(f[d].chunks is not None or f[d].compression is not None for d in ('oracle', 'oracle_bound')))" "$work/o.h5"
# A scale below the fp64 bounds: MPFR refines, and says how many.
expect 0 "resolve scale  1e-10 (given)" "MPFR refined   " -- "$admit" oracle "$src/captures/data/dit_rmsnorm.h5" --resolve 1e-10 --sharpness 1e-3
expect 0 "bounds         proven" -- "$admit" oracle "$src/captures/data/dit_gated_residual.h5"
out=$("$admit" oracle "$src/captures/data/dit_gated_residual.h5" --resolve 1e-12 2>&1)
case $out in *"MPFR refined   0 "*) echo "FAIL: nothing refined at 1e-12: $out"; fails=$((fails + 1));; esac
checks=$((checks + 1))
# No double resolves 1e-300: refused, exit 2, nothing written.
expect 2 "cannot be resolved" -- "$admit" oracle "$cap" --resolve 1e-300 -o "$work/never.h5"
[ -e "$work/never.h5" ] && { echo "FAIL: a refused oracle wrote its output"; fails=$((fails + 1)); }
# The MPFR work a capture can demand is bounded (R8): a 20 KB capture whose
# every element needs MPFR over 4096 terms is refused before the work, with
# exit 2 and why; below the budget it is refined; the budget is an option.
/usr/bin/python3 "$(dirname "$0")/mpfr_amplify.py" "$work/amp64.h5" 64 64 4096 &&
/usr/bin/python3 "$(dirname "$0")/mpfr_amplify.py" "$work/amp16.h5" 16 16 4096 || { echo "FAIL: mpfr_amplify.py"; fails=$((fails + 1)); }
expect 2 "oracle linear: MPFR budget hit: 4096 of 4096 elements" "budget of 16777216 terms" "none is given" \
    -- timeout 60 "$admit" oracle "$work/amp64.h5"
expect 2 "MPFR budget hit" -- timeout 60 "$admit" replay "$work/amp64.h5" --json "$work/never.json"
# A replay carries on past a capture it cannot judge: its row is an error
# that says the budget was hit (no verdict), and the report says so.
grep -q '"verdict": "error"' "$work/never.json" && grep -q 'MPFR budget hit' "$work/never.json" ||
    { echo "FAIL: the over-budget replay's report does not mark the row as an error with the budget"; fails=$((fails + 1)); }
grep -q '"verdict": "\(lossless\|high\|exact\)"' "$work/never.json" &&
    { echo "FAIL: an over-budget replay gave a verdict"; fails=$((fails + 1)); }
checks=$((checks + 2))
expect 0 "MPFR refined   256 element(s)" -- "$admit" oracle "$work/amp16.h5"
expect 2 "MPFR budget hit: 256 of 256 elements" "budget of 100000 terms" -- "$admit" oracle "$work/amp16.h5" --mpfr-budget 100000
expect 2 "MPFR budget hit" -- env ADM_MPFR_BUDGET=100000 "$admit" replay "$work/amp16.h5"
expect 0 "MPFR refined   256 element(s)" -- "$admit" oracle "$work/amp16.h5" --mpfr-budget 0
expect 2 "--mpfr-budget: expected a number of terms >= 0" -- "$admit" oracle "$work/amp16.h5" --mpfr-budget -1
expect 2 "expected a CAPTURE" -- "$admit" oracle
expect 2 "--resolve: expected a number >= 0" -- "$admit" oracle "$cap" --resolve -1
expect 2 "--mpfr-bits: expected 64 to 65536" -- "$admit" oracle "$cap" --mpfr-bits 8
expect 2 "unknown option '--frob'" -- "$admit" oracle "$cap" --frob 1
expect 2 "not an HDF5 file" -- "$admit" oracle "$src/README.md"
# getopt_long: --opt=V and --opt V alike, -o V, `--` ends the options, -h on
# the subcommand, a missing value named.
expect 0 "resolve scale  1e-10 (given)" "wrote          $work/eq.h5" -- "$admit" oracle --resolve=1e-10 --output="$work/eq.h5" "$src/captures/data/dit_rmsnorm.h5"
expect 0 "wrote          $work/short.h5" -- "$admit" oracle -o "$work/short.h5" -- "$src/captures/data/dit_rmsnorm.h5"
expect 2 "cannot open" -- "$admit" oracle -- --resolve
expect 2 "--sharpness: expected a number > 0, got '0'" -- "$admit" oracle "$cap" --sharpness=0
expect 0 "usage: admit-kernel oracle" -- "$admit" oracle -h
expect 0 "usage: admit-kernel oracle" -- "$admit" oracle "$cap" --help
expect 2 "oracle: option '--threads' needs a value" -- "$admit" oracle "$cap" --threads
expect 2 "oracle: unknown option '-x'" -- "$admit" oracle -x "$cap"
expect 2 "expected one CAPTURE, got" -- "$admit" oracle "$cap" "$cap"
finish cli_oracle
