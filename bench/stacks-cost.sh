#!/usr/bin/env bash
# The cost of the secure build's allocation stacks beside AddressSanitizer's, on the
# mimalloc-bench subset kept in ../shared/peers, in one interleaved run:
#   secure         the programs as build.sh builds them (Release), LD_PRELOAD=LIB (the reference)
#   secure+stacks  the same with MIMALLOC_SECURE_STACKS=1
#   asan           the same sources built with -fsanitize=address -fno-omit-frame-pointer -O2 -g,
#                  no preload, ASAN_OPTIONS=detect_leaks=0
#   glibc          (--glibc) the Release programs, no preload
# Per row: the median of the per-round paired ratios to `secure` (time and peak RSS) with their
# min-max, and geomeans; rows whose ASan program does not build or reports an error are listed
# as n/a under ASan with the reason. Rows, metrics, launcher and method: ../shared/peers
# (tools/mimalloc_bench.py, imported); details in bench/stacks_cost.py's header.
#   bash bench/stacks-cost.sh [--rounds N] [--rows LIST] [--glibc] [--timeout S] OUTDIR LIB
#   e.g. bash bench/stacks-cost.sh --rounds 1 --rows cfrac,espresso /tmp/sc build-secure/libmimalloc-secure.so
# Default rows: the allocator-sensitive ones (all but barnes, cache-thrash-*, cache-scratch-*);
# default rounds 3. Writes OUTDIR/results.md (also printed), results.csv, records.jsonl;
# `--report-only OUTDIR` redoes the tables.
# env: PEERS (../shared/peers, else /work/shared/peers), PEERS_BUILD (/tmp/peers: build.sh's
#      OUTDIR, built with build.sh when missing), ASAN_BUILD ($PEERS_BUILD/bench-asan, built when
#      missing), ASAN_CC/ASAN_CXX (default CC/CXX or cc/c++), JOBS (2)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
if [ -z "${PEERS:-}" ]; then
  PEERS="$HERE/../../shared/peers"
  [ -d "$PEERS" ] || PEERS=/work/shared/peers
fi
PEERS="$(cd "$PEERS" && pwd)"
PEERS_BUILD="${PEERS_BUILD:-/tmp/peers}"
export PEERS PEERS_BUILD
command -v python3 >/dev/null || { echo "stacks-cost: needs python3" >&2; exit 1; }
command -v cmake >/dev/null || { echo "stacks-cost: needs cmake (apt-get install cmake)" >&2; exit 1; }
case " $* " in
  *" --report-only "* | *" -h "* | *" --help "*) ;;
  *) if [ ! -e "$PEERS_BUILD/bench/SOURCE_DIR" ]; then
       echo "stacks-cost: building the mimalloc-bench programs: $PEERS/build.sh $PEERS_BUILD" >&2
       bash "$PEERS/build.sh" "$PEERS_BUILD" >&2
     fi ;;
esac
exec python3 "$HERE/stacks_cost.py" "$@"
