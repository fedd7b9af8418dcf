#!/usr/bin/env bash
# Lint job (docs/lint.md): clang-format, the layer check of src/ (includes and
# calls), cppcheck and clang-tidy, each with zero findings, each with a
# positive control (a planted bad file the tool must report, matched on the
# tool's own finding line).
#   ci/lint.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:?usage: ci/lint.sh OUT_DIR}
rm -rf "$out" && mkdir -p "$out"
out=$(cd "$out" && pwd)
status=0
fail() {
  echo "lint: $*"
  status=1
}

# ---- clang-format ---------------------------------------------------------------
# Every C file of src include tests fuzz bench, but those listed in
# ci/format-pending.txt (written before .clang-format, not reformatted yet).
t0=$(date +%s)
mapfile -t pending < <(grep -v '^#' ci/format-pending.txt | sed '/^$/d')
files=()
while IFS= read -r f; do
  skip=0
  for p in "${pending[@]}"; do [ "$f" = "$p" ] && skip=1; done
  [ $skip -eq 0 ] && files+=("$f")
done < <(git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'fuzz/*.[ch]' 'bench/*.[ch]' | grep -v '^tests/lint/')
if clang-format --dry-run --Werror "${files[@]}" >"$out/clang-format.log" 2>&1; then
  echo "lint: clang-format: ${#files[@]} files clean (${#pending[@]} pending, ci/format-pending.txt)"
else
  fail "clang-format: findings:"
  grep -E ': (error|warning): code should be clang-formatted' "$out/clang-format.log" | head -20
fi
# control: a misformatted file must be reported with the tool's finding line
clang-format --dry-run --Werror tests/lint/misformatted.c >"$out/clang-format-control.log" 2>&1
if grep -Eq '^tests/lint/misformatted\.c:[0-9]+:[0-9]+: error: code should be clang-formatted' \
  "$out/clang-format-control.log"; then
  echo "lint: clang-format control: reported"
else
  fail "clang-format control: the misformatted file was NOT reported"
  cat "$out/clang-format-control.log"
fi
echo "lint: clang-format: $(($(date +%s) - t0)) s"

# ---- Layers -----------------------------------------------------------------------
# Each file of src/ includes only headers of its own layer and below
# (ci/layers.txt, docs/architecture.md).
if python3 ci/layer-check.py >"$out/layers.log" 2>&1; then
  echo "lint: $(cat "$out/layers.log")"
else
  fail "layer check: findings:"
  head -20 "$out/layers.log"
fi
# control: an OS-layer file that includes the page layer's header
python3 ci/layer-check.py --as src/os/layer-upcall.c tests/lint/layer-upcall.c >"$out/layers-control.log" 2>&1
if grep -Eq '^layer: src/os/layer-upcall\.c: includes src/page/page\.h \(page, rank 4\) from os \(rank 2\)$' \
  "$out/layers-control.log"; then
  echo "lint: layer check control: reported"
else
  fail "layer check control: the inclusion upwards was NOT reported"
  cat "$out/layers-control.log"
fi

# ---- Calls between the layers ---------------------------------------------------
# Each file of src/ calls (or uses a variable of) only files of its own layer
# and below, but the links named by an allow-call line of ci/layers.txt: read
# from nm of the static library's objects, Debug default and secure (-O0,
# MI_STAT=2: the most code), built here (the library only).
t0=$(date +%s)
for cfg in default secure; do
  flag=OFF
  [ $cfg = secure ] && flag=ON
  { cmake -S "$root" -B "$out/calls-$cfg" -DCMAKE_BUILD_TYPE=Debug -DMI_SECURE=$flag -DMI_STAT=2 \
    -DMI_BUILD_SHARED=OFF -DMI_BUILD_TESTS=OFF && cmake --build "$out/calls-$cfg" -j 2 --target mimalloc-static; } \
    >"$out/calls-$cfg.log" 2>&1 || { fail "call check: the $cfg build failed"; tail -20 "$out/calls-$cfg.log"; }
done
if python3 ci/layer-check.py --calls "$out/calls-default" "$out/calls-secure" >"$out/calls.log" 2>&1; then
  echo "lint: $(head -1 "$out/calls.log") (the list: calls.log)"
else
  fail "call check: findings (the list of upward links: calls.log):"
  grep -E '^(call: |Traceback|[A-Za-z]+Error)' "$out/calls.log" | head -20
fi
grep -E '^  allowed ' "$out/calls.log" | sed 's/^ */lint:   /'
sed -n '/^folders by calls/,/^[^ ]/p' "$out/calls.log" | grep -Ev '^(call|upward)' | sed 's/^ */lint:   /'
# call_control NAME SOURCE AS_PATH FINDING WHAT: a planted link (SOURCE compiled,
# its undefined symbols counted as AS_PATH's) must be reported as FINDING
call_control() {
  local name=$1 src=$2 as=$3 finding=$4 what=$5 log="$out/calls-$1-control.log"
  ${CC:-cc} -std=c11 -c "$src" -o "$out/$name.o" >"$log" 2>&1
  python3 ci/layer-check.py --calls "$out/calls-default" "$out/calls-secure" --as "$as" "$out/$name.o" >>"$log" 2>&1
  local rc=$?
  if [ $rc -eq 1 ] && grep -Eq "$finding" "$log"; then
    echo "lint: call check $name control: reported"
  else
    fail "call check $name control: $what was NOT reported (exit $rc)"
    grep -v '^  ' "$log"
  fi
}
# a page-layer file calling the pprof wing's record of an allocation
call_control upward tests/lint/call-upward.c src/page/page.c \
  '^call: src/page/page\.c -> src/prof/record\.c \(observers, rank 6\) from page \(rank 4\): _mi_prof_record_alloc$' \
  "the call upwards"
# the secure front calling the entry points' free: not upward (one rank), but
# api/ and secure/ would call each other
call_control cycle tests/lint/call-cycle.c src/secure/free.c \
  '^call: folders in a cycle: api secure: .*; the secure -> api links: src/secure/free\.c -> src/api/free\.c: mi_free$' \
  "the folders' cycle"
echo "lint: call check: $(($(date +%s) - t0)) s"

# ---- Compile databases: the default and the secure build, Debug (assertions,
# fault hooks, lock-order checker compiled in: the most code) -------------------
for cfg in default secure; do
  flag=OFF
  [ $cfg = secure ] && flag=ON
  CC=clang cmake -S "$root" -B "$out/db-$cfg" -DCMAKE_BUILD_TYPE=Debug -DMI_SECURE=$flag \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$out/db-$cfg.log" 2>&1 || { fail "cmake $cfg failed"; cat "$out/db-$cfg.log"; }
done

# ---- cppcheck -------------------------------------------------------------------
# _Atomic(T) as a cast trips cppcheck 2.10's parser (internalAstError): it
# reads it as T. Suppressions: ci/cppcheck-suppressions.txt (each with its
# reason) and inline ones in the code.
t0=$(date +%s)
cppcheck_run() { # cppcheck_run LOG ARGS...
  local log=$1
  shift
  cppcheck -q --std=c11 --enable=warning,style,performance,portability --inline-suppr \
    --suppressions-list=ci/cppcheck-suppressions.txt -D'_Atomic(x)=x' --error-exitcode=1 \
    --template='{file}:{line}:{column}: {severity}: {message} [{id}]' "$@" >"$log" 2>&1
}
for cfg in default secure; do
  if cppcheck_run "$out/cppcheck-$cfg.log" --project="$out/db-$cfg/compile_commands.json" \
    --file-filter="$root/src/*"; then
    echo "lint: cppcheck $cfg: clean"
  else
    fail "cppcheck $cfg: findings:"
    grep -E '^[^ ]+:[0-9]+:[0-9]+: ' "$out/cppcheck-$cfg.log" | head -20
  fi
done
# control: a null dereference and a leak the tool must report
cppcheck_run "$out/cppcheck-control.log" tests/lint/cppcheck-bugs.c
if grep -Eq '^tests/lint/cppcheck-bugs\.c:[0-9]+:[0-9]+: error: Null pointer dereference' \
  "$out/cppcheck-control.log" && grep -Eq '^tests/lint/cppcheck-bugs\.c:[0-9]+:[0-9]+: error: Memory leak' \
  "$out/cppcheck-control.log"; then
  echo "lint: cppcheck control: reported"
else
  fail "cppcheck control: the planted bugs were NOT reported"
  cat "$out/cppcheck-control.log"
fi
echo "lint: cppcheck: $(($(date +%s) - t0)) s"

# ---- clang-tidy -------------------------------------------------------------------
# The checks are in .clang-tidy, with the reason for each exclusion. The
# control goes through the same run and the same matching as src/ (its own
# compile database): run-clang-tidy colours its output, which the matching
# must see through.
t0=$(date +%s)
tidy() { # tidy DB LOG FILE...: run clang-tidy; the finding lines, uncoloured, in LOG.findings
  local db=$1 log=$2
  shift 2
  run-clang-tidy -quiet -p "$db" -j 2 "$@" >"$log" 2>&1
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^/[^ ]+:[0-9]+:[0-9]+: (warning|error): ' | sort -u >"$log.findings"
}
for cfg in default secure; do
  mapfile -t sources < <(python3 -c '
import json, sys
for e in json.load(open(sys.argv[1])):
    if "/src/" in e["file"]: print(e["file"])' "$out/db-$cfg/compile_commands.json" | sort -u)
  tidy "$out/db-$cfg" "$out/clang-tidy-$cfg.log" "${sources[@]}"
  if [ -s "$out/clang-tidy-$cfg.log.findings" ]; then
    fail "clang-tidy $cfg: findings:"
    head -20 "$out/clang-tidy-$cfg.log.findings"
  else
    echo "lint: clang-tidy $cfg: ${#sources[@]} files clean"
  fi
done
# control: a planted bug, compiled as src/ is (C11, the include directory)
mkdir -p "$out/db-control"
printf '[{"directory": "%s", "file": "%s/tests/lint/tidy-bug.c", "command": "clang -std=c11 -I%s/include -c %s/tests/lint/tidy-bug.c"}]\n' \
  "$root" "$root" "$root" "$root" >"$out/db-control/compile_commands.json"
tidy "$out/db-control" "$out/clang-tidy-control.log" "$root/tests/lint/tidy-bug.c"
if grep -Eq '^/.*/tests/lint/tidy-bug\.c:[0-9]+:[0-9]+: warning: .*\[clang-analyzer-core\.NullDereference\]' \
  "$out/clang-tidy-control.log.findings"; then
  echo "lint: clang-tidy control: reported"
else
  fail "clang-tidy control: the planted bug was NOT reported"
  cat "$out/clang-tidy-control.log"
fi
echo "lint: clang-tidy: $(($(date +%s) - t0)) s"

[ $status -eq 0 ] && echo "lint: ok" || echo "lint: FAILED"
exit $status
