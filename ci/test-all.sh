#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds every configuration of
# the matrix, runs the tests of each, the real-program override run, a
# downstream find_package/pkg-config build against the installed tree, and the
# bench smoke. Prints one closing line "ci: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${CI_OUT:-$root/out/ci}
rm -rf "$out" && mkdir -p "$out"

bash ci/install-deps.sh || { echo "ci: dependency install failed"; exit 1; }

passed=0
failed=0
failures=()
step() { # step NAME COMMAND...: run, time, count
  local name=$1
  shift
  local t0=$(date +%s)
  echo "=== $name"
  if "$@"; then
    passed=$((passed + 1))
    echo "=== $name: ok ($(( $(date +%s) - t0 )) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== $name: FAILED ($(( $(date +%s) - t0 )) s)"
  fi
}

build() { # build DIR CC [cmake args...]
  local dir=$1 cc=$2
  shift 2
  CC=$cc cmake -S "$root" -B "$dir" -DMI_BUILD_TESTS=ON "$@" >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j2 >"$dir.build.log" 2>&1 ||
    { tail -50 "$dir.configure.log" "$dir.build.log" 2>/dev/null; return 1; }
}

run_ctest() { # run_ctest DIR [ctest args...]
  local dir=$1
  shift
  (cd "$dir" && ctest --output-on-failure "$@")
}

matrix() { # matrix NAME CC [cmake args...]: build and run the core tests
  local name=$1 cc=$2
  shift 2
  build "$out/$name" "$cc" "$@" && run_ctest "$out/$name" -L core
}

matrix_label() { # matrix_label NAME CC LABEL [cmake args...]: build and run the tests of one label
  local name=$1 cc=$2 label=$3
  shift 3
  build "$out/$name" "$cc" "$@" && run_ctest "$out/$name" -L "$label"
}

step "gcc-debug" matrix gcc-debug gcc -DCMAKE_BUILD_TYPE=Debug
step "gcc-release" matrix gcc-release gcc -DCMAKE_BUILD_TYPE=Release
step "clang-release" matrix clang-release clang -DCMAKE_BUILD_TYPE=Release
step "clang-debug" matrix clang-debug clang -DCMAKE_BUILD_TYPE=Debug
step "gcc-secure-release" matrix gcc-secure-release gcc -DCMAKE_BUILD_TYPE=Release -DMI_SECURE=ON
step "clang-secure-debug" matrix clang-secure-debug clang -DCMAKE_BUILD_TYPE=Debug -DMI_SECURE=ON
# fault injection: every failure path of the OS layer taken (coverage of the
# default and secure builds, with the knob and fallback tests and the
# single-threaded sweeps), the two-thread sweep, and the positive control (a
# planted unchecked commit the sweep must catch)
step "fault-coverage" bash ci/fault-coverage.sh "$out/fault-coverage"
step "fault-sweep-threads" run_ctest "$out/fault-coverage/default" -R '^fault-sweep-threads$'
step "fault-positive-control" matrix_label fault-plant gcc fault -DCMAKE_BUILD_TYPE=Debug -DMI_FAULT=ON \
  -DMI_FAULT_PLANT_UNCHECKED=ON
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
  { CC=gcc cmake -S "$root" -B "$dir" -DMI_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=Debug "-D$switch=ON" "$@" \
      >"$dir.configure.log" 2>&1 && cmake --build "$dir" -j2 --target test-teardown >"$dir.build.log" 2>&1 &&
      run_ctest "$dir" -L '^teardown-plant$'; } || { tail -20 "$dir.configure.log" "$dir.build.log" 2>/dev/null; return 1; }
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
step "teardown" teardown
step "override-real-programs" run_ctest "$out/gcc-release" -L override
step "override-real-programs-secure" run_ctest "$out/gcc-secure-release" -L override
step "dhat-profiler" run_ctest "$out/gcc-release" -L dhat
# sanitizers (docs/sanitizers.md): the core and teardown tests under
# ASan+UBSan with the allocator's poisoning (the fork storm in a clang-19
# build), the threaded and teardown tests under TSan, a subset and a short
# fork storm under memcheck with the allocator's client requests (blocks
# registered, leak check on), and the planted bugs (and leak) each must
# report
step "asan" bash ci/asan.sh "$out/asan"
step "tsan" bash ci/tsan.sh "$out/tsan"
step "valgrind" bash ci/valgrind.sh "$out/valgrind"
# Windows (docs/windows.md): the MinGW-w64 cross build's tests under Wine,
# with the fault sweep injecting Windows error codes, and two planted bugs
# (a thread-exit hook that never runs, an unchecked commit) it must catch
step "windows-mingw-wine" bash ci/windows.sh "$out/windows"
# fuzzing (docs/fuzzing.md): both harnesses for a minute per engine, and the
# planted bugs each engine must find; lint (docs/lint.md): clang-format,
# cppcheck and clang-tidy with zero findings and a planted finding each
step "fuzz-smoke" bash ci/fuzz.sh "$out/fuzz" 60
step "lint" bash ci/lint.sh "$out/lint"
step "install-and-downstream" bash tests/downstream/run.sh "$out/gcc-release" "$out/downstream"
step "bench-smoke" env BENCH_OUT="$out/bench" OURS_LIB="$out/gcc-release/libmimalloc.so" \
  OURS_SECURE_LIB="$out/gcc-secure-release/libmimalloc-secure.so" bash bench/run.sh --smoke

echo
for f in "${failures[@]}"; do echo "ci: failed: $f"; done
echo "ci: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
