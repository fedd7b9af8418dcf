#!/usr/bin/env bash
# Fault-injection coverage: build the default and the secure library with the
# fault hooks and gcov instrumentation, run the fault tests (knobs, fallbacks,
# sweeps) on each, and list every failure path of the OS layer and its callers
# with whether the tests executed it (ci/fault-paths.py).
# Usage: ci/fault-coverage.sh OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: fault-coverage.sh OUT_DIR}
mkdir -p "$out"
jobs=()
for variant in default secure; do
  dir="$out/$variant"
  secure=OFF
  [ "$variant" = secure ] && secure=ON
  CC=gcc cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DMI_BUILD_TESTS=ON -DMI_FAULT=ON -DMI_SECURE=$secure \
    -DCMAKE_C_FLAGS="--coverage -DMI_TEST_COVERAGE=1" -DCMAKE_EXE_LINKER_FLAGS="--coverage" -DCMAKE_SHARED_LINKER_FLAGS="--coverage" \
    >"$dir.configure.log" 2>&1
  # the two programs the fault tests run (fault-sweep-threads, a job of its
  # own, runs the default build's fault-sweep too), not every test
  cmake --build "$dir" -j2 --target test-fault fault-sweep >"$dir.build.log" 2>&1 || { tail -30 "$dir.build.log"; exit 1; }
  # the knobs and fallbacks, and the single-threaded sweeps (the two-thread
  # sweep adds interleavings, not paths: it runs in the fault step); two at
  # a time, each sweep single-threaded (libgcov locks a .gcda file while it
  # merges into it, so two processes' counts add up)
  (cd "$dir" && ctest --output-on-failure -j2 -R '^(test-fault|fault-sweep|fault-sweep-arena)$')
  # the library's objects only (the tests link the static one): test objects
  # carry their own copies of the inline helpers, which gcovr cannot merge
  gcovr -r "$root" --filter "$root/src/" --json "$out/$variant.json" "$dir/CMakeFiles/mimalloc-static.dir" >/dev/null
  jobs+=("$out/$variant.json")
done
status=0
python3 "$root/ci/fault-paths.py" "$root" "${jobs[@]}" --require-all >"$out/fault-paths.txt" || status=$?
cat "$out/fault-paths.txt"
exit $status
