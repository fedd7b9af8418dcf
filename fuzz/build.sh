#!/usr/bin/env bash
# Build the fuzz harnesses (docs/fuzzing.md) for libFuzzer and AFL++:
#   fuzz/build.sh OUT_DIR
# OUT_DIR/bin gets, for each engine E in libfuzzer, afl:
#   E-alloc          the allocator against the shadow model, with ASan and the
#                    allocator's ASan poisoning (MI_TRACK_ASAN)
#   E-alloc-plant    the same with the planted use-after-free (MI_FUZZ_PLANT_UAF)
#   E-secure         the secure build, with the corruption cases
#   E-secure-plant   the same with a planted misuse secure mode does not catch
# and, linked as the libFuzzer harnesses are, the memory gate (fuzz/replay.c):
#   replay-alloc, replay-secure              a fixed input set run again and
#                                            again in one process
#   replay-alloc-leak, replay-secure-leak    the same with a planted leak
# and the triage job's secure plant, {libfuzzer,afl}-secure-dfree (a double
# free), and the control harness, libfuzzer-control and replay-control (the
# alloc harness on ASan's allocator, fuzz/control.c), with its floor,
# libfuzzer-floor and replay-floor (a bump pointer, no allocator)
# Each library is built once per engine and flavour in OUT_DIR/lib-*; the
# build logs are next to them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:?usage: fuzz/build.sh OUT_DIR}
mkdir -p "$out/bin"
jobs=${FUZZ_BUILD_JOBS:-2}

# the allocator's assertions (MI_DEBUG) are on: a broken invariant is a finding too
lib() { # lib NAME CC CFLAGS [cmake args...]
  local name=$1 cc=$2 cflags=$3 dir=$out/lib-$1
  shift 3
  CC=$cc cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DMI_DEBUG=ON -DMI_BUILD_SHARED=OFF \
    -DMI_BUILD_TESTS=OFF -DMI_FAULT=OFF -DCMAKE_C_FLAGS="$cflags" "$@" >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1 ||
    { tail -30 "$dir.configure.log" "$dir.build.log" 2>/dev/null; return 1; }
}

cflags=(-std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra -Werror -Iinclude -Ifuzz -fno-omit-frame-pointer)
# The pattern loops touch every byte of every block: built without the
# engines' coverage instrumentation (it has no branches worth steering, and
# comparison tracing there cost half of the executions), with or without
# ASan to match the harness it goes into.
clang "${cflags[@]}" -O2 -fsanitize=address -c fuzz/pattern.c -o "$out/bin/pattern-asan.o"
clang "${cflags[@]}" -O2 -c fuzz/pattern.c -o "$out/bin/pattern.o"
common=(fuzz/model.c fuzz/worker.c fuzz/program.c fuzz/profile.c)
harness() { # harness OUT CC [flags and sources...]
  local bin=$1 cc=$2
  shift 2
  "$cc" "${cflags[@]}" "$@" -lpthread -o "$out/bin/$bin" >"$out/bin/$bin.log" 2>&1 ||
    { cat "$out/bin/$bin.log"; return 1; }
}

ubsan="-fsanitize=undefined -fno-sanitize-recover=undefined"
# libFuzzer: coverage of the library from -fsanitize=fuzzer-no-link; ASan
# comes with MI_TRACK_ASAN
lib libfuzzer-asan clang "-fsanitize=fuzzer-no-link $ubsan -g" -DMI_TRACK_ASAN=ON
lib libfuzzer-secure clang "-fsanitize=fuzzer-no-link $ubsan -g" -DMI_SECURE=ON
# AFL++: afl-clang-fast instruments the library for its coverage map
lib afl-asan afl-clang-fast "-g" -DMI_TRACK_ASAN=ON
lib afl-secure afl-clang-fast "-g" -DMI_SECURE=ON

asan_lib=("$out/lib-libfuzzer-asan/libmimalloc-asan.a")
for plant in "" "-plant"; do
  pflag=()
  [ -n "$plant" ] && pflag=(-DMI_FUZZ_PLANT_UAF=1)
  harness "libfuzzer-alloc$plant" clang -fsanitize=fuzzer,address $ubsan "${pflag[@]}" fuzz/fuzz-alloc.c \
    "${common[@]}" "$out/bin/pattern-asan.o" "$out/lib-libfuzzer-asan/libmimalloc-asan.a"
  harness "afl-alloc$plant" afl-clang-fast -fsanitize=address "${pflag[@]}" fuzz/afl-main.c fuzz/fuzz-alloc.c \
    "${common[@]}" "$out/bin/pattern-asan.o" "$out/lib-afl-asan/libmimalloc-asan.a"
  sflag=(-DFZ_SECURE=1)
  [ -n "$plant" ] && sflag+=(-DMI_FUZZ_PLANT_UNDETECTED=1)
  harness "libfuzzer-secure$plant" clang -fsanitize=fuzzer $ubsan "${sflag[@]}" fuzz/fuzz-secure.c fuzz/corrupt.c \
    "${common[@]}" "$out/bin/pattern.o" "$out/lib-libfuzzer-secure/libmimalloc-secure.a"
  harness "afl-secure$plant" afl-clang-fast "${sflag[@]}" fuzz/afl-main.c fuzz/fuzz-secure.c fuzz/corrupt.c \
    "${common[@]}" "$out/bin/pattern.o" "$out/lib-afl-secure/libmimalloc-secure.a"
done
# the triage job's plant in the secure harness: a double free, which secure
# mode reports with its stacks (ci/fuzz.sh)
harness libfuzzer-secure-dfree clang -fsanitize=fuzzer $ubsan -DFZ_SECURE=1 -DMI_FUZZ_PLANT_DOUBLE_FREE=1 \
  fuzz/fuzz-secure.c fuzz/corrupt.c "${common[@]}" "$out/bin/pattern.o" "$out/lib-libfuzzer-secure/libmimalloc-secure.a"
harness afl-secure-dfree afl-clang-fast -DFZ_SECURE=1 -DMI_FUZZ_PLANT_DOUBLE_FREE=1 fuzz/afl-main.c \
  fuzz/fuzz-secure.c fuzz/corrupt.c "${common[@]}" "$out/bin/pattern.o" "$out/lib-afl-secure/libmimalloc-secure.a"
# the control harness: the alloc harness on the C library's allocator (ASan's)
harness libfuzzer-control clang -fsanitize=fuzzer,address $ubsan -DFZ_CONTROL=1 fuzz/fuzz-alloc.c "${common[@]}" \
  "$out/bin/pattern-asan.o" fuzz/control.c
harness replay-control clang -fsanitize=address $ubsan -DFZ_CONTROL=1 fuzz/replay.c fuzz/fuzz-alloc.c \
  "${common[@]}" "$out/bin/pattern-asan.o" fuzz/control.c
# and its floor: a bump pointer over resident memory, no allocator's work
harness libfuzzer-floor clang -fsanitize=fuzzer,address $ubsan -DFZ_CONTROL=1 -DFZ_CONTROL_BUMP=1 fuzz/fuzz-alloc.c \
  "${common[@]}" "$out/bin/pattern-asan.o" fuzz/control.c
harness replay-floor clang -fsanitize=address $ubsan -DFZ_CONTROL=1 -DFZ_CONTROL_BUMP=1 fuzz/replay.c fuzz/fuzz-alloc.c \
  "${common[@]}" "$out/bin/pattern-asan.o" fuzz/control.c
for leak in "" "-leak"; do
  lflag=()
  [ -n "$leak" ] && lflag=(-DMI_FUZZ_PLANT_LEAK=1)
  harness "replay-alloc$leak" clang -fsanitize=address $ubsan "${lflag[@]}" fuzz/replay.c fuzz/fuzz-alloc.c \
    "${common[@]}" "$out/bin/pattern-asan.o" "$out/lib-libfuzzer-asan/libmimalloc-asan.a"
  harness "replay-secure$leak" clang $ubsan -DFZ_SECURE=1 "${lflag[@]}" fuzz/replay.c fuzz/fuzz-secure.c fuzz/corrupt.c \
    "${common[@]}" "$out/bin/pattern.o" "$out/lib-libfuzzer-secure/libmimalloc-secure.a"
done
echo "fuzz: built $(ls "$out/bin" | grep -Evc '\.(log|o)$') harnesses in $out/bin"
