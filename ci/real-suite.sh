#!/usr/bin/env bash
# The real-suite-secure job (docs/real-suites.md): CPython's own regression
# tests (Debian's libpython3.11-testsuite) and GLib's installed tests
# (libglib2.0-tests) under the preloaded secure build, each compared test
# case by test case with the same run on glibc's malloc, and 12 of CPython's
# modules again with MIMALLOC_SECURE_STACKS=1; then
# the control: the same comparison with a library that plants a false alarm
# (MI_SECURE_PLANT_FALSE_ALARM) must fail, with the differences reported and
# the planted report in the preloaded run's log.
#   ci/real-suite.sh OUT SECURE_LIB
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=$1
lib=$2
status=0
# shellcheck source=ci/lib.sh
source ci/lib.sh
mkdir -p "$out"

bash tests/real-suites/run-cpython.sh "$out/cpython" "$lib" || status=1
# again with every block's stacks kept, on the modules whose threads start,
# wait on subprocesses and end (where a thread's exit tore down another's
# data: docs/teardown-protocol.md, "Orphaned thread data")
MIMALLOC_SECURE_STACKS=1 bash tests/real-suites/run-cpython.sh "$out/cpython-stacks" "$lib" \
  tests/real-suites/cpython-stacks-modules.txt || status=1
python3 tests/real-suites/run-glib.py "$out/glib" "$lib" || status=1

# the control: a cheap subset of modules, under the planted build
if ci_build "$out/plant" gcc Release -DMI_SECURE=ON -DMI_SECURE_PLANT_FALSE_ALARM=ON -- mimalloc; then
  # (no reruns on glibc: what differs here is the plant)
  REAL_SUITE_AGAIN=0 bash tests/real-suites/run-cpython.sh "$out/cpython-plant" "$out/plant/libmimalloc-secure.so" \
    tests/real-suites/cpython-control-modules.txt >"$out/cpython-plant.log" 2>&1
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q '^compare: differs: ' "$out/cpython-plant.log" &&
    grep -q 'mimalloc: error: double free detected of block' "$out/cpython-plant/preloaded.log"; then
    echo "real-suite: control: the planted false alarm fails the comparison ($(tail -1 "$out/cpython-plant.log" | sed 's/.*: //'), the report in the preloaded run's log)"
  else
    echo "real-suite: control: the planted false alarm was NOT seen as differences (exit $rc)"
    cat "$out/cpython-plant.log"
    status=1
  fi
  REAL_SUITE_AGAIN=0 python3 tests/real-suites/run-glib.py "$out/glib-plant" "$out/plant/libmimalloc-secure.so" \
    tests/real-suites/glib-control-programs.txt >"$out/glib-plant.log" 2>&1
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q '^compare: differs: glib ' "$out/glib-plant.log" &&
    grep -q 'mimalloc: error: double free detected of block' "$out"/glib-plant/preloaded.*.log; then
    echo "real-suite: control: the planted false alarm fails GLib's comparison ($(tail -1 "$out/glib-plant.log" | sed 's/.*: //'), the report in the programs' logs)"
  else
    echo "real-suite: control: the planted false alarm was NOT seen in GLib's comparison (exit $rc)"
    cat "$out/glib-plant.log"
    status=1
  fi
else
  status=1
fi
exit $status
