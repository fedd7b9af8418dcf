#!/usr/bin/env bash
# The sampled heap profiler's cost on real programs (issue 42's 1% target):
# each program preloaded with our library, the profiler idle and started at
# the default mean interval (512 KiB), in the default and the secure builds:
#   sqlite3   a large in-memory workload (bench/real/workload.sql: a million
#             rows, an index, grouping, a join, an update)
#   gcc       a compile of the SQLite amalgamation (gcc -O1 -c sqlite3.c; the
#             driver, cc1 and as all preloaded, each profiling itself)
#   python3   an allocation-heavy script (bench/real/alloc_heavy.py)
# Interleaved rounds, the configurations in a rotated order; CPU time (user +
# system of the program and the children it waited for) as the median over
# the rounds, and started/idle as the median of the rounds' paired ratios
# with its range. Each program's output is checked to be the same under
# every configuration (python3 with a fixed hash seed: a random one moves
# its instruction count by 1%). With INSTRUCTIONS=1, each program runs once
# a configuration under cachegrind instead (every process counted: gcc's
# driver, cc1 and as), the figure that settles what time on this small,
# shared machine cannot.
#   bash bench/prof-real.sh [OURS_LIB [OURS_SECURE_LIB]]
# env: ROUNDS (5), OUT (bench/results/prof-real.md), PROGRAMS ("sqlite3 gcc
#      python3"), CONFIGS (the four), SQLITE_C (the amalgamation; fetched
#      with npm from better-sqlite3's package when unset and not cached),
#      INSTRUCTIONS (0)
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
OURS="${1:-$ROOT/build/libmimalloc.so}"
SECURE="${2:-$ROOT/build-secure/libmimalloc-secure.so}"
ROUNDS="${ROUNDS:-5}"
OUT="${OUT:-$HERE/results/prof-real.md}"
for f in "$OURS" "$SECURE"; do
  [ -f "$f" ] || { echo "prof-real: missing $f"; exit 1; }
done
for t in sqlite3 gcc python3; do
  command -v "$t" >/dev/null || { echo "prof-real: $t is needed"; exit 1; }
done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-prof-real.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# The SQLite amalgamation: Debian ships none; better-sqlite3's npm package
# carries one (deps/sqlite3/sqlite3.c), cached beside the results.
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/mimalloc-pprof"
SQLITE_C="${SQLITE_C:-$CACHE/sqlite3/sqlite3.c}"
if [ ! -f "$SQLITE_C" ]; then
  command -v npm >/dev/null || { echo "prof-real: npm is needed to fetch the SQLite amalgamation (or set SQLITE_C)"; exit 1; }
  mkdir -p "$CACHE/sqlite3" &&
    (cd "$WORK" && npm pack --silent better-sqlite3@11.7.0 >/dev/null &&
      tar xzf better-sqlite3-11.7.0.tgz package/deps/sqlite3/sqlite3.c package/deps/sqlite3/sqlite3.h) &&
    cp "$WORK"/package/deps/sqlite3/sqlite3.[ch] "$CACHE/sqlite3/" ||
    { echo "prof-real: could not fetch the SQLite amalgamation"; exit 1; }
fi

cat >"$WORK/cpu.py" <<'EOF'
import os, subprocess, sys
out = open(sys.argv[1], "wb")
stdin = open(sys.argv[2], "rb") if sys.argv[2] != "-" else subprocess.DEVNULL
p = subprocess.Popen(sys.argv[3:], stdin=stdin, stdout=out, stderr=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
if status != 0:
    sys.exit(1)
print(f"{ru.ru_utime + ru.ru_stime:.6f}")
EOF

read -r -a PROGRAMS <<<"${PROGRAMS:-sqlite3 gcc python3}"
declare -A CMD=([sqlite3]="sqlite3 :memory:" [gcc]="gcc -O1 -c $SQLITE_C -o $WORK/sqlite3.o"
  [python3]="env PYTHONHASHSEED=0 python3 $HERE/real/alloc_heavy.py 8")
declare -A STDIN=([sqlite3]=$HERE/real/workload.sql [gcc]=- [python3]=-)
read -r -a CONFIGS <<<"${CONFIGS:-ours ours+prof ours-secure ours-secure+prof}"
declare -A LIB=([ours]=$OURS [ours+prof]=$OURS [ours-secure]=$SECURE [ours-secure+prof]=$SECURE)
declare -A ENVS=([ours]=MI_PROF_REAL_IDLE=1 [ours+prof]=MIMALLOC_PROF=1 [ours-secure]=MI_PROF_REAL_IDLE=1
  [ours-secure+prof]=MIMALLOC_PROF=1)

# The profiler is seen to sample in each program: started with an exit dump
# of the allocated totals, every process writes a profile holding samples.
for p in "${PROGRAMS[@]}"; do
  rm -f "$WORK"/seen.*
  env LD_PRELOAD="$OURS" MIMALLOC_PROF=1 MIMALLOC_PROF_ACCUM=1 MIMALLOC_PROF_DUMP_AT_EXIT="$WORK/seen.%p" \
    python3 "$WORK/cpu.py" /dev/null "${STDIN[$p]}" ${CMD[$p]} >/dev/null || { echo "prof-real: $p failed"; exit 1; }
  n=$(cat "$WORK"/seen.* 2>/dev/null | grep -c '^ *[0-9]*: *[0-9]* \[ *[1-9]')
  [ "${n:-0}" -gt 0 ] || { echo "prof-real: $p wrote no sampled stack"; exit 1; }
  echo "prof-real: $p sampled ($n stacks with samples)" >&2
done

if [ "${INSTRUCTIONS:-0}" = 1 ]; then
  command -v valgrind >/dev/null || { echo "prof-real: valgrind is needed for INSTRUCTIONS=1"; exit 1; }
  : >"$WORK/insn.csv"
  for p in "${PROGRAMS[@]}"; do
    for c in "${CONFIGS[@]}"; do
      in=${STDIN[$p]}
      [ "$in" = - ] && in=/dev/null
      env "${ENVS[$c]}" MIMALLOC_PROF_SEED=5 LD_PRELOAD="${LIB[$c]}" valgrind --tool=cachegrind --cache-sim=no \
        --trace-children=yes --cachegrind-out-file=/dev/null ${CMD[$p]} <"$in" >/dev/null 2>"$WORK/cg.log" ||
        { echo "prof-real: $p under $c failed in cachegrind"; exit 1; }
      n=$(sed -n 's/^==[0-9]*== I *refs: *//p' "$WORK/cg.log" | tr -d , | awk '{ s += $1 } END { printf "%.0f", s }')
      echo "$p,$c,$n" >>"$WORK/insn.csv"
      echo "prof-real: $p under $c: $n instructions" >&2
    done
  done
  ROUNDS=0
fi
: >"$WORK/times.csv"
n=${#CONFIGS[@]}
for r in $(seq "$ROUNDS"); do
  for p in "${PROGRAMS[@]}"; do
    for i in $(seq 0 $((n - 1))); do
      c=${CONFIGS[$(((i + r) % n))]}
      secs=$(env "${ENVS[$c]}" LD_PRELOAD="${LIB[$c]}" python3 "$WORK/cpu.py" "$WORK/out.$p.$c" "${STDIN[$p]}" \
        ${CMD[$p]}) || { echo "prof-real: $p under $c failed"; exit 1; }
      echo "$r,$p,$c,$secs" >>"$WORK/times.csv"
    done
    for c in "${CONFIGS[@]:1}"; do
      [ "$p" = gcc ] || cmp -s "$WORK/out.$p.${CONFIGS[0]}" "$WORK/out.$p.$c" ||
        { echo "prof-real: $p's output under $c differs from ${CONFIGS[0]}'s"; exit 1; }
    done
  done
  echo "prof-real: round $r of $ROUNDS done" >&2
done

mkdir -p "$(dirname "$OUT")"
if [ "${INSTRUCTIONS:-0}" = 1 ]; then
  python3 - "$WORK/insn.csv" >"$OUT" <<'EOF'
import sys
rows = [l.strip().split(',') for l in open(sys.argv[1]) if l.strip()]
n = {(p, c): int(v) for p, c, v in rows}
programs = list(dict.fromkeys(p for p, _, _ in rows))
ran = {c for _, c, _ in rows}
pairs = [(a, b) for a, b in [("ours", "ours+prof"), ("ours-secure", "ours-secure+prof")] if a in ran and b in ran]
print("Instructions (cachegrind, every process of the program; MIMALLOC_PROF_SEED=5); started/idle.\n")
print("| program | " + " | ".join(f"{a} | {b} | cost" for a, b in pairs) + " |")
print("|---|" + "---:|---:|---:|" * len(pairs))
for p in programs:
    cells = []
    for a, b in pairs:
        cells += [f"{n[(p, a)]:,}", f"{n[(p, b)]:,}", f"{(n[(p, b)] / n[(p, a)] - 1) * 100:+.2f}%"]
    print(f"| {p} | " + " | ".join(cells) + " |")
EOF
  cat "$OUT"
  exit 0
fi
python3 - "$WORK/times.csv" "$ROUNDS" >"$OUT" <<'EOF'
import sys, statistics as st
from collections import defaultdict
rows = [l.strip().split(',') for l in open(sys.argv[1]) if l.strip()]
t = defaultdict(dict)
for r, p, c, s in rows:
    t[(p, c)][int(r)] = float(s)
programs = list(dict.fromkeys(p for _, p, _, _ in rows))
ran = {c for _, _, c, _ in rows}
pairs = [(a, b) for a, b in [("ours", "ours+prof"), ("ours-secure", "ours-secure+prof")] if a in ran and b in ran]
print(f"CPU seconds (user + system, children included), median of {sys.argv[2]} interleaved rounds; "
      "started/idle: the median of the rounds' paired ratios, [lowest, highest].\n")
print("| program | " + " | ".join(f"{a} | {b} | cost" for a, b in pairs) + " |")
print("|---|" + "---|---|---|" * len(pairs))
for p in programs:
    cells = []
    for a, b in pairs:
        ra, rb = t[(p, a)], t[(p, b)]
        ratios = sorted(rb[k] / ra[k] for k in ra if k in rb and ra[k] > 0)
        cells += [f"{st.median(ra.values()):.3f}", f"{st.median(rb.values()):.3f}",
                  f"{(st.median(ratios) - 1) * 100:+.1f}% [{(ratios[0] - 1) * 100:+.1f}, {(ratios[-1] - 1) * 100:+.1f}]"]
    print(f"| {p} | " + " | ".join(cells) + " |")
EOF
cat "$OUT"
