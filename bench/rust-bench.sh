#!/usr/bin/env bash
# The Rust benchmark (docs/rust.md): the crate's example binaries, the same
# workloads (rust/mimalloc-pprof/examples/bench/workload.rs: a
# HashMap<String, Vec<u8>> churn and a four-thread channel pipeline) with
# the system allocator, ours and ours with the secure feature, built with
# `cargo build --release --offline`, run in interleaved rounds; medians,
# spread, and the ratio to the system allocator.
#   bash bench/rust-bench.sh [--smoke] [ROUNDS] [SCALE]   (default 5 rounds, scale 1)
# Writes BENCH_OUT/rust-bench.md (default bench/results).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
rounds=5 scale=1
if [ "${1:-}" = --smoke ]; then
  rounds=1 scale=0.02
  shift
fi
rounds=${1:-$rounds}
scale=${2:-$scale}
out=${BENCH_OUT:-$root/bench/results}
work=${BENCH_BUILD_DIR:-$root/bench/build}/rust
mkdir -p "$out" "$work"
for dir in "$HOME/.cargo/bin" /root/.cargo/bin; do
  [ -x "$dir/cargo" ] && export PATH="$dir:$PATH" && break
done
crate=$root/rust/mimalloc-pprof
(cd "$crate" && CARGO_TARGET_DIR="$work/default" cargo build --offline --release --examples -q)
(cd "$crate" && CARGO_TARGET_DIR="$work/secure" cargo build --offline --release --examples --features secure -q)
declare -A bin=(
  [system]="$work/default/release/examples/bench_system"
  [ours]="$work/default/release/examples/bench_mimalloc"
  [ours-secure]="$work/secure/release/examples/bench_mimalloc"
)
allocs=(system ours ours-secure)
raw="$work/times.txt"
: >"$raw"
for ((r = 1; r <= rounds; r++)); do
  for a in "${allocs[@]}"; do
    "${bin[$a]}" "$scale" | while read -r workload secs _; do echo "$a $workload $secs"; done >>"$raw"
  done
done
echo "$(cargo --version), $(rustc --version); $rounds rounds, scale $scale" >"$work/toolchain.txt"
python3 - "$raw" "$work/toolchain.txt" >"$out/rust-bench.md" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
tool = open(sys.argv[2]).read().strip()
times = {}
for a, w, s in rows:
    times.setdefault(w, {}).setdefault(a, []).append(float(s))
print("# Rust benchmark (bench/rust-bench.sh)\n")
print(f"{tool}; seconds, median (min–max) of interleaved rounds; ratio: median over the system allocator's.\n")
print("| workload | system | ours | ours-secure | ours / system | secure / system |")
print("|---|---|---|---|---|---|")
for w, by in times.items():
    med = {a: statistics.median(v) for a, v in by.items()}
    cell = lambda a: f"{med[a]:.3f} ({min(by[a]):.3f}–{max(by[a]):.3f})"
    print(f"| {w} | {cell('system')} | {cell('ours')} | {cell('ours-secure')} | "
          f"{med['ours'] / med['system']:.2f} | {med['ours-secure'] / med['system']:.2f} |")
PY
cat "$out/rust-bench.md"
