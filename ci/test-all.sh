#!/usr/bin/env bash
# The whole test suite as a table of named jobs (the table is at the end):
#   ci/test-all.sh            every job, in the table's order
#   ci/test-all.sh JOB...     those jobs, after the jobs they need
#   ci/test-all.sh --list     the jobs and what each needs
# Installs what the tests need first (ci/install-deps.sh). A job whose
# prerequisite failed (or was skipped) is skipped, and said so once: it is
# not counted as a failure of its own. Prints one closing line
# "ci: N passed, M failed" (", K skipped" when some were).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${CI_OUT:-$root/out/ci}
status=0
# shellcheck source=ci/lib.sh
source ci/lib.sh

run_ctest() { # run_ctest DIR [ctest args...]
  local dir=$1
  shift
  (cd "$dir" && ctest --output-on-failure "$@")
}

# ---- What the jobs run ----------------------------------------------------------

matrix() { # matrix NAME CC BUILD_TYPE [cmake args...]: build and run the core tests
  local name=$1 cc=$2 type=$3
  shift 3
  # two at a time: the core tests are single-threaded or wait on children,
  # none depends on timing, and their files are named by pid (about 40% of
  # the job's test time)
  ci_build "$out/$name" "$cc" "$type" "$@" && run_ctest "$out/$name" -L core -j2
}

# the secure build's light level (docs/secure-mode.md, "Levels"): the core
# tests of the Release secure build again at MIMALLOC_SECURE_LEVEL=light; a test of
# a protection light leaves out skips (tests/child.h), every other must pass.
# Left out: the tests whose outcome no run-time option can change (what is
# linked and exported, file formats, the lock-order checker's tables, the
# profile encoder) and fork-storm (fork handlers: no block checks; 19 s a run)
LIGHT_LEVEL_SAME='^(fork-storm|api-names-complete|test-link-names-.*|test-libc-exports-.*|test-static-c-program-.*|test-listeners-.*|dhat-format|test-demangle-rust|test-proto-unit|test-lockorder|test-lock-assert|stats-table-upstream-layout|test-stack-walk)$'
# The Release build only, the one programs run (the Debug one's assertions
# at light were 75 s of the suite's 45-minute budget, and MI_DEBUG=3's
# matrix jobs keep them at the full level)
secure_light() {
  MIMALLOC_SECURE_LEVEL=light run_ctest "$out/gcc-secure-release" -L core -E "$LIGHT_LEVEL_SAME" -j2
}

# the teardown protocol (docs/teardown-protocol.md): the forced interleavings
# (Debug builds have the schedule points; the secure one too: quarantine,
# guarded blocks, zeroing; each case also with reclaim on free), the spin
# check of the model, and the positive controls (the purge race planted back
# must fail its case; a claim-on-free CAS that ignores the generation must
# let claim-vs-reabandon's stale claim succeed, exit 3; in the secure build,
# purge links read before the purge lock must give the corrupted-header
# false alarm in free-vs-neighbour-release)
teardown_plant() { # teardown_plant NAME CMAKE_SWITCH [CMAKE_ARG...]
  local dir=$out/$1 switch=$2
  shift 2
  ci_build "$dir" gcc Debug "-D$switch=ON" "$@" -- test-teardown && run_ctest "$dir" -L '^teardown-plant$'
}
teardown() {
  local ok=0
  run_ctest "$out/gcc-debug" -L '^teardown$' || ok=1
  run_ctest "$out/clang-debug" -L '^teardown$' || ok=1
  run_ctest "$out/clang-secure-debug" -L '^teardown$' || ok=1
  bash ci/teardown-model.sh "$out/teardown-model" || ok=1
  teardown_plant teardown-plant MI_TEARDOWN_PLANT_PURGE_RACE || ok=1
  teardown_plant teardown-plant-tag MI_TEARDOWN_PLANT_SKIP_TAG || ok=1
  teardown_plant teardown-plant-links MI_TEARDOWN_PLANT_STALE_LINKS -DMI_SECURE=ON || ok=1
  return $ok
}

# the sampled heap profiler read by the real clients (docs/pprof.md, tests/pprof):
# the checker's controls and the accuracy test in the default, secure and Debug
# builds, and the positive control: the seed's uniform sampler planted back
# (MI_PROF_PLANT_UNIFORM) must fail the unbiasedness criterion
pprof_profiler() {
  local ok=0
  local -x MI_PPROF_TOOLS=$out/pprof-tools # Go pprof built offline once, shared by the builds
  run_ctest "$out/gcc-release" -L '^pprof$' || ok=1
  run_ctest "$out/gcc-secure-release" -L '^pprof$' || ok=1
  run_ctest "$out/gcc-debug" -L '^pprof$' || ok=1
  ci_build "$out/pprof-plant" gcc Release -DMI_PROF_PLANT_UNIFORM=ON -- pprof-sites &&
    run_ctest "$out/pprof-plant" -L '^pprof-plant$' || ok=1
  return $ok
}

# the memory events' positive controls (docs/memory-events.md,
# tests/events/plant-check.sh): each planted defect (1 the first FREE of a
# switch-on dropped, 2 a moving realloc told as ALLOCATE + FREE, 3 ALLOCATE's
# total off by its own delta, 4 a handler's nested operations counted, 5 a
# failed realloc told) must fail the tests that name what it breaks
memory_events_plants() {
  local ok=0 n
  for n in 1 2 3 4 5; do
    ci_build "$out/memory-events-plant$n" gcc Release "-DMI_MEMORY_EVENTS_PLANT=$n" -- test-memory-events &&
      run_ctest "$out/memory-events-plant$n" -L '^memory-events-plant$' || ok=1
  done
  return $ok
}

fault_positive_control() {
  ci_build "$out/fault-plant" gcc Debug -DMI_FAULT=ON -DMI_FAULT_PLANT_UNCHECKED=ON -- fault-sweep && run_ctest "$out/fault-plant" -L fault
}

install_and_downstream() {
  bash tests/downstream/run.sh "$out/downstream" "$out/gcc-release" "$out/gcc-secure-release" &&
    bash tests/downstream/options.sh "$root" "$out/downstream-options"
}

bench_smoke() {
  env BENCH_OUT="$out/bench" OURS_LIB="$out/gcc-release/libmimalloc.so" \
    OURS_SECURE_LIB="$out/gcc-secure-release/libmimalloc-secure.so" bash bench/run.sh --smoke
}

# detailed statistics (docs/statistics.md): MI_STAT=2 builds, the default
# one through the core and pprof tests, the secure one through those of the
# statistics and the profilers: malloc_requested exact through every kind
# of allocation, and the pprof accuracy test's exact-mode comparison with
# it; the positive control: every allocation counted one byte over its
# request must fail test-stats-api's case
stats_detailed() {
  local ok=0
  local -x MI_PPROF_TOOLS=$out/pprof-tools
  ci_build "$out/stat2" gcc Release -DMI_STAT=2 && run_ctest "$out/stat2" -L '^(core|pprof)$' -j2 || ok=1
  ci_build "$out/stat2-secure" gcc Release -DMI_STAT=2 -DMI_SECURE=ON &&
    run_ctest "$out/stat2-secure" -R 'stats|prof|dhat-format|dhat-counts|memory-events' -j2 || ok=1
  if ci_build "$out/stat2-plant" gcc Release -DMI_STAT=2 -DMI_STAT_PLANT_REQUESTED_OFF_BY_ONE=ON -- test-stats-api; then
    if "$out/stat2-plant/tests/test-stats-api" >"$out/stat2-plant.log" 2>&1; then
      echo "stats-detailed: the planted off-by-one was NOT caught"
      ok=1
    elif grep -q '^\[  FAILED  \] test_stats_malloc_requested_exact_when_detailed$' "$out/stat2-plant.log"; then
      echo "stats-detailed: the planted off-by-one caught by test_stats_malloc_requested_exact_when_detailed"
    else
      echo "stats-detailed: the plant build failed otherwise"; tail -20 "$out/stat2-plant.log"; ok=1
    fi
  else
    ok=1
  fi
  return $ok
}

# memory return's positive controls (docs/memory-return.md): a discard one
# OS page too far, and a block in a hole left on its page's free list, must
# each make the named cases of tests/purge/test-purge-holes.c fail (the
# first also tests/purge/test-purge-tails.c's, a page's tail); an arena
# given back while it holds a live segment, the named case of
# tests/purge/test-purge-reclaim.c
purge_holes_plants() {
  local ok=0 entry plant test cases log c missing
  for entry in "HOLES_PLANT_OVERREACH test-purge-holes test_holes_eager_zero_survivors_intact test_holes_seed_workload_returns_most_survivors_intact" \
    "HOLES_PLANT_LISTED test-purge-holes test_holes_eager_zero_survivors_intact test_holes_seed_workload_returns_most_survivors_intact" \
    "HOLES_PLANT_OVERREACH test-purge-tails test_tails_reused_pages_discarded_blocks_intact" \
    "RECLAIM_PLANT_LIVE_ARENA test-purge-reclaim test_reclaim_empty_arenas_given_back_reserved_exact"; do
    read -r plant test cases <<<"$entry"
    log="$out/purge-plant-$plant.log"
    if ! ci_build "$out/purge-plant-$plant" gcc Release "-DMI_$plant=ON" -- "$test"; then
      ok=1
      continue
    fi
    if "$out/purge-plant-$plant/tests/$test" >"$log" 2>&1; then
      echo "purge-holes-plants: $plant was NOT caught"
      ok=1
      continue
    fi
    missing=""
    for c in $cases; do
      grep -q "^\[  FAILED  \] $c\$" "$log" || missing="$missing $c"
    done
    if [ -z "$missing" ]; then
      echo "purge-holes-plants: $plant caught by $cases"
    else
      echo "purge-holes-plants: $plant failed otherwise (not failed:$missing)"
      tail -20 "$log"
      ok=1
    fi
  done
  return $ok
}

# heap snapshots (docs/heap-snapshot.md): the command-line viewer and the
# reference reader on the committed fixtures, the readers' agreement on
# damaged copies and their planted defects; the HTML viewer in headless
# Chromium on the same fixtures, its screenshots kept
heap_snapshot_viewers() {
  bash tests/snapshot/viewer-cli-test.sh "$out/heap-snapshot/cli" &&
    bash tests/snapshot/html/viewer-html-test.sh "$out/heap-snapshot/screenshots"
}

# ---- The table: job, the jobs it needs, its command ------------------------------

names=()
declare -A needs command
job() { # job NAME "NEEDS..." COMMAND...
  names+=("$1")
  needs[$1]=$2
  shift 2
  command[${names[-1]}]=$(printf '%q ' "$@")
}
# what --list says of a job, and the package groups it installs first
# (ci/install-deps.sh --groups; "build" always): about NAME SECONDS "GROUPS" WHAT
declare -A seconds groups what
about() {
  seconds[$1]=$2
  groups[$1]=$3
  what[$1]=$4
}

job gcc-debug "" matrix gcc-debug gcc Debug
job gcc-release "" matrix gcc-release gcc Release
job clang-release "" matrix clang-release clang Release
job clang-debug "" matrix clang-debug clang Debug
job gcc-secure-release "" matrix gcc-secure-release gcc Release -DMI_SECURE=ON
job clang-secure-debug "" matrix clang-secure-debug clang Debug -DMI_SECURE=ON
# the top of the assertion ladder (docs/architecture.md): heap and segment
# walks at every collection, page set-up and page free
job debug3 "" matrix gcc-debug3 gcc Debug -DMI_DEBUG=3
job debug3-secure "" matrix clang-secure-debug3 clang Debug -DMI_SECURE=ON -DMI_DEBUG=3
job secure-light "gcc-secure-release" secure_light
# fault injection (docs/fault-injection.md): every failure path of the OS
# layer taken (coverage of the default and secure builds, with the knob and
# fallback tests and the single-threaded sweeps), the two-thread sweep, and
# the positive control (a planted unchecked commit the sweep must catch)
job fault-coverage "" bash ci/fault-coverage.sh "$out/fault-coverage"
job fault-sweep-threads "fault-coverage" run_ctest "$out/fault-coverage/default" -R '^fault-sweep-threads$'
job fault-positive-control "" fault_positive_control
job teardown "gcc-debug clang-debug clang-secure-debug" teardown
job override-real-programs "gcc-release" run_ctest "$out/gcc-release" -L override
job override-real-programs-secure "gcc-secure-release" run_ctest "$out/gcc-secure-release" -L override
# real programs' own test suites (docs/real-suites.md): CPython's regression
# tests under the preloaded secure build, each test case's outcome compared
# with glibc's; the control: a planted false alarm must fail the comparison
job real-suite-secure "gcc-secure-release" bash ci/real-suite.sh "$out/real-suite-secure" "$out/gcc-secure-release/libmimalloc-secure.so"
job dhat-profiler "gcc-release" run_ctest "$out/gcc-release" -L dhat
job pprof-profiler "gcc-release gcc-secure-release gcc-debug" pprof_profiler
job memory-events-plants "" memory_events_plants
# sanitizers (docs/sanitizers.md): the core and teardown tests under
# ASan+UBSan with the allocator's poisoning (the fork storm in a clang-19
# build), the threaded and teardown tests under TSan, a subset and a short
# fork storm under memcheck with the allocator's client requests (blocks
# registered, leak check on), and the planted bugs (and leak) each must
# report
job asan "" bash ci/asan.sh "$out/asan"
job tsan "" bash ci/tsan.sh "$out/tsan"
job valgrind "" bash ci/valgrind.sh "$out/valgrind"
# Windows (docs/windows.md): the MinGW-w64 cross build's tests under Wine,
# with the fault sweep injecting Windows error codes, and two planted bugs
# (a thread-exit hook that never runs, an unchecked commit) it must catch
job windows-mingw-wine "" bash ci/windows.sh "$out/windows"
# fuzzing (docs/fuzzing.md): both harnesses for half a minute per engine (the long campaigns are by hand), and the
# planted bugs each engine must find; lint (docs/lint.md): clang-format, the
# layer check, cppcheck and clang-tidy with zero findings and a planted
# finding each
job fuzz-smoke "" bash ci/fuzz.sh "$out/fuzz" 30
# triage (docs/fuzzing.md): two planted bugs found four times each, grouped by
# their dedup keys, reported with their stacks, minimized; with its controls
job fuzz-triage "fuzz-smoke" bash ci/fuzz-triage.sh "$out/fuzz-triage" "$out/fuzz/build"
job lint "" bash ci/lint.sh "$out/lint"
# the install (docs/build.md): the default and the secure build installed side
# by side into one prefix, a downstream project built against each with
# find_package and pkg-config, mimalloc.o and the static override; then
# mimalloc's MI_ CMake options, rejected or reaching the build
job install-and-downstream "gcc-release gcc-secure-release" install_and_downstream
job bench-smoke "gcc-release gcc-secure-release" bench_smoke
job heap-snapshot-viewers "" heap_snapshot_viewers
job stats-detailed "pprof-profiler" stats_detailed
job purge-holes-plants "" purge_holes_plants
job rust-crate "" bash ci/rust.sh "$out/rust-crate"

# seconds: the job's time on the last clean-clone run of the whole suite (2
# cores), the jobs it needs not counted
about gcc-debug 71 "" "build (gcc, Debug) and run the core tests"
about gcc-release 47 "" "build (gcc, Release) and run the core tests"
about clang-release 39 "" "build (clang, Release) and run the core tests"
about clang-debug 88 "" "build (clang, Debug) and run the core tests"
about gcc-secure-release 86 "" "the secure build (gcc, Release) and the core tests"
about clang-secure-debug 95 "" "the secure build (clang, Debug) and the core tests"
about debug3 63 "" "MI_DEBUG=3 (every expensive assertion) and the core tests"
about debug3-secure 98 "" "the secure build with MI_DEBUG=3 and the core tests"
about secure-light 40 "" "the Release secure build's core tests again at MIMALLOC_SECURE_LEVEL=light (those a run-time option can change)"
about fault-coverage 115 "coverage" "fault injection: every failure path of the OS layer taken, with gcov"
about fault-sweep-threads 50 "coverage" "the fault sweep with two threads"
about fault-positive-control 4 "" "a planted unchecked commit the fault sweep must catch"
about teardown 46 "model" "the teardown protocol: forced interleavings, the spin model, planted races"
about override-real-programs 53 "" "real programs under LD_PRELOAD of the default build, output compared"
about override-real-programs-secure 49 "" "the same under the secure build"
about real-suite-secure 350 "real-suites" "CPython's and GLib's own tests under the secure build, against glibc"
about dhat-profiler 9 "dhat" "the DHAT profiler: format, counts, Valgrind's DHAT and its viewer"
about pprof-profiler 70 "pprof" "the sampled heap profiler read by Go pprof and google-pprof, accuracy"
about memory-events-plants 38 "" "the memory events' planted bugs, each caught"
about asan 116 "sanitizers" "the tests under ASan+UBSan with the allocator's poisoning"
about tsan 63 "sanitizers" "the threaded and teardown tests under TSan"
about valgrind 36 "sanitizers" "a subset under memcheck with the allocator's client requests"
about windows-mingw-wine 260 "windows" "the MinGW-w64 build's tests under Wine"
about fuzz-smoke 144 "fuzz" "both fuzz harnesses half a minute per engine, and their planted bugs"
about fuzz-triage 60 "fuzz" "two planted bugs found four times each: grouped by dedup key, reported with stacks, minimized"
about lint 202 "lint" "clang-format, the include and call layer checks, cppcheck, clang-tidy"
about install-and-downstream 28 "" "both builds installed into one prefix, downstream projects built against them"
about bench-smoke 21 "bench" "the bench workloads once, against the peers"
about heap-snapshot-viewers 30 "viewers" "the heap snapshot's readers and HTML viewer"
about stats-detailed 100 "pprof" "MI_STAT=2 builds: exact requested bytes, and their planted bug"
about purge-holes-plants 23 "" "memory returned from used pages: its planted bugs, each caught"
about rust-crate 65 "rust" "the Rust crate: build, tests, doc-tests, with rustc 1.63 too"

# ---- Running it -----------------------------------------------------------------

if [ "${1:-}" = --list ]; then
  printf '%-30s %7s  %-12s %s\n' job seconds installs "what it does (after the jobs it needs)"
  for n in "${names[@]}"; do
    printf '%-30s %7s  %-12s %s%s\n' "$n" "${seconds[$n]:-?}" "${groups[$n]:--}" "${what[$n]:-}" \
      "$([ -n "${needs[$n]}" ] && echo " (needs: ${needs[$n]})")"
  done
  echo "(seconds: on the last clean-clone run of the whole suite, 2 cores; a job runs the jobs it needs first,"
  echo " and installs only the packages of its groups and the build's: ci/install-deps.sh --groups)"
  exit 0
fi
declare -A wanted state
want() { # the job and, first, what it needs
  local n=$1 d
  [ -n "${command[$n]+x}" ] || { echo "ci: no job named $n (ci/test-all.sh --list)"; exit 2; }
  [ -n "${wanted[$n]+x}" ] && return
  for d in ${needs[$n]}; do want "$d"; done
  wanted[$n]=1
}
if [ $# -eq 0 ]; then
  for n in "${names[@]}"; do wanted[$n]=1; done
  rm -rf "$out"
else
  for n in "$@"; do want "$n"; done
fi
mkdir -p "$out"

# every package for the whole suite; for chosen jobs, their groups only
install_groups=()
if [ $# -gt 0 ]; then
  for n in "${names[@]}"; do
    [ -n "${wanted[$n]+x}" ] || continue
    for g in ${groups[$n]:-}; do install_groups+=("$g"); done
  done
  [ ${#install_groups[@]} -gt 0 ] || install_groups=(build)
fi
bash ci/install-deps.sh "${install_groups[@]}" || { echo "ci: dependency install failed"; exit 1; }

passed=0
failed=0
skipped=0
failures=()
for n in "${names[@]}"; do
  [ -n "${wanted[$n]+x}" ] || continue
  blocker=""
  for d in ${needs[$n]}; do
    [ "${state[$d]:-}" = ok ] || { blocker=$d; break; }
  done
  if [ -n "$blocker" ]; then
    state[$n]=skipped
    skipped=$((skipped + 1))
    echo "=== $n: skipped (needs $blocker, which ${state[$blocker]})"
    continue
  fi
  t0=$(date +%s)
  echo "=== $n"
  if eval "${command[$n]}"; then
    state[$n]=ok
    passed=$((passed + 1))
    echo "=== $n: ok ($(($(date +%s) - t0)) s)"
  else
    state[$n]=failed
    failed=$((failed + 1))
    failures+=("$n")
    echo "=== $n: FAILED ($(($(date +%s) - t0)) s)"
  fi
done

echo
for f in "${failures[@]}"; do echo "ci: failed: $f"; done
echo "ci: $passed passed, $failed failed$([ $skipped -gt 0 ] && echo ", $skipped skipped")"
[ "$failed" -eq 0 ] && [ "$skipped" -eq 0 ]
