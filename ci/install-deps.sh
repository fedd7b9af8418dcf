#!/usr/bin/env bash
# Install the Debian packages (and the two viewers' npm packages) the build
# and the tests need. Safe to run again: it installs only what is missing.
#   ci/install-deps.sh             everything CI needs (every group below)
#   ci/install-deps.sh GROUP...    the build's packages and those groups'
#                                  (ci/test-all.sh JOB... asks for its jobs'
#                                  groups only: ci/test-all.sh --list)
#   ci/install-deps.sh --minimal   only what building the library and the
#                                  README's first command need
#   ci/install-deps.sh --groups    the groups and their packages
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A group
# the build and the core tests (their JSON read by jq; the real programs run
# under the library: git, sqlite3, python3)
group[build]="cmake gcc g++ clang make pkg-config libcmocka-dev libc6-dev python3 git sqlite3 jq"
group[coverage]="gcovr"                                  # fault-coverage (ci/fault-coverage.sh)
group[model]="spin"                                      # the teardown protocol's model check (ci/teardown-model.sh)
group[real-suites]="libpython3.11-testsuite libglib2.0-tests" # CPython's and GLib's own tests (ci/real-suite.sh)
group[dhat]="valgrind chromium libdw1 nodejs npm"        # Valgrind's DHAT and its viewer, driven by playwright-core
group[pprof]="golang-go golang-github-google-pprof-dev golang-github-chzyer-readline-dev golang-github-ianlancetaylor-demangle-dev google-perftools protobuf-compiler libdw1"
group[sanitizers]="libclang-rt-14-dev clang-19 libclang-rt-19-dev valgrind" # ASan, TSan (clang-19: ASan's fork handling), memcheck
group[windows]="gcc-mingw-w64-x86-64 mingw-w64-tools wine64" # the MinGW-w64 build under Wine (ci/windows.sh)
group[fuzz]="afl++ libclang-rt-14-dev"                   # AFL++; libFuzzer comes with clang's run-time
group[lint]="clang-format clang-tidy cppcheck"           # ci/lint.sh
group[bench]="gnuplot-nox libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0" # the bench smoke and its peers
group[viewers]="chromium nodejs npm"                     # the heap snapshot's HTML viewer, driven by puppeteer-core
group[rust]="cargo rustc"                                # the Rust crate with Debian's rustc 1.63 (ci/rust.sh)
all_groups=(build coverage model real-suites dhat pprof sanitizers windows fuzz lint bench viewers rust)

if [ "${1:-}" = --groups ]; then
  for g in "${all_groups[@]}"; do printf '%-12s %s\n' "$g" "${group[$g]}"; done
  exit 0
fi
pkgs=()
wanted=()
if [ "${1:-}" = --minimal ]; then
  pkgs=(cmake make gcc libc6-dev sqlite3)
else
  if [ $# -eq 0 ]; then wanted=("${all_groups[@]}"); else wanted=(build "$@"); fi
  for g in "${wanted[@]}"; do
    [ -n "${group[$g]+x}" ] || { echo "install-deps: no group $g (ci/install-deps.sh --groups)"; exit 2; }
    read -r -a more <<<"${group[$g]}"
    pkgs+=("${more[@]}")
  done
fi
missing=()
for p in $(printf '%s\n' "${pkgs[@]}" | sort -u); do
  case $p in
    # a node installed otherwise (which may bring its own npm) will do
    nodejs) command -v node >/dev/null 2>&1 || missing+=(nodejs) ;;
    npm) command -v npm >/dev/null 2>&1 || missing+=(npm) ;;
    *) dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p") ;;
  esac
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ci: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The viewers' drivers, pinned in their package.json, installed here rather
# than by the tests on their first run (which would need the network then)
npm_install() { # npm_install DIR WHAT
  [ -d "$1/node_modules/$2" ] && return 0
  echo "ci: npm install of $2 in $1"
  (cd "$1" && npm install --no-audit --no-fund --no-save --loglevel=error >/dev/null) ||
    { echo "ci: npm install of $2 in $1 failed"; return 1; }
}
for g in "${wanted[@]}"; do
  case $g in
    dhat) npm_install tests/dhat/viewer playwright-core ;;
    viewers) npm_install tests/snapshot/html puppeteer-core ;;
  esac
done
