#!/usr/bin/env python3
"""Writes the inputs of the checker's controls (check-controls.sh) into DIR:
good-*.{heap,pb,pb.gz}, files every check must accept, and bad-*.*, each
breaking one rule that some check must reject.

  make_controls.py DIR [TEXT_DUMP PROTO_DUMP]

Without dumps the good files are hand-made (fake addresses in a fake
mapping, as the spec's Appendix A writes them); with a real text and proto
dump (tests/pprof/sites) the broken files are made from those as well.
Prints one line per file, tab-separated: its name, the rule it breaks (or
"good") and the extended regexes the checker's output must match (the
rejection must be for that defect, by the checkers named).
"""
import gzip
import os
import re
import sys

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_check  # noqa: E402

STATS = """# mimalloc heap stats
# committed = 3080192
# reserved = 5308416
# malloc_requested = 2097152
# pages = 43
# pages_abandoned = 0
# heaps = 1
# theaps = 0
# purged = 0
# profiler_dropped_samples = 0
# detailed_stats = 1
"""
MAP = """MAPPED_LIBRARIES:
00400000-00401000 r--p 00000000 00:00 0          /opt/fake
00401000-00402000 r-xp 00001000 00:00 0          /opt/fake
"""


# what the checker's output must say for a broken proto (extended regexes):
# its own rule and Go pprof's rejection
STRING0 = ("string_table\\[0\\] is 'x'", "go-pprof: .*unrecognized profile format")
DUPLOC = ("duplicate location id", "go-pprof: .*multiple locations with same id")


def text(records, period="4096", header=None):
    """A heap_v2 file of records [(n, b, an, ab, [addr...])]."""
    sums = [sum(r[i] for r in records) for i in range(4)]
    h = header or "heap profile: %6d: %8d [%6d: %8d] @ heap_v2/%s" % (*sums, period)
    body = "".join("%7d: %d [%7d: %d] @%s\n" % (*r[:4], "".join(" 0x%x" % a for a in r[4])) for r in records)
    return h + "\n" + body + STATS + MAP


GOOD_ACCUM = [(1500, 96000, 1500, 96000, [0x401101, 0x401801]),
              (40, 163840, 40, 163840, [0x401141, 0x401801]),
              (13, 13631488, 13, 13631488, [0x401181, 0x401801]),
              (0, 0, 3000, 768000, [0x4011c1, 0x401801])]
GOOD_LIVE = [(r[0], r[1], 0, 0, r[4]) for r in GOOD_ACCUM if r[0]]


# ---- a profile.proto encoder (enough for the controls) ------------------------------

def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def field(num, v):
    if isinstance(v, (bytes, bytearray)):
        return varint(num << 3 | 2) + varint(len(v)) + bytes(v)
    if isinstance(v, str):
        return field(num, v.encode())
    return varint(num << 3) + varint(int(v))


def packed(num, vals):
    return field(num, b"".join(varint(v) for v in vals))


class Strings:
    def __init__(self, first=""):
        self.table = [first]
        self.index = {}

    def __call__(self, s):
        if s not in self.index:
            self.index[s] = len(self.table)
            self.table.append(s)
        return self.index[s]


def proto(first_string="", dup_location=False, values_per_sample=4, missing_location=False):
    """A heap profile as the writer must make it: 4 sample types in Go's
    order, unsampled values, the bytes label, a mapping, locations at
    return address - 1, functions."""
    st = Strings(first_string)
    out = bytearray()
    for t, u in pprof_check.GO_SAMPLE_TYPES:
        out += field(1, field(1, st(t)) + field(2, st(u)))
    funcs = {0x401100: "site_a", 0x401140: "site_b", 0x401800: "main"}
    samples = [([0x401100, 0x401800], 64, (1500, 96000, 1500, 96000)),
               ([0x401140, 0x401800], 4096, (40, 163840, 40, 163840))]
    for addrs, size, (n, b, an, ab) in samples:
        an_s, ab_s = pprof_check.scale_heap_sample(an, ab, 4096)
        n_s, b_s = pprof_check.scale_heap_sample(n, b, 4096)
        vals = [an_s, ab_s, n_s, b_s][:values_per_sample]
        locs = [list(funcs).index(a) + 1 for a in addrs]
        if missing_location:
            locs = locs + [99]
        out += field(2, packed(1, locs) + packed(2, vals) + field(3, field(1, st("bytes")) + field(3, size)))
    out += field(3, field(1, 1) + field(2, 0x401000) + field(3, 0x402000) + field(4, 0x1000) + field(5, st("/opt/fake"))
                 + field(6, st("0123456789abcdef")) + field(7, 1) + field(8, 1) + field(9, 1))
    for i, a in enumerate(funcs):
        out += field(4, field(1, i + 1) + field(2, 1) + field(3, a) + field(4, field(1, i + 1) + field(2, 10 + i)))
    if dup_location:  # one more location, with the id of the first
        out += field(4, field(1, 1) + field(2, 1) + field(3, 0x401180))
    for i, name in enumerate(funcs.values()):
        out += field(5, field(1, i + 1) + field(2, st(name)) + field(3, st(name)) + field(4, st("sites.c"))
                     + field(5, 10 + i))
    drop = st("mi_.*|_mi_.*")
    comment = st("dropped_samples=0 stack_table_overflows=0")
    dflt = st("inuse_space")
    space, bytes_ = st("space"), st("bytes")
    tail = (field(7, drop) + field(9, 1700000000000000000) + field(10, 1000000000)
            + field(11, field(1, space) + field(2, bytes_)) + field(12, 4096) + field(13, comment) + field(14, dflt))
    # the string table last, once every string is in it
    return bytes(out) + b"".join(field(6, s) for s in st.table) + tail


# ---- the broken variants of a text file ------------------------------------------------

def first_record(lines):
    return next(i for i, ln in enumerate(lines) if pprof_check.RECORD.match(ln))


def text_variants(good):
    """{name: (content, rule, regex...)} from a good text file (with a record whose
    frames have a hex letter, and at least two records)."""
    lines = good.split("\n")
    r = first_record(lines)
    v = {}
    v["missing-header"] = ("\n".join(lines[1:]), "no header line",
                           "no header \\(want", "go-pprof: .*unrecognized profile format")
    hdr = lines[0]
    m = pprof_check.HEADER.match(hdr)
    n0 = int(m.group(1))
    v["counts-not-summing"] = ("\n".join([hdr.replace(f" {n0}:", f" {n0 + 1}:", 1)] + lines[1:]),
                               "header totals differ from the sums of the records", "is not the sum of the records")
    hexrec = next(i for i, ln in enumerate(lines) if pprof_check.RECORD.match(ln) and re.search(r"0x[0-9]*[a-f]", ln))
    up = re.sub(r"@(.*)", lambda mm: "@" + mm.group(1).upper().replace("0X", "0x"), lines[hexrec])
    v["uppercase-hex"] = ("\n".join(lines[:hexrec] + [up] + lines[hexrec + 1:]), "uppercase hex digits in a stack",
                          "structure: line [0-9]+: uppercase hex", "go-pprof: record [0-9]+: Go's stack")
    v["missing-period"] = ("\n".join([re.sub(r"heap_v2/\d+", "heap_v2", hdr)] + lines[1:]),
                           "no period after heap_v2", "no period after heap_v2", "google-pprof: total in-use")
    v["space-in-period"] = ("\n".join([re.sub(r"heap_v2/(\d+)", r"heap_v2/ \1", hdr)] + lines[1:]),
                            "a space in heap_v2/ R", "space in heap_v2/R")
    # "0: 5": a record of no objects with bytes, the header kept summing
    zr = "      0: 5 [      0: 0] @ 0x%x" % 0x401801 if "/opt/fake" in good else None
    if zr is None:
        addr = re.search(r"@ (0x[0-9a-f]+)", lines[r]).group(1)
        zr = "      0: 5 [      0: 0] @ %s 0x1" % addr
    h = [int(x) for x in m.groups()[:4]]
    hdr5 = pprof_check.HEADER.sub(lambda mm: "heap profile: %6d: %8d [%6d: %8d] @ heap_v2/%s" % (
        h[0], h[1] + 5, h[2], h[3], mm.group(5)), hdr)
    v["zero-count-with-bytes"] = ("\n".join([hdr5] + lines[1:r] + [zr] + lines[r:]),
                                  "a record '0: 5' (Go: count was 0 but bytes was 5)",
                                  "in-use pair '0: 5'", "go-pprof: .*count was 0 but inuse bytes was 5")
    v["junk-after-addresses"] = ("\n".join(lines[:r] + [lines[r] + " junk"] + lines[r + 1:]),
                                 "junk after a record's addresses", "junk after the addresses")
    v["no-memory-map"] = ("\n".join(ln for ln in lines if not ln.startswith("MAPPED_LIBRARIES")
                                    and not pprof_check.MAPS_LINE.match(ln)),
                           "no MAPPED_LIBRARIES section", "no MAPPED_LIBRARIES: section")
    dup = lines[r]
    v["duplicate-stack"] = ("\n".join([hdr.replace(f" {n0}:", f" {n0 + int(dup.split(':')[0])}:", 1)]
                                      + lines[1:r + 1] + [dup] + lines[r + 1:]),
                            "two records with the same stack", "the same stack as line")
    return v


def main(argv):
    if len(argv) not in (2, 4):
        print(__doc__)
        return 2
    d = argv[1]
    os.makedirs(d, exist_ok=True)
    files = {}
    files["good-accum.heap"] = (text(GOOD_ACCUM), "good")
    files["good-live.heap"] = (text(GOOD_LIVE), "good")
    files["good-empty.heap"] = (text([]), "good")
    files["good.pb"] = (proto(), "good")
    files["good.pb.gz"] = (gzip.compress(proto()), "good")
    for name, (content, rule, *want) in text_variants(files["good-accum.heap"][0]).items():
        files[f"bad-{name}.heap"] = (content, rule, *want)
    mixed = GOOD_LIVE[:1] + [(40, 163840, 1, 4096, GOOD_LIVE[1][4])]
    files["bad-accum-off-with-alloc.heap"] = (
        re.sub(r"\[ *\d+: +\d+\]", "[     0:        0]", text(mixed), count=1),
        "header alloc pair 0: 0 (accum off) with a record's alloc pair not 0: 0", "accum off writes 0: 0")
    files["bad-string0.pb"] = (proto(first_string="x"), "string_table[0] not empty", *STRING0)
    files["bad-duplicate-location.pb"] = (proto(dup_location=True), "two locations with one id", *DUPLOC)
    files["bad-three-values.pb"] = (proto(values_per_sample=3), "a sample with 3 values for 4 types",
                                    "3 values for 4 sample types", "go-pprof: .*mismatch: sample has 3 values")
    files["bad-missing-location.pb"] = (proto(missing_location=True), "a sample naming a location that does not exist",
                                        "location 99 does not exist", "go-pprof: .*sample has nil location")
    files["bad-not-gzip.pb.gz"] = (proto(), "named .gz but not gzip", "not gzip")
    if len(argv) == 4:
        with open(argv[2]) as f:
            real = f.read()
        files["good-real.heap"] = (real, "good")
        for name, (content, rule, *want) in text_variants(real).items():
            files[f"bad-real-{name}.heap"] = (content, rule + " (from a real dump)", *want)
        with open(argv[3], "rb") as f:
            realpb = f.read()
        if realpb[:2] == b"\x1f\x8b":
            realpb = gzip.decompress(realpb)
        files["good-real.pb"] = (realpb, "good")
        files["bad-real-string0.pb"] = (break_string0(realpb), "string_table[0] not empty (from a real dump)",
                                        *STRING0)
        files["bad-real-duplicate-location.pb"] = (duplicate_location(realpb),
                                                   "two locations with one id (from a real dump)", *DUPLOC)
    for name, (content, rule, *want) in sorted(files.items()):
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(os.path.join(d, name), mode) as f:
            f.write(content)
        print("\t".join([name, rule] + want))
    return 0


def _records(b):
    """(field number, the record's bytes) of each top-level field."""
    i = 0
    out = []
    while i < len(b):
        start = i
        key, i = pprof_check._varint(b, i)
        wt = key & 7
        if wt == 0:
            _, i = pprof_check._varint(b, i)
        elif wt == 2:
            n, i = pprof_check._varint(b, i)
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        out.append((key >> 3, b[start:i]))
    return out


def break_string0(b):
    recs = _records(b)
    k = next(i for i, (num, _) in enumerate(recs) if num == 6)
    recs[k] = (6, field(6, b"x"))
    return b"".join(r for _, r in recs)


def duplicate_location(b):
    """One more location (a copy of the last, at another address) with the
    id of the first: every id a sample names still exists."""
    recs = _records(b)
    locs = [i for i, (num, _) in enumerate(recs) if num == 4]
    id0 = next(v for num, wt, v in pprof_check._fields(_body(recs[locs[0]][1])) if num == 1)
    last = _body(recs[locs[-1]][1])
    rest = b"".join(r for num, r in _records(last) if num not in (1, 3))
    addr = next(v for num, wt, v in pprof_check._fields(last) if num == 3)
    extra = field(4, field(1, id0) + field(3, addr + 1) + rest)
    return b"".join(r for _, r in recs[:locs[-1] + 1]) + extra + b"".join(r for _, r in recs[locs[-1] + 1:])


def _body(rec):
    _, i = pprof_check._varint(rec, 0)
    n, i = pprof_check._varint(rec, i)
    return rec[i:i + n]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
