#!/usr/bin/env python3
"""Checks behind viewer-cli-test.sh that need more than a diff of two texts.

Each subcommand exits 0 when its check holds and 1 (with a reason on stdout)
when it does not, so the shell script can run it both on the fixtures and on
planted copies that must fail.

  viewer-summary VIEWER FILE EXPECTED NAME   summary numbers = expected.json[NAME]
  viewer-blocks  VIEWER FILE EXPECTED NAME   blocks --addr of every page with a free
                                             map lists expected live count of rows
  reader         FILE EXPECTED NAME          mi_snapshot totals = expected.json[NAME]
  json           VIEWER FILE                 `json` parses, round-trips the page count
                                             and equals mi_snapshot.to_json_obj()
  corrupt        VIEWER FILE WORD            viewer and reader both refuse FILE, name
                                             WORD, and give the same message
  mutants        VIEWER N                    N seeded mutations of the fixtures: viewer
                                             never crashes and agrees with the reader
  patch-footer   IN OUT DELTA                copy with page_count += DELTA
  patch-committed IN OUT                     copy with the first page's committed + 64 KiB
  flip-freemap   IN OUT                      copy with bit 0 of the first free map flipped
"""

import json
import os
import random
import re
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import mi_snapshot  # noqa: E402

HEADER_SIZE, ARENA_SIZE, PAGE_SIZE = 44, 40, 80


def run(viewer, *args):
    return subprocess.run([viewer] + list(args), capture_output=True, text=True)


def mismatch(what, got, want):
    print("  %s: got %r, want %r" % (what, got, want))
    return 1


def truth_of(expected, name):
    with open(expected) as f:
        return json.load(f)["files"][name]


def viewer_summary(viewer, path, expected, name):
    t = truth_of(expected, name)
    r = run(viewer, path, "summary")
    if r.returncode != 0:
        print("  viewer failed: " + r.stderr.strip())
        return 1
    got = {}
    for line in r.stdout.splitlines():           # "%-20s %s": label, then the value
        value = line[21:].split(" ")[0]
        if value.isdigit():
            got[line[:20].strip()] = int(value)
    want = {
        "arenas": t["arena_count"], "heaps": t["heap_count"], "pages": t["page_count"],
        "in arenas": t["arena_page_count"], "writer thread": t["thread_page_count"],
        "in heap lists": t["heap_page_count"], "with free map": t["freemap_pages"],
        "arena reserved": t["arena_reserved"], "arena committed": t["arena_committed"],
        "arena free": t["arena_free"], "arena purgeable": t["arena_purgeable"],
        "page committed": t["page_committed"], "page used": t["page_used_bytes"],
        "internal frag": t["page_waste"],
    }
    bad = 0
    for k, v in want.items():
        if got.get(k) != v:
            bad |= mismatch(k, got.get(k), v)
    return bad


def viewer_blocks(viewer, path, expected, name):
    t = truth_of(expected, name)
    bad = 0
    for addr, live in sorted(t["freemap_live"].items()):
        r = run(viewer, path, "blocks", "--addr", addr)
        if r.returncode != 0:
            bad |= mismatch("blocks --addr %s exit" % addr, r.returncode, 0)
            continue
        lines = r.stdout.splitlines()
        m = [int(x.split()[1]) for x in lines if x.startswith("live ")]
        rows = [x for x in lines if re.match(r"^\s*\d+\s+0x[0-9a-f]+$", x)]
        if m != [live] or len(rows) != live:
            bad |= mismatch("page %s live blocks (line, rows)" % addr, (m, len(rows)), live)
    return bad


def reader(path, expected, name):
    t = truth_of(expected, name)
    snap = mi_snapshot.load(path)
    pages = list(mi_snapshot.all_pages(snap))
    slice_size = snap["header"]["slice_size"]

    def bits(k):
        return sum(mi_snapshot.bitmap_count(a[k], a["slice_count"]) for a in snap["arenas"]) * slice_size

    got = {
        "arena_count": len(snap["arenas"]), "heap_count": len(snap["heaps"]),
        "page_count": len(pages), "arena_page_count": sum(len(a["pages"]) for a in snap["arenas"]),
        "thread_page_count": len(snap["thread_pages"]),
        "heap_page_count": sum(len(h["pages"]) for h in snap["heaps"]),
        "arena_reserved": sum(a["size"] for a in snap["arenas"]),
        "arena_committed": bits("committed"), "arena_free": bits("free"),
        "arena_purgeable": bits("purge"),
        "page_committed": sum(p["committed"] for p in pages),
        "page_used_bytes": sum(p["used"] * p["block_size"] for p in pages),
        "page_waste": sum(max(0, p["committed"] - p["used"] * p["block_size"]) for p in pages),
        "freemap_pages": sum(1 for p in pages if p["freemap"] is not None),
        "freemap_live": {"0x%x" % p["page_start"]: len(mi_snapshot.live_blocks(p))
                         for p in pages if p["freemap"] is not None},
        "size": os.path.getsize(path),
    }
    bad = 0
    for k, v in t.items():
        if got.get(k) != v:
            bad |= mismatch(k, got.get(k), v)
    # the addresses themselves, not only their number
    for p in pages:
        if p["freemap"] is not None:
            for a in mi_snapshot.live_blocks(p):
                i, rem = divmod(a - p["page_start"], p["block_size"])
                if rem or not 0 <= i < p["capacity"] or (p["freemap"][i >> 3] >> (i & 7)) & 1:
                    bad |= mismatch("live block 0x%x" % a, "free or outside", "live")
    return bad


def json_check(viewer, path):
    r = run(viewer, path, "json")
    if r.returncode != 0:
        print("  viewer failed: " + r.stderr.strip())
        return 1
    obj = json.loads(r.stdout)
    n = len(list(mi_snapshot.all_pages(obj)))
    bad = 0
    if n != obj["footer"]["page_count"]:
        bad |= mismatch("page records in json vs footer", n, obj["footer"]["page_count"])
    ref = mi_snapshot.to_json_obj(mi_snapshot.load(path))
    if obj != ref:
        bad |= mismatch("json == to_json_obj(reader)", "different", "equal")
    return bad


def reader_error(data):
    try:
        mi_snapshot.parse(data)
        return None
    except mi_snapshot.FormatError as e:
        return str(e)


def corrupt(viewer, path, word):
    with open(path, "rb") as f:
        perr = reader_error(f.read())
    r = run(viewer, path, "summary")
    prefix = "mi-heapview: %s: " % path
    cerr = r.stderr.rstrip("\n")
    bad = 0
    if perr is None or word not in perr:
        bad |= mismatch("reader error", perr, "... %s ..." % word)
    if r.returncode != 1 or not cerr.startswith(prefix) or "\n" in cerr:
        bad |= mismatch("viewer exit and stderr", (r.returncode, cerr), (1, prefix + "..."))
    elif cerr[len(prefix):] != perr:
        bad |= mismatch("viewer message = reader message", cerr[len(prefix):], perr)
    return bad


def mutants(viewer, n):
    rng = random.Random(0x5EED)
    srcs = []
    for name in ("small.bin", "fragmented.bin"):
        with open(os.path.join(HERE, "fixtures", name), "rb") as f:
            srcs.append(f.read())
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mihs-mutant-%d.bin" % os.getpid())
    bad = 0
    try:
        for k in range(n):
            b = bytearray(rng.choice(srcs))
            op = rng.random()
            if op < 0.4:
                for _ in range(rng.randint(1, 4)):
                    b[rng.randrange(len(b))] = rng.randrange(256)
            elif op < 0.7:
                del b[rng.randrange(len(b)):]
            else:
                i = rng.randrange(len(b) - 4)
                b[i:i + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x80", b"\x01\x00\x00\x00"])
            with open(tmp, "wb") as f:
                f.write(b)
            perr = reader_error(bytes(b))
            for cmd in (["json"], ["sizes", "--by-tid"], ["pages", "--sort", "waste"]):
                r = run(viewer, tmp, *cmd)
                cerr = r.stderr.rstrip("\n").split(": ", 2)[-1] if r.returncode else None
                if r.returncode not in (0, 1) or cerr != perr or "Sanitizer" in r.stderr \
                        or "runtime error" in r.stderr:
                    bad |= mismatch("mutant %d %s" % (k, cmd), (r.returncode, r.stderr[:200]), (perr,))
                    break
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return bad


def page_offsets(data):
    """Offsets of the page records, found by walking the layout (data must be valid)."""
    off = HEADER_SIZE
    (arenas,) = struct.unpack_from("<I", data, 40)
    out = []

    def page_list(off):
        off += 4
        while struct.unpack_from("<Q", data, off)[0] != 0:
            out.append(off)
            cap, = struct.unpack_from("<I", data, off + 28)
            off += PAGE_SIZE
            if data[off - 4]:
                off += 4 + (cap + 7) // 8
        return off + 8

    for _ in range(arenas):
        off += ARENA_SIZE
        for _ in range(3):
            cc, cb = struct.unpack_from("<II", data, off)
            off += 8 + cc * cb
        off = page_list(off)
    off = page_list(off)
    while struct.unpack_from("<I", data, off)[0] == mi_snapshot.TAG_HEAP:
        off = page_list(off + 24)
    return out


def patch(src, dst, fn):
    with open(src, "rb") as f:
        b = bytearray(f.read())
    fn(b)
    with open(dst, "wb") as f:
        f.write(b)
    return 0


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "viewer-summary":
        return viewer_summary(*args)
    if cmd == "viewer-blocks":
        return viewer_blocks(*args)
    if cmd == "reader":
        return reader(*args)
    if cmd == "json":
        return json_check(*args)
    if cmd == "corrupt":
        return corrupt(*args)
    if cmd == "mutants":
        return mutants(args[0], int(args[1]))
    if cmd == "patch-footer":
        d = int(args[2])
        return patch(args[0], args[1], lambda b: struct.pack_into(
            "<Q", b, len(b) - 8, struct.unpack_from("<Q", b, len(b) - 8)[0] + d))

    def bump_committed(b):
        o = page_offsets(bytes(b))[0] + 36
        struct.pack_into("<Q", b, o, struct.unpack_from("<Q", b, o)[0] + 65536)

    def flip_bit(b):
        o = [o for o in page_offsets(bytes(b)) if b[o + 76]][0]
        b[o + PAGE_SIZE + 4] ^= 1

    if cmd == "patch-committed":
        return patch(args[0], args[1], bump_committed)
    if cmd == "flip-freemap":
        return patch(args[0], args[1], flip_bit)
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
