#!/usr/bin/env bash
# CPython's own regression tests (Debian's libpython3.11-testsuite) run
# twice, on glibc's malloc and with LD_PRELOAD of LIB, and compared test case
# by test case (tests/real-suites/compare-junit.py): any difference fails.
#   run-cpython.sh OUT LIB [MODULES_FILE]
# OUT gets each run's JUnit XML and log (glibc.*, preloaded.*). The modules
# come from MODULES_FILE (default: cpython-modules.txt beside this script).
# PYTHONMALLOC=malloc in both runs, so that every object is a malloc.
# Exits 0 if the runs agree, 1 if they differ, 2 if a run could not be made.
set -uo pipefail
out=$1
lib=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
modules=${3:-$here/cpython-modules.txt}
python=/usr/bin/python3.11 # Debian's, whose tests the package ships
jobs=${REAL_SUITE_JOBS:-3} # docs/real-suites.md: three, the waiting modules first
timeout=${REAL_SUITE_TIMEOUT:-480} # seconds per module (regrtest --timeout): a hang fails, not stalls, the job
mkdir -p "$out"

if [ ! -x "$python" ] || [ ! -f /usr/lib/python3.11/test/libregrtest/main.py ]; then
  echo "real-suite: $python or its tests (libpython3.11-testsuite) missing"
  exit 2
fi
[ -f "$lib" ] || { echo "real-suite: no library $lib"; exit 2; }

# the preloaded library serves the interpreter's malloc
served=$(LD_PRELOAD=$lib PYTHONMALLOC=malloc "$python" "$here/../override/serves-malloc.py" 2>&1)
if [ "${served#* }" != True ]; then
  echo "real-suite: $lib does not serve python's malloc: $served"
  exit 2
fi

# the modules that mostly wait (process pools, signals and timers,
# subprocesses: test_concurrent_futures alone 140 s of a 245 s run) first,
# each on a worker of its own while the others take the rest
slow_first='^(test_concurrent_futures|test_signal|test_io|test_subprocess|test_logging|test_faulthandler|test_selectors)$'
grep -v '^#' "$modules" | grep -v '^$' >"$out/modules.all"
{ grep -E "$slow_first" "$out/modules.all"; grep -vE "$slow_first" "$out/modules.all"; } >"$out/modules.txt"
rm -f "$out/modules.all"
# SIGINT back to its default before regrtest starts: a shell without job
# control starts its background commands with SIGINT ignored, and then
# CPython's SIGINT tests (KeyboardInterrupt) fail in both runs, proving nothing
default_sigint='import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])'
run() { # run NAME MODULES [REGRTEST_ARG...] [-- VAR=VALUE...]: one run, its XML and log in OUT
  local name=$1 mods=$2 t0 rc args=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    args+=("$1")
    shift
  done
  [ $# -gt 0 ] && shift
  t0=$(date +%s)
  rm -f "$out/$name.xml"
  # in its own directory: the tests write scratch files where they run
  mkdir -p "$out/$name.cwd"
  (cd "$out/$name.cwd" && env -u PYTHONPATH -u PYTHONHOME PYTHONMALLOC=malloc "$@" \
    "$python" -c "$default_sigint" "$python" -m test -j"$jobs" --timeout "$timeout" --slowest --junit-xml "$out/$name.xml" -f "$mods" "${args[@]}" \
    >"$out/$name.log" 2>&1 </dev/null)
  rc=$?
  echo "real-suite: $name run: regrtest exit $rc, $(($(date +%s) - t0)) s ($out/$name.log)"
  rm -rf "$out/$name.cwd"
}
compare() { # compare [compare-junit.py ARG...]
  "$python" "$here/compare-junit.py" "$out/glibc.xml" "$out/glibc.log" "$out/preloaded.xml" "$out/preloaded.log" \
    --base=glibc --under="under $(basename "$lib_arg")" "$@"
}
lib_arg=$2
rm -f "$out"/glibc-again*.xml
# Left out of both runs: string_tests' test_find_periodic_pattern draws its
# pattern and text at random, and its reference search disagrees with find()
# when both come out empty (-1 != 0; CPython gh-110160, fixed after 3.11's
# tests here): about once in 10^4 runs of the suite (p 1/10, each side of
# the text 1/2000, 1000 draws, 3 test classes here), in whichever run draws it. One
# clean-clone CI run failed so, in the preloaded run; the other find tests
# stay.
skip=(-i test_find_periodic_pattern)
# both runs at once: CPython's slowest modules mostly sleep (signals, timers,
# subprocesses: the machine's load stays under 1 with one run), so the job
# takes the time of one run (REAL_SUITE_ONE_AT_A_TIME=1: one after the other)
if [ "${REAL_SUITE_ONE_AT_A_TIME:-0}" = 1 ]; then
  run glibc "$out/modules.txt" "${skip[@]}"
  run preloaded "$out/modules.txt" "${skip[@]}" -- LD_PRELOAD="$lib"
else
  run glibc "$out/modules.txt" "${skip[@]}" &
  run preloaded "$out/modules.txt" "${skip[@]}" -- LD_PRELOAD="$lib" &
  wait
fi
compare --differing "$out/differing.txt" >"$out/compare-first.log"
rc=$?
if [ "$rc" -ne 1 ] || [ "${REAL_SUITE_AGAIN:-2}" -eq 0 ]; then
  cat "$out/compare-first.log"
  exit "$rc"
fi
# glibc's own flakes: the differing cases run again on glibc
# (REAL_SUITE_AGAIN times, default 2); a case whose outcome under the
# library glibc gives too is not counted
again=()
for i in $(seq "${REAL_SUITE_AGAIN:-2}"); do
  run "glibc-again$i" "$out/differing.txt.modules" --matchfile "$out/differing.txt"
  again+=(--base-again "$out/glibc-again$i.xml")
done
compare "${again[@]}"
