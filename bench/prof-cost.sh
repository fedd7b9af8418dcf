#!/usr/bin/env bash
# The sampled heap profiler's cost (docs/pprof.md): every bench workload with
# our library preloaded, the profiler idle and started at the default mean
# interval (512 KiB), in the default and the secure builds; beside it the
# peers' samplers at the same mean interval: jemalloc with its profiler on
# (MALLOC_CONF=prof:true,lg_prof_sample:19) and tcmalloc (gperftools' full
# library, TCMALLOC_SAMPLE_PARAMETER=524288 against 0, its default).
# Interleaved rounds: each round runs every workload under every
# configuration once, the configurations in a rotated order; the table gives
# the medians of CPU time (user + system: on a shared 2-core machine less
# disturbed by other load than wall time) over the rounds, and the
# started/idle ratio as the median of the rounds' paired ratios with its
# range.
#   bash bench/prof-cost.sh [OURS_LIB [OURS_SECURE_LIB]]
# env: ROUNDS (7), SCALE (1), OUT (bench/results/prof-cost.md), WORKLOADS (all seven),
#      CONFIGS (all eight; e.g. "ours ours+prof" for a longer run of ours alone)
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
OURS="${1:-$ROOT/build/libmimalloc.so}"
SECURE="${2:-$ROOT/build-secure/libmimalloc-secure.so}"
ROUNDS="${ROUNDS:-7}"
SCALE="${SCALE:-1}"
OUT="${OUT:-$HERE/results/prof-cost.md}"
JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
for f in "$OURS" "$SECURE" "$JE" "$TC"; do
  [ -f "$f" ] || { echo "prof-cost: missing $f (jemalloc: libjemalloc2; tcmalloc: libgoogle-perftools4)"; exit 1; }
done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-prof-cost.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# workload -> source, and the threads it runs with
read -r -a WORKLOADS <<<"${WORKLOADS:-churn xthread falseshare randsizes realloc large shortthreads}"
declare -A SRC=([churn]=w1_churn [xthread]=w2_xthread [falseshare]=w3_falseshare [randsizes]=w4_randsizes
  [realloc]=w5_realloc [large]=w6_large [shortthreads]=w7_shortthreads)
declare -A THREADS=([churn]=1 [xthread]=2 [falseshare]=2 [randsizes]=1 [realloc]=1 [large]=1 [shortthreads]=2)
# the child's CPU seconds from wait4 (microseconds; /usr/bin/time rounds to 10 ms)
cat >"$WORK/cpu.py" <<'EOF'
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
if status != 0:
    sys.exit(1)
print(f"{ru.ru_utime + ru.ru_stime:.6f}")
EOF
for w in $(printf '%s\n' churn "${WORKLOADS[@]}" | sort -u); do # (churn: the check below)
  gcc -O2 -g0 -pthread -o "$WORK/$w" "$HERE/workloads/${SRC[$w]}.c" -lm || exit 1
done

# configuration: library and environment ("-" for none)
read -r -a CONFIGS <<<"${CONFIGS:-ours ours+prof ours-secure ours-secure+prof jemalloc jemalloc+prof tcmalloc tcmalloc+sample}"
declare -A LIB=([ours]=$OURS [ours+prof]=$OURS [ours-secure]=$SECURE [ours-secure+prof]=$SECURE
  [jemalloc]=$JE [jemalloc+prof]=$JE [tcmalloc]=$TC [tcmalloc+sample]=$TC)
declare -A ENVS=([ours]=- [ours+prof]=MIMALLOC_PROF=1 [ours-secure]=- [ours-secure+prof]=MIMALLOC_PROF=1
  [jemalloc]=- [jemalloc+prof]=MALLOC_CONF=prof:true,lg_prof_sample:19
  [tcmalloc]=TCMALLOC_SAMPLE_PARAMETER=0 [tcmalloc+sample]=TCMALLOC_SAMPLE_PARAMETER=524288)

# The profilers are seen to sample: ours and jemalloc write a profile of the
# churn workload at exit, with the allocated totals (it frees all it
# allocates), which must hold samples.
env LD_PRELOAD="$OURS" MIMALLOC_PROF=1 MIMALLOC_PROF_ACCUM=1 MIMALLOC_PROF_DUMP_AT_EXIT="$WORK/ours.heap" "$WORK/churn" 1 0.2 >/dev/null
env LD_PRELOAD="$JE" MALLOC_CONF="prof:true,lg_prof_sample:19,prof_accum:true,prof_final:true,prof_prefix:$WORK/je" \
  "$WORK/churn" 1 0.2 >/dev/null
ours_n=$(grep -c '^ *[0-9]*: *[0-9]* \[' "$WORK/ours.heap" 2>/dev/null)
je_n=$(cat "$WORK"/je*.heap 2>/dev/null | grep -c '^ *t\*: [1-9]')
[ "${ours_n:-0}" -gt 0 ] || { echo "prof-cost: our profiler wrote no sampled stack"; exit 1; }
[ "${je_n:-0}" -gt 0 ] || { echo "prof-cost: jemalloc's profiler wrote no sample (built without prof?)"; exit 1; }

: >"$WORK/times.csv"
n=${#CONFIGS[@]}
for r in $(seq "$ROUNDS"); do
  for w in "${WORKLOADS[@]}"; do
    for i in $(seq 0 $((n - 1))); do
      c=${CONFIGS[$(((i + r) % n))]}
      e=${ENVS[$c]}
      [ "$e" = - ] && e=MI_PROF_COST_NONE=1
      secs=$(python3 "$WORK/cpu.py" env "$e" LD_PRELOAD="${LIB[$c]}" "$WORK/$w" "${THREADS[$w]}" "$SCALE") ||
        { echo "prof-cost: $w under $c failed"; exit 1; }
      echo "$r,$w,$c,$secs" >>"$WORK/times.csv"
    done
  done
  echo "prof-cost: round $r of $ROUNDS done" >&2
done

mkdir -p "$(dirname "$OUT")"
python3 - "$WORK/times.csv" "$ROUNDS" "$SCALE" >"$OUT" <<'EOF'
import sys, statistics as st
from collections import defaultdict
rows = [l.strip().split(',') for l in open(sys.argv[1]) if l.strip()]
t = defaultdict(dict)  # (workload, config) -> round -> seconds
for r, w, c, s in rows:
    t[(w, c)][int(r)] = float(s)
workloads = list(dict.fromkeys(w for _, w, _, _ in rows))
pairs = [("ours", "ours+prof"), ("ours-secure", "ours-secure+prof"), ("jemalloc", "jemalloc+prof"),
         ("tcmalloc", "tcmalloc+sample")]
ran = {c for _, _, c, _ in rows}
pairs = [(a, b) for a, b in pairs if a in ran and b in ran]
print(f"CPU seconds (user + system), median of {sys.argv[2]} interleaved rounds (scale {sys.argv[3]}); started/idle: the median "
      "of the rounds' paired ratios, [lowest, highest].\n")
print("| workload | " + " | ".join(f"{a} | {b} | cost" for a, b in pairs) + " |")
print("|---|" + "---|---|---|" * len(pairs))
for w in workloads:
    cells = []
    for a, b in pairs:
        ra, rb = t[(w, a)], t[(w, b)]
        ratios = sorted(rb[k] / ra[k] for k in ra if k in rb and ra[k] > 0)
        cells += [f"{st.median(ra.values()):.3f}", f"{st.median(rb.values()):.3f}",
                  f"{(st.median(ratios) - 1) * 100:+.1f}% [{(ratios[0] - 1) * 100:+.1f}, {(ratios[-1] - 1) * 100:+.1f}]"]
    print(f"| {w} | " + " | ".join(cells) + " |")
EOF
cat "$OUT"
