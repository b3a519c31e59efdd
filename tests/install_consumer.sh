#!/bin/sh
# cmake --install into a scratch prefix, then build and run a consumer
# through find_package(admit) and through pkg-config.
set -eu
build=$1 work=$2 src=$3 sanitize=${4:-OFF} python=${5:-}
# An instrumented libadmit needs an instrumented program in front of it.
flags=""
[ "$sanitize" != OFF ] && [ -n "$sanitize" ] && flags="-fsanitize=$sanitize"
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(find "$work/prefix" -name 'libadmit.so*' -printf '%h\n' | head -1)
cmake -S "$src" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_C_FLAGS="$flags" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake/consumer"
PKG_CONFIG_PATH="$libdir/pkgconfig" cc -std=c11 $flags "$src/main.c" -o "$work/pc_consumer" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --define-variable=prefix="$work/prefix" --cflags --libs admit)
LD_LIBRARY_PATH="$libdir" "$work/pc_consumer"
test -x "$work/prefix/bin/admit-kernel"
test -f "$work/prefix/share/admit/admit_capture.py"
# the installed admit-kernel finds the toy's fusion table in share/admit,
# whatever the working folder
table=$(cd "$work/prefix" && pwd -P)/share/admit/fusions/toy.json
out=$(cd "$work" && COLUMNS=1000 LD_LIBRARY_PATH="$libdir" "$work/prefix/bin/admit-kernel" drift --toy --grid 8 --blocks 2 \
      --steps 2 --depth 2 --band-tolerance 1 2>&1) || { printf "FAIL: installed drift --toy\n%s\n" "$out"; exit 1; }
case $out in
*"Tiers from $table"*) ;;
*) printf "FAIL: the installed toy did not read %s\n%s\n" "$table" "$out"; exit 1 ;;
esac
passed=2
# the Python package, installed in the prefix's site-packages beside the
# library, loads the installed library from any working folder
if [ -n "$python" ]; then
    init=$(find "$work/prefix" -path '*/admit/__init__.py' | head -1)
    [ -n "$init" ] || { echo "FAIL: the Python package was not installed"; exit 1; }
    site=$(dirname "$(dirname "$init")")
    preload=""
    [ "$sanitize" != OFF ] && [ -n "$sanitize" ] && preload=$(cc -print-file-name=libasan.so)
    out=$(cd "$work" && env -u ADMIT_LIBRARY PYTHONPATH="$site" LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 \
          PYTHONDONTWRITEBYTECODE=1 "$python" -c '
import sys, numpy as np, admit
print(admit.__file__, admit.library_path)
r = np.random.default_rng(1); x = r.standard_normal((32, 16), np.float32); w = r.standard_normal((8, 16), np.float32)
y = x @ w.T
v = admit.judge("linear", inputs={"x": x, "w": w}, reference=y, candidates={"c": y})
assert v["c"].tier == "exact", v
' 2>&1) || { printf "FAIL: the installed Python package\n%s\n" "$out"; exit 1; }
    case $out in
    "$site/admit/__init__.py $libdir/libadmit.so.0"*) ;;
    *) printf "FAIL: the installed package is not the one loaded, or did not load the installed library (%s)\n%s\n" \
              "$libdir" "$out"; exit 1 ;;
    esac
    passed=3
fi
echo "install_consumer: $passed passed, 0 failed"
