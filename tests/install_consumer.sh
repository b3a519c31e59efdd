#!/bin/sh
# cmake --install into a scratch prefix, then build and run a consumer
# through find_package(admit) and through pkg-config.
set -eu
build=$1 work=$2 src=$3 sanitize=${4:-OFF}
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
echo "install_consumer: 2 passed, 0 failed"
