#!/usr/bin/env bash
# The statistics' JSON read by real parsers: python3's json and jq parse it;
# its keys are upstream's, in upstream's order (stats-keys.txt, from the
# seed's specification), with 74 entries in each bin array whose block
# sizes are upstream's; threads.current is 1 after the joins; reserved >=
# committed; the 1000 live blocks of 1 KiB are in their page bin's pages.
# Positive controls: the same checks run on doctored copies (a key renamed,
# a bin dropped, threads.current off by one, committed above reserved) must
# each fail.
# usage: stats-json-test.sh /path/to/stats-json-print
set -u
PRINT="${1:?usage: $0 stats-json-print}"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-stats-json.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
command -v jq >/dev/null || { echo "missing jq (ci/install-deps.sh)"; exit 1; }
failed=0
"$PRINT" process >"$WORK/process.json" || { echo "stats-json-print process failed"; exit 1; }
"$PRINT" heap >"$WORK/heap.json" || { echo "stats-json-print heap failed"; exit 1; }

# the checks of one file; exit status 0 when all hold
check() {
  local file="$1" kind="$2"
  python3 -m json.tool "$file" >/dev/null || { echo "  python3 json: does not parse"; return 1; }
  jq -e . "$file" >/dev/null || { echo "  jq: does not parse"; return 1; }
  python3 - "$file" "$kind" "$HERE/stats-keys.txt" <<'PY' || return 1
import json, sys
path, kind, keys_file = sys.argv[1:4]
d = json.load(open(path))
want = [k.strip() for k in open(keys_file) if k.strip() and not k.startswith('#')]
extras = {"stat_level", "secure", "fault", "allocator"}  # ours, after upstream's
got = [k for k in d.keys() if k not in extras]
bad = []
if got != want:
    bad.append("keys differ from upstream's order: first difference at %s" %
               next((i for i, (a, b) in enumerate(zip(got + [None] * 99, want)) if a != b), None))
if bad:  # the rest reads the keys by name
    print("  " + bad[0])
    sys.exit(1)
sizes = [8, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128]
for name in ("malloc_bins", "page_bins"):
    bins = d.get(name, [])
    if len(bins) != 74:
        bad.append("%s has %d entries, not 74" % (name, len(bins)))
    elif [b["block_size"] for b in bins[:len(sizes)]] != sizes or bins[73]["block_size"] != 65537 * 8:
        bad.append("%s: block sizes are not upstream's" % name)
if len(d.get("chunk_bins", [])) != 6:
    bad.append("chunk_bins has not 6 entries")
if kind == "process":
    if d["threads"]["current"] != 1:
        bad.append("threads.current %d after the joins, not 1" % d["threads"]["current"])
    if d["reserved"]["current"] < d["committed"]["current"]:
        bad.append("reserved %d < committed %d" % (d["reserved"]["current"], d["committed"]["current"]))
    if d["malloc_huge"]["current"] < 3 << 20:
        bad.append("malloc_huge.current %d: the 3 MiB block is not in it" % d["malloc_huge"]["current"])
    # 1 KiB blocks (with the secure build's trailer, the next class up)
    pages_1k = sum(b["current"] for b in d.get("page_bins", []) if 1024 <= b["block_size"] <= 1280)
    if pages_1k < 1000 // 64:
        bad.append("page bin of 1 KiB holds %d pages for 1000 live blocks" % pages_1k)
else:
    live = sum(b["current"] for b in d.get("malloc_bins", []))
    if live < 1001:
        bad.append("the heap's malloc_bins hold %d live blocks, not at least 1001" % live)
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY
}

"$PRINT" dump >"$WORK/dump.json" || { echo "stats-json-print dump failed"; exit 1; }
cat >"$WORK/dump_check.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
h = d["heaps"][0]
assert h["seq"] == 0 and d["complete"] is True, "not complete or no heap 0"
assert sum(p["used"] for p in h["pages"]) == len(h["blocks"]), "used counts differ from the blocks listed"
assert sum(1 for b in h["blocks"] if b[1] >= 1024) >= 1000, "the 1000 blocks of 1 KiB are not listed"
PY
if python3 "$WORK/dump_check.py" "$WORK/dump.json" && jq -e '.heaps[0].blocks | length >= 1001' "$WORK/dump.json" >/dev/null; then
  echo "check dump json: ok"
else
  echo "check dump json: FAILED"; failed=1
fi
# its control: a page's used count off by one
jq '.heaps[0].pages[0].used += 1' "$WORK/dump.json" >"$WORK/dump-doctored.json"
if python3 "$WORK/dump_check.py" "$WORK/dump-doctored.json" 2>/dev/null; then
  echo "control dump-used-off-by-one: NOT caught"; failed=1
else
  echo "control dump-used-off-by-one: caught"
fi
for kind in process heap; do
  if check "$WORK/$kind.json" $kind; then echo "check $kind json: ok"; else echo "check $kind json: FAILED"; failed=1; fi
done
jq -r '.threads.current, .committed.current' "$WORK/process.json" | tr '\n' ' '; echo "(jq: threads.current committed.current)"

# positive controls: each doctored copy must fail
doctor() {
  python3 - "$WORK/process.json" "$WORK/doctored.json" "$1" <<'PY'
import json, sys
src, dst, what = sys.argv[1:4]
d = json.load(open(src))
if what == "key-renamed":
    d = {("reserve" if k == "reserved" else k): v for k, v in d.items()}
elif what == "bin-dropped":
    d["malloc_bins"].pop()
elif what == "threads-off-by-one":
    d["threads"]["current"] += 1
elif what == "committed-above-reserved":
    d["committed"]["current"] = d["reserved"]["current"] + 1
json.dump(d, open(dst, "w"), indent=2)
PY
}
for plant in key-renamed bin-dropped threads-off-by-one committed-above-reserved; do
  doctor $plant
  if check "$WORK/doctored.json" process >"$WORK/plant.log" 2>&1; then
    echo "control $plant: NOT caught"; failed=1
  else
    echo "control $plant: caught ($(head -1 "$WORK/plant.log" | sed 's/^ *//'))"
  fi
done
[ $failed -eq 0 ] && echo "stats-json-test: ok" || echo "stats-json-test: FAILED"
exit $failed
