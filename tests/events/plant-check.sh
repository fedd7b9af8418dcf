#!/usr/bin/env bash
# The positive controls of tests/events (docs/memory-events.md): the test
# program of a build with a planted defect (-DMI_MEMORY_EVENTS_PLANT=N) must
# fail, and fail in the tests that state what the defect breaks, each seen
# on cmocka's own report line "[  FAILED  ] <test>".
#   plant-check.sh TEST-PROGRAM N
#   1: the first FREE after each switch-on dropped (a record lost)
#   2: a moving realloc told as ALLOCATE + FREE (one operation, two events)
#   3: ALLOCATE's total reported before its own delta (a counter off by one event)
#   4: a handler's nested operations counted (not told): suppression half gone
#   5: a failed reallocation told (as a RESIZE of delta 0)
set -u
prog=$1
plant=$2
case $plant in
  1) expect="test_free_one_event_exact_negative_delta_total test_threads_8_balanced_zero_live" ;;
  2) expect="test_realloc_moving_grow_one_resize_exact test_realloc_moving_shrink_one_resize_negative_delta" ;;
  3) expect="test_alloc_one_event_exact_kind_delta_total_request" ;;
  4) expect="test_handler_reentrant_alloc_suppressed" ;;
  5) expect="test_failed_alloc_and_realloc_no_event_block_still_counted" ;;
  *) echo "plant-check: unknown plant $plant"; exit 2 ;;
esac
log=$(mktemp)
"$prog" >"$log" 2>&1
rc=$?
status=0
if [ $rc -eq 0 ]; then
  echo "plant-check: plant $plant NOT caught: the test program passed"
  status=1
fi
for t in $expect; do
  if grep -qE "^\[  FAILED  \] $t\$" "$log"; then
    echo "plant-check: plant $plant caught by $t: $(grep -m1 -B2 -E "^\[  FAILED  \] $t\$" "$log" | head -1 | cut -c1-160)"
  else
    echo "plant-check: plant $plant NOT caught by $t"
    status=1
  fi
done
[ $status -eq 0 ] || tail -40 "$log"
rm -f "$log"
exit $status
