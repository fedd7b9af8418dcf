#!/usr/bin/env python3
"""Reads a statistics table (mi_stats_print_out, MIMALLOC_SHOW_STATS) the way
a script written for mimalloc 2.4.1's table would, and fails where ours would
mislead it: every table starts with upstream's header line; its rows carry
upstream's labels (right-aligned to 10 characters, then ':') in upstream's
order; each figure is right-aligned in its 12-character column, where
upstream puts that column, written with upstream's units. Rows after
upstream's last ("process") are the allocator's own and are only checked
for the label style.

usage: stats-table-layout.py FILE [--tables N]   (N: at least N tables)
"""
import re
import sys

HEADER = "%10s: %11s %11s %11s %11s %11s" % (
    "heap stats", "peak   ", "total   ", "current   ", "block   ", "total#   ")
# upstream's rows after the allocation section, in its order, with their kind
ROWS = [
    ("reserved", "bytes"), ("committed", "bytes"), ("reset", "counter"),
    ("purged", "counter"), ("touched", "bytes"), ("segments", "count"),
    ("-abandoned", "count"), ("-cached", "count"), ("pages", "count"),
    ("-abandoned", "count"), ("-extended", "counter"), ("-retire", "counter"),
    ("arenas", "counter"), ("-rollback", "counter"), ("mmaps", "counter"),
    ("commits", "counter"), ("resets", "counter"), ("purges", "counter"),
    ("guarded", "counter"), ("threads", "count"), ("searches", "searches"),
    ("numa nodes", "numa"), ("elapsed", "elapsed"), ("process", "process"),
]
ALLOC_ROWS = ["binned", "huge", "total"]  # with statistics compiled in
# one figure: below a thousand "N   " and a unit padded to 3; above it one
# decimal and the scaled unit (bytes: KiB..GiB, counts: K..G or Ki..Gi)
AMOUNT = r"-?\d+   (?:B  |   )|-?\d+\.\d (?:[KMG]iB|[KMG]i |[KMG]  )"
FIELD = re.compile(r"^ *(?:%s)$" % AMOUNT)
COL = 12


def fields(line, n):
    """the n figures after the label, each in its 12-character column"""
    return [line[11 + COL * i:11 + COL * (i + 1)] for i in range(n)]


def check_figures(line, n, blank_after=0):
    body = line[11:]
    if len(body) < COL * n:
        return "shorter than %d columns" % n
    for i, f in enumerate(fields(line, n)):
        if len(f) != COL or not FIELD.match(f):
            return "column %d is not a figure in upstream's place: %r" % (i + 1, f)
    rest = body[COL * n:]
    if blank_after:
        tail = rest[:COL * blank_after]
        if tail.strip() and not all(FIELD.match(tail[i:i + COL]) for i in range(0, len(tail), COL)):
            return "block/total# columns out of place: %r" % tail
        rest = rest[COL * blank_after:]
    if rest.strip() not in ("", "ok", "not all freed"):
        return "unexpected text after the columns: %r" % rest
    return None


def check_row(line, kind):
    if kind in ("bytes", "bin"):
        return check_figures(line, 3, blank_after=2)
    if kind in ("count", "counter"):
        n = 3 if kind == "count" else 1
        return check_figures(line, n) or (None if len(line) == 11 + n * COL else "text after the columns")
    patterns = {
        "searches": r" {1,5}\d+\.\d avg",
        "numa": r" {1,5}\d+",
        "elapsed": r" {1,5}\d+\.\d{3} s",
        "process": r" user: \d+\.\d{3} s, system: \d+\.\d{3} s, faults: \d+, peak rss: (?:%s)"
                   r"(?:, peak commit: (?:%s))?" % (AMOUNT, AMOUNT),
    }
    body = line[11:].rstrip()
    if not re.fullmatch(patterns[kind], body):
        return "not upstream's %s line: %r" % (kind, body)
    if kind in ("searches", "numa", "elapsed") and not re.match(r" [ \d]{4}\d", body):
        return "the figure is not right-aligned in 5: %r" % body
    return None


def label_of(line):
    if len(line) < 11 or line[10] != ":":
        return None
    return line[:10].strip() if line[:10] == "%10s" % line[:10].strip() else None


def check_table(lines, i):
    """checks the table starting at lines[i] (its header); returns (next index, error)"""
    i += 1
    if i < len(lines) and re.fullmatch(r"bin +\d+", label_of(lines[i]) or ""):
        while i < len(lines) and re.fullmatch(r"bin +\d+", label_of(lines[i]) or ""):
            if not re.fullmatch(r"bin [ \d]{2}\d", lines[i][:10].strip()):
                return i, "bin label not 'bin %%3d': %r" % lines[i]
            err = check_row(lines[i], "bin")
            if err:
                return i, err
            i += 1
        if lines[i:i + 2] != ["", HEADER]:
            return i, "the bins are not followed by a blank line and the header"
        i += 2
    if i < len(lines) and label_of(lines[i]) == ALLOC_ROWS[0]:
        for name in ALLOC_ROWS:
            if label_of(lines[i]) != name:
                return i, "expected the %r row, found %r" % (name, lines[i])
            err = check_row(lines[i], "bytes")
            if err:
                return i, "%s: %s" % (name, err)
            i += 1
        if label_of(lines[i]) == "malloc req":
            row = lines[i]
            if len(row) != 11 + 2 * COL or row[11:11 + COL].strip() or not FIELD.match(row[11 + COL:]):
                return i, "malloc req: not its total in the total column: %r" % lines[i]
            if lines[i + 1] != "":
                return i, "malloc req is not followed by a blank line"
            i += 2
    for name, kind in ROWS:
        if i >= len(lines):
            return i, "the table ends before the %r row" % name
        if label_of(lines[i]) != name:
            return i, "expected the %r row, found %r" % (name, lines[i])
        err = check_row(lines[i], kind)
        if err:
            return i, "%s: %s" % (name, err)
        i += 1
    while i < len(lines) and lines[i] != HEADER and label_of(lines[i]) is not None:
        i += 1  # the allocator's own rows, labelled in upstream's style
    return i, None


def main():
    path = sys.argv[1]
    want = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--tables" else 1
    lines = open(path).read().split("\n")
    tables = 0
    i = 0
    while i < len(lines):
        if lines[i] != HEADER:
            i += 1
            continue
        i, err = check_table(lines, i)
        if err:
            print("%s: line %d: %s" % (path, i + 1, err))
            return 1
        tables += 1
    if tables < want:
        print("%s: %d tables with upstream's header line, expected at least %d" % (path, tables, want))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
