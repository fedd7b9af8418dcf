#!/usr/bin/env bash
# The install check (ci/test-all.sh install-and-downstream, docs/build.md):
# installs a default build and then a secure one into one prefix, and after
# each builds and runs the downstream project (tests/downstream: the CMake
# package's targets, aliases, variables and mimalloc.o) and a pkg-config
# build against it. pkg-config's -I and -L must lie inside the prefix and
# exist (a .pc file that names the configured prefix instead, /usr/local,
# only works on a machine that has a leftover install there); the secure
# install must leave the default one's files as they were, except the files
# both share: headers, the package's config files and mimalloc.pc (which, as
# mimalloc's, is the variant installed last's); the default one installed
# again makes it the plain names' variant again (README's advice).
# usage: run.sh WORK DEFAULT_BUILD [SECURE_BUILD]
set -euo pipefail
work=$1
default_build=$2
secure_build=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
mkdir -p "$prefix"
prefix=$(realpath "$prefix")
# the versioned install directories (mimalloc-<major>.<minor>), as the build names them
ver=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=\([0-9]*\.[0-9]*\).*/\1/p' "$default_build/CMakeCache.txt")
[ -n "$ver" ] || ver=$(sed -n 's/^mimalloc-pprof_VERSION:STATIC=\([0-9]*\.[0-9]*\).*/\1/p' "$default_build/CMakeCache.txt")
fail() {
  echo "downstream: FAIL: $*" >&2
  exit 1
}

install_build() { # install_build BUILD NAME: install, keep the list of files
  cmake --install "$1" --prefix "$prefix" >"$work/install-$2.log"
  sed "s|^$prefix/||" "$1/install_manifest.txt" | sort >"$work/files-$2"
  echo "downstream: installed $2 ($(wc -l <"$work/files-$2") files)"
}

check_headers() { # every header of the source's include/ is installed
  local src h
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$default_build/CMakeCache.txt")
  for h in "$src"/include/*.h; do
    grep -qx "include/mimalloc-$ver/$(basename "$h")" "$work/files-default" || fail "header $(basename "$h") not installed"
  done
}

check_pc() { # check_pc MODULE LIBNAME VARIANT
  local mod=$1 lib=$2 variant=$3 flags f path
  flags=$(env -u PKG_CONFIG_PATH PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" pkg-config --cflags --libs "$mod") || fail "pkg-config $mod"
  echo "downstream: pkg-config --cflags --libs $mod: $flags"
  for f in $flags; do
    case $f in
      -I* | -L*) path=$(realpath -m "${f:2}") ;;
      *) continue ;;
    esac
    case $path/ in
      "$prefix"/*) ;;
      *) fail "pkg-config $mod: $f lies outside the install prefix $prefix" ;;
    esac
    [ -d "$path" ] || fail "pkg-config $mod: $f does not exist"
  done
  case " $flags " in
    *" -l$lib "*) ;;
    *) fail "pkg-config $mod does not link -l$lib" ;;
  esac
  # shellcheck disable=SC2086 # the flags are words
  cc -std=c11 -Wall -Wextra -Werror "$here/main.c" $flags -o "$work/pc-$mod"
  LD_LIBRARY_PATH=$prefix/lib "$work/pc-$mod" "$variant" "$prefix/lib/lib$lib.so"
}

check_cmake() { # check_cmake NAME VARIANT LIBNAME [cmake args]: the find_package project
  local name=$1 variant=$2 lib=$3 t
  shift 3
  cmake -S "$here" -B "$work/cmake-$name" -DCMAKE_PREFIX_PATH="$prefix" -DMI_EXPECT="$variant" "$@" \
    >"$work/cmake-$name.log" 2>&1 || { cat "$work/cmake-$name.log"; fail "find_package project ($name) does not configure"; }
  cmake --build "$work/cmake-$name" >>"$work/cmake-$name.log" 2>&1 ||
    { cat "$work/cmake-$name.log"; fail "find_package project ($name) does not build"; }
  for t in downstream-shared downstream-alias-shared; do
    "$work/cmake-$name/$t" "$variant" "$prefix/lib/lib$lib.so" || fail "$name: $t"
  done
  for t in downstream-static downstream-alias-static downstream-object; do
    "$work/cmake-$name/$t" "$variant" || fail "$name: $t"
  done
}

install_build "$default_build" default
check_headers
check_cmake default default mimalloc
check_pc mimalloc mimalloc default

if [ -n "$secure_build" ]; then
  (cd "$prefix" && xargs -d '\n' sha256sum <"$work/files-default") >"$work/sums-default"
  install_build "$secure_build" secure
  shared=$(comm -12 "$work/files-default" "$work/files-secure" |
    grep -Ev '^include/mimalloc-'"$ver"'/|^lib/cmake/mimalloc-'"$ver"'/mimalloc-config(-version)?\.cmake$|^lib/pkgconfig/mimalloc\.pc$' || true)
  [ -z "$shared" ] || fail "the secure install overwrites the default one's $shared"
  grep -v ' lib/pkgconfig/mimalloc\.pc$\| lib/cmake/' "$work/sums-default" | (cd "$prefix" && sha256sum --quiet -c -) ||
    fail "the default install's files changed"
  check_cmake secure secure mimalloc-secure
  check_cmake default-beside default mimalloc -DMIMALLOC_VARIANT=mimalloc
  check_pc mimalloc-secure mimalloc-secure secure
  check_pc mimalloc mimalloc-secure secure
  # README's way back to the default library under the plain names: install
  # the default build last; the secure one keeps its own names
  install_build "$default_build" default-last
  check_cmake default-last default mimalloc
  check_cmake secure-beside secure mimalloc-secure -DMIMALLOC_VARIANT=mimalloc-secure
  check_pc mimalloc mimalloc default
  check_pc mimalloc-secure mimalloc-secure secure
fi
echo "downstream: find_package and pkg-config builds ran"
