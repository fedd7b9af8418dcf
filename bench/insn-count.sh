#!/usr/bin/env bash
# Instructions executed by each bench workload under each library given, with
# cachegrind (no cache simulation): deterministic where time on this small,
# shared machine is not. For a change's cost: the library before and after,
# default and secure builds, side by side.
#   bash bench/insn-count.sh NAME=LIB [NAME=LIB...]
# Env: SCALE (0.1), THREADS (1), WORKLOADS ("w1_churn w2_xthread w4_randsizes
# w5_realloc w6_large w7_shortthreads"). Prints a markdown table: one row a
# workload, one column a library, and for every library after the first its
# ratio to the first.
set -euo pipefail
cd "$(dirname "$0")"
scale=${SCALE:-0.1}
threads=${THREADS:-1}
workloads=${WORKLOADS:-w1_churn w2_xthread w4_randsizes w5_realloc w6_large w7_shortthreads}
out=${INSN_OUT:-/tmp/insn-count}
mkdir -p "$out"
command -v valgrind >/dev/null || { echo "insn-count: valgrind is needed" >&2; exit 1; }
[ $# -gt 0 ] || { echo "usage: $0 NAME=LIB [NAME=LIB...]" >&2; exit 2; }
for w in $workloads; do
  gcc -O2 -pthread -o "$out/$w" "workloads/$w.c" -lm
done
names=()
for spec in "$@"; do names+=("${spec%%=*}"); done
header="| workload |"
rule="|---|"
for n in "${names[@]}"; do
  header+=" $n |"
  rule+="---:|"
done
for n in "${names[@]:1}"; do
  header+=" $n / ${names[0]} |"
  rule+="---:|"
done
echo "$header"
echo "$rule"
for w in $workloads; do
  row="| $w ($threads thread(s), scale $scale) |"
  counts=()
  for spec in "$@"; do
    name=${spec%%=*} lib=${spec#*=}
    log="$out/$w.$name.log"
    LD_PRELOAD=$lib valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
      "$out/$w" "$threads" "$scale" >"$log" 2>&1 || { echo "insn-count: $w under $name failed ($log)" >&2; exit 1; }
    n=$(sed -n 's/^==[0-9]*== I *refs: *//p' "$log" | tr -d ',')
    counts+=("$n")
    row+=" $n |"
  done
  for c in "${counts[@]:1}"; do
    row+=" $(awk -v a="$c" -v b="${counts[0]}" 'BEGIN { printf "%.4f", a / b }') |"
  done
  echo "$row"
done
