#!/usr/bin/env bash
# Runs every hardened case (peer-run.cc) under each allocator given, with
# and without its misuse, and prints one line per case and run: the case,
# misuse or control, the allocator, how the process ended (exit N or the
# signal's name) and the first line it printed on stderr.
#   peer-score.sh OUTDIR NAME=LIB... (LIB `none`: the C library's malloc)
# docs/hardened-suite.md was measured with it. Needs g++.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OUTDIR NAME=LIB..." >&2; exit 2; }
out=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ulimit -c 0
g++ -std=c++17 -fsized-deallocation -O2 -Wall -Wextra -Werror -I"$here/../../include" \
  "$here/peer-run.cc" -o "$out/peer-run" -lpthread
for spec in "$@"; do
  name=${spec%%=*} lib=${spec#*=}
  for c in $("$out/peer-run" --list); do
    for mode in misuse control; do
      set +e
      if [ "$lib" = none ]; then
        "$out/peer-run" "$c" "$mode" >"$out/stdout" 2>"$out/stderr"
      else
        LD_PRELOAD=$lib "$out/peer-run" "$c" "$mode" >"$out/stdout" 2>"$out/stderr"
      fi
      rc=$?
      set -e
      if [ $rc -gt 128 ]; then how="SIG$(kill -l $((rc - 128)))"; else how="exit $rc"; fi
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$mode" "$name" "$how" "$(head -c 300 "$out/stderr" | head -1)" \
        "$(grep -m1 '^overflow by' "$out/stdout" || true)"
    done
  done
done
