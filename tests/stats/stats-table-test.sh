#!/usr/bin/env bash
# The statistics table follows mimalloc 2.4.1's layout, read as a script
# written for upstream's would read it (stats-table-layout.py: the header
# line, upstream's row labels in upstream's order, each figure in the
# column where upstream puts it, upstream's units):
# - the table of mi_stats_print_out, and the one MIMALLOC_SHOW_STATS=1
#   prints at exit, of a program holding 1000 blocks of 1 KiB and a 3 MiB
#   block (stats-json-print table); in the columns upstream puts them,
#   threads' current is 1 after the joins and the 3 MiB block is a live
#   large block ("huge#", ours, after upstream's rows);
# - the checker's calibration: tables captured from mimalloc 2.4.1's own
#   library, default and detailed (MI_STAT=2: bins, binned, huge, total,
#   malloc req), must pass (upstream-2.4.1-table*.txt);
# - positive controls that must fail: the table as this library printed it
#   before (old-table.txt), its rows under upstream's header, and copies of
#   ours with two rows swapped, figures moved one character right, and the
#   header's columns reordered.
# usage: stats-table-test.sh /path/to/stats-json-print
set -u
PRINT="${1:?usage: $0 stats-json-print}"
HERE="$(cd "$(dirname "$0")" && pwd)"
LAYOUT="$HERE/stats-table-layout.py"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-stats-table.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
failed=0

"$PRINT" table >"$WORK/table.txt" || { echo "stats-json-print table failed"; exit 1; }
MIMALLOC_SHOW_STATS=1 "$PRINT" table >/dev/null 2>"$WORK/exit.txt" || { echo "the run with MIMALLOC_SHOW_STATS=1 failed"; exit 1; }

must_pass() {
  local what="$1" file="$2"
  if python3 "$LAYOUT" "$file"; then echo "ok: $what follows upstream's layout"
  else echo "FAIL: $what does not follow upstream's layout"; sed -n 1,40p "$file"; failed=1; fi
}
must_fail() {
  local what="$1" file="$2"
  if python3 "$LAYOUT" "$file" >"$WORK/why.txt"; then echo "FAIL: control not caught: $what"; failed=1
  else echo "ok: control caught: $what ($(cat "$WORK/why.txt"))"; fi
}

must_pass "mi_stats_print_out's table" "$WORK/table.txt"
must_pass "the exit table (MIMALLOC_SHOW_STATS=1)" "$WORK/exit.txt"
must_pass "mimalloc 2.4.1's own table" "$HERE/upstream-2.4.1-table.txt"
must_pass "mimalloc 2.4.1's own detailed table" "$HERE/upstream-2.4.1-table-detailed.txt"

# figures read where upstream's columns are: label, then 12 characters each
python3 - "$WORK/table.txt" <<'PY' || failed=1
import sys
rows = {}
for line in open(sys.argv[1]).read().split("\n"):
    if len(line) > 11 and line[10] == ":":
        rows.setdefault(line[:10].strip(), line[11:])
def column(label, i):  # 0: peak, 1: total, 2: current
    return rows[label][12 * i:12 * (i + 1)].strip()
bad = []
if column("threads", 2) != "1":
    bad.append("threads current %r, not 1" % column("threads", 2))
if column("huge#", 2) in ("0", ""):
    bad.append("no live large block in huge# current (%r)" % column("huge#", 2))
if "pid " not in rows.get("allocator", ""):
    bad.append("no allocator row with the pid")
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("ok: threads current 1, the 3 MiB block live, the allocator row names the pid")
PY

must_fail "the old layout" "$HERE/old-table.txt"
{ head -n 1 "$HERE/upstream-2.4.1-table.txt"; tail -n +3 "$HERE/old-table.txt"; } >"$WORK/old-under-header.txt"
must_fail "the old rows under upstream's header" "$WORK/old-under-header.txt"
awk '/^  segments:/ { held = $0; next } /^-abandoned:/ && held != "" { print; print held; held = ""; next } { print }' \
  "$WORK/table.txt" >"$WORK/swapped.txt"
must_fail "segments and -abandoned swapped" "$WORK/swapped.txt"
sed 's/^  reserved:/  reserved: /' "$WORK/table.txt" >"$WORK/shifted.txt"
must_fail "reserved's figures one character right" "$WORK/shifted.txt"
sed 's/^heap stats:     peak       total     current/heap stats:  current        peak       total/' "$WORK/table.txt" \
  >"$WORK/header.txt"
must_fail "the header's columns reordered" "$WORK/header.txt"

exit $failed
