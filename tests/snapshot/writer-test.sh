#!/usr/bin/env bash
# The heap snapshot as this allocator writes it (docs/heap-snapshot.md),
# read by the independent reader (tools/mi_snapshot.py) and the viewer
# (tools/mi-heapview.c): the `write` case (free maps decoded into the live
# set mi_heap_visit_blocks sees, committed within the statistics') and the
# snapshot at exit (MIMALLOC_SNAPSHOT_ON_EXIT=2, MIMALLOC_SNAPSHOT_PATH with
# %p). Positive controls: a visited block dropped, the footer's count off by
# one and the statistics' committed lowered must each fail the checks.
# usage: writer-test.sh /path/to/snapshot-writer
set -u
WRITER="${1:?usage: $0 snapshot-writer}"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-snapshot-writer.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
failed=0
check() { # name command...
  local name=$1
  shift
  if "$@" >"$WORK/check.log" 2>&1; then
    echo "check $name: ok"; sed 's/^/  /' "$WORK/check.log" | head -3
  else
    echo "check $name: FAILED"; cat "$WORK/check.log"; failed=1
  fi
}
control() { # name command... (must fail)
  local name=$1
  shift
  if "$@" >"$WORK/control.log" 2>&1; then
    echo "control $name: NOT caught"; failed=1
  else
    echo "control $name: caught ($(grep -m1 . "$WORK/control.log" | sed 's/^ *//'))"
  fi
}

"$WRITER" write "$WORK/snap" || { echo "snapshot-writer write failed ($?)"; exit 1; }
check write-snapshot python3 "$HERE/check_writer.py" "$WORK/snap.bin" "$WORK/snap.live" "$WORK/snap.stats.json"
(cd "$WORK" && MIMALLOC_SNAPSHOT_ON_EXIT=2 MIMALLOC_SNAPSHOT_PATH="$WORK/exit.%p.bin" "$WRITER" exit) ||
  { echo "snapshot-writer exit failed"; failed=1; }
exitfile=$(ls "$WORK"/exit.*.bin 2>/dev/null | head -1)
if [ -n "$exitfile" ] && [[ "$exitfile" =~ exit\.[0-9]+\.bin$ ]]; then
  check exit-snapshot python3 "$HERE/check_writer.py" --exit "$exitfile"
else
  echo "check exit-snapshot: FAILED (no exit.<pid>.bin written)"; failed=1
fi
# the viewer reads what the writer wrote
if cc -std=c11 -O2 -Wall -Wextra -Werror "$ROOT/tools/mi-heapview.c" -o "$WORK/mi-heapview"; then
  check viewer-summary "$WORK/mi-heapview" "$WORK/snap.bin" summary
  check viewer-json sh -c "'$WORK/mi-heapview' '$WORK/snap.bin' json | python3 -m json.tool >/dev/null"
  check viewer-frag "$WORK/mi-heapview" "$WORK/snap.bin" frag --top 5
else
  echo "check viewer-build: FAILED"; failed=1
fi
# positive controls
sed '2d' "$WORK/snap.live" >"$WORK/dropped.live"
control visited-block-dropped python3 "$HERE/check_writer.py" "$WORK/snap.bin" "$WORK/dropped.live" "$WORK/snap.stats.json"
python3 - "$WORK/snap.bin" "$WORK/footer.bin" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
n = int.from_bytes(d[-8:], "little") + 1
d[-8:] = n.to_bytes(8, "little")
open(sys.argv[2], "wb").write(d)
PY
control footer-off-by-one python3 "$HERE/check_writer.py" "$WORK/footer.bin" "$WORK/snap.live" "$WORK/snap.stats.json"
python3 - "$WORK/snap.stats.json" "$WORK/low.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["committed"]["current"] = 4096
json.dump(d, open(sys.argv[2], "w"))
PY
control committed-above-stats python3 "$HERE/check_writer.py" "$WORK/snap.bin" "$WORK/snap.live" "$WORK/low.json"
[ $failed -eq 0 ] && echo "writer-test: ok" || echo "writer-test: FAILED"
exit $failed
