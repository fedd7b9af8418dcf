#!/usr/bin/env python3
"""Python mirror of `mi-heapview <snapshot> summary` and `... pages`.

usage: heapview.py <snapshot> summary [--human]
       heapview.py <snapshot> pages [--top N] [--size B] [--sort waste|addr|used]
                                    [--min-waste B] [--human]

Written from docs/heap-snapshot.md, not from tools/mi-heapview.c: it reads the
file with the reference reader (tools/mi_snapshot.py) and lays out the same
columns by the same rules, so viewer-cli-test.sh can hold the C viewer's text
against an implementation that shares none of its code. Errors are printed as
`heapview: <path>: <message>`, exit 1.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import mi_snapshot  # noqa: E402

U64_MAX = (1 << 64) - 1
UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
HUMAN = False


def sat(v):
    return min(v, U64_MAX)


def used_bytes(p):
    return sat(p["used"] * p["block_size"])


def waste(p):
    return max(0, p["committed"] - used_bytes(p))


def fmt_size(v):
    if not HUMAN:
        return "%d" % v
    if v < 1024:
        return "%d B" % v
    d, u = float(v), 0
    while d >= 1024.0 and u < 6:
        d /= 1024.0
        u += 1
    return "%.1f %s" % (d, UNITS[u])


def fmt_pct(part, whole):
    if whole == 0:
        return "-"
    return "%.1f%%" % (float(part) * 100.0 / float(whole))


def name(v, names):
    return names[v] if v < len(names) else "%d" % v


def table(heads, align, rows):
    width = [len(h) for h in heads]
    for r in rows:
        for j, c in enumerate(r):
            width[j] = max(width[j], len(c))
    out = []
    for r in [heads] + rows:
        cells = [c.ljust(width[j]) if align[j] == "L" else c.rjust(width[j])
                 for j, c in enumerate(r)]
        out.append("  ".join(cells).rstrip(" "))
    return out


def summary(snap):
    h = snap["header"]
    slice_size = h["slice_size"]
    reserved = sat(sum(a["size"] for a in snap["arenas"]))
    bits = {}
    for k in ("committed", "free", "purge"):
        bits[k] = sat(sum(sat(mi_snapshot.bitmap_count(a[k], a["slice_count"]) * slice_size)
                          for a in snap["arenas"]))
    pages = list(mi_snapshot.all_pages(snap))
    committed = sat(sum(p["committed"] for p in pages))
    used = sat(sum(used_bytes(p) for p in pages))
    wasted = sat(sum(waste(p) for p in pages))
    in_arena = sum(len(a["pages"]) for a in snap["arenas"])
    in_heaps = sum(len(x["pages"]) for x in snap["heaps"])
    rows = [
        ("version", "%d" % h["version"]),
        ("ptr_size", "%d" % h["ptr_size"]),
        ("slice_size", fmt_size(slice_size)),
        ("flags", "0x%x%s" % (h["flags"], " (blocks)" if h["flags"] & mi_snapshot.FLAG_BLOCKS else "")),
        ("clock_ms", "%d" % h["clock_ms"]),
        ("writer_tid", "0x%x" % h["writer_tid"]),
        ("arenas", "%d" % len(snap["arenas"])),
        ("arena reserved", fmt_size(reserved)),
        ("arena committed", fmt_size(bits["committed"])),
        ("arena free", fmt_size(bits["free"])),
        ("arena purgeable", fmt_size(bits["purge"])),
        ("heaps", "%d" % len(snap["heaps"])),
        ("pages", "%d (page records: in arenas + writer thread + in heap lists)" % len(pages)),
        ("  in arenas", "%d (pages inside an arena's reservation; from mimalloc-pprof, a segment)" % in_arena),
        ("  writer thread", "%d (pages outside every arena, owned by the thread that wrote the snapshot)"
         % len(snap["thread_pages"])),
        ("  in heap lists", "%d (pages outside every arena, abandoned, listed under their heap)" % in_heaps),
        ("  with free map", "%d (pages, of any list, whose live blocks were recorded)"
         % sum(1 for p in pages if p["has_freemap"])),
        ("page committed", fmt_size(committed)),
        ("page used", fmt_size(used)),
        ("internal frag", "%s (%s of page committed)" % (fmt_size(wasted), fmt_pct(wasted, committed))),
    ]
    return ["%-20s %s" % r for r in rows]


def pages(snap, top=0, size=None, sort="addr", min_waste=0):
    sel = [(i, p) for i, p in enumerate(mi_snapshot.all_pages(snap))
           if (size is None or p["block_size"] == size) and waste(p) >= min_waste]
    if sort == "addr":
        sel.sort(key=lambda ip: (ip[1]["page_start"], ip[0]))
    elif sort == "waste":
        sel.sort(key=lambda ip: (-waste(ip[1]), ip[0]))
    else:
        sel.sort(key=lambda ip: (-used_bytes(ip[1]), ip[0]))
    shown = sel[:top] if top else sel
    rows = []
    for _, p in shown:
        flags = ("a" if p["abandoned"] else "") + ("f" if p["full"] else "") + \
                ("m" if p["has_freemap"] else "")
        rows.append([
            "0x%x" % p["page_start"], name(p["page_kind"], mi_snapshot.PAGE_KINDS),
            fmt_size(p["block_size"]), "%d" % p["reserved"], "%d" % p["capacity"],
            "%d" % p["used"], fmt_size(p["committed"]), fmt_size(waste(p)),
            fmt_pct(waste(p), p["committed"]), "0x%x" % p["tid"], "%d" % p["heap_seq"],
            "-" if p["arena_idx"] == mi_snapshot.NO_ARENA else "%d" % p["arena_idx"],
            "%d+%d" % (p["slice_index"], p["slice_count"]),
            name(p["memkind"], mi_snapshot.MEMKINDS), flags or "-",
        ])
    heads = ["page_start", "kind", "block_size", "reserved", "capacity", "used", "committed",
             "waste", "waste%", "tid", "heap", "arena", "slices", "memkind", "flags"]
    out = table(heads, "LLRRRRRRRLRRRLL", rows)
    if len(shown) < len(sel):
        out.append("(%d of %d pages)" % (len(shown), len(sel)))
    return out


def main(argv):
    global HUMAN
    if len(argv) < 3 or argv[2] not in ("summary", "pages"):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    path, cmd, args = argv[1], argv[2], argv[3:]
    opts = {"top": 0, "size": None, "sort": "addr", "min_waste": 0}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--human":
            HUMAN = True
        elif cmd == "pages" and a in ("--top", "--size", "--min-waste", "--sort") and i + 1 < len(args):
            i += 1
            v = args[i]
            if a == "--sort":
                if v not in ("addr", "waste", "used"):
                    sys.stderr.write("heapview: bad value '%s'\n" % v)
                    return 2
                opts["sort"] = v
            else:
                opts[a[2:].replace("-", "_")] = int(v, 0)
        else:
            sys.stderr.write("heapview: unexpected argument '%s'\n" % a)
            return 2
        i += 1
    try:
        snap = mi_snapshot.load(path)
    except (OSError, mi_snapshot.FormatError) as e:
        sys.stderr.write("heapview: %s: %s\n" % (path, e))
        return 1
    lines = summary(snap) if cmd == "summary" else pages(snap, **opts)
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
