#!/usr/bin/env bash
# The Windows build: cross-compiled with MinGW-w64 (cmake/mingw-w64.cmake),
# Debug with the fault hooks, and its whole test suite run by ctest under
# Wine (with the pprof sampler's: tests/pprof/test-prof-api.c, and
# tests/pprof/win_check.py on the profiles of tests/pprof/win-sites.c, whose
# frames must map to their modules and, by the MinGW addr2line, to the site
# functions); then the positive controls, each a planted bug a Windows test
# must fail on, seen failing by its message:
# - MI_WIN_PLANT_THREAD_LEAK: the thread-exit hook never runs (what happens
#   when a MinGW build's TLS callback is not linked in); the 10,000-thread
#   test must see committed memory grow;
# - MI_FAULT_PLANT_UNCHECKED: a commit result ignored; the fault sweep, with
#   Windows error codes injected, must catch it;
# - win_check.py --plant-unrebased: the checker takes a frame's run-time
#   address for its address in the file (the rebasing forgotten); on the
#   relocated win-sites-lib.dll it must name no site function.
# Then the Release builds, default and secure: warnings are errors, and the
# pprof sampler's tests run in each (test-prof-api, test-prof-limits,
# test-prof-resize, and win_check.py on both programs).
# Usage: ci/windows.sh OUTDIR. docs/windows.md, docs/pprof.md.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: ci/windows.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
t0=$(date +%s)

wine=/usr/lib/wine/wine64
wineserver=/usr/lib/wine/wineserver
[ -x "$wineserver" ] || wineserver=$(command -v wineserver || true)
if [ ! -x "$wine" ] || [ -z "$wineserver" ] || ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
  echo "windows: needs wine64 and gcc-mingw-w64-x86-64 (ci/install-deps.sh)"
  exit 1
fi

# one prefix and one persistent wineserver for every test of the run
export WINEPREFIX=$out/wine-prefix WINEDEBUG=-all
# the Go pprof the pprof checks build offline once, shared by the builds
export MI_PPROF_TOOLS=${MI_PPROF_TOOLS:-$out/pprof-tools}
mkdir -p "$WINEPREFIX"
"$wineserver" -p
trap '"$wineserver" -k 2>/dev/null; "$wineserver" -w 2>/dev/null' EXIT

configure_build() { # configure_build DIR "TARGET..." [cmake args...]
  local dir=$1 targets
  read -ra targets <<<"$2"
  shift 2
  cmake -S "$root" -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/mingw-w64.cmake" -DCMAKE_BUILD_TYPE=Debug \
    -DMI_FAULT=ON -DMI_BUILD_TESTS=ON "$@" >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j2 --target "${targets[@]}" >"$dir.build.log" 2>&1 ||
    { tail -40 "$dir.configure.log" "$dir.build.log" 2>/dev/null; return 1; }
}

ok=0
echo "--- windows: build (MinGW-w64, Debug, fault hooks)"
if configure_build "$out/build" all; then
  # the first Wine start creates the prefix: not inside a test's timeout
  "$wine" cmd /c exit >/dev/null 2>&1 || true
  echo "--- windows: ctest under Wine"
  (cd "$out/build" && ctest --output-on-failure -j2) | tee "$out/ctest.log" || ok=1
  # the figures of the passing tests (ctest shows only failures' output)
  echo "--- windows: figures"
  grep -hE "^(thread-exit:|win-path:|large pages|huge pages|VirtualAlloc2|fault-sweep: (threads=|[0-9]+ runs)|win_check: (proto|text) )" \
    "$out/build/Testing/Temporary/LastTest.log" || true
else
  ok=1
fi

# the pprof checker's positive control: the rebasing of a frame's address
# forgotten, on the relocated DLL's frames; it must fail there, on frame 0
# of the samples, each line the checker's own
echo "--- windows: positive control: the profile's frames not rebased (win_check.py --plant-unrebased)"
if [ -f "$out/build/tests/win-sites-dll.exe" ]; then
  log=$out/plant-unrebased.log
  python3 "$root/tests/pprof/win_check.py" --run "$out/build/tests/win-sites-dll.exe" --out "$out/plant-unrebased" \
    --relocated win-sites-lib.dll --plant-unrebased --formats proto >"$log" 2>&1
  rc=$?
  re_frame="^win_check: FAIL: proto win-sites-dll\.pb\.gz: frame 0 of sample [0-9]+: 0x[0-9a-f]+ in win-sites-lib\.dll resolves to '[^']*' \(file address 0x[0-9a-f]+\), not a site function$"
  re_reloc="^win_check: proto win-sites-dll\.pb\.gz: win-sites-lib\.dll loaded at 0x[0-9a-f]+, its ImageBase 0x140000000: relocated$"
  if [ $rc -eq 1 ] && [ "$(grep -cE "$re_frame" "$log")" -eq 7 ] && grep -qE "$re_reloc" "$log" &&
    grep -qE '^win_check: REJECTED \([0-9]+ failures\)$' "$log"; then
    echo "windows: positive control caught: $(grep -m1 -E "$re_frame" "$log" | cut -c1-200)"
  else
    echo "windows: positive control NOT caught (exit $rc; want exit 1 and frame 0 of all 7 samples unresolved):"
    tail -30 "$log"
    ok=1
  fi
else
  echo "windows: positive control not run: no win-sites-dll.exe in the Debug build"
  ok=1
fi

echo "--- windows: positive control: thread-exit hook planted away"
dir=$out/plant-thread-leak
if configure_build "$dir" test-thread-exit -DMI_WIN_PLANT_THREAD_LEAK=ON; then
  log=$out/plant-thread-leak.log
  if "$root/cmake/wine-run.sh" "$dir/tests/test-thread-exit.exe" >"$log" 2>&1; then
    echo "windows: positive control NOT caught: test-thread-exit passed with the exit hook planted away"
    ok=1
  elif grep -q "committed .* bytes, more than" "$log"; then
    echo "windows: positive control caught: $(grep -m1 'committed .* bytes, more than' "$log")"
  else
    echo "windows: positive control failed without the expected message:"
    tail -20 "$log"
    ok=1
  fi
else
  ok=1
fi

echo "--- windows: positive control: unchecked commit planted"
dir=$out/plant-unchecked
if configure_build "$dir" fault-sweep -DMI_FAULT_PLANT_UNCHECKED=ON; then
  log=$out/plant-unchecked.log
  "$root/cmake/wine-run.sh" "$dir/tests/fault-sweep.exe" --arena --kind commit --expect-failure >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q "positive control: the planted bug was caught" "$log"; then
    echo "windows: positive control caught: $(grep -m1 'nth=.*failed' "$log" | cut -c1-160)"
  else
    echo "windows: positive control NOT caught (exit $rc):"
    tail -20 "$log"
    ok=1
  fi
else
  ok=1
fi

# ETW allocation events (MI_TRACK_ETW, docs/windows.md): Wine has no ETW
# session, so a build routes the three ETW calls through the library's
# recording stub and tests/win/test-etw.c checks each event's descriptor
# and payload (allocation, free, reallocation, aligned block); its positive
# control plants the allocation event's id wrong (102), which the test must
# fail on, seen on the failing test's line and the id compared
echo "--- windows: ETW events through the recording stub"
dir=$out/etw-stub
if configure_build "$dir" test-etw -DMI_TRACK_ETW=ON -DMI_TRACK_ETW_STUB=ON; then
  log=$out/etw-stub.log
  if "$root/cmake/wine-run.sh" "$dir/tests/test-etw.exe" >"$log" 2>&1; then
    echo "windows: test-etw: $(grep -E '^\[  PASSED  \]' "$log" | tr -d '\r')"
  else
    echo "windows: test-etw FAILED:"
    grep -E '^\[  (FAILED|PASSED) +\]|error' "$log" | head -20
    ok=1
  fi
else
  ok=1
fi
echo "--- windows: positive control: the ETW allocation event's id planted wrong"
dir=$out/plant-etw-id
if configure_build "$dir" test-etw -DMI_TRACK_ETW=ON -DMI_TRACK_ETW_STUB=ON -DMI_TRACK_ETW_PLANT_ID=ON; then
  log=$out/plant-etw-id.log
  "$root/cmake/wine-run.sh" "$dir/tests/test-etw.exe" >"$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && grep -qE '^\[  FAILED  \] test_etw_alloc_event_100_descriptor_and_payload_exact' "$log" &&
    grep -qE 'error: 102 \(0x66\) != 100 \(0x64\)' "$log"; then
    echo "windows: positive control caught: $(grep -m1 -E 'error: 102 \(0x66\) != 100' "$log" | tr -d '\r' | cut -c1-160)"
  else
    echo "windows: positive control NOT caught (exit $rc):"
    tail -20 "$log"
    ok=1
  fi
else
  ok=1
fi
# the real provider: the library imports ETW's calls from advapi32, and
# registers under Wine (which accepts it and never enables it)
echo "--- windows: ETW through advapi32 (Release)"
dir=$out/etw-release
if configure_build "$dir" "mimalloc mimalloc-static test-api" -DCMAKE_BUILD_TYPE=Release -DMI_FAULT=OFF -DMI_TRACK_ETW=ON; then
  imports=$(x86_64-w64-mingw32-objdump -p "$dir/libmimalloc.dll" | grep -cE '^\s+[0-9a-f]+\s+[0-9]+\s+Event(Register|Write|Unregister)$')
  if [ "$imports" -eq 3 ] && "$root/cmake/wine-run.sh" "$dir/tests/test-api.exe" >"$out/etw-release.log" 2>&1; then
    echo "windows: ETW Release build: EventRegister, EventWrite, EventUnregister imported; test-api passes"
  else
    echo "windows: ETW Release build FAILED ($imports of 3 ETW calls imported):"
    tail -20 "$out/etw-release.log" 2>/dev/null
    ok=1
  fi
else
  ok=1
fi

# Release builds, default and secure: the fault hooks compile out there, and
# with them uses of variables the Debug build's warnings never miss; the
# libraries, and the pprof sampler's tests in each
for variant in "release:" "secure-release:-DMI_SECURE=ON"; do
  name=${variant%%:*}
  dir=$out/build-$name
  echo "--- windows: $name build (warnings are errors)"
  # the later -D settings override configure_build's Debug ones
  build_targets="mimalloc mimalloc-static test-prof-api test-prof-limits test-prof-resize win-sites win-sites-dll"
  [ "$name" = secure-release ] && build_targets="$build_targets report-misuse"
  # shellcheck disable=SC2086
  if configure_build "$dir" "$build_targets" -DCMAKE_BUILD_TYPE=Release -DMI_FAULT=OFF ${variant#*:}; then
    echo "--- windows: $name: pprof sampler"
    for t in test-prof-api test-prof-limits test-prof-resize; do
      log=$out/$name-$t.log
      if "$root/cmake/wine-run.sh" "$dir/tests/$t.exe" >"$log" 2>&1; then
        echo "windows: $name: $t: $(grep -E '^\[  (PASSED|SKIPPED) +\]' "$log" | tr -d '\r' | tr '\n' ' ')"
      else
        echo "windows: $name: $t FAILED:"
        grep -E '^\[  (FAILED|PASSED|SKIPPED) +\]|error' "$log" | head -20
        ok=1
      fi
    done
    if [ "$name" = secure-release ]; then
      # the secure build's reports: each misuse's lines and stacks, with and
      # without the blocks' stacks; then the checker's planted wrong reports
      echo "--- windows: $name: secure reports"
      for mode in "" --control; do
        log=$out/$name-reports${mode}.log
        # shellcheck disable=SC2086
        if python3 "$root/tests/win/check_win_reports.py" "$dir/tests/report-misuse.exe" $mode >"$log" 2>&1; then
          sed "s/^/windows: $name: /" "$log"
        else
          echo "windows: $name: check_win_reports.py $mode FAILED:"
          cat "$log"
          ok=1
        fi
      done
    fi
    for prog in win-sites:"" win-sites-dll:"--relocated win-sites-lib.dll"; do
      log=$out/$name-${prog%%:*}.log
      # shellcheck disable=SC2086
      if python3 "$root/tests/pprof/win_check.py" --run "$dir/tests/${prog%%:*}.exe" --out "$out/$name-${prog%%:*}" \
        ${prog#*:} >"$log" 2>&1; then
        grep -E '^win_check: (proto|text) .*samples' "$log" | sed "s/^/windows: $name: /"
      else
        echo "windows: $name: win_check.py ${prog%%:*} FAILED:"
        grep -E '^win_check: (FAIL|REJECTED)' "$log" | head -20
        ok=1
      fi
    done
  else
    ok=1
  fi
done

echo "--- windows: $( [ $ok -eq 0 ] && echo ok || echo FAILED ) in $(( $(date +%s) - t0 )) s"
exit $ok
