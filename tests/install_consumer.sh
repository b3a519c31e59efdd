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
echo "install_consumer: 1 passed, 0 failed"
