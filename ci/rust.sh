#!/usr/bin/env bash
# The Rust crate (rust/mimalloc-pprof, docs/rust.md): formatted, built and
# tested offline (it has no dependencies), in its default build, with the
# secure feature and with override, warnings as errors. The toolchain is the
# one on the machine (root's ~/.cargo/bin), else Debian's (apt-get install
# cargo rustc); the job says which.
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
for features in "" secure override; do
  echo "rust: cargo test --offline${features:+ --features $features}"
  cargo test --offline ${features:+--features "$features"} || status=1
done
exit $status
