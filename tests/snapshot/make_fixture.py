#!/usr/bin/env python3
"""Write synthetic MIHS v1 heap snapshots and the totals they were built with.

usage: make_fixture.py OUTDIR

Writes into OUTDIR:
  small.bin        one arena, five pages, three free maps, one empty heap
  fragmented.bin   five 4 MiB segments (~40 pages, blocks 16 B .. 128 KiB, many
                   nearly empty), an 8 MiB singleton page in the writer thread's
                   list, and a HEAP section holding one abandoned OS page
  after.bin        fragmented.bin a little later: pages gone, pages added, used
                   counts moved (the input of `diff`)
  bad-magic.bin, bad-version.bin, truncated.bin, bad-footer.bin,
  bad-tag.bin, bad-freemap.bin
                   small.bin with one defect each
  expected.json    the ground truth: per file the page, arena and heap counts,
                   the byte totals, and the live block count of every page that
                   carries a free map; per corrupt file the word its error names

The output is a function of the fixed seed alone: running this twice gives
byte-identical files. It does not import the reader, so the totals in
expected.json come from the model the bytes were written from, not from a
second reading of them.
"""

import copy
import json
import os
import random
import struct
import sys

SEED = 0x4D494853  # the bytes "MIHS"

KIB = 1024
MIB = 1024 * KIB
SLICE = 64 * KIB            # slice_size: commit and page granularity
SEGMENT = 4 * MIB           # one OS reservation
SEGMENT_SLICES = SEGMENT // SLICE
INFO_SLICES = 1             # the segment header occupies the first slice
SMALL_PAGE_SLICES = 1       # 64 KiB pages, blocks up to 8 KiB
MEDIUM_PAGE_SLICES = 8      # 512 KiB pages, blocks up to 128 KiB

SMALL_BLOCKS = [16, 32, 48, 64, 80, 96, 128, 256, 512, 1024, 2048, 4096, 8192]
MEDIUM_BLOCKS = [16 * KIB, 24 * KIB, 32 * KIB, 64 * KIB, 128 * KIB]

MK_OS, MK_ARENA = 3, 6
PK_SMALL, PK_MEDIUM, PK_LARGE, PK_SINGLETON = 0, 1, 2, 3
NO_ARENA = 0xFFFFFFFF
TID_ABANDONED, TID_ABANDONED_MAPPED = 0, 4

MAGIC, VERSION = 0x5348494D, 1
TAG_ARNA, TAG_PAGE, TAG_HEAP, TAG_END = 0x414E5241, 0x45474150, 0x50414548, 0x444E4520
FLAG_BLOCKS = 0x01
CHUNK_BYTES = 64

HEADER = struct.Struct("<IIIIIIQQI")              # 44 bytes
ARENA = struct.Struct("<IIQQIIiBB2x")             # 40 bytes, tag included
PAGE = struct.Struct("<QQQIIIQQQIIIBBBBB3x")      # 80 bytes
HEAP = struct.Struct("<IQiQ")                     # 24 bytes, tag included
FOOTER = struct.Struct("<IQ")                     # 12 bytes

WRITER_TID = 0x7F2C3B9FF740
OTHER_TIDS = [0x7F2C3A5FE640, 0x7F2C39DFD640, 0x7F2C395FC640]


# ---------------------------------------------------------------- the model

def new_page(seg, slice_index, slices, kind, block_size, tid, heap_seq,
             memkind=MK_ARENA):
    start = seg["base"] + slice_index * SLICE
    reserved = slices * SLICE // block_size
    return {
        "page_start": start, "slice_start": start, "block_size": block_size,
        "reserved": reserved, "capacity": reserved, "used": 0,
        "committed": slices * SLICE, "tid": tid, "heap_seq": heap_seq,
        "arena_idx": seg["idx"], "slice_index": slice_index,
        "slice_count": slices, "memkind": memkind, "page_kind": kind,
        "abandoned": 1 if tid in (TID_ABANDONED, TID_ABANDONED_MAPPED) else 0,
        "full": 0,
        "live": None,        # sorted live block indices when a free map is written
        "pad_free": True,    # value of the map bits past capacity in the last byte
    }


def fill(rng, page, low, freemap):
    """Choose capacity and used; with freemap, also which blocks are live."""
    if rng.random() < 0.25 and page["reserved"] > 1:
        page["capacity"] = rng.randint(max(1, page["reserved"] // 4), page["reserved"])
    cap = page["capacity"]
    if low:
        used = rng.randint(0, max(1, cap // 12))
    else:
        used = rng.randint(cap // 2, cap)
    page["used"] = used
    page["full"] = 1 if used == cap == page["reserved"] else 0
    if freemap:
        page["live"] = sorted(rng.sample(range(cap), used))
        page["pad_free"] = rng.random() < 0.5


def new_segment(idx, base, numa=-1, pinned=0, exclusive=0):
    return {"idx": idx, "base": base, "size": SEGMENT, "slice_count": SEGMENT_SLICES,
            "info_slices": INFO_SLICES, "numa_node": numa, "pinned": pinned,
            "exclusive": exclusive, "pages": [],
            "committed": set(range(INFO_SLICES)), "free": set(), "purge": set()}


def settle_bitmaps(rng, seg):
    """Committed, free and purge bits consistent with the pages placed."""
    in_page = set()
    for p in seg["pages"]:
        span = range(p["slice_index"], p["slice_index"] + p["slice_count"])
        in_page.update(span)
        seg["committed"].update(span[: p["committed"] // SLICE])
    seg["free"] = set(range(seg["slice_count"])) - in_page - set(range(INFO_SLICES))
    for s in sorted(seg["free"]):
        if rng.random() < 0.5:
            seg["committed"].add(s)
            if rng.random() < 0.5:
                seg["purge"].add(s)


def populate_segment(rng, seg, want_pages, freemap_every):
    nxt = INFO_SLICES
    while nxt < seg["slice_count"] and len(seg["pages"]) < want_pages:
        if rng.random() < 0.15:                       # leave a hole
            nxt += rng.randint(1, 3)
            continue
        medium = rng.random() < 0.3 and nxt + MEDIUM_PAGE_SLICES <= seg["slice_count"]
        slices = MEDIUM_PAGE_SLICES if medium else SMALL_PAGE_SLICES
        block = rng.choice(MEDIUM_BLOCKS if medium else SMALL_BLOCKS)
        with_map = len(seg["pages"]) % freemap_every == 0 and block <= 4096
        if with_map:
            tid = WRITER_TID      # free maps are written for the caller's pages only
        elif rng.random() < 0.1:
            tid = TID_ABANDONED
        else:
            tid = rng.choice([WRITER_TID] + OTHER_TIDS)
        page = new_page(seg, nxt, slices, PK_MEDIUM if medium else PK_SMALL, block,
                        tid, rng.choice([1, 2, 3]))
        fill(rng, page, rng.random() < 0.55, with_map)
        if medium and page["capacity"] * block <= 4 * SLICE and rng.random() < 0.5:
            # only the part of the page in use was committed
            need = -(-page["capacity"] * block // SLICE)
            page["committed"] = need * SLICE
        seg["pages"].append(page)
        nxt += slices


# ---------------------------------------------------------------- encoding

def encode_bitmap(bits, nslices):
    if bits is None:
        return struct.pack("<II", 0, CHUNK_BYTES)
    chunks = -(-nslices // (CHUNK_BYTES * 8))
    data = bytearray(chunks * CHUNK_BYTES)
    for b in bits:
        data[b >> 3] |= 1 << (b & 7)
    return struct.pack("<II", chunks, CHUNK_BYTES) + bytes(data)


def encode_freemap(page):
    cap = page["capacity"]
    nbytes = (cap + 7) // 8
    data = bytearray(b"\xff" * nbytes)               # 1 = free
    for i in page["live"]:
        data[i >> 3] &= ~(1 << (i & 7)) & 0xFF
    if cap % 8 and not page["pad_free"]:
        # bits past capacity name no block; write them as 0 ("not free") so a
        # reader that forgets the bound counts blocks that do not exist
        data[-1] &= (1 << (cap % 8)) - 1
    return struct.pack("<I", nbytes) + bytes(data)


class Writer:
    def __init__(self):
        self.out = bytearray()
        self.page_offsets = []
        self.freemap_offsets = []
        self.heap_offsets = []
        self.pages = 0

    def page_list(self, pages):
        self.out += struct.pack("<I", TAG_PAGE)
        for p in pages:
            self.page_offsets.append(len(self.out))
            self.out += PAGE.pack(
                p["page_start"], p["slice_start"], p["block_size"],
                p["reserved"], p["capacity"], p["used"], p["committed"],
                p["tid"], p["heap_seq"], p["arena_idx"], p["slice_index"],
                p["slice_count"], p["memkind"], p["page_kind"], p["abandoned"],
                p["full"], 1 if p["live"] is not None else 0)
            if p["live"] is not None:
                self.freemap_offsets.append(len(self.out))
                self.out += encode_freemap(p)
            self.pages += 1
        self.out += struct.pack("<Q", 0)


def encode(snap):
    w = Writer()
    flags = FLAG_BLOCKS if any(p["live"] is not None for p in all_pages(snap)) else 0
    w.out += HEADER.pack(MAGIC, VERSION, 8, SLICE, flags, 0, snap["clock_ms"],
                         WRITER_TID, len(snap["arenas"]))
    for a in snap["arenas"]:
        w.out += ARENA.pack(TAG_ARNA, a["idx"], a["base"], a["size"], a["slice_count"],
                            a["info_slices"], a["numa_node"], a["pinned"], a["exclusive"])
        for name in ("committed", "free", "purge"):
            bits = a[name] if a[name] or name == "committed" else None
            w.out += encode_bitmap(bits, a["slice_count"])
        w.page_list(a["pages"])
    w.page_list(snap["thread_pages"])
    for h in snap["heaps"]:
        w.heap_offsets.append(len(w.out))
        w.out += HEAP.pack(TAG_HEAP, h["heap_seq"], h["numa_node"], h["exclusive_arena"])
        w.page_list(h["pages"])
    w.out += FOOTER.pack(TAG_END, w.pages)
    return bytes(w.out), w


def all_pages(snap):
    for a in snap["arenas"]:
        yield from a["pages"]
    yield from snap["thread_pages"]
    for h in snap["heaps"]:
        yield from h["pages"]


def truth(snap):
    pages = list(all_pages(snap))
    bitbytes = lambda name: sum(len(a[name]) for a in snap["arenas"]) * SLICE
    return {
        "arena_count": len(snap["arenas"]),
        "heap_count": len(snap["heaps"]),
        "page_count": len(pages),
        "arena_page_count": sum(len(a["pages"]) for a in snap["arenas"]),
        "thread_page_count": len(snap["thread_pages"]),
        "heap_page_count": sum(len(h["pages"]) for h in snap["heaps"]),
        "arena_reserved": sum(a["size"] for a in snap["arenas"]),
        "arena_committed": bitbytes("committed"),
        "arena_free": bitbytes("free"),
        "arena_purgeable": bitbytes("purge"),
        "page_committed": sum(p["committed"] for p in pages),
        "page_used_bytes": sum(p["used"] * p["block_size"] for p in pages),
        "page_waste": sum(max(0, p["committed"] - p["used"] * p["block_size"]) for p in pages),
        "freemap_pages": sum(1 for p in pages if p["live"] is not None),
        "freemap_live": {"0x%x" % p["page_start"]: len(p["live"])
                         for p in pages if p["live"] is not None},
    }


# ---------------------------------------------------------------- the fixtures

def make_small(rng):
    seg = new_segment(0, 0x7F0000000000, numa=0)
    pages = seg["pages"]
    p = new_page(seg, 1, 1, PK_SMALL, 64, WRITER_TID, 1)
    p["used"] = 10
    p["live"] = sorted(rng.sample(range(p["capacity"]), 10))
    pages.append(p)
    p = new_page(seg, 2, 1, PK_SMALL, 48, WRITER_TID, 1)   # capacity 1365: 5 bits of pad
    p["used"] = 300
    p["live"] = sorted(rng.sample(range(p["capacity"]), 300))
    p["pad_free"] = False
    pages.append(p)
    p = new_page(seg, 3, 1, PK_SMALL, 1024, OTHER_TIDS[0], 1)
    p["used"] = p["capacity"]
    p["full"] = 1
    pages.append(p)
    p = new_page(seg, 8, 8, PK_MEDIUM, 32 * KIB, WRITER_TID, 1)
    p["capacity"] = 13
    p["used"] = 3
    p["live"] = [0, 5, 12]
    p["committed"] = 7 * SLICE
    pages.append(p)
    p = new_page(seg, 4, 1, PK_SMALL, 256, TID_ABANDONED, 1)
    p["used"] = 17
    pages.append(p)
    pages.sort(key=lambda q: q["slice_index"])
    settle_bitmaps(rng, seg)
    return {"clock_ms": 1000, "arenas": [seg], "thread_pages": [],
            "heaps": [{"heap_seq": 1, "numa_node": -1, "exclusive_arena": 0, "pages": []}]}


def make_fragmented(rng):
    bases = [0x7F2C40000000, 0x7F2C40400000, 0x7F2C41000000, 0x7F2C42C00000,
             0x7F2C45000000]
    arenas = []
    for i, base in enumerate(bases):
        seg = new_segment(i, base, numa=-1 if i != 2 else 0, exclusive=1 if i == 4 else 0)
        populate_segment(rng, seg, want_pages=8, freemap_every=3)
        arenas.append(seg)
    # one abandoned-and-mapped page, as the arena walk reports it
    victim = arenas[3]["pages"][1]
    victim["tid"] = TID_ABANDONED_MAPPED
    victim["abandoned"] = 1
    for seg in arenas:
        settle_bitmaps(rng, seg)

    # an 8 MiB block gets a segment of its own, straight from the OS
    big = 0x7F2C60000000
    single = {
        "page_start": big + SLICE, "slice_start": big, "block_size": 8 * MIB,
        "reserved": 1, "capacity": 1, "used": 1, "committed": 8 * MIB,
        "tid": WRITER_TID, "heap_seq": 1, "arena_idx": NO_ARENA, "slice_index": 0,
        "slice_count": 8 * MIB // SLICE + 1, "memkind": MK_OS,
        "page_kind": PK_SINGLETON, "abandoned": 0, "full": 1, "live": None,
        "pad_free": True,
    }
    # an OS-backed page a finished thread left behind in heap 2
    orphan_base = 0x7F2C64000000
    orphan = {
        "page_start": orphan_base + SLICE, "slice_start": orphan_base,
        "block_size": 512, "reserved": 128, "capacity": 96, "used": 7,
        "committed": SLICE, "tid": TID_ABANDONED, "heap_seq": 2,
        "arena_idx": NO_ARENA, "slice_index": 1, "slice_count": 1,
        "memkind": MK_OS, "page_kind": PK_SMALL, "abandoned": 1, "full": 0,
        "live": None, "pad_free": True,
    }
    heaps = [
        {"heap_seq": 1, "numa_node": -1, "exclusive_arena": 0, "pages": []},
        {"heap_seq": 2, "numa_node": -1, "exclusive_arena": 0, "pages": [orphan]},
        {"heap_seq": 3, "numa_node": 0, "exclusive_arena": bases[4], "pages": []},
    ]
    return {"clock_ms": 5000, "arenas": arenas, "thread_pages": [single], "heaps": heaps}


def make_after(rng, before):
    snap = copy.deepcopy(before)
    snap["clock_ms"] += 2500
    segs = snap["arenas"]
    # three pages freed: their slices return to the free set, committed, purge pending
    for seg, k in ((segs[0], 2), (segs[2], 0), (segs[4], 3)):
        p = seg["pages"].pop(k)
        span = range(p["slice_index"], p["slice_index"] + p["slice_count"])
        seg["free"].update(span)
        seg["purge"].update(span[: p["committed"] // SLICE])
    # used counts move on five pages (free maps are dropped: the writer's thread
    # no longer owns them in this later snapshot)
    moved = [p for seg in segs for p in seg["pages"]][1::7][:5]
    for p in moved:
        p["used"] = rng.randint(0, p["capacity"])
        p["full"] = 1 if p["used"] == p["capacity"] == p["reserved"] else 0
        p["live"] = None
    # a new page of 4 KiB blocks in the first hole of segment 1
    seg = segs[1]
    hole = min(seg["free"])
    p = new_page(seg, hole, 1, PK_SMALL, 4096, OTHER_TIDS[1], 2)
    p["used"] = 15
    seg["pages"].append(p)
    seg["pages"].sort(key=lambda q: q["slice_index"])
    seg["free"].discard(hole)
    seg["purge"].discard(hole)
    seg["committed"].add(hole)
    # the orphan was reclaimed by a live thread: it leaves the heap list
    snap["heaps"][1]["pages"] = []
    return snap


def corrupt(small, w):
    out = {}
    b = bytearray(small)
    b[0:4] = b"MIHX"
    out["bad-magic.bin"] = (bytes(b), "bad magic")
    b = bytearray(small)
    struct.pack_into("<I", b, 4, 2)
    out["bad-version.bin"] = (bytes(b), "unsupported version")
    out["truncated.bin"] = (small[: w.page_offsets[1] + 37], "truncated")
    b = bytearray(small)
    struct.pack_into("<Q", b, len(b) - 8, w.pages + 1)
    out["bad-footer.bin"] = (bytes(b), "footer")
    b = bytearray(small)
    b[w.heap_offsets[0]: w.heap_offsets[0] + 4] = b"HEAQ"
    out["bad-tag.bin"] = (bytes(b), "record tag")
    b = bytearray(small)
    off = w.freemap_offsets[0]
    (n,) = struct.unpack_from("<I", b, off)
    struct.pack_into("<I", b, off, n + 1)
    out["bad-freemap.bin"] = (bytes(b), "free map nbytes")
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: make_fixture.py OUTDIR\n")
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    rng = random.Random(SEED)
    small = make_small(rng)
    frag = make_fragmented(rng)
    after = make_after(rng, frag)

    files = {}
    expected = {"seed": SEED, "files": {}, "corrupt": {}}
    for name, snap in (("small.bin", small), ("fragmented.bin", frag), ("after.bin", after)):
        data, w = encode(snap)
        files[name] = data
        t = truth(snap)
        t["size"] = len(data)
        expected["files"][name] = t
        if name == "small.bin":
            for cname, (cdata, word) in corrupt(data, w).items():
                files[cname] = cdata
                expected["corrupt"][cname] = word
    for name, data in files.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
    with open(os.path.join(outdir, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
