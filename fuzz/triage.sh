#!/usr/bin/env bash
# Triage of a campaign's crashing inputs (docs/fuzzing.md, "Triage"):
#   fuzz/triage.sh [-m] OUT_DIR BINARY CRASH... [BINARY CRASH...]...
# Each CRASH is replayed alone by the BINARY named before it (any of
# fuzz/build.sh's harnesses, libFuzzer's or AFL++'s), through
# fuzz/run-reproducer.sh: symbolized, with the secure build's stacks
# recorded (MIMALLOC_SECURE_STACKS=1). Its report goes to
# OUT_DIR/reports/NAME.txt, and its dedup key is the first DEDUP_TOKEN line
# of the report: the secure report's, ASan's (dedup_token_length=3), or the
# harness's model mismatch's. Crashes are grouped by key: one line a group in
# OUT_DIR/groups.tsv (key, count, inputs) and on stdout.
#   fuzz/triage.sh -k KEY OUT_DIR BINARY CRASH
# checks one input against a key: exit 1 unless it reproduces KEY.
#   -m   also minimize each group's smallest input of each engine with that
#        engine's tool (libFuzzer's -minimize_crash, which keeps only
#        reductions with the same DEDUP_TOKEN; AFL++'s afl-tmin, checked
#        after), to OUT_DIR/min/KEY.ENGINE; a minimized input that
#        reproduces another key fails the triage.
# Exit status: 0; 1 if an input did not reproduce a crash, or a minimized
# input changed its key; 2 on bad usage.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
minimize=0
want=""
case ${1:-} in
  -m) minimize=1 && shift ;;
  -k) want=${2:-} && shift 2 ;;
esac
[ $# -ge 3 ] || { echo "usage: $0 [-m] OUT_DIR BINARY CRASH... [BINARY CRASH...]..." >&2; exit 2; }
out=$1
shift
mkdir -p "$out/reports" "$out/min"
: >"$out/keys.tsv"
export MIMALLOC_SECURE_STACKS=1
status=0

# key_of BINARY INPUT REPORT: reproduce, keep the report, print the key
key_of() {
  timeout 300 "$here/run-reproducer.sh" "$1" "$2" >"$3" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    echo "no-crash"
    return
  fi
  local key
  key=$(grep -m1 -o 'DEDUP_TOKEN: .*' "$3" | cut -d' ' -f2-)
  echo "${key:-unkeyed}"
}

if [ -n "$want" ]; then
  [ $# -eq 2 ] || { echo "usage: $0 -k KEY OUT_DIR BINARY CRASH" >&2; exit 2; }
  got=$(key_of "$1" "$2" "$out/reports/$(basename "$2").txt")
  [ "$got" = "$want" ] && echo "triage: $(basename "$2"): $got" && exit 0
  echo "triage: $(basename "$2") reproduces $got, not $want"
  exit 1
fi

bin=""
for arg in "$@"; do
  if [ -f "$arg" ] && [ -x "$arg" ]; then
    bin=$arg
    continue
  fi
  [ -n "$bin" ] || { echo "triage: $arg: no BINARY before it" >&2; exit 2; }
  name=$(basename "$arg")
  key=$(key_of "$bin" "$arg" "$out/reports/$name.txt")
  if [ "$key" = "no-crash" ]; then
    echo "triage: $name does not reproduce a crash alone (its report: $out/reports/$name.txt)"
    status=1
  fi
  printf '%s\t%s\t%s\t%s\n' "$key" "$(stat -c %s "$arg")" "$bin" "$arg" >>"$out/keys.tsv"
done

# groups: the key, the count, the inputs (smallest first)
sort -t$'\t' -k1,1 -k2,2n "$out/keys.tsv" |
  awk -F'\t' '{ n[$1]++; in_[$1] = in_[$1] (in_[$1] == "" ? "" : " ") $4 }
              END { for (k in n) printf "%s\t%d\t%s\n", k, n[k], in_[k] }' | sort >"$out/groups.tsv"
echo "triage: $(wc -l <"$out/keys.tsv") inputs, $(wc -l <"$out/groups.tsv") groups"
while IFS=$'\t' read -r key count inputs; do
  first=${inputs%% *}
  line=$(grep -m1 -E '^(mimalloc: error: .* detected |==[0-9]+==ERROR:|fuzz: model mismatch:|SUMMARY:)' \
    "$out/reports/$(basename "$first").txt" | cut -c1-120)
  echo "triage: group $key: $count inputs: $line"
done <"$out/groups.tsv"

[ $minimize -eq 1 ] || exit $status
# each group's smallest input of each engine, with that engine's tool
while IFS=$'\t' read -r key count inputs; do
  case $key in no-crash | unkeyed) continue ;; esac
  for engine in libfuzzer afl; do
    row=$(awk -F'\t' -v k="$key" -v e="$engine" '$1 == k { n = split($3, p, "/"); if (index(p[n], e "-") == 1) print }' \
      "$out/keys.tsv" | sort -t$'\t' -k2,2n | head -1)
    [ -n "$row" ] || continue
    bin=$(echo "$row" | cut -f3)
    first=$(echo "$row" | cut -f4)
    min=$out/min/$key.$engine
    if [ $engine = afl ]; then
      AFL_SKIP_CPUFREQ=1 timeout 600 afl-tmin -i "$first" -o "$min" -t 10000 -m none -- "$bin" >"$min.log" 2>&1
    else
      ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=1:symbolize=1:dedup_token_length=3 \
        timeout 600 "$bin" -minimize_crash=1 -runs=2000 -exact_artifact_path="$min" "$first" >"$min.log" 2>&1
    fi
    if [ ! -s "$min" ]; then
      echo "triage: group $key: not minimized by $engine's tool (its output: $min.log)"
      status=1
      continue
    fi
    got=$(key_of "$bin" "$min" "$min.txt")
    if [ "$got" != "$key" ]; then
      echo "triage: group $key: the input $engine's tool minimized reproduces $got, not the group's key ($min.txt)"
      status=1
    else
      echo "triage: group $key: minimized by $engine's tool $(stat -c %s "$first") -> $(stat -c %s "$min") bytes, the same key"
    fi
  done
done <"$out/groups.tsv"
exit $status
