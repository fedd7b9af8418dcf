"""Checks of a heap snapshot written by this allocator (tests/snapshot/writer-test.sh).

usage: check_writer.py SNAPSHOT.bin LIVE_FILE STATS_JSON   (the `write` case)
       check_writer.py --exit SNAPSHOT.bin                  (MIMALLOC_SNAPSHOT_ON_EXIT=2)

Reads the file with tools/mi_snapshot.py (written from the format's
specification, not from the writer) and checks: magic, version 1, the
BLOCKS flag, the sections in order with the footer's count equal to the page
records read (the reader enforces both), at least one free map; in the write
case also that the live blocks decoded from the free maps equal those
mi_heap_visit_blocks saw in those pages, that every live block lies in a
page record, and that the committed bytes the page records and segment
headers give are at most the statistics' committed.current. Prints the
first failed check and exits 1.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import mi_snapshot  # noqa: E402


def fail(msg):
    print("  " + msg)
    sys.exit(1)


def main(argv):
    exit_case = argv[1:2] == ["--exit"]
    path = argv[2] if exit_case else argv[1]
    try:
        snap = mi_snapshot.load(path)
    except mi_snapshot.FormatError as e:
        fail("reader: %s" % e)
    h = snap["header"]
    if h["version"] != 1 or h["ptr_size"] != 8 or h["slice_size"] != 65536:
        fail("header: version %d ptr_size %d slice_size %d" % (h["version"], h["ptr_size"], h["slice_size"]))
    if not h["flags"] & 1:
        fail("header: the BLOCKS flag is not set (flags %#x)" % h["flags"])
    if h["arena_count"] != len(snap["arenas"]) or h["arena_count"] == 0:
        fail("header: arena_count %d, %d records" % (h["arena_count"], len(snap["arenas"])))
    pages = list(mi_snapshot.all_pages(snap))
    mapped = [p for p in pages if p["freemap"] is not None]
    if not mapped:
        fail("no page has a free map")
    if not any(p["block_size"] >= 8 << 20 for p in pages):
        fail("the 8 MiB block's page is missing")
    if exit_case:
        print("exit snapshot: %d arenas, %d pages, %d with free maps" % (len(snap["arenas"]), len(pages), len(mapped)))
        return 0
    live_file, stats_file = argv[2], argv[3]
    visited = set()
    for line in open(live_file):
        addr, _size = line.split()
        visited.add(int(addr, 16))
    decoded = set()
    for p in mapped:
        decoded.update(mi_snapshot.live_blocks(p))
    in_mapped = set()
    for b in visited:
        for p in mapped:
            if p["page_start"] <= b < p["page_start"] + p["capacity"] * p["block_size"]:
                in_mapped.add(b)
                break
    if decoded != in_mapped:
        fail("free maps give %d live blocks, the visit %d in those pages (%d differ)"
             % (len(decoded), len(in_mapped), len(decoded ^ in_mapped)))
    outside = [b for b in visited
               if not any(p["page_start"] <= b < p["page_start"] + max(p["capacity"], 1) * p["block_size"] for p in pages)]
    if outside:
        fail("%d visited blocks lie in no page record (first %#x)" % (len(outside), outside[0]))
    stats = json.load(open(stats_file))
    committed_pages = sum(p["committed"] for p in pages)
    headers = sum(a["info_slices"] for a in snap["arenas"])  # (slices: an upper bound of the headers)
    if committed_pages > stats["committed"]["current"]:
        fail("page records commit %d bytes, the statistics' committed.current is %d"
             % (committed_pages, stats["committed"]["current"]))
    bitmap = sum(mi_snapshot.bitmap_count(a["committed"], a["slice_count"]) for a in snap["arenas"]) * 65536
    if bitmap < committed_pages:
        fail("committed bitmaps %d bytes < the page records' %d" % (bitmap, committed_pages))
    print("write snapshot: %d arenas, %d pages, %d live blocks decoded = visited; committed %d <= %d (bitmaps %d, %d header slices)"
          % (len(snap["arenas"]), len(pages), len(decoded), committed_pages, stats["committed"]["current"], bitmap, headers))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
