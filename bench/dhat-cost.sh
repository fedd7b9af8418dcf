#!/usr/bin/env bash
# The heap profiler's cost on the bench workloads: wall time with our library
# preloaded and the profiler idle, and on in each stack mode
# (MIMALLOC_DHAT_BACKTRACE 0, 1, -1), as the minimum CPU time of RUNS runs, for the
# workloads as bench/run.sh builds them and built with frame pointers;
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

best() { # best CMD...: minimum CPU seconds (user + system) of RUNS runs: on a
  # shared machine less disturbed by other load than wall time
  local b=""
  for _ in $(seq "$RUNS"); do
    local t
    /usr/bin/time -o "$WORK/time" -f "%U %S" "$@" >/dev/null 2>&1 || { echo "fail"; return; }
    t=$(tail -1 "$WORK/time")
    b=$(python3 -c "u,s='$t'.split(); t=float(u)+float(s); b='$b'; print(t if b=='' or t<float(b) else b)")
  done
  printf '%.3f' "$b"
}
ratio() { python3 -c "print(f'{$1/$2:.2f}x')"; }

on() { # on MODE BIN ARGS...: the profiler on with MIMALLOC_DHAT_BACKTRACE=MODE
  local mode=$1
  shift
  best env LD_PRELOAD="$LIB" MIMALLOC_DHAT=1 MIMALLOC_DHAT_BACKTRACE="$mode" MIMALLOC_DHAT_FILE="$WORK/p.json" "$@"
}
echo "Workloads built as bench/run.sh builds them (-O2, no frame pointers), and again with"
echo "-fno-omit-frame-pointer (\"fp build\"). Minimum of $RUNS runs, CPU seconds (user + system); ratio to the idle profiler."
echo
echo "| workload (threads) | idle | on (auto) | on, unwinder | on, frame pointers only | fp build: idle | fp build: on (auto) |"
echo "|---|---|---|---|---|---|---|"
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian: time)"; exit 1; }
for w in $WORKLOADS; do
  gcc -O2 -g0 -pthread -o "$WORK/$w" "$HERE/workloads/${SRC[$w]}.c" || exit 1
  gcc -O2 -g0 -fno-omit-frame-pointer -pthread -o "$WORK/$w-fp" "$HERE/workloads/${SRC[$w]}.c" || exit 1
  t=${THREADS[$w]}
  off=$(best env LD_PRELOAD="$LIB" "$WORK/$w" "$t" "$SCALE")
  auto=$(on 0 "$WORK/$w" "$t" "$SCALE")
  unw=$(on 1 "$WORK/$w" "$t" "$SCALE")
  fpo=$(on -1 "$WORK/$w" "$t" "$SCALE")
  offfp=$(best env LD_PRELOAD="$LIB" "$WORK/$w-fp" "$t" "$SCALE")
  autofp=$(on 0 "$WORK/$w-fp" "$t" "$SCALE")
  echo "| $w ($t) | $off | $auto ($(ratio "$auto" "$off")) | $unw ($(ratio "$unw" "$off")) | $fpo ($(ratio "$fpo" "$off")) | $offfp | $autofp ($(ratio "$autofp" "$offfp")) |"
done
if command -v valgrind >/dev/null; then
  w=churn
  RUNS=1
  [ -x "$WORK/$w" ] || gcc -O2 -g0 -pthread -o "$WORK/$w" "$HERE/workloads/${SRC[$w]}.c" || exit 1
  base=$(best "$WORK/$w" 1 "$VG_SCALE")
  ours=$(on 0 "$WORK/$w" 1 "$VG_SCALE")
  vg=$(best valgrind --tool=dhat --dhat-out-file="$WORK/vg.json" "$WORK/$w" 1 "$VG_SCALE")
  echo
  echo "| $w at scale $VG_SCALE | CPU seconds | ratio to glibc unprofiled |"
  echo "|---|---|---|"
  echo "| glibc, unprofiled | $base | 1x |"
  echo "| ours, profiler on (auto stacks) | $ours | $(ratio "$ours" "$base") |"
  echo "| valgrind --tool=dhat | $vg | $(ratio "$vg" "$base") |"
fi
