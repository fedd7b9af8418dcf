#!/usr/bin/env bash
# The checker's controls: files that follow every rule must be accepted by
# pprof_check.py (its structure rules, Go pprof, google-pprof, protoc), and
# each broken file (a missing header, counts that do not sum, uppercase hex,
# a missing period, a "0: 5" record, string_table[0] not empty, a duplicate
# location id, ...) must be rejected, for that defect (the checker's
# output matches what make_controls.py says it must: the structure rule and,
# where a client sees it, the client's own complaint); for each, what
# rejected it is printed.
# With the sites program (tests/pprof/sites.c), a real text and proto dump
# are checked too (accepted, with the binary, no allocator frame in -top),
# and broken files made from them must be rejected the same way.
# usage: check-controls.sh [SITES-BINARY]
set -u
SITES="${1:-}"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-pprof-controls.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
CHECK="python3 $HERE/pprof_check.py"
failed=0
if [ -n "$SITES" ]; then
  "$SITES" --seed 1 --accum --text "$WORK/real.heap" --proto "$WORK/real.pb.gz" >"$WORK/real.out" ||
    { echo "sites failed"; exit 1; }
  echo "--- real dumps of the sites program, with the binary"
  for f in real.heap real.pb.gz; do
    $CHECK "$WORK/$f" "$SITES" --no-allocator-frames || failed=1
  done
  python3 "$HERE/make_controls.py" "$WORK/files" "$WORK/real.heap" "$WORK/real.pb.gz" >"$WORK/list" || failed=1
else
  python3 "$HERE/make_controls.py" "$WORK/files" >"$WORK/list" || failed=1
fi
echo "--- files that follow the rules must be accepted"
while IFS=$'\t' read -r name rule; do
  [ "$rule" = good ] || continue
  bin=()
  case "$name" in *real*) bin=("$SITES") ;; esac
  if out=$($CHECK "$WORK/files/$name" "${bin[@]}" 2>&1); then
    echo "$name: accepted"
  else
    echo "$name: REJECTED, but it follows the rules:"
    echo "$out" | sed 's/^/    /'
    failed=1
  fi
done <"$WORK/list"
echo "--- positive controls: broken files must be rejected"
while IFS=$'\t' read -r name rule want; do
  [ "$rule" = good ] && continue
  bin=()
  case "$name" in *real*) bin=("$SITES") ;; esac
  if out=$($CHECK "$WORK/files/$name" "${bin[@]}" 2>&1); then
    echo "$name ($rule): NOT rejected"
    failed=1
  else
    rc=$?
    if [ $rc -ne 1 ]; then
      echo "$name ($rule): the check could not run (exit $rc):"
      echo "$out" | sed 's/^/    /'
      failed=1
      continue
    fi
    echo "$name ($rule): rejected by"
    echo "$out" | grep -v ': REJECTED$' | sed "s|^$WORK/files/$name: |    |"
    # rejected for its defect, by the checkers expected (not for another reason)
    IFS=$'\t' read -r -a res <<<"$want"
    for re in "${res[@]}"; do
      echo "$out" | grep -Eq -- "$re" || { echo "    NOT rejected for its defect: no line matches /$re/"; failed=1; }
    done
  fi
done <"$WORK/list"
[ $failed -eq 0 ] && echo "check-controls: ok" || echo "check-controls: FAILED"
exit $failed
