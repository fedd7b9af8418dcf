#!/usr/bin/env bash
# Run a Windows test executable under Wine for ctest (CMAKE_CROSSCOMPILING_EMULATOR
# of cmake/mingw-w64.cmake): wine-run.sh PROGRAM.exe [ARGS...]
#
# Wine's helper processes (wineserver, services, winedevice) outlive the
# program and inherit its stdout/stderr: run with those as ctest's pipe and
# ctest waits for them. So the program's output goes to a file, printed
# after it exits, and the exit code is the program's.
#
# WINEPREFIX defaults to wine-prefix/ beside the executable's build tree
# (created on first use, a few seconds); start one `wineserver -p` before a
# run of many tests (ci/windows.sh does) so each test does not start and
# stop its own. WINE overrides the loader (Debian's wine64 package has no
# /usr/bin/wine).
set -u
exe=$1
shift
wine=${WINE:-}
if [ -z "$wine" ]; then
  for w in /usr/lib/wine/wine64 /usr/bin/wine64 /usr/bin/wine; do
    if [ -x "$w" ]; then wine=$w; break; fi
  done
fi
[ -n "$wine" ] || { echo "wine-run: no Wine loader found (install wine64)" >&2; exit 127; }
if [ -z "${WINEPREFIX:-}" ]; then
  dir=$(cd "$(dirname "$exe")" && pwd)
  # the build tree's top: the nearest parent with a CMakeCache.txt
  top=$dir
  while [ "$top" != / ] && [ ! -f "$top/CMakeCache.txt" ]; do top=$(dirname "$top"); done
  [ -f "$top/CMakeCache.txt" ] || top=$dir
  export WINEPREFIX=$top/wine-prefix
fi
export WINEDEBUG=${WINEDEBUG:--all}
export WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-mscoree,mshtml=} # no Mono/Gecko install dialogs
mkdir -p "$WINEPREFIX"
log=$(mktemp "${TMPDIR:-/tmp}/wine-run.XXXXXX")
"$wine" "$exe" "$@" </dev/null >"$log" 2>&1
rc=$?
cat "$log"
rm -f "$log"
exit $rc
