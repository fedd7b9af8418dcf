#!/usr/bin/env bash
# Fuzz smoke (docs/fuzzing.md): builds both harnesses for libFuzzer and
# AFL++, runs a campaign of SECONDS per harness and engine (the two engines
# side by side, one core each), fails on any crash and keeps the crashing
# inputs in OUT_DIR/crashes/, then runs the positive controls: the planted
# use-after-free (fuzz-alloc) and the planted undetected misuse (fuzz-secure)
# must each be found by both engines within a budget of executions (not of
# time: PLANT_EXECS_* below). Before the campaigns,
# the memory gate: the same inputs run again and again in one process must
# not grow its memory (and its planted leak must fail it).
#   ci/fuzz.sh OUT_DIR [SECONDS]     (CI: 30; hours by hand)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:?usage: ci/fuzz.sh OUT_DIR [SECONDS]}
secs=${2:-60}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/crashes" "$out/controls" "$out/runs" && mkdir -p "$out/crashes" "$out/controls" "$out/runs"

bash fuzz/build.sh "$out/build" || { echo "fuzz: build failed"; exit 1; }
bin=$out/build/bin
dict=$root/fuzz/alloc.dict

# ASan: the allocator's segments are plain mappings LeakSanitizer does not
# scan (docs/sanitizers.md); AFL++ wants aborts and no symbolizer in the loop
export ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=1:abort_on_error=1:symbolize=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
# AFL++ in a container: no CPU governor to read, any core, no UI, and no
# complaint about a core_pattern that pipes to a handler (crashes are still
# seen: they are signals of the child)
export AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1

# Crashing inputs go to $out/crashes/ENGINE-NAME/ (campaigns) or
# $out/controls/ENGINE-NAME/ (the planted bugs, expected to crash).
saved() { # saved NAME: where the crashing inputs of a run go
  case $1 in *-plant) echo "$out/controls" ;; *) echo "$out/crashes" ;; esac
}

# The positive controls' campaigns end at their first crash (libFuzzer's
# own way; AFL++ with AFL_BENCH_UNTIL_CRASH) or after this many executions,
# whatever the time. They were given SECONDS: on a loaded 2-core machine the
# secure plant took libFuzzer up to 5,504 executions (41 runs; up to 91 s)
# and AFL++ up to 15,383 (41 runs; up to 58 s), against the 60 s CI gave its campaigns then; the
# use-after-free plant, since it reads only right after a free, up to 5,022
# and 18,828 (30 runs each; up to 82 s). Budgets of 7 and 5 times the worst
# counts; a plant nothing finds any more costs about 10 minutes at CI's
# rates before the job fails (docs/fuzzing.md).
PLANT_EXECS_LIBFUZZER=40000
PLANT_EXECS_AFL=100000

# libfuzzer NAME BINARY SEEDS: one campaign, stopped by its first crash
libfuzzer() {
  local name=$1 binary=$2 seeds=$3 dir=$out/runs/libfuzzer-$1 dest limit
  dest=$(saved "$name")/libfuzzer-$name
  limit=-max_total_time="$secs"
  case $name in *-plant) limit=-runs=$PLANT_EXECS_LIBFUZZER ;; esac
  mkdir -p "$dir/corpus" "$dest"
  cp "$seeds"/* "$dir/corpus/"
  local t0=$SECONDS rc
  "$binary" "$limit" -max_len=4096 -timeout=60 -rss_limit_mb=4096 -detect_leaks=0 \
    -dict="$dict" -print_final_stats=1 -artifact_prefix="$dest/" "$dir/corpus" >"$dir.log" 2>&1
  rc=$?
  echo "$((SECONDS - t0))" >"$dir.seconds"
  return $rc
}

# afl NAME BINARY SEEDS [env...]: one campaign; its fuzzer_stats tell the outcome
afl() {
  local name=$1 binary=$2 seeds=$3 dir=$out/runs/afl-$1 dest limit
  shift 3
  dest=$(saved "$name")/afl-$name
  limit=(-V "$secs")
  case $name in *-plant) limit=(-E "$PLANT_EXECS_AFL") ;; esac
  # AFL++ drops the target's output: the harness's messages and ASan's
  # reports go to files, for crashes that do not reproduce alone
  env FZ_FAIL_LOG="$dir.failures" ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$dir.asan" "$@" afl-fuzz -i "$seeds" -o "$dir" "${limit[@]}" -x "$dict" -m none -t 10000 -- "$binary" >"$dir.log" 2>&1
  local crashes=$dir/default/crashes
  if ls "$crashes"/id:* >/dev/null 2>&1; then
    mkdir -p "$dest" && cp "$crashes"/id:* "$dest/"
  fi
}

stat_of() { # stat_of FILE KEY: a value of AFL++'s fuzzer_stats
  sed -n "s/^$2 *: *//p" "$1" 2>/dev/null | head -1
}

# afl-fuzz exits 0 even when it saved crashes: the count is in fuzzer_stats
# (saved_crashes in AFL++ 4.x, unique_crashes before)
afl_crashes() {
  local stats=$out/runs/afl-$1/default/fuzzer_stats n
  [ -f "$stats" ] || { echo "-1"; return; }
  n=$(stat_of "$stats" saved_crashes)
  [ -n "$n" ] || n=$(stat_of "$stats" unique_crashes)
  echo "${n:--1}"
}

afl_summary() {
  local stats=$out/runs/afl-$1/default/fuzzer_stats
  echo "fuzz: afl $1: execs_per_sec $(stat_of "$stats" execs_per_sec), execs $(stat_of "$stats" execs_done)," \
    "bitmap_cvg $(stat_of "$stats" bitmap_cvg), edges_found $(stat_of "$stats" edges_found)," \
    "stability $(stat_of "$stats" stability), saved_crashes $(afl_crashes "$1"), saved_hangs $(stat_of "$stats" saved_hangs)"
}

libfuzzer_summary() {
  local log=$out/runs/libfuzzer-$1.log
  local last execs rate
  last=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$log" | tail -1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  echo "fuzz: libfuzzer $1: exec/s $rate, execs $execs, $(echo "$last" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9a-zA-Z]+')"
}

status=0

# ---- Memory gate: no state retained from input to input (fuzz/replay.c) -------
# One process runs the seeds and 24 generated programs 18 times, its address
# hints aged to where hours of campaign leave them; the last 6 passes must
# peak, and leave the RSS, within 22 MB of the first 6 (a retention of more
# than 3.1 MB a pass fails it; 3.2 with 12 passes within 16 MB). ASan's
# shadow settles by steps, to levels 80 to 111 MB of RSS, and a step may
# come as late as pass 18: with 12 passes, first 4 against last 4, within
# 16 MB, a loaded machine failed 1 run in 40 with nothing retained (17 MB);
# 18 passes, 6 against 6, came to at most 14.7 MB in 61 runs there
# (docs/fuzzing.md). ASan's quarantine of libc blocks (the driver's,
# glibc's) fills to its own bound over a campaign: ASan's, bounded, and left out here
# (quarantine_size_mb=0). Positive control: the seeds, 6 passes, with the
# planted leak (1 MiB kept per input) must fail it.
# Without transparent huge pages: with them, what stays resident depends on
# which 2 MiB ranges the inputs touched and on what the allocator has learnt
# of their density by then (src/os/os-thp.c), so the rss after a pass moved by
# 30 MB between passes with nothing retained (80 to 111 MB; 84 to 90 without).
gate() { # gate BINARY SEEDS REPLAY-ARGS...: the replay's exit status
  local binary=$1 seeds=$2
  shift 2
  # a check that fails mid-pass leaves the input it ran in $binary.input
  FZ_REPLAY_SAVE="$out/runs/$binary.input" MIMALLOC_ALLOW_THP=0 ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=0" \
    "$bin/$binary" -a -m 22 -l 1024 "$@" "$seeds" >"$out/runs/$binary.log" 2>&1
}
t0=$(date +%s)
for h in alloc secure; do
  gate "replay-$h" "$root/fuzz/corpus/$h" -p 18 -g 24
  rc=$?
  echo "fuzz: memory gate $h: $(grep '^replay: \(ok\|FAILED\)' "$out/runs/replay-$h.log" | cut -c9-)"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: memory gate $h: FAILED (exit $rc); passes in $out/runs/replay-$h.log:"
    [ -f "$out/runs/replay-$h.input" ] && echo "fuzz: memory gate $h: the input that ran: $out/runs/replay-$h.input"
    grep -E '^(replay|fuzz):' "$out/runs/replay-$h.log" | tail -8
    status=1
  fi
  gate "replay-$h-leak" "$root/fuzz/corpus/$h" -p 6
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q '^replay: FAILED' "$out/runs/replay-$h-leak.log"; then
    echo "fuzz: memory gate positive control $h-leak: fails as it must"
  else
    echo "fuzz: memory gate positive control $h-leak: NOT failed (exit $rc): the gate cannot see a leak"
    tail -8 "$out/runs/replay-$h-leak.log"
    status=1
  fi
done
echo "fuzz: memory gate: $(($(date +%s) - t0)) s"

# ---- Campaigns: every crash fails the job -------------------------------------
for h in alloc secure; do
  t0=$(date +%s)
  libfuzzer "$h" "$bin/libfuzzer-$h" "$root/fuzz/corpus/$h" &
  lf=$!
  afl "$h" "$bin/afl-$h" "$root/fuzz/corpus/$h"
  wait $lf
  lf_status=$?
  libfuzzer_summary "$h"
  afl_summary "$h"
  # libFuzzer also writes the inputs it found slow (slow-unit-*: over 10 s,
  # which a loaded machine can make of any input): not findings; nor are the
  # crash-* files the harness's forked children write (they run with
  # libFuzzer's handlers; replayed, they reproduce nothing): a finding is the
  # campaign's own, named in its log. (The test this replaces, ls of four
  # globs, failed whenever one of them matched nothing, so it never fired.)
  if [ "$lf_status" -ne 0 ] || grep -q 'Test unit written to .*/\(crash\|leak\|timeout\|oom\)-' "$out/runs/libfuzzer-$h.log"; then
    echo "fuzz: libfuzzer $h: CRASH (exit $lf_status); reproducers in $out/crashes/libfuzzer-$h/:"
    grep -E '^(==[0-9]+==ERROR|fuzz: model mismatch|SUMMARY)' "$out/runs/libfuzzer-$h.log" | head -5
    status=1
  fi
  n=$(afl_crashes "$h")
  if [ "$n" != "0" ]; then
    echo "fuzz: afl $h: $n crashes saved (or no stats: -1); reproducers in $out/crashes/afl-$h/"
    cat "$out/runs/afl-$h.failures" 2>/dev/null | head -5
    grep -hE '^==[0-9]+==ERROR' "$out/runs/afl-$h.asan".* 2>/dev/null | head -5
    status=1
  fi
  # A hang under a 10 s limit on a loaded machine is not yet a finding: a
  # saved hang that still does not finish in 120 s is (a deadlock).
  for hang in "$out/runs/afl-$h/default/hangs"/id:*; do
    [ -e "$hang" ] || continue
    timeout 120 "$bin/afl-$h" "$hang" >/dev/null 2>&1
    # (the status of timeout itself: after `! cmd`, $? is the negation, and
    # the test written `if ! timeout ... && [ $? -eq 124 ]` never fired)
    if [ $? -eq 124 ]; then
      echo "fuzz: afl $h: input hangs (over 120 s): $hang"
      mkdir -p "$out/crashes/afl-$h-hangs" && cp "$hang" "$out/crashes/afl-$h-hangs/"
      status=1
    fi
  done
  echo "fuzz: $h campaigns: $(($(date +%s) - t0)) s"
done

# ---- Positive controls: each planted bug must be found by each engine ----------
# The report is checked by reproducing the saved input with the harness, so
# that what was found is the plant and nothing else.
# (a freed huge block's memory goes back to the OS at once: reading it is
# ASan's SEGV report, from the same planted read)
uaf_header='^==[0-9]+==ERROR: AddressSanitizer: (heap-use-after-free|use-after-poison|SEGV on unknown address)'
undetected_line='^fuzz: model mismatch: secure build: case 15 '

control() { # control ENGINE HARNESS HEADER WHERE: the report's header line, and where the plant is
  local engine=$1 h=$2 pattern=$3 where=$4 input="" log=$out/runs/control-$1-$2.reproduce.log
  # libFuzzer names the input it stopped on in its log (the crash-* line:
  # a slow-unit-* line may come first on a loaded machine); the directory may
  # also hold crash-* files that the harness's forked children write (they run
  # with libFuzzer's handlers) and that reproduce nothing
  local run=$out/runs/$engine-$h-plant effort
  if [ "$engine" = libfuzzer ]; then
    input=$(sed -n 's/.*Test unit written to \([^ ]*\/crash-[^ ]*\).*/\1/p' "$run.log" 2>/dev/null | head -1)
    effort="$(sed -n 's/^stat::number_of_executed_units: *//p' "$run.log") executions, $(cat "$run.seconds" 2>/dev/null) s"
  else
    input=$(ls "$out/controls/$engine-$h-plant"/* 2>/dev/null | head -1)
    effort="$(stat_of "$run/default/fuzzer_stats" execs_done) executions, $(stat_of "$run/default/fuzzer_stats" run_time) s"
  fi
  if [ -z "$input" ]; then
    echo "fuzz: positive control $engine $h-plant: NOT found in $effort"
    status=1
    return
  fi
  "$bin/$engine-$h-plant" "$input" >"$log" 2>&1
  if grep -Eq "$pattern" "$log" && grep -Eq "$where" "$log"; then
    echo "fuzz: positive control $engine $h-plant: found in $effort ($(grep -Em1 "$pattern" "$log" | cut -c1-100))"
  else
    echo "fuzz: positive control $engine $h-plant: the saved input does not reproduce the plant:"
    tail -20 "$log"
    status=1
  fi
}

t0=$(date +%s)
for h in alloc secure; do
  libfuzzer "$h-plant" "$bin/libfuzzer-$h-plant" "$root/fuzz/corpus/$h" &
  lf=$!
  afl "$h-plant" "$bin/afl-$h-plant" "$root/fuzz/corpus/$h" AFL_BENCH_UNTIL_CRASH=1
  wait $lf
done
# symbolized stacks for the reproductions (the function names are matched)
export ASAN_OPTIONS=${ASAN_OPTIONS/symbolize=0/symbolize=1}
in_plant='^ +#[0-9]+ .* in fz_op_reserved '
control libfuzzer alloc "$uaf_header" "$in_plant"
control afl alloc "$uaf_header" "$in_plant"
control libfuzzer secure "$undetected_line" "$undetected_line"
control afl secure "$undetected_line" "$undetected_line"
echo "fuzz: positive controls: $(($(date +%s) - t0)) s"

[ "$status" -eq 0 ] && echo "fuzz: ok" || echo "fuzz: FAILED"
exit $status
