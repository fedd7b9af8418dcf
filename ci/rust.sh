#!/usr/bin/env bash
# The Rust crate (rust/mimalloc-pprof, docs/rust.md): formatted, built and
# tested offline (it has no dependencies), in its default build and with
# each feature, warnings as errors, with the toolchain on the machine
# (root's ~/.cargo/bin; else Debian's); then with Debian's rustc 1.63 too.
# The job says which toolchains ran.
#   ci/rust.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: ci/rust.sh OUT_DIR}
mkdir -p "$out"
for dir in "$HOME/.cargo/bin" /root/.cargo/bin; do
  [ -x "$dir/cargo" ] && export PATH="$dir:$PATH" && break
done
if ! command -v cargo >/dev/null 2>&1; then
  echo "rust: no cargo on the machine: Debian's"
  apt-get install -y -qq cargo rustc >"$out/apt.log" 2>&1 || { tail -20 "$out/apt.log"; exit 1; }
fi
echo "rust: $(cargo --version), $(rustc --version)"
export CARGO_TARGET_DIR="$out/target" RUSTFLAGS="-D warnings"
cd rust/mimalloc-pprof
status=0
if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --check || { echo "rust: cargo fmt --check: the crate is not formatted"; status=1; }
fi
for features in "" secure override stats pprof dhat; do
  echo "rust: cargo test --offline${features:+ --features $features}"
  cargo test --offline ${features:+--features "$features"} || status=1
done
# the Rust benchmark runs (bench/rust-bench.sh --smoke: one round, tiny)
BENCH_OUT="$out/bench" BENCH_BUILD_DIR="$out/bench-build" bash ../../bench/rust-bench.sh --smoke || status=1
# Debian's toolchain (1.63, ci/install-deps.sh), the oldest the crate
# supports: the tests but the layout one (offset_of!, 1.77), and the crate
# with every feature
if [ -x /usr/bin/cargo ] && [ "$(/usr/bin/rustc --version)" != "$(rustc --version)" ]; then
  echo "rust: and $(/usr/bin/rustc --version): cargo test --offline --features secure,override,pprof,dhat; cargo build --offline --features stats"
  PATH=/usr/bin:/bin CARGO_TARGET_DIR="$out/target-debian" /usr/bin/cargo test --offline --features secure,override,pprof,dhat ||
    status=1
  PATH=/usr/bin:/bin CARGO_TARGET_DIR="$out/target-debian" /usr/bin/cargo build --offline --features stats || status=1
fi
exit $status
