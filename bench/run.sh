#!/usr/bin/env bash
# mimalloc-pprof benchmark suite: compares our allocator with glibc, jemalloc,
# tcmalloc, mimalloc (2.4.1 and 3.4.3 built from ../shared/peers, and Debian's
# 2.0.9) and LLVM scudo on our own workloads (bench/workloads/).
#
# usage: bash bench/run.sh [--smoke|--quick|--full|--mimalloc-bench]   (default: --quick)
#
#   --smoke  ~1 minute: 1 run each, tiny scale. For CI: proves it all runs
#            and writes the tables; its numbers mean little.
#   --quick  at most ~15 minutes on a 2-core machine: 3 runs each, scale 1.
#   --full   5 runs each, scale 3, 3 runs of the idle-RSS workload.
#   --mimalloc-bench  instead of our workloads: the mimalloc-bench subset
#            (../shared/peers): ours and ours-secure against mimalloc 2.4.1's
#            default build (the reference), 3.4.3's, tcmalloc, jemalloc, scudo,
#            hardened_malloc, glibc, and mimalloc 2.4.1's and 3.4.3's secure
#            builds; ~35 minutes with 3 rounds (BENCH_MB_SET=secure: ours and
#            the secure builds only, ~12 minutes). Writes BENCH_OUT/mimalloc-bench/.
#
# Environment (all optional):
#   OURS_LIB          our default build   (default: <repo>/build/libmimalloc.so)
#   OURS_SECURE_LIB   our secure build    (default: <repo>/build-secure/libmimalloc-secure.so)
#   BENCH_NO_BUILD=1  never run cmake for ours; skip ours if the library is missing
#   BENCH_ALLOCATORS  comma list to restrict, e.g. glibc,mimalloc,ours
#   BENCH_WORKLOADS   comma list to restrict, e.g. churn,xthread,idle_rss
#   BENCH_THREADS     thread counts for multi-threaded workloads (default "1 2 4")
#   BENCH_RUNS, BENCH_SCALE   override the mode's runs per point / scale factor
#   BENCH_OUT         output directory (default: bench/results)
#   BENCH_BUILD_DIR   where the workloads/tools are compiled (default: bench/build)
#   PEERS_DIR, PEERS_BUILD   --mimalloc-bench: the peers' folder (default <repo>/../shared/peers)
#                     and its build.sh OUTDIR (default /tmp/peers; built if missing)
#   BENCH_MB_ROUNDS, BENCH_MB_ROWS   --mimalloc-bench: rounds (default 3), rows (default all 21)
#   BENCH_MB_EXTRA    --mimalloc-bench: more NAME=LIB to compare, space-separated
#   BENCH_MB_SET      --mimalloc-bench: full (default) or secure (fewer allocators)
#
# Outputs (in BENCH_OUT):
#   latest.csv          workload,threads,allocator,median_s,min_s,max_s,peak_rss_kb
#                       (allocators zero-floor and fence-floor: the secure build's
#                       zeroing floor, and that with the large blocks' fence, README)
#   latest.md           Markdown tables (ratios to mimalloc and glibc, spread, RSS;
#                       the secure build's cost against ours, the floor and scudo)
#   rss-after-idle.csv  workload 8: RSS before / 0 ms / 100 ms / 1 s / 5 s after free
#   scaling-*.png, rss-after-idle.png   gnuplot charts (if gnuplot is available)
#   raw/                every single measurement, verification logs, errors
set -uo pipefail

MODE=quick
for arg in "$@"; do
  case "$arg" in
    --smoke) MODE=smoke ;;
    --quick) MODE=quick ;;
    --full)  MODE=full ;;
    --mimalloc-bench) MODE=mimalloc-bench ;;
    -h|--help) sed -n '2,38p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$arg' (use --smoke, --quick, --full or --mimalloc-bench)" >&2; exit 2 ;;
  esac
done

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$BENCH_DIR/.." && pwd)"
BUILD_DIR="${BENCH_BUILD_DIR:-$BENCH_DIR/build}"
OUT_DIR="${BENCH_OUT:-$BENCH_DIR/results}"
RAW_DIR="$OUT_DIR/raw"

case "$MODE" in
  smoke) RUNS=1; SCALE=0.1;  IDLE_RUNS=1; IDLE_SCALE=0.1; IDLE_PARALLEL=1; TIMEOUT=60;  FLOOR_REPS=1 ;;
  quick) RUNS=3; SCALE=1;    IDLE_RUNS=1; IDLE_SCALE=1;   IDLE_PARALLEL=0; TIMEOUT=180; FLOOR_REPS=3 ;;
  full)  RUNS=5; SCALE=3;    IDLE_RUNS=3; IDLE_SCALE=1;   IDLE_PARALLEL=0; TIMEOUT=900; FLOOR_REPS=3 ;;
  mimalloc-bench) RUNS=0; SCALE=0; IDLE_RUNS=0; IDLE_SCALE=0; IDLE_PARALLEL=0; TIMEOUT=0
    MB_OUT="$OUT_DIR/mimalloc-bench"; RAW_DIR="$MB_OUT/raw"; BENCH_ALLOCATORS=ours,ours-secure ;;
esac
RUNS="${BENCH_RUNS:-$RUNS}"
SCALE="${BENCH_SCALE:-$SCALE}"
THREADS="${BENCH_THREADS:-1 2 4}"
IDLE_THREADS=2

# workload name -> source file; "single" ones run at 1 thread only
ALL_WORKLOADS=(churn xthread falseshare randsizes realloc large shortthreads idle_rss)
declare -A WL_SRC=(
  [churn]=w1_churn [xthread]=w2_xthread [falseshare]=w3_falseshare
  [randsizes]=w4_randsizes [realloc]=w5_realloc [large]=w6_large
  [shortthreads]=w7_shortthreads [idle_rss]=w8_idle_rss )
declare -A WL_SINGLE=( [churn]=1 )

# mimalloc-2.4.1 and mimalloc-3.4.3 are the peers built from ../shared/peers
# (PEERS_DIR) into PEERS_BUILD; mimalloc-2.0.9 is Debian's package (2022),
# kept as such and labelled so.
ALL_ALLOCATORS=(glibc jemalloc tcmalloc mimalloc-2.0.9 mimalloc-2.4.1 mimalloc-3.4.3 scudo ours ours-secure)
PEERS_DIR="${PEERS_DIR:-$REPO_ROOT/../shared/peers}"
PEERS_BUILD="${PEERS_BUILD:-/tmp/peers}"

log()  { printf '[bench] %s\n' "$*"; }
warn() { printf '[bench] WARNING: %s\n' "$*" >&2; }
in_list() { # in_list needle "a,b,c"
  local IFS=','; local x; for x in $2; do [ "$x" = "$1" ] && return 0; done; return 1; }

START_TS=$(date +%s)
mkdir -p "$BUILD_DIR" "$RAW_DIR"
rm -f "$RAW_DIR"/*.csv "$RAW_DIR"/*.txt "$RAW_DIR"/*.log

# ---------------------------------------------------------------- packages
pkg_installed() { # (no "| grep -q": with pipefail, grep's early exit would SIGPIPE dpkg)
  [[ "$(dpkg -s "$1" 2>/dev/null)" == *"Status: install ok installed"* ]]; }

ensure_packages() {
  local missing=() p
  for p in "$@"; do pkg_installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing missing packages: ${missing[*]}"
  local SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"
    else warn "not root and no sudo: cannot install ${missing[*]}"; return 1; fi
  fi
  if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$RAW_DIR/apt.log" 2>&1 ||
     ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
          "${missing[@]}" >>"$RAW_DIR/apt.log" 2>&1; then
    warn "apt-get install failed (see $RAW_DIR/apt.log); continuing with what is there"
    return 1
  fi
  return 0
}

PKGS=(gcc libc6-dev python3 libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libclang-rt-14-dev)
command -v gnuplot >/dev/null 2>&1 || PKGS+=(gnuplot-nox)
ensure_packages "${PKGS[@]}"

command -v gcc >/dev/null 2>&1 || { echo "run.sh: gcc is required" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "run.sh: python3 is required" >&2; exit 1; }

# ------------------------------------------------------------ build tools
log "mode=$MODE runs=$RUNS scale=$SCALE threads='$THREADS' out=$OUT_DIR"
CFLAGS="-O2 -g0 -Wall -Wextra -pthread"
BUILD_FAILED=0
build() { # build <out> <src> [extra flags...]: two compilers at a time
  local out="$1" src="$2"; shift 2
  if [ ! -x "$out" ] || [ "$src" -nt "$out" ] || [ "$BENCH_DIR/workloads/common.h" -nt "$out" ] ||
     [ "$BENCH_DIR/zero_floor.h" -nt "$out" ]; then
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || BUILD_FAILED=1; done
    { gcc $CFLAGS "$@" -o "$out" "$src" || { echo "run.sh: failed to compile $src" >&2; exit 1; }; } &
  fi
}
build "$BUILD_DIR/runner" "$BENCH_DIR/runner.c"
build "$BUILD_DIR/which_alloc" "$BENCH_DIR/which_alloc.c" -fPIE -pie -ldl
build "$BUILD_DIR/zero_floor" "$BENCH_DIR/zero_floor.c"
build "$BUILD_DIR/zero_count.so" "$BENCH_DIR/zero_count.c" -shared -fPIC
for w in "${ALL_WORKLOADS[@]}"; do
  build "$BUILD_DIR/${WL_SRC[$w]}" "$BENCH_DIR/workloads/${WL_SRC[$w]}.c"
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || BUILD_FAILED=1; done
[ "$BUILD_FAILED" = 0 ] || exit 1

# ------------------------------------------------------ resolve allocators
declare -A LIB=()        # allocator -> library path ("" for glibc)
declare -A NOTE=()       # allocator -> why skipped / how verified
ACTIVE=()

lib_from_pkg() { # lib_from_pkg <package> <regex on path>
  dpkg -L "$1" 2>/dev/null | grep -E -m1 "$2"; }

# Build ours with cmake (only for the default paths, only if the library is missing).
build_ours() { # build_ours <builddir-name> <log> [cmake args...]
  local dir="$1" logf="$2"; shift 2
  if [ "${BENCH_NO_BUILD:-0}" = "1" ]; then echo "BENCH_NO_BUILD=1"; return 1; fi
  if [ ! -f "$REPO_ROOT/CMakeLists.txt" ]; then echo "no CMakeLists.txt in $REPO_ROOT yet"; return 1; fi
  pkg_installed cmake || ensure_packages cmake >/dev/null 2>&1 || true
  command -v cmake >/dev/null 2>&1 || { echo "cmake not available"; return 1; }
  log "building $dir with cmake (log: $logf)" >&2
  if ! ( cd "$REPO_ROOT" && cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" &&
         cmake --build "$dir" -j2 ) >"$logf" 2>&1; then
    echo "cmake build of $dir failed (see $logf)"; return 1
  fi
  return 0
}

# The peers' libraries: built by their build.sh when the folder is there
# (never in --smoke, which only uses them when built already).
PEERS_TRIED=0
peer_lib() { # peer_lib <version>; prints the path, or the reason on stderr
  local p="$PEERS_BUILD/mimalloc-$1/libmimalloc.so"
  if [ ! -f "$p" ] && [ "$PEERS_TRIED" = 0 ] && [ "$MODE" != smoke ] && [ "${BENCH_NO_BUILD:-0}" != 1 ] &&
     [ -x "$PEERS_DIR/build.sh" ]; then
    PEERS_TRIED=1
    log "building the peers into $PEERS_BUILD (log: $RAW_DIR/peers-build.log)" >&2
    bash "$PEERS_DIR/build.sh" "$PEERS_BUILD" >"$RAW_DIR/peers-build.log" 2>&1 ||
      warn "the peers' build.sh failed (see $RAW_DIR/peers-build.log)"
  fi
  [ -f "$p" ] && echo "$p"
}

resolve_lib() { # resolve_lib <allocator>; sets LIB / NOTE, returns 1 if unavailable
  local a="$1" p msg
  case "$a" in
    glibc)    LIB[$a]=""; return 0 ;;
    jemalloc) p=$(lib_from_pkg libjemalloc2 '/libjemalloc\.so\.2$') ;;
    tcmalloc) p=$(lib_from_pkg libtcmalloc-minimal4 '/libtcmalloc_minimal\.so\.4$') ;;
    mimalloc-2.0.9) p=$(lib_from_pkg libmimalloc2.0 '/libmimalloc\.so\.2(\.[0-9]+)*$') ;;
    mimalloc-2.4.1|mimalloc-3.4.3)
      p=$(peer_lib "${a#mimalloc-}")
      [ -n "$p" ] || { NOTE[$a]="not built (no $PEERS_BUILD/$a; PEERS_DIR=$PEERS_DIR)"; return 1; } ;;
    scudo)    p=$(lib_from_pkg libclang-rt-14-dev '/libclang_rt\.scudo_standalone-x86_64\.so$') ;;
    ours)
      p="${OURS_LIB:-$REPO_ROOT/build/libmimalloc.so}"
      if [ ! -f "$p" ] && [ -z "${OURS_LIB:-}" ]; then
        msg=$(build_ours build "$RAW_DIR/build-ours.log") || { NOTE[$a]="not built: $msg"; return 1; }
      fi
      [ -f "$p" ] || { NOTE[$a]="library $p not found${msg:+ ($msg)}"; return 1; } ;;
    ours-secure)
      p="${OURS_SECURE_LIB:-$REPO_ROOT/build-secure/libmimalloc-secure.so}"
      if [ ! -f "$p" ] && [ -z "${OURS_SECURE_LIB:-}" ]; then
        msg=$(build_ours build-secure "$RAW_DIR/build-ours-secure.log" -DMI_SECURE=ON) ||
          { NOTE[$a]="not built: $msg"; return 1; }
      fi
      [ -f "$p" ] || { NOTE[$a]="library $p not found (secure build does not exist yet?)"; return 1; } ;;
  esac
  if [ -z "$p" ] || [ ! -f "$p" ]; then NOTE[$a]="library not found (package not installed?)"; return 1; fi
  LIB[$a]="$p"
  return 0
}

: >"$RAW_DIR/allocators.csv"
for a in "${ALL_ALLOCATORS[@]}"; do
  if [ -n "${BENCH_ALLOCATORS:-}" ] && ! in_list "$a" "$BENCH_ALLOCATORS"; then continue; fi
  if ! resolve_lib "$a"; then
    warn "skipping $a: ${NOTE[$a]}"
    printf '%s,skipped,,"%s"\n' "$a" "${NOTE[$a]//\"/\'}" >>"$RAW_DIR/allocators.csv"
    continue
  fi
  # verify that this library really serves malloc/free/calloc/realloc
  vlog="$RAW_DIR/verify-$a.txt"
  if [ "$a" = glibc ]; then
    env -u LD_PRELOAD "$BUILD_DIR/which_alloc" glibc >"$vlog" 2>&1; rc=$?
  else
    env LD_PRELOAD="${LIB[$a]}" "$BUILD_DIR/which_alloc" "${LIB[$a]}" >"$vlog" 2>&1; rc=$?
  fi
  if [ $rc -ne 0 ]; then
    NOTE[$a]="FAILED verification: malloc not served by ${LIB[$a]:-libc.so.6} (see raw/verify-$a.txt)"
    warn "skipping $a: ${NOTE[$a]}"; sed 's/^/    /' "$vlog" >&2
    printf '%s,unverified,%s,"%s"\n' "$a" "${LIB[$a]}" "${NOTE[$a]}" >>"$RAW_DIR/allocators.csv"
    continue
  fi
  where=$(grep -m1 'malloc ->' "$vlog" | sed 's/.* in //')
  log "verified $a: malloc served by $where"
  printf '%s,verified,%s,"malloc served by %s"\n' "$a" "${LIB[$a]}" "$where" >>"$RAW_DIR/allocators.csv"
  ACTIVE+=("$a")
done
[ ${#ACTIVE[@]} -gt 0 ] || { echo "run.sh: no allocator available" >&2; exit 1; }
log "allocators: ${ACTIVE[*]}"

# ------------------------------------------- --mimalloc-bench: the peers' subset
if [ "$MODE" = mimalloc-bench ]; then
  [ -x "$PEERS_DIR/build.sh" ] || { echo "run.sh: no $PEERS_DIR/build.sh (set PEERS_DIR)" >&2; exit 1; }
  log "building the peers into $PEERS_BUILD (log: $RAW_DIR/peers-build.log)"
  bash "$PEERS_DIR/build.sh" "$PEERS_BUILD" >"$RAW_DIR/peers-build.log" 2>&1 ||
    { echo "run.sh: $PEERS_DIR/build.sh failed (see $RAW_DIR/peers-build.log)" >&2; exit 1; }
  # the first is the reference of every ratio: mimalloc 2.4.1's default build
  mb_libs=("mi=$PEERS_BUILD/mimalloc-2.4.1/libmimalloc.so")
  [ -n "${LIB[ours]:-}" ] && mb_libs+=("ours=${LIB[ours]}")
  [ -n "${LIB[ours-secure]:-}" ] && mb_libs+=("ours-secure=${LIB[ours-secure]}")
  if [ "${BENCH_MB_SET:-full}" = full ]; then
    mb_libs+=("mi3=$PEERS_BUILD/mimalloc-3.4.3/libmimalloc.so")
    # the others build.sh found (Debian's, hardened_malloc): libs.txt, "name path" lines
    for name in tc je scudo hm; do
      p=$(awk -v n="$name" '$1 == n {print $2}' "$PEERS_BUILD/libs.txt" 2>/dev/null)
      [ -n "$p" ] && [ -f "$p" ] && mb_libs+=("$name=$p")
    done
    mb_libs+=("glibc=none")
  fi
  mb_libs+=("mi-sec=$PEERS_BUILD/mimalloc-2.4.1-secure/libmimalloc-secure.so"
            "mi3-sec=$PEERS_BUILD/mimalloc-3.4.3-secure/libmimalloc-secure.so")
  read -r -a mb_extra <<<"${BENCH_MB_EXTRA:-}"
  mb_args=(--rounds "${BENCH_MB_ROUNDS:-3}" --build "$PEERS_BUILD")
  [ -n "${BENCH_MB_ROWS:-}" ] && mb_args+=(--rows "$BENCH_MB_ROWS")
  log "mimalloc-bench: ${mb_libs[*]%%=*} ${mb_extra[*]%%=*} -> $MB_OUT"
  # cache-scratch frees its new char[] objects with plain delete, which the
  # secure build stops (docs/secure-mode.md, "Allocation kind"): let it run,
  # as every other allocator here does
  export MIMALLOC_DEALLOC_KIND_CHECK=0
  bash "$PEERS_DIR/mimalloc-bench.sh" "${mb_args[@]}" "$MB_OUT" "${mb_libs[@]}" "${mb_extra[@]}" ||
    { echo "run.sh: mimalloc-bench.sh failed" >&2; exit 1; }
  log "done in $(( $(date +%s) - START_TS )) s; results in $MB_OUT (results.md, results.csv, records.jsonl)"
  exit 0
fi

# The zeroing floor of the secure build (README, "The floor of zero on free"):
# a pseudo-allocator that takes its turn in every round, with the secure build
# or when asked for by name.
FLOOR=0
if in_list ours-secure "$(IFS=,; echo "${ACTIVE[*]}")" ||
   { [ -n "${BENCH_ALLOCATORS:-}" ] && in_list zero-floor "$BENCH_ALLOCATORS"; }; then
  FLOOR=1
  printf 'zero-floor,measured,,"zero_floor: the zeroing of the blocks the secure build zeroes on free, no allocator"\n' \
    >>"$RAW_DIR/allocators.csv"
  printf 'fence-floor,measured,,"zero_floor -F: that zeroing and the fence of the freed large blocks (two mprotect calls each), no allocator"\n' \
    >>"$RAW_DIR/allocators.csv"
fi

# ------------------------------------------------------------- timed runs
TIMES="$RAW_DIR/times.csv"
echo "workload,threads,allocator,run,wall_s,maxrss_kb,status" >"$TIMES"
ERRLOG="$RAW_DIR/errors.log"
: >"$ERRLOG"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

CONFIGS=()
for w in "${ALL_WORKLOADS[@]}"; do
  [ "$w" = idle_rss ] && continue
  if [ -n "${BENCH_WORKLOADS:-}" ] && ! in_list "$w" "$BENCH_WORKLOADS"; then continue; fi
  if [ -n "${WL_SINGLE[$w]:-}" ]; then CONFIGS+=("$w:1")
  else for t in $THREADS; do CONFIGS+=("$w:$t"); done; fi
done

ROTATION=("${ACTIVE[@]}")
[ "$FLOOR" = 1 ] && ROTATION+=(zero-floor)
N=${#ROTATION[@]}

# ------------------------------------------------- workload 8: idle RSS
IDLE="$RAW_DIR/idle.csv"
echo "allocator,run,t_ms,rss_kb" >"$IDLE"
idle_rss_phase() {
  local bin a r k st
  if [ -z "${BENCH_WORKLOADS:-}" ] || in_list idle_rss "$BENCH_WORKLOADS"; then
    bin="$BUILD_DIR/${WL_SRC[idle_rss]}"
    log "idle_rss: ${IDLE_THREADS} threads, scale $IDLE_SCALE (~$(python3 -c "print(round(300*$IDLE_SCALE))") MB), $IDLE_RUNS run(s)$([ "$IDLE_PARALLEL" = 1 ] && echo ', allocators in parallel')"
    run_idle() { # run_idle <allocator> <run>
      "$BUILD_DIR/runner" -p "${LIB[$1]}" -t "$TIMEOUT" -o "$TMP/idle-$1-$2.res" -- \
        "$bin" "$IDLE_THREADS" "$IDLE_SCALE" >"$TMP/idle-$1-$2.out" 2>"$TMP/idle-$1-$2.err"
    }
    for ((r = 1; r <= IDLE_RUNS; r++)); do
      for ((k = 0; k < ${#ACTIVE[@]}; k++)); do
        a="${ACTIVE[$(( (k + r - 1) % ${#ACTIVE[@]} ))]}"
        if [ "$IDLE_PARALLEL" = 1 ]; then run_idle "$a" "$r" & else run_idle "$a" "$r"; fi
      done
      wait
      for a in "${ACTIVE[@]}"; do
        st=$(awk '{print $3}' "$TMP/idle-$a-$r.res" 2>/dev/null)
        if [ "$st" = 0 ]; then
          tail -n +2 "$TMP/idle-$a-$r.out" | sed "s/^/$a,$r,/" >>"$IDLE"
        else
          warn "idle_rss $a run $r failed (status ${st:-?})"
          { echo "== idle_rss $a run $r status ${st:-?}"; tail -n 20 "$TMP/idle-$a-$r.err"; } >>"$ERRLOG"
        fi
      done
    done
    log "idle_rss done: $(awk -F, 'NR>1 && $3==5000 {printf "%s=%dMB ", $1, $4/1024}' "$IDLE")"
  fi
}
# With --smoke (allocators in parallel, RSS only) idle_rss runs first, in the
# background, and the untimed block counts below run while it sleeps; it is
# over before the first timed run. The other modes run it last, alone.
if [ "$IDLE_PARALLEL" = 1 ]; then idle_rss_phase & fi

# Before any timed run, once per configuration and two at a time (they are not
# timed): the blocks the run frees, by the secure build's block size.
count_zeroing() { # count_zeroing <workload> <threads>
  local w="$1" t="$2" counts="$RAW_DIR/zero-count-$1-$2.txt" st
  ZERO_COUNT_OUT="$counts" "$BUILD_DIR/runner" -p "$BUILD_DIR/zero_count.so" -t "$TIMEOUT" -o "$TMP/count-$w-$t" \
    -- "$BUILD_DIR/${WL_SRC[$w]}" "$t" "$SCALE" >/dev/null 2>"$TMP/count-$w-$t.err"
  if ! read -r _ _ st <"$TMP/count-$w-$t" || [ "$st" != 0 ] || [ ! -s "$counts" ]; then
    warn "$w t=$t: the zero_count run failed (status ${st:-?}); no zero-floor for it"
    { echo "== $w t=$t zero_count status ${st:-?}"; tail -n 20 "$TMP/count-$w-$t.err"; } >>"$ERRLOG"
    rm -f "$counts"
  fi
}
if [ "$FLOOR" = 1 ]; then
  log "counting the blocks each configuration zeroes on free (zero_count.so)"
  for cfg in "${CONFIGS[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done # (a --smoke idle_rss counts as one)
    count_zeroing "${cfg%%:*}" "${cfg##*:}" &
  done
fi
wait # the counts, and a --smoke idle_rss

ci=0
for cfg in "${CONFIGS[@]}"; do
  w="${cfg%%:*}"; t="${cfg##*:}"; ci=$((ci + 1))
  bin="$BUILD_DIR/${WL_SRC[$w]}"
  line="[$ci/${#CONFIGS[@]}] $w t=$t:"
  declare -A last=()
  counts="$RAW_DIR/zero-count-$w-$t.txt"
  for ((r = 1; r <= RUNS; r++)); do
    # round-robin: every allocator once per round, starting point rotated
    for ((k = 0; k < N; k++)); do
      a="${ROTATION[$(( (k + r - 1 + ci) % N ))]}"
      if [ "$a" = zero-floor ]; then
        [ -f "$counts" ] || continue
        echo "0 0 runner-error" >"$TMP/res"
        echo "0 0 runner-error" >"$TMP/fence-res"
        "$BUILD_DIR/zero_floor" -r "$FLOOR_REPS" -o "$TMP/res" -F "$TMP/fence-res" "$counts" "$t" \
          >>"$RAW_DIR/zero-floor.log" 2>"$TMP/err"
        # the same process's third pass: a row of its own, in the same round
        read -r wall rss st <"$TMP/fence-res" || { wall=0; rss=0; st=runner-error; }
        echo "$w,$t,fence-floor,$r,$wall,$rss,$st" >>"$TIMES"
        [ "$st" = 0 ] && last[fence-floor]=$(printf '%.2f' "$wall")
      else
        "$BUILD_DIR/runner" -p "${LIB[$a]}" -t "$TIMEOUT" -o "$TMP/res" -- "$bin" "$t" "$SCALE" \
          >/dev/null 2>"$TMP/err"
      fi
      read -r wall rss st <"$TMP/res" || { wall=0; rss=0; st=runner-error; }
      echo "$w,$t,$a,$r,$wall,$rss,$st" >>"$TIMES"
      if [ "$st" != 0 ]; then
        warn "$w t=$t $a run $r failed (status $st)"
        { echo "== $w t=$t $a run $r status $st"; tail -n 20 "$TMP/err"; } >>"$ERRLOG"
        last[$a]="FAIL"
      else
        last[$a]=$(printf '%.2f' "$wall")
      fi
    done
  done
  for a in "${ROTATION[@]}" fence-floor; do [ -n "${last[$a]:-}" ] && line+=" $a=${last[$a]}"; done
  log "$line"
  unset last
done

[ "$IDLE_PARALLEL" = 1 ] || idle_rss_phase

# -------------------------------------------------------------- aggregate
cat >"$RAW_DIR/meta.txt" <<EOF
mode=$MODE
runs=$RUNS
scale=$SCALE
idle_runs=$IDLE_RUNS
idle_scale=$IDLE_SCALE
idle_threads=$IDLE_THREADS
date=$(date -u '+%Y-%m-%d %H:%M UTC')
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
cores=$(nproc)
kernel=$(uname -r)
glibc=$(ldd --version 2>/dev/null | head -n1 | sed 's/.* //')
commit=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo none)
elapsed_s=$(( $(date +%s) - START_TS ))
EOF
python3 "$BENCH_DIR/aggregate.py" --raw "$RAW_DIR" --out "$OUT_DIR" || { echo "run.sh: aggregation failed" >&2; exit 1; }

log "done in $(( $(date +%s) - START_TS )) s; results in $OUT_DIR (latest.csv, latest.md, rss-after-idle.csv, *.png)"
[ -s "$ERRLOG" ] && warn "some runs failed; see $ERRLOG"
exit 0
