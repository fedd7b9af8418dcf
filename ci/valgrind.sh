#!/usr/bin/env bash
# Valgrind memcheck job (docs/sanitizers.md): a subset of the core tests
# (test-api, test-heap) built against a library with -DMI_TRACK_VALGRIND=ON,
# run under memcheck with --error-exitcode=1 and --leak-check=full (zero
# errors and no leaks expected: the allocator registers its blocks as heap
# blocks), a short fork storm, then the positive controls: planted bugs on
# mi_malloc blocks (and a planted leak) that memcheck must report through
# the allocator's client requests.
#   ci/valgrind.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=${1:-$root/out/valgrind}
rm -rf "$dir" && mkdir -p "$dir"
status=0
. ci/lib.sh

# Release with debug info (-g: file and line in the reports); the fault
# hooks and the profiler stay out, they have jobs of their own
ci_build "$dir" gcc RelWithDebInfo -DMI_BUILD_SHARED=OFF -DMI_TRACK_VALGRIND=ON -DMI_FAULT=OFF -DMI_DHAT=OFF \
  -- test-api test-heap plant fork-storm || exit 1

vg=(valgrind --tool=memcheck --error-exitcode=1 --leak-check=no --track-origins=no -q)
# the tests: also no definitely or possibly lost block (memcheck's default
# --errors-for-leak-kinds), each of which counts as an error
vgleak=(valgrind --tool=memcheck --error-exitcode=1 --leak-check=full --track-origins=no -q)
for t in test-api test-heap; do
  if "${vgleak[@]}" --log-file="$dir/$t.memcheck.log" "$dir/tests/$t" >"$dir/$t.log" 2>&1; then
    echo "valgrind: $t: clean"
  else
    echo "valgrind: $t: FAILED"
    tail -40 "$dir/$t.log"
    head -80 "$dir/$t.memcheck.log"
    status=1
  fi
done

# The fork storm, short: children free blocks the parent's threads
# registered, fork again, start threads, exec. Leak checking is off here:
# each child exits with the blocks of its parent's vanished threads live.
# A memcheck error in a child makes that child exit 1, which fails the storm.
if "${vg[@]}" --log-file="$dir/fork-storm.%p.memcheck.log" "$dir/tests/fork-storm" 16 >"$dir/fork-storm.log" 2>&1; then
  echo "valgrind: fork-storm: clean ($(grep -o 'forks [0-9]*.*deadlocks [0-9]*' "$dir/fork-storm.log"))"
else
  echo "valgrind: fork-storm: FAILED"
  cat "$dir/fork-storm.log"
  cat "$dir"/fork-storm.*.memcheck.log | head -80
  status=1
fi

# positive controls: each planted bug must be reported, anchored on
# memcheck's report line and the planting function in its stack
plant() { # plant MODE FUNCTION
  local log="$dir/plant-$1.memcheck.log"
  "${vg[@]}" --log-file="$log" "$dir/tests/plant" "$1" >/dev/null 2>&1
  ci_expect_report valgrind "$1" $? "$log" '^==[0-9]+== Invalid read of size [0-9]+' "^==[0-9]+== +at 0x[0-9A-F]+: $2 "
}
plant use-after-free plant_use_after_free
plant heap-overflow plant_heap_overflow
plant never-allocated plant_never_allocated
# the planted leak: the program exits 0, memcheck's leak check must fail it,
# anchored on the leak's report line and the planting function in its stack
# (the allocator's registration of the block is what makes it seen)
log="$dir/plant-leak.memcheck.log"
"${vgleak[@]}" --log-file="$log" "$dir/tests/plant" leak >/dev/null 2>&1
ci_expect_report valgrind leak $? "$log" \
  '^==[0-9]+== [0-9,]+ bytes in [0-9,]+ blocks are definitely lost in loss record' '^==[0-9]+== +by 0x[0-9A-F]+: plant_leak_block '
log="$dir/plant-control.memcheck.log"
"${vgleak[@]}" --log-file="$log" "$dir/tests/plant" control >/dev/null 2>&1
ci_expect_clean valgrind "in-bounds accesses, mi_usable_size, realloc" $? "$log"
exit $status
