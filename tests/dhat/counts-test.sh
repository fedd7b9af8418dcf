#!/usr/bin/env bash
# Counts Valgrind cannot check (test-dhat-counts.c): a destroyed heap's blocks
# are counted freed at the destroy, mi_expand as a reallocation in place.
# A file with a destroyed block left live must fail the same check
# (positive control).
# usage: counts-test.sh TEST-DHAT-COUNTS-BINARY
set -u
BIN="${1:?usage}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-dhat-counts.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
"$BIN" "$WORK/counts.json" || { echo "test-dhat-counts failed"; exit 1; }
check() { # check FILE: the expected counts per site
  python3 - "$1" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
def site(fn):
    # every program point whose innermost frame is fn, added up: a compiler
    # that unrolls the calling loop (clang -O2) gives each call its own stack
    pat = re.compile(r": %s \(" % fn)
    found = [pp for pp in d["pps"] if pp["fs"] and pat.search(d["ftbl"][pp["fs"][0]])]
    if not found:
        sys.exit(f"{fn}: no site")
    keys = ("tb", "tbk", "tl", "eb", "ebk", "gb", "gbk")
    return {k: sum(pp.get(k, 0) for pp in found) for k in keys}
want = {
    # 10 blocks of 100 bytes; one freed, nine destroyed: none live at the end
    "small_in_heap": dict(tb=1000, tbk=10, eb=0, ebk=0),
    "aligned_in_heap": dict(tb=300, tbk=1, eb=0, ebk=0),
    "large_in_heap": dict(tb=3 << 20, tbk=1, eb=0, ebk=0),
    # the large block was live at the peak, with the other heap blocks
    # (the peak is just before the destroy)
    "kept": dict(tb=64, tbk=1, eb=64, ebk=1, gb=64, gbk=1),
    # 1000 bytes, then mi_expand to 500: one more block of 500, one live
    "to_expand": dict(tb=1500, tbk=2, eb=500, ebk=1, gb=0, gbk=0),
}
bad = 0
for fn, counts in want.items():
    pp = site(fn)
    for k, v in counts.items():
        if pp[k] != v:
            print(f"{fn}: {k} = {pp[k]}, expected {v}")
            bad = 1
# the destroyed blocks' lifetimes end at the destroy, before the last
# allocation (to_expand's 1000 bytes and 500 bytes)
pp = site("small_in_heap")
if pp["tl"] > 9 * (d["te"] - 1500):
    print(f"small_in_heap: tl {pp['tl']} runs past the destroy")
    bad = 1
# a call made with a zero frame pointer (x86-64): the stack goes on past it
# to its caller and main, not cut at the call
pps = [pp for pp in d["pps"] if pp["fs"] and re.search(r": call_zero_fp \(", d["ftbl"][pp["fs"][0]])]
if pps:
    names = [re.sub(r"^0x[0-9A-F]+: (\S+).*", r"\1", d["ftbl"][f]) for f in pps[0]["fs"]]
    if names[1:3] != ["zero_fp_site", "main"] or pps[0]["tb"] != 48:
        print(f"call_zero_fp: stack {names}, tb {pps[0]['tb']}; expected zero_fp_site, main after it, tb 48")
        bad = 1
elif __import__("platform").machine() == "x86_64":
    print("call_zero_fp: no site")
    bad = 1
sys.exit(bad)
PY
}
failed=0
check "$WORK/counts.json" || failed=1
echo "--- positive control: a destroyed block left live must be rejected"
python3 - "$WORK/counts.json" "$WORK/broken.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
for pp in d["pps"]:
    if re.search(r": large_in_heap \(", d["ftbl"][pp["fs"][0]]):
        pp["eb"], pp["ebk"] = pp["tb"], 1
json.dump(d, open(sys.argv[2], "w"))
PY
if check "$WORK/broken.json" >/dev/null; then echo "broken: NOT rejected"; failed=1; else echo "broken: rejected"; fi
[ $failed -eq 0 ] && echo "counts-test: ok" || echo "counts-test: FAILED"
exit $failed
