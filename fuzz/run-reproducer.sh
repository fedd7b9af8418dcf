#!/usr/bin/env bash
# Run saved fuzz inputs through a harness binary, with symbolized sanitizer
# reports, the secure build's allocation and free stacks recorded, and, with
# -t, a trace of every operation (docs/fuzzing.md):
#   fuzz/run-reproducer.sh [-t] BINARY FILE...
# BINARY is one of OUT/bin/{libfuzzer,afl}-{alloc,secure}[-plant] from
# fuzz/build.sh (ci/fuzz.sh: OUT_DIR/build/bin). Every report ends in a
# DEDUP_TOKEN line, the crash's dedup key (fuzz/triage.sh groups by it).
# Exit status: the harness's.
set -uo pipefail
if [ "${1:-}" = "-t" ]; then
  export FZ_TRACE=1
  shift
fi
[ $# -ge 2 ] || { echo "usage: $0 [-t] BINARY FILE..." >&2; exit 2; }
bin=$1
shift
export ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=1:symbolize=1:dedup_token_length=3
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export MIMALLOC_SECURE_STACKS=${MIMALLOC_SECURE_STACKS:-1}
exec "$bin" "$@"
