#!/bin/sh
# Mutation tests of the gates (issue 16): each gate statistic, forced to
# pass in a build of the gates made for it (ADM_MUTATION: the admit_mutant
# library, never libadmit), must turn red the Check case that targets it;
# every case passes on the real gates first. A statistic that can be
# forced to pass without a test noticing is a test that cannot fail.
# Every name the gates' sources can mutate must be in the table below.
# Usage: mutation.sh CHECK_HARNESS_MUTANT SRCDIR
set -u
exe=$1 src=$2
fails=0

# name: the Check case that must catch it
table="mean:Bias sign:Bias gain:Bias
channel_mean:Bias channel_sign:Bias channel_gain:Bias row_mean:Bias row_sign:Bias row_gain:Bias group_ulps:Bias
rms:Faults max:Faults ulp:Reassociation flip:Faults
special:Special special_case:Special strides:Special
static_precision:Faults static_ulps:Special static_stable:Special
exact:Admit exact_case:Special evidence:Pooling power:Pooling"

# every mutation point in the sources is in the table (the group
# statistics' names are made from a scope and a kind)
names=$(grep -ho 'ADM_MUTANT("[a-z_]*")' "$src/harness/gates.c" "$src/harness/evidence.c" | sed 's/.*("\(.*\)")/\1/')
names="$names mean sign gain channel_mean channel_sign channel_gain row_mean row_sign row_gain"
for n in $names; do
    case " $(echo "$table" | tr '\n' ' ') " in
    *" $n:"*) ;;
    *) echo "FAIL: mutation point '$n' has no test in tests/mutation.sh"; fails=$((fails + 1)) ;;
    esac
done

cases=$(echo "$table" | tr ' ' '\n' | sed 's/.*://' | sort -u)
for c in $cases; do
    if ! CK_RUN_CASE=$c CK_DEFAULT_TIMEOUT=600 "$exe" >/dev/null 2>&1; then
        echo "FAIL: case $c fails on the real gates"
        fails=$((fails + 1))
    fi
done
killed=0 total=0
for entry in $table; do
    m=${entry%%:*} c=${entry#*:}
    total=$((total + 1))
    if ADM_MUTANT=$m CK_RUN_CASE=$c CK_DEFAULT_TIMEOUT=600 "$exe" >"${TMPDIR:-/tmp}/mutation.$$.log" 2>&1; then
        echo "FAIL: mutant '$m' (forced to pass) survives case $c"
        fails=$((fails + 1))
    else
        killed=$((killed + 1))
        echo "killed: $m by case $c: $(grep -m1 -E ':F:|:E:' "${TMPDIR:-/tmp}/mutation.$$.log" | sed 's/.*:[FE]:[^:]*:\([^:]*\):[0-9]*: */\1: /' | cut -c1-120)"
    fi
done
rm -f "${TMPDIR:-/tmp}/mutation.$$.log"
echo "mutation: $killed of $total mutants killed"
[ "$fails" = 0 ]
