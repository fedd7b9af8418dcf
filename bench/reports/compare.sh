#!/usr/bin/env bash
# The same heap bugs (bugs.c) under each allocator, their reports side by
# side, for docs/secure-mode.md: this library's secure build (and with
# MIMALLOC_GUARDED_SAMPLE_RATE=1), AddressSanitizer, scudo's GWP-ASan
# (every allocation sampled), hardened_malloc, and mimalloc 2.4.1's and
# 3.4.3's secure builds (the peers of ../shared/peers/build.sh).
#   bash bench/reports/compare.sh SECURE_LIB [PEERS_DIR]
# Prints, per bug and allocator, how the process ended and its stderr (cut
# at 24 lines).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=${1:?usage: compare.sh SECURE_LIB [PEERS_DIR]}
peers=${2:-/tmp/peers}
out=${REPORTS_OUT:-/tmp/reports-compare}
mkdir -p "$out"
gcc -g -O0 -fno-omit-frame-pointer -o "$out/bugs" "$here/bugs.c"
gcc -g -O0 -fno-omit-frame-pointer -fsanitize=address -o "$out/bugs-asan" "$here/bugs.c"
scudo=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-x86_64.so 2>/dev/null | head -1)
declare -a names=("mimalloc-pprof secure" "mimalloc-pprof secure, guarded sampling" "AddressSanitizer"
  "scudo, GWP-ASan" "hardened_malloc" "mimalloc 2.4.1 secure" "mimalloc 3.4.3 secure")
run_one() { # NAME KIND
  case $1 in
    "mimalloc-pprof secure") LD_PRELOAD=$lib "$out/bugs" "$2" ;;
    "mimalloc-pprof secure, guarded sampling") MIMALLOC_GUARDED_SAMPLE_RATE=1 LD_PRELOAD=$lib "$out/bugs" "$2" ;;
    "AddressSanitizer") ASAN_OPTIONS=detect_leaks=0 "$out/bugs-asan" "$2" ;;
    "scudo, GWP-ASan") GWP_ASAN_OPTIONS=Enabled=1:SampleRate=1:MaxSimultaneousAllocations=4096 \
      SCUDO_OPTIONS=GWP_ASAN_Enabled=true:GWP_ASAN_SampleRate=1 LD_PRELOAD=$scudo "$out/bugs" "$2" ;;
    "hardened_malloc") LD_PRELOAD=$peers/src/hardened_malloc/out/libhardened_malloc.so "$out/bugs" "$2" ;;
    "mimalloc 2.4.1 secure") LD_PRELOAD=$peers/mimalloc-2.4.1-secure/libmimalloc-secure.so "$out/bugs" "$2" ;;
    "mimalloc 3.4.3 secure") LD_PRELOAD=$peers/mimalloc-3.4.3-secure/libmimalloc-secure.so "$out/bugs" "$2" ;;
  esac
}
for kind in double-free overflow stale-write freed-read; do
  for name in "${names[@]}"; do
    run_one "$name" "$kind" >/dev/null 2>"$out/$kind.err"
    status=$?
    if [ $status -gt 128 ]; then how="killed by signal $((status - 128))"; else how="exit $status"; fi
    printf '### %s: %s (%s)\n```\n' "$kind" "$name" "$how"
    head -24 "$out/$kind.err"
    printf '```\n\n'
  done
done
