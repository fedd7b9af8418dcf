#!/usr/bin/env bash
# static-operators.sh BINARY taken|absent: whether BINARY, linked with the
# static library, defines the library's operator new and delete (nm).
#   absent: a C program that asks nothing of C++ (static-c-program.c)
#   taken:  the same linked with -Wl,--undefined=_Znwm (the positive
#           control: a program that asks for operator new gets ours, and
#           the check sees it)
set -euo pipefail
bin=$1
want=$2
out=$("$bin")
[ "$out" = ok ] || { echo "FAIL: $bin printed '$out'"; exit 1; }
found=$(nm "$bin" | grep -cE ' T (_Znwm|_ZdlPv|_Znam|_ZdaPv)$' || true)
case $want in
  absent) [ "$found" -eq 0 ] || { echo "FAIL: $bin defines $found of operator new/delete (the static library's were pulled in):"; nm "$bin" | grep -E ' T (_Znwm|_ZdlPv|_Znam|_ZdaPv)$'; exit 1; } ;;
  taken) [ "$found" -eq 4 ] || { echo "FAIL: $bin defines $found of the 4 operators it asked for"; exit 1; } ;;
  *) echo "usage: static-operators.sh BINARY taken|absent"; exit 2 ;;
esac
echo "ok: $bin: operator new/delete $want"
