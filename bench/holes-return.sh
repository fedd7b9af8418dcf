#!/usr/bin/env bash
# Memory returned from pages still in use, against the field
# (docs/memory-return.md): bench/holes-return.c under each allocator,
# rounds interleaved, the best round of each (the lowest RSS right after its
# call, as the seed reports). Writes OUT/holes-return.csv (every sample),
# OUT/holes-return.md (the table) and OUT/holes-return.png (RSS over time,
# the best round of each; with gnuplot).
#
# usage: bench/holes-return.sh [OUT]   (default out/holes-return)
#   OURS_LIB, OURS_SECURE_LIB   our builds (default build/, build-secure/)
#   PEERS_BUILD                 mimalloc 2.4.1 and 3.4.3 (../shared/peers/build.sh OUTDIR; default /tmp/peers)
#   ROUNDS                      default 3
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:-$root/out/holes-return}
rounds=${ROUNDS:-3}
ours=${OURS_LIB:-$root/build/libmimalloc.so}
ours_secure=${OURS_SECURE_LIB:-$root/build-secure/libmimalloc-secure.so}
peers=${PEERS_BUILD:-/tmp/peers}
libdir=/usr/lib/x86_64-linux-gnu
mkdir -p "$out"
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$out/holes-return" bench/holes-return.c -ldl

# name|method|preload|environment
runs=(
  "ours|ours|$ours|MIMALLOC_PURGE_HOLES_MIN_INTERVAL=0"
  "ours (holes off)|ours-off|$ours|MIMALLOC_PURGE_HOLES=0"
  "ours-secure|ours|$ours_secure|MIMALLOC_PURGE_HOLES_MIN_INTERVAL=0"
  "mimalloc-2.4.1|mimalloc|$peers/mimalloc-2.4.1/libmimalloc.so|"
  "mimalloc-3.4.3|mimalloc|$peers/mimalloc-3.4.3/libmimalloc.so|"
  "jemalloc|jemalloc|$libdir/libjemalloc.so.2|"
  "tcmalloc|tcmalloc|$libdir/libtcmalloc_minimal.so.4|"
  "glibc|glibc||"
)
csv=$out/holes-return.csv
echo "allocator,round,phase,ms,value" >"$csv"
for ((r = 1; r <= rounds; r++)); do
  for spec in "${runs[@]}"; do
    IFS='|' read -r name method lib envs <<<"$spec"
    if [ -n "$lib" ] && [ ! -f "$lib" ]; then
      echo "holes-return: $name: $lib not found, left out" >&2
      continue
    fi
    env ${envs:+$envs} ${lib:+LD_PRELOAD=$lib} "$out/holes-return" "$method" |
      sed "s/^[^,]*,/$name,$r,/" >>"$csv"
  done
done

python3 - "$csv" "$out" <<'EOF'
import csv, sys, collections
path, out = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path)))
runs = collections.defaultdict(list)
for r in rows:
    runs[(r["allocator"], r["round"])].append(r)
best = {}
for (name, rnd), rs in runs.items():
    v = {r["phase"]: float(r["value"]) for r in rs if r["phase"] not in ("idle",)}
    idle = [float(r["value"]) for r in rs if r["phase"] == "idle"]
    v["idle_end"] = idle[-1] if idle else v["released"]
    v["round"] = rnd
    v["series"] = [(float(r["ms"]), float(r["value"])) for r in rs if r["phase"] not in ("call_ms", "survivors_bad")]
    if name not in best or v["released"] < best[name]["released"]:
        best[name] = v
def pct(v, at):
    span = v["peak"] - v["base"]
    return 100.0 * (v["peak"] - v[at]) / span if span > 0 else 0.0
order = [n for n in dict.fromkeys(r["allocator"] for r in rows)]
L = ["| allocator | call | peak MB | after the call MB | returned | after 2 s MB | returned after 2 s | call ms | survivors |",
     "|---|---|---|---|---|---|---|---|---|"]
calls = {"ours": "mi_on_thread_idle()", "ours (holes off)": "mi_on_thread_idle(), MIMALLOC_PURGE_HOLES=0",
         "ours-secure": "mi_on_thread_idle()", "mimalloc-2.4.1": "mi_collect(true)", "mimalloc-3.4.3": "mi_collect(true)",
         "jemalloc": "mallctl arena.<all>.purge", "tcmalloc": "MallocExtension_ReleaseFreeMemory()", "glibc": "malloc_trim(0)"}
for n in order:
    v = best[n]
    L.append(f"| {n} | {calls.get(n, '')} | {v['peak']/2**20:.0f} | {v['released']/2**20:.0f} | {pct(v, 'released'):.1f}% | "
             f"{v['idle_end']/2**20:.0f} | {pct(v, 'idle_end'):.1f}% | {v.get('call_ms', 0):.1f} | "
             f"{'intact' if v.get('survivors_bad', 1) == 0 else 'CHANGED'} |")
open(f"{out}/holes-return.md", "w").write("\n".join(L) + "\n")
print("\n".join(L))
with open(f"{out}/holes-return.dat", "w") as f:
    for n in order:
        f.write(f"# {n}\n")
        for ms, val in best[n]["series"]:
            f.write(f"{ms:.0f} {val/2**20:.1f}\n")
        f.write("\n\n")
with open(f"{out}/holes-return.gp", "w") as f:
    f.write(f"set terminal pngcairo size 900,500 noenhanced\nset output '{out}/holes-return.png'\n")
    f.write("set title 'RSS over time: 280 MB touched, 1 in 20 blocks kept, the rest freed, then its release call'\n")
    f.write("set xlabel 'ms from the start'\nset ylabel 'RSS (MB)'\nset key outside right\nset grid\n")
    plots = [f"'{out}/holes-return.dat' index {i} with linespoints title '{n}'" for i, n in enumerate(order)]
    f.write("plot " + ", \\\n  ".join(plots) + "\n")
EOF
if command -v gnuplot >/dev/null 2>&1; then
  gnuplot "$out/holes-return.gp" 2>/dev/null || gnuplot -e "set terminal png" "$out/holes-return.gp" || true
fi
echo "holes-return: $out/holes-return.md, $out/holes-return.csv$([ -f "$out/holes-return.png" ] && echo ", $out/holes-return.png")"
