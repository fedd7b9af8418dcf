#!/usr/bin/env bash
# Install the Debian packages the build, the tests and the bench smoke need.
# Safe to run again: it installs only what is missing.
#   ci/install-deps.sh            everything CI needs
#   ci/install-deps.sh --minimal  only what building the library and README's
#                                 first command need (cmake, make, gcc, sqlite3)
set -euo pipefail
pkgs=(cmake gcc g++ clang make pkg-config libcmocka-dev sqlite3 git python3
      gnuplot-nox libc6-dev libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libclang-rt-14-dev gcovr
      clang-19 libclang-rt-19-dev # the fork storm under ASan (ci/asan.sh): ASan's run-time handles fork since LLVM 18
      valgrind chromium libdw1 # the heap profiler's tests: Valgrind's DHAT and its viewer
      jq # the statistics' JSON read by jq (tests/stats)
      spin # the model check of the teardown protocol (ci/teardown-model.sh)
      gcc-mingw-w64-x86-64 mingw-w64-tools wine64 # the Windows build and its tests under Wine (ci/windows.sh)
      afl++ # the fuzz smoke (ci/fuzz.sh); libFuzzer comes with clang (libclang-rt-14-dev)
      golang-go golang-github-google-pprof-dev golang-github-chzyer-readline-dev # pprof's clients for the sampled heap profiler's checks (tests/pprof/):
      golang-github-ianlancetaylor-demangle-dev google-perftools protobuf-compiler # Go pprof built offline from Debian's source, google-pprof, protoc
      clang-format clang-tidy cppcheck # the lint job (ci/lint.sh)
      libpython3.11-testsuite libglib2.0-tests # CPython's and GLib's own tests under the secure build (ci/real-suite.sh)
      cargo rustc) # the Rust crate with Debian's rustc 1.63, its oldest toolchain (ci/rust.sh)
minimal=0
if [ "${1:-}" = --minimal ]; then
  minimal=1
  pkgs=(cmake make gcc libc6-dev sqlite3)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# node and npm for the viewer test: Debian's packages unless a node (which
# may bring its own npm) is installed already
if [ "$minimal" = 0 ]; then
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "ci: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
