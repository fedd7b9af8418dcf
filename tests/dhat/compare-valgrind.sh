#!/usr/bin/env bash
# The profiler against the real thing: each program in progs/ is built once
# against glibc (-O0, frame pointers, no inlining), run under
# `valgrind --tool=dhat` and, the same binary, with our library preloaded and
# MIMALLOC_DHAT=1. Both files must follow the format's rules (dhat_check.py
# validate) and agree (dhat_check.py compare): totals, t-gmax and t-end
# bytes and blocks, and per allocation site (stacks matched by function
# names) tb, tbk, gb, gbk, eb, ebk, and the source file and line of every
# frame Valgrind gives one for. threads.c: totals only.
# Positive controls: our file with one count or one line changed must fail
# the compare.
# usage: compare-valgrind.sh /path/to/libmimalloc.so
set -u
LIB="${1:?usage: $0 libmimalloc.so}"
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-dhat-cmp.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
CHECK="python3 $HERE/dhat_check.py"
command -v valgrind >/dev/null || { echo "valgrind is not installed (ci/install-deps.sh)"; exit 1; }
failed=0
for prog in basic peaks threads; do
  echo "--- $prog"
  cc -O0 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -pthread \
    -o "$WORK/$prog" "$HERE/progs/$prog.c" || { failed=1; continue; }
  valgrind --tool=dhat --run-libc-freeres=no --run-cxx-freeres=no \
    --dhat-out-file="$WORK/vg-$prog.json" "$WORK/$prog" 2>"$WORK/vg-$prog.log" ||
    { echo "valgrind run failed"; cat "$WORK/vg-$prog.log"; failed=1; continue; }
  env MIMALLOC_DHAT=1 MIMALLOC_DHAT_FILE="$WORK/ours-$prog.json" LD_PRELOAD="$LIB" "$WORK/$prog" ||
    { echo "run under the profiler failed"; failed=1; continue; }
  $CHECK validate "$WORK/ours-$prog.json" || failed=1
  only=""
  [ "$prog" = threads ] && only="--totals-only"
  $CHECK compare "$WORK/vg-$prog.json" "$WORK/ours-$prog.json" $only || failed=1
done
# expect_caught WHAT FILE: a planted difference in FILE must fail the comparison
expect_caught() {
  if $CHECK compare "$WORK/vg-basic.json" "$2" >/dev/null; then
    echo "$1 NOT caught"
    failed=1
  else
    echo "$1 caught"
  fi
}

echo "--- positive control: a changed count must be caught"
python3 - "$WORK/ours-basic.json" "$WORK/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["pps"][0]["gb"] += 1
json.dump(d, open(sys.argv[2], "w"))
PY
expect_caught "positive control" "$WORK/bad.json"
echo "--- positive control: a changed source line must be caught"
python3 - "$WORK/ours-basic.json" "$WORK/bad-line.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
d["ftbl"] = [re.sub(r"\(basic\.c:(\d+)\)$", lambda m: f"(basic.c:{int(m.group(1)) + 1})", s) for s in d["ftbl"]]
json.dump(d, open(sys.argv[2], "w"))
PY
expect_caught "positive control (line)" "$WORK/bad-line.json"
[ $failed -eq 0 ] && echo "compare-valgrind: all equal" || echo "compare-valgrind: FAILED"
exit $failed
