#!/usr/bin/env bash
# The fuzz triage job (docs/fuzzing.md, "Triage"): two planted bugs, each
# found four times (libFuzzer with three seeds, AFL++ once), go through
# fuzz/triage.sh -m, which must
#   - reproduce every input alone, with its stacks: the double free planted
#     in the secure harness (MI_FUZZ_PLANT_DOUBLE_FREE) as the secure
#     report with the detecting, allocating and freeing stacks (the
#     detecting one only for a zero-size block, whose are not kept); the read
#     after free planted in the alloc harness (MI_FUZZ_PLANT_UAF) as ASan's
#     report with fz_op_reserved in its stack;
#   - put each bug's four inputs in one group and nothing else in it: two
#     groups;
#   - minimize each group's smallest input of each engine with that engine's
#     tool (libFuzzer's -minimize_crash, afl-tmin) to one that reproduces
#     the same key.
# The secure plant's campaign log must carry the key that triage groups by.
# Controls: grouping the same reports by their first line (which holds an
# address) must not give two groups, and a minimized input checked against
# the other group's key must be rejected.
#   ci/fuzz-triage.sh OUT_DIR [BUILD_DIR]   (fuzz/build.sh's OUT_DIR; built there if absent)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:?usage: ci/fuzz-triage.sh OUT_DIR [BUILD_DIR]}
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=${2:-$out/build}
if [ ! -x "$build/bin/libfuzzer-secure-dfree" ] || [ ! -x "$build/bin/afl-alloc-plant" ]; then
  bash fuzz/build.sh "$build" || { echo "fuzz-triage: build failed"; exit 1; }
fi
bin=$(cd "$build/bin" && pwd)
rm -rf "$out/runs" "$out/triage" "$out/control" && mkdir -p "$out/runs"
export ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=1:abort_on_error=1:symbolize=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
status=0

# find_libfuzzer PLANT HARNESS SEED: a campaign until its first crash (at most
# 40,000 executions, as ci/fuzz.sh's controls); prints the crashing input
find_libfuzzer() {
  local dir=$out/runs/libfuzzer-$1-$3
  mkdir -p "$dir/corpus" "$dir/found"
  cp "$root/fuzz/corpus/$2"/* "$dir/corpus/"
  "$bin/libfuzzer-$1" -seed="$3" -runs=40000 -max_len=4096 -dict="$root/fuzz/alloc.dict" -detect_leaks=0 \
    -artifact_prefix="$dir/found/" "$dir/corpus" >"$dir.log" 2>&1
  # (the log names the input; forked children may leave other crash-* files)
  sed -n 's/.*Test unit written to \([^ ]*\/crash-[^ ]*\).*/\1/p' "$dir.log" | head -1
}

# find_afl PLANT HARNESS: AFL++ until its first crash (at most 100,000 executions)
find_afl() {
  local dir=$out/runs/afl-$1
  AFL_BENCH_UNTIL_CRASH=1 timeout 900 afl-fuzz -i "$root/fuzz/corpus/$2" -o "$dir" -x "$root/fuzz/alloc.dict" \
    -m none -t 10000 -E 100000 -- "$bin/afl-$1" >"$dir.log" 2>&1
  ls "$dir"/default/crashes/id:* 2>/dev/null | head -1
}

t0=$(date +%s)
declare -A found found_key
for plant in alloc-plant:alloc secure-dfree:secure; do
  p=${plant%%:*} h=${plant##*:}
  find_afl "$p" "$h" >"$out/runs/afl-$p.input" &
  afl_pid=$!
  for seed in 1 2 3; do
    input=$(find_libfuzzer "$p" "$h" "$seed")
    [ -n "$input" ] && found[$p]+="$bin/libfuzzer-$p $input " ||
      { echo "fuzz-triage: libfuzzer-$p (seed $seed) found nothing"; status=1; }
  done
  wait $afl_pid
  input=$(cat "$out/runs/afl-$p.input")
  [ -n "$input" ] && found[$p]+="$bin/afl-$p $input " || { echo "fuzz-triage: afl-$p found nothing"; status=1; }
done
echo "fuzz-triage: the plants found: $(($(date +%s) - t0)) s"
[ $status -eq 0 ] || { echo "fuzz-triage: FAILED"; exit 1; }

t0=$(date +%s)
# shellcheck disable=SC2086 # (binaries and inputs, word by word)
bash fuzz/triage.sh -m "$out/triage" ${found[alloc-plant]} ${found[secure-dfree]} | tee "$out/triage.log"
rc=${PIPESTATUS[0]}
echo "fuzz-triage: triage: $(($(date +%s) - t0)) s"
[ "$rc" -eq 0 ] || { echo "fuzz-triage: triage.sh failed ($rc)"; status=1; }

# group_of INPUT: the key triage gave an input
group_of() { awk -F'\t' -v f="$1" '$4 == f { print $1 }' "$out/triage/keys.tsv"; }
groups=$(wc -l <"$out/triage/groups.tsv")
[ "$groups" -eq 2 ] || { echo "fuzz-triage: $groups groups, not 2"; status=1; }
for p in alloc-plant secure-dfree; do
  keys=$(for f in ${found[$p]}; do [ -x "$f" ] || group_of "$f"; done | sort -u)
  n=$(echo "$keys" | wc -l)
  count=$(awk -F'\t' -v k="$keys" '$1 == k { print $2 }' "$out/triage/groups.tsv")
  if [ "$n" -ne 1 ] || [ "$count" != 4 ]; then
    echo "fuzz-triage: $p's 4 inputs are in $n groups ($keys), of $count inputs"
    status=1
    continue
  fi
  found_key[${p%%-*}]=$keys
  echo "fuzz-triage: $p: 4 inputs, one group $keys"
done
akey=${found_key[alloc]:-} skey=${found_key[secure]:-}

# each group minimized by both engines' tools, to its own key
for k in "$akey" "$skey"; do
  for e in libfuzzer afl; do
    grep -q "^triage: group $k: minimized by $e's tool .*, the same key\$" "$out/triage.log" ||
      { echo "fuzz-triage: group $k: no input minimized by $e's tool to the same key"; status=1; }
  done
done

# each report with its stacks
for f in ${found[secure-dfree]}; do
  [ -x "$f" ] && continue
  r=$out/triage/reports/$(basename "$f").txt
  # (a zero-size block's stacks are not recorded: its report has the
  # detecting stack only; docs/fuzzing.md)
  sections='^mimalloc:   (allocated|freed) by thread [0-9]+ at:'
  grep -q '^mimalloc: error: double free detected of block 0x[0-9a-f]* (size 0)' "$r" && sections=''
  if ! grep -q '^mimalloc: error: double free detected of block' "$r" ||
    ! grep -Eq '^mimalloc:   detected at:' "$r" || ! grep -Eq '^mimalloc:     #[0-9]+ .* in fz_' "$r" ||
    { [ -n "$sections" ] && [ "$(grep -Ec "$sections" "$r")" -ne 2 ]; }; then
    echo "fuzz-triage: $(basename "$f"): not the secure report with its three stacks:"
    head -30 "$r"
    status=1
  fi
done
for f in ${found[alloc-plant]}; do
  [ -x "$f" ] && continue
  r=$out/triage/reports/$(basename "$f").txt
  if ! grep -Eq '^==[0-9]+==ERROR: AddressSanitizer: (heap-use-after-free|use-after-poison|SEGV on unknown address)' "$r" ||
    ! grep -Eq '^ +#[0-9]+ .* in fz_op_reserved ' "$r"; then
    echo "fuzz-triage: $(basename "$f"): not ASan's report of the planted read with its stack:"
    head -30 "$r"
    status=1
  fi
done
# the campaign's own crash log carries the key triage grouped by (libFuzzer,
# secure report: the key does not depend on the stacks being recorded)
log=$out/runs/libfuzzer-secure-dfree-1.log
if [ -n "$skey" ] && ! grep -q "^mimalloc:   DEDUP_TOKEN: $skey\$" "$log"; then
  echo "fuzz-triage: the campaign's log has not the group's key $skey: $(grep -m1 DEDUP_TOKEN "$log")"
  status=1
fi

# controls: a key that is not a dedup key (the report's first line: it holds
# the block's address) must not give the two groups; the other group's key
# must be refused for a minimized input
firsts=$(for f in $(cut -f4 "$out/triage/keys.tsv"); do
  grep -m1 -E '^(mimalloc: error: .* detected |==[0-9]+==ERROR:)' "$out/triage/reports/$(basename "$f").txt" |
    sed 's/^==[0-9]*==//'
done | sort -u | wc -l)
if [ "$firsts" -le 2 ]; then
  echo "fuzz-triage: control: grouping by the reports' first lines gave $firsts groups: the check could not fail"
  status=1
else
  echo "fuzz-triage: control: grouping by the reports' first lines gives $firsts groups (refused)"
fi
if [ -n "$akey" ] && [ -n "$skey" ]; then
  if bash fuzz/triage.sh -k "$akey" "$out/control" "$bin/libfuzzer-secure-dfree" "$out/triage/min/$skey.libfuzzer" \
    >"$out/control.log"; then
    echo "fuzz-triage: control: a minimized input passed for the other group's key"
    status=1
  else
    echo "fuzz-triage: control: the other group's key refused ($(cut -c1-100 "$out/control.log"))"
  fi
fi
[ "$status" -eq 0 ] && echo "fuzz-triage: ok" || echo "fuzz-triage: FAILED"
exit $status
