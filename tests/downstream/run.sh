#!/usr/bin/env bash
# Install a built tree into a prefix, then build and run a downstream project
# against it twice: with find_package(mimalloc) and with pkg-config.
set -euo pipefail
build=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/mimalloc.h"
libdir=$(dirname "$(find "$prefix" -name 'libmimalloc.so' | head -1)")
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH=$libdir "$work/cmake/downstream-shared"
"$work/cmake/downstream-static"
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c11 "$here/main.c" $(pkg-config --cflags --libs mimalloc) -o "$work/pc-main"
LD_LIBRARY_PATH=$libdir "$work/pc-main"
echo "downstream: find_package and pkg-config builds ran"
