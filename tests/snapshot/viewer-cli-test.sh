#!/usr/bin/env bash
# viewer-cli-test.sh [BUILD_DIR]
#
# Tests the MIHS v1 tooling against the synthetic fixtures in fixtures/:
# the C viewer (tools/mi-heapview.c), the reference reader
# (tools/mi_snapshot.py) and the Python mirror (heapview.py), each held
# against the generator's ground truth (fixtures/expected.json) and against
# the committed expected texts (expected/<fixture>.<case>.txt).
#
# The viewer is built into BUILD_DIR (default: a temporary directory) with
# $CC (default cc). UPDATE_EXPECTED=1 rewrites the expected texts instead of
# comparing them; read the diff before committing it.
#
# Every check prints "check <name>: ok" or "check <name>: FAILED ...". The
# planted controls at the end make sure the checks above can fail. The last
# line is "viewer-cli-test: ok" only when every check passed (exit 0).

set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fx=$here/fixtures
exp=$here/expected
tmp=$(mktemp -d "${TMPDIR:-/tmp}/viewer-cli-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bdir=${1:-$tmp/build}
mkdir -p "$bdir"
bdir=$(cd "$bdir" && pwd)
CC=${CC:-cc}
viewer=$bdir/mi-heapview
truth="python3 $here/truth_check.py"
failures=0

pass() { echo "check $1: ok"; }
fail() { echo "check $1: FAILED${2:+: $2}"; failures=$((failures + 1)); }
# run a check command quietly; show its output only when it fails
check() {
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then pass "$name"; else fail "$name"; printf '%s\n' "$out" | sed 's/^/    /' | head -40; fi
}
# the same, for a planted defect: the command must fail
control() {
  local name=$1; shift
  if "$@" >/dev/null 2>&1; then fail "$name" "the planted defect went unnoticed"; else pass "$name"; fi
}

# ---------------------------------------------------------------- build
flags="-std=c11 -O2 -Wall -Wextra -Werror"
if $CC $flags "$root/tools/mi-heapview.c" -o "$viewer" 2>"$tmp/build.log"; then
  pass "build ($CC $flags)"
else
  fail "build ($CC $flags)"; cat "$tmp/build.log"
  echo "viewer-cli-test: FAILED (no viewer)"; exit 1
fi
# a sanitized build for the mutated inputs, when the compiler has the runtimes
asan=$bdir/mi-heapview-asan
if $CC -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
     "$root/tools/mi-heapview.c" -o "$asan" 2>"$tmp/asan.log" && "$asan" --help >/dev/null 2>&1; then
  pass "build-asan-ubsan"
else
  echo "check build-asan-ubsan: skipped (no sanitizer runtime for $CC)"; asan=$viewer
fi

# ---------------------------------------------------------------- fixtures
python3 "$here/make_fixture.py" "$tmp/fx" >/dev/null
fixtures_same() {
  local f rc=0
  [ "$(cd "$fx" && ls | sort)" = "$(cd "$tmp/fx" && ls | sort)" ] || { echo "file sets differ"; rc=1; }
  for f in "$fx"/*; do cmp "$f" "$tmp/fx/$(basename "$f")" || rc=1; done
  return $rc
}
check "fixtures-reproduce" fixtures_same

# ---------------------------------------------------------------- expected texts
# name | fixture | arguments (@after = after.bin); run from fixtures/ so paths stay short
cases='
summary|small|summary
pages|small|pages
arenas|small|arenas
sizes|small|sizes
frag|small|frag
blocks|small|blocks --addr 0x7f00000100c5
json|small|json
summary|fragmented|summary
summary-human|fragmented|summary --human
sizes|fragmented|sizes
sizes-by-tid|fragmented|sizes --by-tid --top 8
sizes-by-heap-bytes|fragmented|sizes --by-heap --bytes --human
frag|fragmented|frag
frag-top5-min|fragmented|frag --top 5 --min-waste 100000 --human
arenas|fragmented|arenas
pages|fragmented|pages
pages-waste|fragmented|pages --sort waste --top 10
pages-used-size|fragmented|pages --sort used --size 16
blocks|fragmented|blocks --addr 0x7f2c411f0000
diff|fragmented|diff @after
diff-by-heap|fragmented|diff @after --by-heap --human
json|fragmented|json
summary|after|summary
pages|after|pages --human
'
mkdir -p "$exp"
while IFS='|' read -r name fixture args; do
  [ -n "$name" ] || continue
  args=${args//@after/after.bin}
  want=$exp/$fixture.$name.txt
  # shellcheck disable=SC2086  # args is a word list by design
  if ! (cd "$fx" && "$viewer" "$fixture.bin" $args >"$tmp/out.txt" 2>"$tmp/err.txt"); then
    fail "expected:$fixture.$name" "exit $? $(cat "$tmp/err.txt")"; continue
  fi
  if [ "${UPDATE_EXPECTED:-0}" = 1 ]; then
    cp "$tmp/out.txt" "$want"; echo "check expected:$fixture.$name: updated"
  elif diff -u "$want" "$tmp/out.txt" >"$tmp/diff.txt"; then
    pass "expected:$fixture.$name"
  else
    fail "expected:$fixture.$name"; head -30 "$tmp/diff.txt" | sed 's/^/    /'
  fi
done <<<"$cases"

# ---------------------------------------------------------------- truth, json, mirror
for n in small fragmented after; do
  check "viewer-summary-truth:$n" $truth viewer-summary "$viewer" "$fx/$n.bin" "$fx/expected.json" "$n.bin"
  check "viewer-blocks-truth:$n" $truth viewer-blocks "$viewer" "$fx/$n.bin" "$fx/expected.json" "$n.bin"
  check "reader-truth:$n" $truth reader "$fx/$n.bin" "$fx/expected.json" "$n.bin"
  check "json-equals-reader:$n" $truth json "$viewer" "$fx/$n.bin"
  check "json-tool:$n" sh -c "'$viewer' '$fx/$n.bin' json | python3 -m json.tool >/dev/null"
  if command -v jq >/dev/null 2>&1; then
    jq_pages() {
      local got want
      got=$("$viewer" "$1" json | jq '[.arenas[].pages[], .thread_pages[], .heaps[].pages[]] | length') || return 1
      want=$("$viewer" "$1" json | jq '.footer.page_count') || return 1
      [ "$got" = "$want" ] && [ "$got" = "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['files'][sys.argv[2]]['page_count'])" "$fx/expected.json" "$n.bin")" ] \
        || { echo "jq pages $got, footer $want"; return 1; }
    }
    check "jq-page-count:$n" jq_pages "$fx/$n.bin"
  else
    echo "check jq-page-count:$n: skipped (jq not installed)"
  fi
  for args in "summary" "summary --human" "pages" "pages --sort addr --human" "pages --sort waste --top 7" \
              "pages --sort used --min-waste 30000" "pages --size 16"; do
    mirror() {
      # shellcheck disable=SC2086
      diff -u <("$viewer" "$fx/$n.bin" $args) <(python3 "$here/heapview.py" "$fx/$n.bin" $args)
    }
    check "mirror:$n:${args// /_}" mirror
  done
done

# ---------------------------------------------------------------- corrupt files
while read -r file word; do
  check "corrupt:$file" $truth corrupt "$viewer" "$fx/$file" "$word"
done < <(python3 -c "
import json, sys
for f, w in sorted(json.load(open(sys.argv[1]))['corrupt'].items()): print(f, w)" "$fx/expected.json")
{ cat "$fx/small.bin"; printf 'xyz'; } >"$tmp/trailing.bin"
check "corrupt:trailing-bytes" $truth corrupt "$viewer" "$tmp/trailing.bin" "trailing 3 bytes after footer at offset 1085"
check "mutants-agree (120 seeded, $(basename "$asan"))" $truth mutants "$asan" 120

# ---------------------------------------------------------------- planted controls
# 1. a footer count off by one is refused, by the message
$truth patch-footer "$fx/fragmented.bin" "$tmp/footer-minus1.bin" -1
check "control:footer-count-minus-one-refused" $truth corrupt "$viewer" "$tmp/footer-minus1.bin" "footer page_count 41 but 42 page records"
control "control:footer-patched-not-a-valid-snapshot" $truth json "$viewer" "$tmp/footer-minus1.bin"
# 2. one free-map bit flipped: blocks no longer matches its expected text nor the truth
$truth flip-freemap "$fx/small.bin" "$tmp/flipped.bin"
(cd "$tmp" && "$viewer" flipped.bin blocks --addr 0x7f00000100c5 >"$tmp/flipped.txt" 2>&1)
control "control:flipped-freemap-bit-changes-blocks" cmp -s "$exp/small.blocks.txt" "$tmp/flipped.txt"
control "control:flipped-freemap-bit-fails-blocks-truth" $truth viewer-blocks "$viewer" "$tmp/flipped.bin" "$fx/expected.json" small.bin
control "control:flipped-freemap-bit-fails-reader-truth" $truth reader "$tmp/flipped.bin" "$fx/expected.json" small.bin
# 3. a page's committed bytes moved: the summary and reader truth checks notice
$truth patch-committed "$fx/small.bin" "$tmp/committed.bin"
control "control:patched-committed-fails-summary-truth" $truth viewer-summary "$viewer" "$tmp/committed.bin" "$fx/expected.json" small.bin
control "control:patched-committed-fails-reader-truth" $truth reader "$tmp/committed.bin" "$fx/expected.json" small.bin
# 4. the mirror comparison notices a difference in one column's unit
control "control:mirror-diff-detects-difference" diff <("$viewer" "$fx/small.bin" pages) <(python3 "$here/heapview.py" "$fx/small.bin" pages --human)
# 5. the fixture comparison notices a changed byte
cp -r "$fx" "$tmp/fx-copy"; printf '\001' | dd of="$tmp/fx-copy/small.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
control "control:fixtures-reproduce-detects-change" sh -c "cmp -s '$tmp/fx-copy/small.bin' '$tmp/fx/small.bin'"

if [ "$failures" -ne 0 ]; then
  echo "viewer-cli-test: FAILED ($failures checks)"
  exit 1
fi
echo "viewer-cli-test: ok"
