#!/usr/bin/env bash
# Format: files the profiler writes follow the DHAT field rules
# (dhat_check.py validate), from the API (test-dhat-api, static library) and
# from MIMALLOC_DHAT=1 under the preloaded library, and no stack in them
# starts inside the allocator; broken files fail the same check (positive
# controls).
# usage: format-test.sh TEST-DHAT-API-BINARY [libmimalloc.so]
set -u
API="${1:?usage}"
LIB="${2:-}"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-dhat-fmt.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
CHECK="python3 $HERE/dhat_check.py validate"
STACKS="--stacks-start-outside"
failed=0
"$API" "$WORK/api-%p.json" || { echo "test-dhat-api failed"; failed=1; }
f=$(ls "$WORK"/api-*.json 2>/dev/null | head -1)
if [ -z "$f" ] || [ "$f" = "$WORK/api-%p.json" ]; then
  echo "no file with the pid expanded"; failed=1
else
  $CHECK "$f" $STACKS || failed=1
fi
if [ -n "$LIB" ]; then
  (cd "$WORK" && MIMALLOC_DHAT=1 LD_PRELOAD="$LIB" sh -c 'sort </dev/null; ls / >/dev/null') ||
    { echo "preloaded run failed"; failed=1; }
  [ -f "$WORK/dhat-heap.json" ] || { echo "no default dhat-heap.json at exit"; failed=1; }
  [ -f "$WORK/dhat-heap.json" ] && { $CHECK "$WORK/dhat-heap.json" $STACKS || failed=1; }
fi
echo "--- positive control: broken files must be rejected"
for broken in missing-field bad-index repeated-stack allocator-frame; do
  python3 - "$f" "$WORK/$broken.json" "$broken" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
kind = sys.argv[3]
if kind == "missing-field":
    del d["pps"][0]["gbk"]
elif kind == "bad-index":
    d["pps"][0]["fs"].append(len(d["ftbl"]))
elif kind == "repeated-stack":
    d["pps"].append(dict(d["pps"][0]))
else:
    d["ftbl"][d["pps"][0]["fs"][0]] = "0x1234: mi_malloc (in libmimalloc.so)"
json.dump(d, open(sys.argv[2], "w"))
PY
  if $CHECK "$WORK/$broken.json" $STACKS >/dev/null; then
    echo "$broken: NOT rejected"; failed=1
  else
    echo "$broken: rejected"
  fi
done
[ $failed -eq 0 ] && echo "format-test: ok" || echo "format-test: FAILED"
exit $failed
