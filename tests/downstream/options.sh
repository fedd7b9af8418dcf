#!/usr/bin/env bash
# mimalloc's MI_ CMake options (docs/build.md's table), checked at configure
# time: each rejected one stops the configuration with its message; the
# variants are named as mimalloc names them; the assertion switches reach
# the MI_DEBUG ladder; the options that only set a define or a flag reach the
# library's compile lines. Then two builds: MI_INSTALL_TOPLEVEL's install
# layout, used by the downstream project; and MI_SHOW_ERRORS with MI_NO_THP,
# whose option defaults a program reads back.
# usage: options.sh SOURCE WORK
set -euo pipefail
src=$(realpath "$1")
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
n=0
fail() {
  echo "options: FAIL: $*" >&2
  exit 1
}
configure() { # configure NAME [cmake args]: into $work/NAME, log in $work/NAME.log
  local name=$1
  shift
  n=$((n + 1))
  CC=gcc cmake -S "$src" -B "$work/$name" -DMI_BUILD_TESTS=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON "$@" >"$work/$name.log" 2>&1
}
rejected() { # rejected NAME REGEX [cmake args]
  local name=$1 re=$2
  shift 2
  if configure "$name" "$@"; then fail "$name: configured with $*"; fi
  grep -Eq "$re" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no message matching $re"; }
  echo "options: $* rejected: $(grep -Eo "$re.*" "$work/$name.log" | head -1)"
}
says() { # says NAME REGEX [cmake args]: configures, and its output matches
  local name=$1 re=$2
  shift 2
  configure "$name" "$@" || { cat "$work/$name.log"; fail "$name: does not configure"; }
  grep -Eq "$re" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: no line matching $re"; }
  echo "options: $*: $(grep -Eo "$re" "$work/$name.log" | head -1)"
}
compiles_with() { # compiles_with NAME FLAG: the library's options.c is compiled with FLAG
  grep '"file": ".*src/base/options\.c"' -B3 "$work/$1/compile_commands.json" | grep -q -- "$2" ||
    fail "$1: options.c is not compiled with $2"
  echo "options: $1: options.c compiled with $2"
}

rejected xmalloc 'MI_XMALLOC=ON is not supported' -DMI_XMALLOC=ON
rejected padding 'MI_PADDING=ON is not supported' -DMI_PADDING=ON
rejected no-padding-secure 'MI_NO_PADDING=ON is not supported' -DMI_NO_PADDING=ON -DMI_SECURE=ON
rejected musl 'MI_LIBC_MUSL=ON is not supported' -DMI_LIBC_MUSL=ON
rejected object-no-static 'MI_BUILD_OBJECT needs MI_BUILD_STATIC' -DMI_BUILD_STATIC=OFF
# the Windows-only options: rejected in a Windows build (the MinGW-w64 cross
# build of ci/windows.sh), ignored with a warning elsewhere, as upstream;
# but MI_TRACK_ETW, which a Windows build takes (docs/windows.md)
for opt in MI_WIN_USE_FIXED_TLS MI_WIN_INIT_USE_RAW_DLLMAIN MI_WIN_INIT_USE_TLS_DLLMAIN MI_WIN_USE_FLS; do
  rejected "win-$opt" "$opt=ON is not supported" -DCMAKE_TOOLCHAIN_FILE="$src/cmake/mingw-w64.cmake" -D$opt=ON
done
says win-etw 'MI_TRACK_ETW: ETW events 100/101' -DCMAKE_TOOLCHAIN_FILE="$src/cmake/mingw-w64.cmake" -DMI_TRACK_ETW=ON
says etw-linux 'MI_TRACK_ETW is for Windows only: ignored' -DMI_TRACK_ETW=ON

says release 'library name mimalloc,' -DCMAKE_BUILD_TYPE=Release
says secure-relwithdebinfo 'library name mimalloc-secure,' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMI_SECURE=ON
says debug 'library name mimalloc-debug,' -DCMAKE_BUILD_TYPE=Debug
says secure-debug 'library name mimalloc-secure-debug,' -DCMAKE_BUILD_TYPE=Debug -DMI_SECURE=ON
says secure-full 'library name mimalloc-secure,' -DCMAKE_BUILD_TYPE=Release -DMI_SECURE_FULL=ON
says asan-debug 'library name mimalloc-asan-debug,' -DCMAKE_BUILD_TYPE=Debug -DMI_TRACK_ASAN=ON
says valgrind 'library name mimalloc-valgrind,' -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMI_TRACK_VALGRIND=ON
says debug-full 'assertion level 3' -DCMAKE_BUILD_TYPE=Release -DMI_DEBUG_FULL=ON
says check-full 'assertion level 3' -DCMAKE_BUILD_TYPE=Release -DMI_CHECK_FULL=ON
says debug-internal 'assertion level 2' -DCMAKE_BUILD_TYPE=Release -DMI_DEBUG_INTERNAL=ON
says toplevel-says 'headers installed to include$' -DCMAKE_BUILD_TYPE=Release -DMI_INSTALL_TOPLEVEL=ON
says use-cxx 'MI_USE_CXX: the library is C11' -DCMAKE_BUILD_TYPE=Release -DMI_USE_CXX=ON
says defines 'library name' -DCMAKE_BUILD_TYPE=Release -DMI_NO_THP=ON -DMI_SHOW_ERRORS=ON \
  -DMI_SKIP_COLLECT_ON_EXIT=ON -DMI_EXTRA_CPPDEFS="MI_EXTRA_A=1;MI_EXTRA_B=2" -DMI_LOCAL_DYNAMIC_TLS=ON
compiles_with defines -DMI_DEFAULT_ALLOW_THP=0
compiles_with defines -DMI_DEFAULT_SHOW_ERRORS=1
compiles_with defines -DMI_SKIP_COLLECT_ON_EXIT=1
compiles_with defines "-DMI_EXTRA_A=1 -DMI_EXTRA_B=2"
compiles_with defines "-ftls-model=local-dynamic"

# MI_INSTALL_TOPLEVEL: headers, static library, mimalloc.o and the package
# directly under the prefix; the downstream project finds them there
configure toplevel -DCMAKE_BUILD_TYPE=Release -DMI_INSTALL_TOPLEVEL=ON -DMI_DHAT=OFF || fail "toplevel configure"
cmake --build "$work/toplevel" -j2 >>"$work/toplevel.log" 2>&1 || { tail -30 "$work/toplevel.log"; fail "toplevel build"; }
cmake --install "$work/toplevel" --prefix "$work/toplevel-prefix" >>"$work/toplevel.log"
for f in include/mimalloc.h lib/libmimalloc.so lib/libmimalloc.a lib/mimalloc.o lib/cmake/mimalloc/mimalloc-config.cmake; do
  [ -e "$work/toplevel-prefix/$f" ] || fail "MI_INSTALL_TOPLEVEL: $f not installed"
done
if ! { cmake -S "$here" -B "$work/toplevel-downstream" -DCMAKE_PREFIX_PATH="$work/toplevel-prefix" \
  >"$work/toplevel-downstream.log" 2>&1 && cmake --build "$work/toplevel-downstream" >>"$work/toplevel-downstream.log" 2>&1; }; then
  cat "$work/toplevel-downstream.log"
  fail "MI_INSTALL_TOPLEVEL: the downstream project"
fi
"$work/toplevel-downstream/downstream-shared" default "$work/toplevel-prefix/lib/libmimalloc.so"
"$work/toplevel-downstream/downstream-object" default
echo "options: MI_INSTALL_TOPLEVEL=ON: installed at the top level, found by find_package"

# MI_SHOW_ERRORS and MI_NO_THP set the defaults of show_errors and allow_thp
# (MI_DEFAULT_SHOW_ERRORS, MI_DEFAULT_ALLOW_THP: src/config.h, src/base/options.c)
configure defaults -DCMAKE_BUILD_TYPE=Release -DMI_SHOW_ERRORS=ON -DMI_NO_THP=ON -DMI_DHAT=OFF -DMI_BUILD_SHARED=OFF \
  -DMI_BUILD_OBJECT=OFF || fail "defaults configure"
cmake --build "$work/defaults" -j2 >>"$work/defaults.log" 2>&1 || { tail -30 "$work/defaults.log"; fail "defaults build"; }
printf '#include <mimalloc.h>\n#include <stdio.h>\nint main(void) { printf("%%ld %%ld\\n", mi_option_get(mi_option_show_errors), mi_option_get(mi_option_allow_thp)); return 0; }\n' >"$work/defaults.c"
cc -I"$src/include" "$work/defaults.c" "$work/defaults/libmimalloc.a" -lpthread -ldl -o "$work/defaults-prog"
got=$(env -u MIMALLOC_SHOW_ERRORS -u MIMALLOC_ALLOW_THP "$work/defaults-prog")
[ "$got" = "1 0" ] || fail "MI_SHOW_ERRORS=ON MI_NO_THP=ON: show_errors, allow_thp = $got, expected 1 0"
echo "options: MI_SHOW_ERRORS=ON MI_NO_THP=ON: show_errors 1, allow_thp 0 by default"
echo "options: $n configurations checked"
