# Shared by the CLI tests: expect RC NEEDLE... -- COMMAND runs COMMAND and
# checks its exit code and that its output holds every NEEDLE; counts in
# $checks and $fails; finish NAME prints the closing line and exits.
checks=0
fails=0
# the reports follow the terminal: the tests' output is a pipe of 120
# columns, uncoloured, whatever the shell that started ctest exported
COLUMNS=120
export COLUMNS
unset NO_COLOR
expect() {
    want=$1; shift
    needles=""
    while [ "$1" != "--" ]; do needles="$needles
$1"; shift; done
    shift
    out=$("$@" 2>&1); rc=$?
    checks=$((checks + 1))
    if [ "$rc" != "$want" ]; then
        echo "FAIL: exit $rc, expected $want: $*"; printf "%s\n" "$out" | sed 's/^/    /'; fails=$((fails + 1)); return
    fi
    printf "%s\n" "$needles" | while IFS= read -r n; do
        [ -z "$n" ] && continue
        case $out in *"$n"*) ;; *) printf "FAIL: output lacks \"%s\": %s\n" "$n" "$*"; printf "%s\n" "$out" | sed 's/^/    /'; exit 1;; esac
    done || fails=$((fails + 1))
}
# check DESCRIPTION COMMAND...: a plain assertion
check() {
    what=$1; shift
    checks=$((checks + 1))
    "$@" || { echo "FAIL: $what"; fails=$((fails + 1)); }
}
finish() {
    leftover=$(find "$work" -name '*.tmp.*' | head -1)
    [ -n "$leftover" ] && { echo "FAIL: temporary file left: $leftover"; fails=$((fails + 1)); }
    echo "$1: $((checks - fails)) passed, $fails failed"
    [ "$fails" = 0 ]
    exit $?
}
