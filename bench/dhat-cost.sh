#!/usr/bin/env bash
# The heap profiler's cost on the bench workloads: wall time with our library
# preloaded and the profiler idle, on (frame-pointer stacks) and on with
# MIMALLOC_DHAT_BACKTRACE=1 (unwind-table stacks), as the minimum of RUNS runs;
# and Valgrind's DHAT against an unprofiled run on one workload at a smaller
# scale (DHAT takes minutes at full scale). Prints a markdown table.
# usage: bash bench/dhat-cost.sh /path/to/libmimalloc.so
# env: RUNS (3), SCALE (0.5), VG_SCALE (0.05), WORKLOADS ("churn randsizes realloc xthread")
set -u
LIB="${1:?usage: $0 libmimalloc.so}"
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
HERE="$(cd "$(dirname "$0")" && pwd)"
RUNS="${RUNS:-3}"
SCALE="${SCALE:-0.5}"
VG_SCALE="${VG_SCALE:-0.05}"
WORKLOADS="${WORKLOADS:-churn randsizes realloc xthread}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-dhat-cost.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
declare -A SRC=([churn]=w1_churn [xthread]=w2_xthread [randsizes]=w4_randsizes [realloc]=w5_realloc)
declare -A THREADS=([churn]=1 [xthread]=2 [randsizes]=1 [realloc]=1)

best() { # best CMD...: minimum wall seconds of RUNS runs
  local b=""
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || { echo "fail"; return; }
    t1=$(date +%s.%N)
    b=$(python3 -c "t=$t1-$t0; b='$b'; print(t if b=='' or t<float(b) else b)")
  done
  printf '%.3f' "$b"
}
ratio() { python3 -c "print(f'{$1/$2:.2f}x')"; }

echo "| workload (threads, scale $SCALE) | idle (s) | on, frame pointers (s) | ratio | on, backtrace() (s) | ratio |"
echo "|---|---|---|---|---|---|"
for w in $WORKLOADS; do
  gcc -O2 -g0 -pthread -o "$WORK/$w" "$HERE/workloads/${SRC[$w]}.c" || exit 1
  t=${THREADS[$w]}
  off=$(best env LD_PRELOAD="$LIB" "$WORK/$w" "$t" "$SCALE")
  on=$(best env LD_PRELOAD="$LIB" MIMALLOC_DHAT=1 MIMALLOC_DHAT_FILE="$WORK/p.json" "$WORK/$w" "$t" "$SCALE")
  bt=$(best env LD_PRELOAD="$LIB" MIMALLOC_DHAT=1 MIMALLOC_DHAT_BACKTRACE=1 MIMALLOC_DHAT_FILE="$WORK/p.json" \
    "$WORK/$w" "$t" "$SCALE")
  echo "| $w ($t, $SCALE) | $off | $on | $(ratio "$on" "$off") | $bt | $(ratio "$bt" "$off") |"
done
if command -v valgrind >/dev/null; then
  w=churn
  RUNS=1
  base=$(best "$WORK/$w" 1 "$VG_SCALE")
  ours=$(best env LD_PRELOAD="$LIB" MIMALLOC_DHAT=1 MIMALLOC_DHAT_FILE="$WORK/p.json" "$WORK/$w" 1 "$VG_SCALE")
  vg=$(best valgrind --tool=dhat --dhat-out-file="$WORK/vg.json" "$WORK/$w" 1 "$VG_SCALE")
  echo
  echo "| $w at scale $VG_SCALE | seconds | ratio to glibc unprofiled |"
  echo "|---|---|---|"
  echo "| glibc, unprofiled | $base | 1x |"
  echo "| ours, profiler on | $ours | $(ratio "$ours" "$base") |"
  echo "| valgrind --tool=dhat | $vg | $(ratio "$vg" "$base") |"
fi
