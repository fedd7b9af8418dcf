#!/usr/bin/env bash
# ThreadSanitizer job (docs/sanitizers.md): the multi-threaded tests
# (test-stress, test-threads, the teardown protocol's forced interleavings,
# empty arenas given back while another thread allocates) built with clang
# -fsanitize=thread, library included, run as they are and (stress, threads)
# with the heap profiler on, then the positive control: a planted data race
# on a mi_malloc block that TSan must report.
#   ci/tsan.sh OUT_DIR
# No fork tests: TSan does not support fork in a multi-threaded process.
# (Each teardown case runs in a child forked while the process has one
# thread, which TSan follows.)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=${1:-$root/out/tsan}
rm -rf "$dir" && mkdir -p "$dir"
status=0
. ci/lib.sh

# MI_FAULT=ON: the schedule points the teardown tests force interleavings at
flags="-fsanitize=thread -fno-omit-frame-pointer"
ci_build "$dir" clang Release -DMI_BUILD_SHARED=OFF -DMI_TSAN_PLANT=ON -DMI_FAULT=ON -DCMAKE_C_FLAGS="$flags" \
  -- test-stress test-threads test-teardown test-purge-reclaim tsan-plant || exit 1

# halt_on_error: the first report fails the test (exit code 66)
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
(cd "$dir" && ctest --output-on-failure -LE fork -R '^(test-stress|test-threads)$') || status=1
# the same with the heap profiler on (MIMALLOC_DHAT): a block's record is
# written by the allocating thread and read and cleared by the freeing one
# without the profiler's lock, which is itself a spin lock
echo "tsan: test-stress and test-threads with the heap profiler on"
(cd "$dir" && MIMALLOC_DHAT=1 MIMALLOC_DHAT_FILE="$dir/dhat-%p.json" \
  ctest --output-on-failure -LE fork -R '^(test-stress|test-threads)$') || status=1
ls "$dir"/dhat-*.json >/dev/null 2>&1 || { echo "tsan: the profiled runs wrote no profile"; status=1; }
# a report in a teardown case's child fails the case (exit 66)
(cd "$dir" && ctest --output-on-failure -L '^teardown$') || status=1
# the arena table given back and taken again while another thread frees into
# it and looks segments up (docs/memory-return.md); each case in a child
(cd "$dir" && ctest --output-on-failure -R '^test-purge-reclaim$') || status=1

# positive control: the planted race must be reported, anchored on TSan's
# report header; the control (the writers joined in turn) must run clean
"$dir/tests/tsan-plant" race >"$dir/plant-race.log" 2>&1
ci_expect_report tsan race $? "$dir/plant-race.log" '^WARNING: ThreadSanitizer: data race'
"$dir/tests/tsan-plant" control >"$dir/plant-control.log" 2>&1
ci_expect_clean tsan "writers joined in turn" $? "$dir/plant-control.log"
exit $status
