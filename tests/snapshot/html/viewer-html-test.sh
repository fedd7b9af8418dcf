#!/usr/bin/env bash
# viewer-html-test.sh [SCREENSHOT_DIR]
#
# tools/mi-heapview.html in real headless Chromium (/usr/bin/chromium, or
# $CHROMIUM), driven by puppeteer-core (pinned in package.json, installed
# into node_modules/ here by ci/install-deps.sh, group viewers). The fixtures are made anew
# by tests/snapshot/make_fixture.py; the viewer's published summary
# (window.miHeapView) and what it shows are held against the generator's
# ground truth (expected.json) and against the reference reader
# (tools/mi_snapshot.py), by check_html.py:
#   - small.bin and fragmented.bin: page, arena and heap counts, committed,
#     live and waste bytes, one map cell per page, the totals on screen;
#   - the same snapshot as JSON (mi_snapshot.py FILE, and `mi-heapview FILE
#     json` when tools/mi-heapview.c builds);
#   - fragmented.bin + after.bin, and small.bin + fragmented.bin: the diff
#     rows and their order, the pages that appeared and disappeared;
#   - each corrupt fixture: status "error", the specific message in #error,
#     nothing drawn; a good file loaded with a bad one draws nothing either,
#     nor does a bad load after a good one in the same page;
#   - small.bin dropped on the page instead of chosen in the file input;
#   - three stats dumps (fixtures/stats-*.json): three points per line, the
#     last dump's "secure" and "fault" tables.
#   - parity with the reference reader: 40 seeded mutants of the fixtures
#     (bits flipped, cut short, a byte inserted) are each accepted or refused
#     as tools/mi_snapshot.py does, with its message;
# Planted controls (footer count + 1, one page's used count flipped, a
# missing stats dump) must make those checks fail.
#
# Every check prints "check <name>: ok" or "check <name>: FAILED: ..."; the
# last line is "viewer-html-test: ok" only when all passed (exit 0).
# With SCREENSHOT_DIR: heap-map.png (fragmented.bin, one page's details
# pinned), sizes.png, diff.png (fragmented.bin -> after.bin) and stats.png.

set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
shots=${1:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/viewer-html-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chromium=${CHROMIUM:-/usr/bin/chromium}

for need in node npm python3 "$chromium"; do
  command -v "$need" >/dev/null 2>&1 || [ -x "$need" ] ||
    { echo "missing $need (apt-get install nodejs npm python3 chromium)"; echo "viewer-html-test: FAILED"; exit 1; }
done
# installed with the packages (ci/install-deps.sh viewers), not here: a
# test that fetches from the network on its first run fails offline
if [ ! -f "$here/node_modules/puppeteer-core/package.json" ]; then
  echo "missing puppeteer-core in $here (bash ci/install-deps.sh viewers)"
  echo "viewer-html-test: FAILED"
  exit 1
fi
if [ -n "$shots" ]; then mkdir -p "$shots" && shots=$(cd "$shots" && pwd); fi

# ---------------------------------------------------------------- inputs
fx=$tmp/fx ctl=$tmp/ctl
mkdir -p "$ctl/footer" "$ctl/flip" "$ctl/diffflip"
python3 "$root/tests/snapshot/make_fixture.py" "$fx" || { echo "make_fixture.py failed"; echo "viewer-html-test: FAILED"; exit 1; }
python3 "$root/tools/mi_snapshot.py" "$fx/small.bin" >"$tmp/small.json" || { echo "mi_snapshot.py failed"; exit 1; }
# the C viewer's json command, when it builds here
if cc -std=c11 -O2 "$root/tools/mi-heapview.c" -o "$tmp/mi-heapview" 2>"$tmp/cc.log" &&
   "$tmp/mi-heapview" "$fx/fragmented.bin" json >"$tmp/fragmented-cli.json" 2>>"$tmp/cc.log"; then
  cli_json=1
else
  cli_json=0
  echo "note: tools/mi-heapview.c did not build or run here; its json form is not loaded"; sed 's/^/    /' "$tmp/cc.log" | head -5
fi

# planted defects: copies of the fixtures, each with one change
ROOT=$root python3 - "$fx" "$ctl" <<'PY' || { echo "making the controls failed"; echo "viewer-html-test: FAILED"; exit 1; }
import os, struct, sys
sys.path.insert(0, os.path.join(os.environ.get("ROOT", ""), "tools"))
fx, ctl = sys.argv[1:3]

def flip(src, dst):
    """used := capacity - used on the first page without a free map whose
    live bytes this changes (found by its first 24 bytes, which are unique)"""
    data = bytearray(open(src, "rb").read())
    import mi_snapshot
    for pg in mi_snapshot.all_pages(mi_snapshot.parse(bytes(data))):
        if pg["has_freemap"] or pg["capacity"] - pg["used"] == pg["used"]:
            continue
        key = struct.pack("<QQQ", pg["page_start"], pg["slice_start"], pg["block_size"])
        off = data.find(key)
        assert off > 0 and data.find(key, off + 1) < 0, "page record not unique"
        assert struct.unpack_from("<I", data, off + 32)[0] == pg["used"]
        struct.pack_into("<I", data, off + 32, pg["capacity"] - pg["used"])
        open(dst, "wb").write(data)
        return
    raise SystemExit("no page to flip in " + src)

data = bytearray(open(os.path.join(fx, "fragmented.bin"), "rb").read())
(n,) = struct.unpack_from("<Q", data, len(data) - 8)
struct.pack_into("<Q", data, len(data) - 8, n + 1)
open(os.path.join(ctl, "footer", "fragmented.bin"), "wb").write(data)
flip(os.path.join(fx, "fragmented.bin"), os.path.join(ctl, "flip", "fragmented.bin"))
flip(os.path.join(fx, "after.bin"), os.path.join(ctl, "diffflip", "after.bin"))

# mutants for the parity check: seeded bit flips, cuts and inserted bytes
import random
rng = random.Random(0x4854)
os.makedirs(os.path.join(ctl, "mut"), exist_ok=True)
for i in range(40):
    src = rng.choice(["small.bin", "fragmented.bin", "after.bin"])
    d = bytearray(open(os.path.join(fx, src), "rb").read())
    how = rng.choice(["flip", "cut", "insert"])
    if how == "flip":
        for _ in range(rng.randint(1, 3)):
            d[rng.randrange(len(d))] ^= 1 << rng.randrange(8)
    elif how == "cut":
        d = d[:rng.randrange(len(d))]
    else:
        k = rng.randrange(len(d))
        d[k:k] = bytes([rng.randrange(256)])
    open(os.path.join(ctl, "mut", "m%02d-%s-%s" % (i, how, src)), "wb").write(d)
PY

# ---------------------------------------------------------------- the jobs
python3 - "$fx" "$ctl" "$tmp" "$here/fixtures" "$shots" "$cli_json" >"$tmp/jobs.json" <<'PY'
import json, os, sys
fx, ctl, tmp, sfx, shots, cli = sys.argv[1:7]
shot = lambda n: os.path.join(shots, n) if shots else None
stats = sorted(os.path.join(sfx, f) for f in os.listdir(sfx) if f.startswith("stats-") and f.endswith(".json"))
F = lambda n: os.path.join(fx, n)
jobs = [
    {"id": "snap-small.bin", "files": [F("small.bin")], "view": "map"},
    {"id": "snap-fragmented.bin", "files": [F("fragmented.bin")], "view": "map", "pick": "low",
     "shot": shot("heap-map.png")},
    {"id": "sizes", "files": [F("fragmented.bin")], "view": "sizes", "shot": shot("sizes.png")},
    {"id": "json-small", "files": [os.path.join(tmp, "small.json")], "view": "map"},
    # the later snapshot first: the viewer orders them by their clock
    {"id": "diff", "files": [F("after.bin"), F("fragmented.bin")], "view": "diff", "pick": "new",
     "shot": shot("diff.png")},
    # a pair whose block sizes moved by many different amounts: the order counts
    {"id": "diff2", "files": [F("fragmented.bin"), F("small.bin")]},
    {"id": "mixed", "files": [F("small.bin"), F("bad-magic.bin")]},
    # a good load, then a bad one in the same page: the first one's drawing goes
    {"id": "good-then-bad", "files": [F("fragmented.bin")], "then": [F("truncated.bin")]},
    # drag and drop instead of the file input
    {"id": "drop-small.bin", "files": [F("small.bin")], "drop": True, "view": "map"},
    # newest first, again: the chart and the tables follow elapsed time
    {"id": "stats", "files": stats[::-1], "view": "stats", "shot": shot("stats.png")},
    {"id": "control-footer", "files": [os.path.join(ctl, "footer", "fragmented.bin")]},
    {"id": "control-flip", "files": [os.path.join(ctl, "flip", "fragmented.bin")]},
    {"id": "control-diff-flip", "files": [F("fragmented.bin"), os.path.join(ctl, "diffflip", "after.bin")]},
    {"id": "control-stats-two", "files": stats[1:], "view": "stats"},
]
for name in sorted(os.listdir(os.path.join(ctl, "mut"))):
    jobs.append({"id": "mut-" + name, "files": [os.path.join(ctl, "mut", name)]})
for name in sorted(json.load(open(F("expected.json")))["corrupt"]):
    jobs.append({"id": "bad-" + name, "files": [F(name)]})
if cli == "1":
    jobs.append({"id": "json-cli-fragmented", "files": [os.path.join(tmp, "fragmented-cli.json")], "view": "map"})
json.dump([{k: v for k, v in j.items() if v is not None} for j in jobs], sys.stdout, indent=1)
PY

start=$(date +%s)
(cd "$here" && CHROMIUM=$chromium node view.mjs --jobs "$tmp/jobs.json") >"$tmp/results.txt" 2>"$tmp/node.log"
node_rc=$?
echo "chromium: $(grep -c '^result ' "$tmp/results.txt") loads in $(( $(date +%s) - start )) s (view.mjs exit $node_rc)"
if ! grep -q '^result ' "$tmp/results.txt"; then
  sed 's/^/    /' "$tmp/node.log" | head -30
  echo "viewer-html-test: FAILED (view.mjs produced no result)"; exit 1
fi

ROOT=$root python3 "$here/check_html.py" "$tmp/results.txt" "$fx" "$ctl"
rc=$?
if [ -n "$shots" ]; then
  for f in heap-map sizes diff stats; do
    [ -s "$shots/$f.png" ] && echo "screenshot: $shots/$f.png" || { echo "check screenshot-$f: FAILED: not written"; rc=1; }
  done
fi
if [ $rc -eq 0 ]; then echo "viewer-html-test: ok"; else echo "viewer-html-test: FAILED"; fi
exit $rc
