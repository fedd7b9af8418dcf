#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer job (docs/sanitizers.md):
# the core test suite and the teardown tests built with clang
# -fsanitize=address,undefined (no recovery from UB) against a library built
# with -DMI_TRACK_ASAN=ON, the fork storm in a clang-19 build of the same,
# then the positive controls: planted bugs on mi_malloc blocks that ASan
# must report with its own report header.
#   ci/asan.sh OUT_DIR
# The tests link the static library and call the mi_* API: ASan intercepts
# malloc itself, so the malloc override is not exercised here.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=${1:-$root/out/asan}
rm -rf "$dir" && mkdir -p "$dir"
status=0
. ci/lib.sh

# Debug: the allocator's assertions and the lock-order checker run too.
# MI_FAULT=ON for the schedule points of the teardown tests (the fault
# tests themselves are left out below).
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# The C++ tests (operator new and delete) are built with the same run-time
# but not run: ASan's own operator new and delete take the program's calls.
ci_build "$dir" clang Debug -DMI_BUILD_SHARED=OFF -DMI_TRACK_ASAN=ON -DMI_FAULT=ON -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$flags" || exit 1

# halt_on_error: the first report fails the test. Leak checking is off: the
# allocator's segments are plain mappings LeakSanitizer does not scan, so
# libc blocks referenced only from mi_malloc blocks would look leaked.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=0:allow_user_poisoning=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# test-memory-return is left out: it gates on RSS, and ASan's shadow memory
# (an eighth of every poisoned range) is resident too. test-fault is left
# out: it counts exact mmap outcomes, which ASan's own mappings perturb
# (fault injection has jobs of its own). The fork storm runs below, in a
# build of its own.
(cd "$dir" && ctest --output-on-failure -j2 -L core -LE fork \
  -E '^(test-memory-return|test-fault|test-new-delete|test-new-delete-shared|test-hardened-cxx)$') || status=1
# the teardown protocol's forced interleavings (docs/teardown-protocol.md)
(cd "$dir" && ctest --output-on-failure -L '^teardown$') || status=1

# The fork storm, built with clang 19: under clang 14's ASan a child hangs
# now and then inside ASan's own allocator, whose locks that run-time does
# not take around fork (the hung child's stacks, and the runs with each
# compiler, are in docs/sanitizers.md); ASan's run-time has done so since
# LLVM 18. Same flags and options as above.
storm_forks=${ASAN_STORM_FORKS:-400}
sdir=$dir-storm
rm -rf "$sdir" && mkdir -p "$sdir"
if ! command -v clang-19 >/dev/null 2>&1; then
  echo "asan: fork-storm: clang-19 is not installed (ci/install-deps.sh installs it)"
  status=1
elif ci_build "$sdir" clang-19 Debug -DMI_BUILD_SHARED=OFF -DMI_TRACK_ASAN=ON -DMI_FAULT=ON -DCMAKE_C_FLAGS="$flags" -- fork-storm; then
  if "$sdir/tests/fork-storm" "$storm_forks" >"$sdir/fork-storm.log" 2>&1; then
    echo "asan: fork-storm (clang-19): $(grep -o 'forks [0-9]*.*failures [0-9]*' "$sdir/fork-storm.log")"
  else
    echo "asan: fork-storm (clang-19): FAILED"
    cat "$sdir/fork-storm.log"
    status=1
  fi
else
  status=1
fi

# positive controls: each planted bug must be reported, anchored on ASan's
# report header and on the planting function in the stack
plant() { # plant MODE FUNCTION
  "$dir/tests/plant" "$1" >"$dir/plant-$1.log" 2>&1
  ci_expect_report asan "$1" $? "$dir/plant-$1.log" \
    '^==[0-9]+==ERROR: AddressSanitizer: use-after-poison' "^ +#[0-9]+ .* in $2 "
}
plant use-after-free plant_use_after_free
plant heap-overflow plant_heap_overflow
plant never-allocated plant_never_allocated
"$dir/tests/plant" control >"$dir/plant-control.log" 2>&1
ci_expect_clean asan "in-bounds accesses, mi_usable_size, realloc" $? "$dir/plant-control.log"
exit $status
