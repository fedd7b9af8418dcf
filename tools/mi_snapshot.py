#!/usr/bin/env python3
"""Reference reader for MIHS v1 heap snapshots (docs/heap-snapshot.md).

Python 3 standard library only. The reader is strict: anything that does not
follow the layout byte for byte raises FormatError, with the same message text
that tools/mi-heapview.c prints. It returns plain dicts and lists:

    {
      "header":  {magic, version, ptr_size, slice_size, flags, reserved,
                  clock_ms, writer_tid, arena_count},
      "arenas":  [{idx, base, size, slice_count, info_slices, numa_node,
                   pinned, exclusive,
                   committed|free|purge: {chunk_count, chunk_bytes, data},
                   pages: [page, ...]}, ...],
      "thread_pages": [page, ...],          # the writer thread's non-arena pages
      "heaps":   [{heap_seq, numa_node, exclusive_arena, pages: [page, ...]}],
      "footer":  {page_count},
    }

    page = {page_start, slice_start, block_size, reserved, capacity, used,
            committed, tid, heap_seq, arena_idx, slice_index, slice_count,
            memkind, page_kind, abandoned, full, has_freemap,
            freemap: bytes or None}

numa_node fields are signed (-1 = none); bitmap data and free maps are bytes
exactly as stored. to_json_obj() gives the same structure with bytes as hex
strings: the shape `mi-heapview FILE json` prints.

usage as a script:  mi_snapshot.py FILE   (prints the JSON form)
"""

import json
import struct
import sys

MAGIC = 0x5348494D           # "MIHS"
VERSION = 1
TAG_ARNA = 0x414E5241        # "ARNA"
TAG_PAGE = 0x45474150        # "PAGE"
TAG_HEAP = 0x50414548        # "HEAP"
TAG_END = 0x444E4520         # " END"
NO_ARENA = 0xFFFFFFFF
FLAG_BLOCKS = 0x01

MEMKINDS = ["none", "external", "static", "os", "os_huge", "os_remap", "arena", "malloc"]
PAGE_KINDS = ["small", "medium", "large", "singleton"]

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_HEADER = struct.Struct("<IIIIIIQQI")               # 44 bytes
_ARENA = struct.Struct("<IQQIIiBB2x")               # 36 bytes after the tag
_BITMAP = struct.Struct("<II")
_PAGE = struct.Struct("<QQQIIIQQQIIIBBBBB3x")       # 80 bytes
_HEAP = struct.Struct("<QiQ")                       # 20 bytes after the tag
_PAGE_FIELDS = ("page_start", "slice_start", "block_size", "reserved", "capacity",
                "used", "committed", "tid", "heap_seq", "arena_idx", "slice_index",
                "slice_count", "memkind", "page_kind", "abandoned", "full",
                "has_freemap")

assert _HEADER.size == 44 and _ARENA.size + 4 == 40 and _PAGE.size == 80
assert _HEAP.size + 4 == 24


class FormatError(Exception):
    """The bytes are not a valid MIHS v1 snapshot."""


def tag_name(tag):
    """0x%08x, followed by the four bytes in quotes when they are printable."""
    raw = _U32.pack(tag)
    text = "0x%08x" % tag
    if all(0x20 <= c < 0x7F for c in raw):
        text += ' "%s"' % raw.decode("ascii")
    return text


class _Cursor:
    def __init__(self, data):
        self.data = data
        self.off = 0

    def take(self, n, what):
        if n > len(self.data) - self.off:
            raise FormatError("truncated at offset %d (reading %s)" % (self.off, what))
        chunk = self.data[self.off: self.off + n]
        self.off += n
        return chunk

    def unpack(self, st, what):
        return st.unpack(self.take(st.size, what))

    def tag(self, want, expected_text):
        off = self.off
        (tag,) = self.unpack(_U32, "record tag")
        if tag not in want:
            raise FormatError("unknown record tag %s at offset %d (expected %s)"
                              % (tag_name(tag), off, expected_text))
        return tag


def _bitmap(cur):
    chunk_count, chunk_bytes = cur.unpack(_BITMAP, "bitmap header")
    data = cur.take(chunk_count * chunk_bytes, "bitmap")
    return {"chunk_count": chunk_count, "chunk_bytes": chunk_bytes, "data": bytes(data)}


def _page_list(cur, counter):
    cur.tag((TAG_PAGE,), "PAGE")
    pages = []
    while True:
        start = cur.off
        (page_start,) = cur.unpack(_U64, "page record")
        if page_start == 0:                       # the sentinel ends the list
            return pages
        cur.off = start
        page = dict(zip(_PAGE_FIELDS, cur.unpack(_PAGE, "page record")))
        page["freemap"] = None
        if page["has_freemap"]:
            noff = cur.off
            (nbytes,) = cur.unpack(_U32, "free map length")
            want = (page["capacity"] + 7) // 8
            if nbytes != want:
                raise FormatError("free map nbytes %d != ceil(capacity/8) = %d at offset %d"
                                  % (nbytes, want, noff))
            page["freemap"] = bytes(cur.take(nbytes, "free map"))
        pages.append(page)
        counter[0] += 1


def parse(data):
    """Parse a whole snapshot held in bytes; raise FormatError if invalid."""
    data = bytes(data)
    cur = _Cursor(data)
    # magic and version are checked before the rest of the header is needed,
    # so a short file of the wrong kind still says what it is
    (magic,) = _U32.unpack(cur.take(4, "header"))
    if magic != MAGIC:
        raise FormatError('bad magic %s (expected 0x%08x "MIHS")' % (tag_name(magic), MAGIC))
    (version,) = _U32.unpack(cur.take(4, "header"))
    if version != VERSION:
        raise FormatError("unsupported version %d" % version)
    cur.off = 0
    fields = cur.unpack(_HEADER, "header")
    header = dict(zip(("magic", "version", "ptr_size", "slice_size", "flags", "reserved",
                       "clock_ms", "writer_tid", "arena_count"), fields))
    counter = [0]
    arenas = []
    for _ in range(header["arena_count"]):
        cur.tag((TAG_ARNA,), "ARNA")
        arena = dict(zip(("idx", "base", "size", "slice_count", "info_slices",
                          "numa_node", "pinned", "exclusive"),
                         cur.unpack(_ARENA, "ARNA record")))
        for name in ("committed", "free", "purge"):
            arena[name] = _bitmap(cur)
        arena["pages"] = _page_list(cur, counter)
        arenas.append(arena)
    thread_pages = _page_list(cur, counter)
    heaps = []
    while True:
        if cur.tag((TAG_HEAP, TAG_END), "HEAP or END") == TAG_END:
            break
        heap = dict(zip(("heap_seq", "numa_node", "exclusive_arena"),
                        cur.unpack(_HEAP, "HEAP record")))
        heap["pages"] = _page_list(cur, counter)
        heaps.append(heap)
    (page_count,) = cur.unpack(_U64, "footer")
    if page_count != counter[0]:
        raise FormatError("footer page_count %d but %d page records" % (page_count, counter[0]))
    if cur.off != len(data):
        raise FormatError("trailing %d bytes after footer at offset %d"
                          % (len(data) - cur.off, cur.off))
    return {"header": header, "arenas": arenas, "thread_pages": thread_pages,
            "heaps": heaps, "footer": {"page_count": page_count}}


def load(path):
    with open(path, "rb") as f:
        return parse(f.read())


def all_pages(snap):
    """Every page record in file order: arenas, writer thread, heaps."""
    for arena in snap["arenas"]:
        yield from arena["pages"]
    yield from snap["thread_pages"]
    for heap in snap["heaps"]:
        yield from heap["pages"]


def bitmap_count(bitmap, nbits):
    """Set bits among the first nbits (bits past the arena's slices are ignored)."""
    data = bitmap["data"]
    full, rest = divmod(min(nbits, len(data) * 8), 8)
    n = sum(bin(b).count("1") for b in data[:full])
    if rest:
        n += bin(data[full] & ((1 << rest) - 1)).count("1")
    return n


def live_indices(page):
    """Indices i < capacity whose free-map bit is 0 (LSB first, 1 = free)."""
    fm = page["freemap"]
    if fm is None:
        raise ValueError("page at 0x%x has no free map" % page["page_start"])
    return [i for i in range(page["capacity"]) if not (fm[i >> 3] >> (i & 7)) & 1]


def live_blocks(page):
    """Addresses page_start + i*block_size of the live blocks of a page with a free map."""
    return [page["page_start"] + i * page["block_size"] for i in live_indices(page)]


def to_json_obj(snap):
    """The parsed snapshot with every bytes value as a lowercase hex string."""
    def conv(v):
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, bytes):
            return v.hex()
        return v
    return conv(snap)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: mi_snapshot.py FILE\n")
        return 2
    try:
        snap = load(argv[1])
    except (OSError, FormatError) as e:
        sys.stderr.write("mi_snapshot: %s: %s\n" % (argv[1], e))
        return 1
    json.dump(to_json_obj(snap), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
