#!/usr/bin/env python3
"""Checks a heap profile written by the sampled heap profiler (mi_prof_dump,
mi_prof_dump_proto) against the format rules (docs: the spec's 1.6 and 1.7)
and against the real clients: Go pprof, google-pprof (text only) and protoc
(proto only).

  pprof_check.py FILE [BINARY] [--no-allocator-frames]
      FILE: heap_v2 text, or profile.proto (plain, or gzip when it ends in .gz).
      BINARY: the program, for symbolisation (google-pprof needs a program:
      without one it takes the first executable mapping that exists).
      --no-allocator-frames: also fail if `pprof -top` names an mi_/_mi_ frame.
      Exit 0 if every check accepts the file; otherwise each rejection is
      printed as "FILE: CHECKER: what" and the exit status is 1.

Library use (tests/pprof/accuracy.py): raw_profile(), per_leaf(),
top_functions(), parse_text(), scale_heap_sample().

The tools: Go pprof is $PPROF if set, else a pprof built offline from
Debian's golang-github-google-pprof-dev into $MI_PPROF_TOOLS (else the
build directory's pprof-tools under ctest, else ~/.cache/mimalloc-pprof)
the first time, else `go tool pprof`. The
profile.proto schema is Debian's (PROFILE_PROTO overrides).
"""
import gzip
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

PROFILE_PROTO = os.environ.get("PROFILE_PROTO",
                               "/usr/share/gocode/src/github.com/google/pprof/proto/profile.proto")
TIMEOUT = 600

# ---- heap_v2 text ----------------------------------------------------------------

# The writer's exact form (the seed's format string); Go's and perl's
# regexes are looser, and a file that only they accept is still wrong.
HEADER = re.compile(r"^heap profile: *(\d+): +(\d+) \[ *(\d+): +(\d+)\] @ heap_v2/(\d+)$")
RECORD = re.compile(r"^ *(\d+): +(\d+) \[ *(\d+): +(\d+)\] @((?: 0x[0-9a-f]+)+)$")
# Go's own (legacy_profile.go), to say what Go makes of a line
GO_HEADER = re.compile(r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*)")
GO_RECORD = re.compile(r"(-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)")
MAPS_LINE = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) ([r-][w-][x-][ps]) ([0-9a-f]+) ([0-9a-f]+:[0-9a-f]+) (\d+)(?: +(.*))?$")
STATS_KEYS = ("committed", "reserved", "malloc_requested", "pages", "pages_abandoned", "heaps", "theaps",
              "purged", "profiler_dropped_samples", "detailed_stats")
STAT_LINE = re.compile(r"^# ([a-z_]+) = (\d+)$")


class Text:
    """A parsed heap_v2 text profile: header (4 numbers), period, records
    [(inuse_objs, inuse_bytes, alloc_objs, alloc_bytes, (addr, ...))],
    stats {key: value}, maps [(start, limit, perms, offset, path)]."""

    def __init__(self):
        self.header = None
        self.period = None
        self.records = []
        self.stats = {}
        self.maps = []


def parse_text(data, errs=None):
    """Parses a heap_v2 text profile; every rule it breaks goes to errs (a
    list) as a message. Returns a Text (partial when the file is broken)."""
    if errs is None:
        errs = []
    t = Text()
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    else:
        errs.append("the last line does not end in a newline")
    if not lines:
        errs.append("empty file")
        return t
    m = HEADER.match(lines[0])
    if not m:
        g = GO_HEADER.search(lines[0])
        if not lines[0].startswith("heap profile:"):
            errs.append(f"line 1: no header (want 'heap profile: N: N [N: N] @ heap_v2/R'): {lines[0]!r}")
        elif re.search(r"heap_v2/ ", lines[0]) or re.search(r"heap_v2 /", lines[0]):
            errs.append(f"line 1: space in heap_v2/R (clients lose the period): {lines[0]!r}")
        elif g and g.group(5) == "heap_v2" and g.group(6) == "":
            errs.append(f"line 1: no period after heap_v2 (Go reads period 0 and does not scale; "
                        f"google-pprof assumes 128 KiB): {lines[0]!r}")
        else:
            errs.append(f"line 1: header not in the form 'heap profile: N: N [N: N] @ heap_v2/R': {lines[0]!r}")
    else:
        t.header = tuple(int(m.group(i)) for i in range(1, 5))
        t.period = int(m.group(5))
        if t.period < 1:
            errs.append("line 1: period 0")
    section = "records"
    seen_stacks = {}
    for no, line in enumerate(lines[1:], start=2):
        if section == "records":
            if "MAPPED_LIBRARIES:" in line or "--- Memory map: ---" in line:
                if line.strip() not in ("MAPPED_LIBRARIES:", "--- Memory map: ---"):
                    errs.append(f"line {no}: text around the map sentinel: {line!r}")
                section = "maps"
                continue
            if line.strip() == "":
                section = "comments"
                continue
            if line.startswith("#"):
                section = "comments"
                _stat(t, line, no, errs)
                continue
            m = RECORD.match(line)
            if m:
                rec = tuple(int(m.group(i)) for i in range(1, 5)) + (tuple(int(a, 16) for a in m.group(5).split()),)
            else:
                errs.append(f"line {no}: {_why_not_record(line)}: {line!r}")
                g = GO_RECORD.search(line)
                if not g or line.strip().startswith("heap profile:"):
                    continue
                # what the line means (Go reads it differently: the cross-check says how)
                addrs = re.findall(r"0x[0-9a-fA-F]+", line[line.index("@"):])
                rec = tuple(abs(int(g.group(i))) for i in range(1, 5)) + (tuple(int(a, 16) for a in addrs),)
            _check_record(rec, no, errs)
            if rec[4] in seen_stacks:
                errs.append(f"line {no}: the same stack as line {seen_stacks[rec[4]]} (one record per stack)")
            seen_stacks.setdefault(rec[4], no)
            t.records.append(rec)
        elif section == "comments":
            if "MAPPED_LIBRARIES:" in line or "--- Memory map: ---" in line:
                if line.strip() not in ("MAPPED_LIBRARIES:", "--- Memory map: ---"):
                    errs.append(f"line {no}: text around the map sentinel: {line!r}")
                section = "maps"
            elif line.startswith("#"):
                _stat(t, line, no, errs)
            elif line.strip() != "":
                what = "a record after the comment block" if RECORD.match(line) else "neither a comment nor blank"
                errs.append(f"line {no}: {what}: {line!r}")
        else:
            if line.strip() == "":
                continue
            m = MAPS_LINE.match(line)
            if not m:
                errs.append(f"line {no}: not a /proc/self/maps line: {line!r}")
                continue
            t.maps.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3), int(m.group(4), 16),
                           m.group(7) or ""))
    if section != "maps":
        errs.append("no MAPPED_LIBRARIES: section (only a non-PIE binary would symbolise)")
    elif not any("x" in mp[2] for mp in t.maps):
        errs.append("MAPPED_LIBRARIES: has no executable mapping")
    missing = [k for k in STATS_KEYS if k not in t.stats]
    if missing:
        errs.append(f"the '# key = value' block of allocator counters misses {', '.join(missing)}")
    if t.header is not None:
        sums = tuple(sum(r[i] for r in t.records) for i in range(4))
        if sums != t.header:
            errs.append(f"header {t.header[0]}: {t.header[1]} [{t.header[2]}: {t.header[3]}] is not the sum "
                        f"of the records {sums[0]}: {sums[1]} [{sums[2]}: {sums[3]}]")
        _check_pairs(t.header, "line 1 (header)", errs)
        accum = t.header[2:4] != (0, 0)
        for r in t.records:
            if not accum and r[2:4] != (0, 0):
                errs.append("header alloc pair is 0: 0 (accum off) but a record has "
                            f"[{r[2]}: {r[3]}] (accum off writes 0: 0 in every record)")
                break
            if accum and (r[0] > r[2] or r[1] > r[3]):
                errs.append(f"accum on, but a record has in-use {r[0]}: {r[1]} above alloc {r[2]}: {r[3]}")
                break
    execs = [mp for mp in t.maps if "x" in mp[2]]
    if execs:
        for r in t.records:
            bad = [a for a in r[4] if not any(mp[0] <= a - 1 < mp[1] for mp in execs)]
            if bad:
                errs.append(f"a record's frame {bad[0]:#x} is in no executable mapping")
                break
    return t


def _stat(t, line, no, errs):
    m = STAT_LINE.match(line)
    if m and m.group(1) in STATS_KEYS:
        if m.group(1) in t.stats:
            errs.append(f"line {no}: {m.group(1)} given twice")
        t.stats[m.group(1)] = int(m.group(2))
    elif line.startswith("# ") and " = " in line:
        errs.append(f"line {no}: unknown counter {line!r} (keys: {', '.join(STATS_KEYS)})")


def _why_not_record(line):
    if re.search(r"@.* 0x[0-9a-fA-F]*[A-F]", line):
        return "uppercase hex (Go's address regex stops at it and silently cuts the stack)"
    if re.match(r"^ *\d+: +\d+ \[ *\d+: +\d+\] @((?: 0x[0-9a-f]+)+)\S", line) or \
       re.match(r"^ *\d+: +\d+ \[ *\d+: +\d+\] @((?: 0x[0-9a-f]+)+) +\S", line):
        return "junk after the addresses (Go's regex is unanchored and would count the record)"
    if re.match(r"^ *\d+: +\d+ \[ *\d+: +\d+\] @ *$", line):
        return "a record without a frame"
    if GO_RECORD.search(line):
        return "a record not in the writer's form (spacing)"
    return "not a record, comment, blank line or map sentinel"


def _check_pairs(v, where, errs):
    for i, name in ((0, "in-use"), (2, "alloc")):
        if v[i] == 0 and v[i + 1] != 0:
            errs.append(f"{where}: {name} pair '0: {v[i + 1]}' (Go rejects a count of 0 with bytes)")
        if v[i] != 0 and v[i + 1] == 0:
            errs.append(f"{where}: {name} pair '{v[i]}: 0' (objects without bytes; malloc(0) counts 1 byte)")


def _check_record(rec, no, errs):
    _check_pairs(rec, f"line {no}", errs)
    if rec[:4] == (0, 0, 0, 0):
        errs.append(f"line {no}: a record whose four values are 0 (skip it)")


def scale_heap_sample(count, size, rate):
    """Go's scaleHeapSample (legacy_profile.go, runtime/pprof/protomem.go)."""
    if count == 0 or size == 0:
        return 0, 0
    if rate <= 1:
        return count, size
    avg = float(size) / float(count)
    scale = 1.0 / (1.0 - math.exp(-avg / float(rate)))
    return int(float(count) * scale), int(float(size) * scale)


# ---- profile.proto ----------------------------------------------------------------

class ProtoError(Exception):
    pass


def _varint(b, i):
    v = 0
    shift = 0
    while True:
        if i >= len(b):
            raise ProtoError("truncated varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise ProtoError("varint longer than 10 bytes")


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ProtoError("field number 0")
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            if i + 8 > len(b):
                raise ProtoError("truncated fixed64")
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise ProtoError(f"field {num}: length {n} past the end")
            v = b[i:i + n]
            i += n
        elif wt == 5:
            if i + 4 > len(b):
                raise ProtoError("truncated fixed32")
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ProtoError(f"field {num}: wire type {wt}")
        yield num, wt, v


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _msg(b, spec):
    """spec: {num: (name, kind, repeated)}; kind: 'u' uint, 'i' int64,
    'b' bool, 's' string, or a nested spec dict."""
    out = {name: ([] if rep else (None if isinstance(kind, dict) else ("" if kind == "s" else 0)))
           for name, kind, rep in spec.values()}
    for num, wt, v in _fields(b):
        if num not in spec:
            continue
        name, kind, rep = spec[num]
        if isinstance(kind, dict) or kind == "s":
            if wt != 2:
                raise ProtoError(f"{name}: wire type {wt}, want length-delimited")
            val = _msg(v, kind) if isinstance(kind, dict) else v.decode("utf-8", "replace")
            vals = [val]
        elif wt == 2 and rep:  # packed
            vals = []
            j = 0
            while j < len(v):
                x, j = _varint(v, j)
                vals.append(x)
        elif wt == 0:
            vals = [v]
        else:
            raise ProtoError(f"{name}: wire type {wt}")
        if kind == "i":
            vals = [_signed(x) for x in vals]
        elif kind == "b":
            vals = [bool(x) for x in vals]
        if rep:
            out[name].extend(vals)
        else:
            out[name] = vals[-1]
    return out


VALUE_TYPE = {1: ("type", "i", False), 2: ("unit", "i", False)}
LABEL = {1: ("key", "i", False), 2: ("str", "i", False), 3: ("num", "i", False), 4: ("num_unit", "i", False)}
SAMPLE = {1: ("location_id", "u", True), 2: ("value", "i", True), 3: ("label", LABEL, True)}
MAPPING = {1: ("id", "u", False), 2: ("memory_start", "u", False), 3: ("memory_limit", "u", False),
           4: ("file_offset", "u", False), 5: ("filename", "i", False), 6: ("build_id", "i", False),
           7: ("has_functions", "b", False), 8: ("has_filenames", "b", False),
           9: ("has_line_numbers", "b", False), 10: ("has_inline_frames", "b", False)}
LINE = {1: ("function_id", "u", False), 2: ("line", "i", False)}
LOCATION = {1: ("id", "u", False), 2: ("mapping_id", "u", False), 3: ("address", "u", False),
            4: ("line", LINE, True), 5: ("is_folded", "b", False)}
FUNCTION = {1: ("id", "u", False), 2: ("name", "i", False), 3: ("system_name", "i", False),
            4: ("filename", "i", False), 5: ("start_line", "i", False)}
PROFILE = {1: ("sample_type", VALUE_TYPE, True), 2: ("sample", SAMPLE, True), 3: ("mapping", MAPPING, True),
           4: ("location", LOCATION, True), 5: ("function", FUNCTION, True), 6: ("string_table", "s", True),
           7: ("drop_frames", "i", False), 8: ("keep_frames", "i", False), 9: ("time_nanos", "i", False),
           10: ("duration_nanos", "i", False), 11: ("period_type", VALUE_TYPE, False), 12: ("period", "i", False),
           13: ("comment", "i", True), 14: ("default_sample_type", "i", False)}
GO_SAMPLE_TYPES = [("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"),
                   ("inuse_space", "bytes")]


def decode_proto(raw):
    return _msg(raw, PROFILE)


def proto_bytes(path, errs):
    """The profile.proto bytes of a file (gunzipped), or None."""
    with open(path, "rb") as f:
        data = f.read()
    is_gz = data[:2] == b"\x1f\x8b"
    if path.endswith(".gz") and not is_gz:
        errs.append("the name ends in .gz but the file is not gzip")
    if is_gz and not path.endswith(".gz"):
        errs.append("gzip-compressed, but the name does not end in .gz (plain is the default)")
    if is_gz:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, ValueError) as e:
            errs.append(f"gzip: {e}")
            return None
    return data


def check_proto(p, errs):
    """The rules of the spec's 1.7 on a decoded Profile."""
    st = p["string_table"]
    if not st:
        errs.append("empty string_table")
        return
    if st[0] != "":
        errs.append(f"string_table[0] is {st[0]!r}, must be \"\" (Go: unrecognized profile format)")

    def s(i, what):
        if not 0 <= i < len(st):
            errs.append(f"{what}: string index {i} outside the table of {len(st)}")
            return None
        return st[i]

    types = [(s(v["type"], "sample_type"), s(v["unit"], "sample_type")) for v in p["sample_type"]]
    if types != GO_SAMPLE_TYPES:
        errs.append(f"sample types {types}, want Go's {GO_SAMPLE_TYPES}")
    pt = p["period_type"]
    if pt is None or (s(pt["type"], "period_type"), s(pt["unit"], "period_type")) != ("space", "bytes"):
        errs.append("period_type is not space/bytes")
    if p["period"] < 1:
        errs.append(f"period {p['period']}")
    if s(p["default_sample_type"], "default_sample_type") != "inuse_space":
        errs.append("default_sample_type is not inuse_space")
    for name in ("drop_frames", "keep_frames"):
        s(p[name], name)
    comments = [s(c, "comment") for c in p["comment"]]
    if not any(c and re.search(r"dropped_samples=\d+", c) for c in comments):
        errs.append("no comment 'dropped_samples=N stack_table_overflows=M'")
    ids = {}
    for kind in ("mapping", "location", "function"):
        ids[kind] = set()
        for e in p[kind]:
            if e["id"] == 0:
                errs.append(f"{kind} with id 0")
            elif e["id"] in ids[kind]:
                errs.append(f"duplicate {kind} id {e['id']}")
            ids[kind].add(e["id"])
    for m in p["mapping"]:
        s(m["filename"], "mapping filename")
        s(m["build_id"], "mapping build_id")
        if m["memory_limit"] <= m["memory_start"]:
            errs.append(f"mapping {m['id']}: limit {m['memory_limit']:#x} <= start {m['memory_start']:#x}")
        if m["has_functions"] and not p["function"]:
            errs.append(f"mapping {m['id']}: has_functions, but no function is written")
    if p["mapping"] and not p["mapping"][0]["filename"]:
        errs.append("the first mapping (the executable) has no filename")
    for f in p["function"]:
        for k in ("name", "system_name", "filename"):
            s(f[k], f"function {k}")
    for loc in p["location"]:
        if loc["mapping_id"] and loc["mapping_id"] not in ids["mapping"]:
            errs.append(f"location {loc['id']}: mapping {loc['mapping_id']} does not exist")
        if loc["mapping_id"]:
            m = next((m for m in p["mapping"] if m["id"] == loc["mapping_id"]), None)
            if m and not m["memory_start"] <= loc["address"] < m["memory_limit"]:
                errs.append(f"location {loc['id']}: address {loc['address']:#x} outside its mapping")
        for ln in loc["line"]:
            if ln["function_id"] not in ids["function"]:
                errs.append(f"location {loc['id']}: function {ln['function_id']} does not exist")
    stacks = set()
    for n, smp in enumerate(p["sample"]):
        if len(smp["value"]) != len(p["sample_type"]):
            errs.append(f"sample {n}: {len(smp['value'])} values for {len(p['sample_type'])} sample types")
        if any(v < 0 for v in smp["value"]):
            errs.append(f"sample {n}: a negative value")
        if not smp["location_id"]:
            errs.append(f"sample {n}: no location")
        for lid in smp["location_id"]:
            if lid not in ids["location"]:
                errs.append(f"sample {n}: location {lid} does not exist")
        if tuple(smp["location_id"]) in stacks:
            errs.append(f"sample {n}: the same stack as an earlier sample (one sample per stack)")
        stacks.add(tuple(smp["location_id"]))
        labels = [lb for lb in smp["label"] if s(lb["key"], "label key") == "bytes"]
        if len(labels) != 1 or labels[0]["str"] != 0:
            errs.append(f"sample {n}: no numeric label 'bytes' (Go's writeHeapProto writes one)")
        for lb in smp["label"]:
            s(lb["str"], "label str")
            s(lb["num_unit"], "label num_unit")
        if len(smp["value"]) == 4 and smp["value"] == [0, 0, 0, 0]:
            errs.append(f"sample {n}: four zero values")


def proto_leaf_functions(path):
    """{name of the innermost function of frame 0 (from the proto's own
    Function table; its address in hex when it has none): samples}. Read
    from the file itself: pprof would apply the file's drop_frames first."""
    errs = []
    data = proto_bytes(path, errs)
    if data is None:
        raise RuntimeError("; ".join(errs))
    p = decode_proto(data)
    st = p["string_table"]
    funcs = {f["id"]: st[f["name"]] if 0 <= f["name"] < len(st) else "?" for f in p["function"]}
    locs = {loc["id"]: loc for loc in p["location"]}
    out = {}
    for smp in p["sample"]:
        loc = locs.get(smp["location_id"][0]) if smp["location_id"] else None
        if loc is None:
            name = "(no location)"
        elif loc["line"]:
            name = funcs.get(loc["line"][0]["function_id"], "?")
        else:
            name = f"{loc['address']:#x}"
        out[name] = out.get(name, 0) + 1
    return out


# ---- The clients ------------------------------------------------------------------

_pprof = None


def tools_dir():
    """Where the Go pprof built offline is kept: $MI_PPROF_TOOLS (shared by
    builds), else the build's own directory (ctest sets
    MI_PPROF_TOOLS_DEFAULT), else ~/.cache/mimalloc-pprof."""
    return (os.environ.get("MI_PPROF_TOOLS") or os.environ.get("MI_PPROF_TOOLS_DEFAULT")
            or os.path.join(os.path.expanduser("~"), ".cache", "mimalloc-pprof"))


def go_pprof():
    """The Go pprof command (a list), built offline and cached the first time."""
    global _pprof
    if _pprof:
        return _pprof
    if os.environ.get("PPROF"):
        _pprof = os.environ["PPROF"].split()
        return _pprof
    d = tools_dir()
    exe = os.path.join(d, "pprof")
    if not os.access(exe, os.X_OK) and shutil.which("go"):
        os.makedirs(d, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="build.", dir=d)
        env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
                   GOCACHE=os.path.join(d, "gocache"), CGO_ENABLED="0")
        r = subprocess.run(["go", "build", "-o", os.path.join(tmp, "pprof"), "github.com/google/pprof"],
                           env=env, capture_output=True, text=True, timeout=TIMEOUT)
        if r.returncode == 0:
            os.replace(os.path.join(tmp, "pprof"), exe)  # atomic: parallel tests see all or nothing
        else:
            print(f"pprof_check: building Go pprof offline failed, using `go tool pprof`:\n{r.stderr.strip()}",
                  file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(env["GOCACHE"], ignore_errors=True)  # built once: the cache is not needed again
    if os.access(exe, os.X_OK):
        _pprof = [exe]
    elif shutil.which("go"):
        _pprof = ["go", "tool", "pprof"]
    else:
        raise RuntimeError("no Go pprof: install golang-go and golang-github-google-pprof-dev "
                           "(ci/install-deps.sh)")
    return _pprof


def _run(cmd, what):
    env = dict(os.environ, PPROF_TMPDIR=os.environ.get("PPROF_TMPDIR", tempfile.gettempdir()))
    env.pop("MIMALLOC_PROF", None)  # the clients are not the program under test
    env.pop("LD_PRELOAD", None)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    # a client's complaint on one line, without its path noise
    err = " | ".join(ln.strip() for ln in r.stderr.splitlines()
                     if ln.strip() and not ln.startswith(("Using local file", "failed to fetch any source",
                                                          "pprof: failed to fetch any source")))
    return r.returncode, r.stdout, err


def _pprof_args(path, binary):
    return ([binary] if binary else []) + [path]


class Raw:
    """`pprof -raw`: types [name], period, samples [(values, [loc ids],
    bytes label)], locations {id: (address, [function names, innermost
    first])}, mappings [line]."""

    def __init__(self):
        self.types = []
        self.period = None
        self.samples = []
        self.locations = {}
        self.mappings = []
        self.comments = []


SAMPLE_LINE = re.compile(r"^((?: +-?\d+)+): ((?:\d+ )*)$")
LOC_LINE = re.compile(r"^ *(\d+): (0x[0-9a-f]+) (?:M=(\d+) )?(?:\[F\] )?(.*)$")
FN_TEXT = re.compile(r"^(.*) (\S*):(-?\d+) s=(-?\d+)(?:\(.*\))?$")


def parse_raw(out):
    raw = Raw()
    section = None
    last_loc = None
    for line in out.split("\n"):
        if section is None:
            if line.startswith("Comment: "):
                raw.comments.append(line[9:])
            elif line.startswith("Period: "):
                raw.period = int(line[8:])
            elif line == "Samples:":
                section = "types"
            continue
        if section == "types":
            raw.types = [re.sub(r"\[dflt\]$", "", t).split("/")[0] for t in line.split()]
            section = "samples"
            continue
        if line == "Locations":
            section = "locations"
            continue
        if line == "Mappings":
            section = "mappings"
            continue
        if section == "samples":
            m = SAMPLE_LINE.match(line)
            if m:
                raw.samples.append([[int(v) for v in m.group(1).split()], [int(x) for x in m.group(2).split()],
                                    None])
            elif raw.samples and line.strip().startswith("bytes:["):
                b = re.match(r"bytes:\[(-?\d+)", line.strip())
                raw.samples[-1][2] = int(b.group(1)) if b else None
        elif section == "locations":
            m = LOC_LINE.match(line)
            if m:
                last_loc = int(m.group(1))
                raw.locations[last_loc] = (int(m.group(2), 16), [])
                rest = m.group(4).strip()
            elif line.startswith("             ") and last_loc is not None:
                rest = line.strip()
            else:
                continue
            if rest:
                f = FN_TEXT.match(rest)
                raw.locations[last_loc][1].append(f.group(1) if f else rest)
        elif section == "mappings" and line.strip():
            raw.mappings.append(line)
    return raw


def raw_profile(path, binary=None, extra=()):
    """`pprof -raw [BINARY] FILE`, parsed; RuntimeError if pprof rejects it."""
    rc, out, err = _run(go_pprof() + ["-raw"] + list(extra) + _pprof_args(path, binary), "pprof -raw")
    if rc != 0 or "Samples:" not in out:
        raise RuntimeError(f"pprof -raw rejected it (exit {rc}): {err.replace(path + ': ', '')}")
    return parse_raw(out)


CANON = {"objects": "inuse_objects", "space": "inuse_space"}


def type_sums(raw):
    """{sample type: sum over the samples}; Go's 'objects'/'space' (the
    accum-off text profile) under the inuse_ names."""
    sums = {}
    for i, t in enumerate(raw.types):
        sums[CANON.get(t, t)] = sum(s[0][i] for s in raw.samples)
    return sums


def per_leaf(path, binary=None, by="function"):
    """Per leaf frame (the innermost function's name, or by='address' its
    address as pprof gives it): {type: unsampled value summed}, from
    `pprof -raw`. A leaf pprof could not symbolise is keyed by its address
    in hex."""
    raw = raw_profile(path, binary)
    out = {}
    for values, locs, _ in raw.samples:
        if not locs:
            key = "(no frame)"
        else:
            addr, fns = raw.locations.get(locs[0], (0, []))
            key = fns[0] if by == "function" and fns else f"{addr:#x}"
        acc = out.setdefault(key, {})
        for i, t in enumerate(raw.types):
            t = CANON.get(t, t)
            acc[t] = acc.get(t, 0) + values[i]
    return out


TOP_ROW = re.compile(r"^\s*(-?[\d.]+\w*)\s+(-?[\d.]+%)\s+(-?[\d.]+%)\s+(-?[\d.]+\w*)\s+(-?[\d.]+%)\s+(.*)$")


def top_functions(path, binary=None, sample_index="inuse_space"):
    """The function names `pprof -top` lists (every node), in its order."""
    rc, out, err = _run(go_pprof() + ["-top", "-nodecount=100000", f"-sample_index={sample_index}"]
                        + _pprof_args(path, binary), "pprof -top")
    if rc != 0:
        raise RuntimeError(f"pprof -top rejected it (exit {rc}): {err.replace(path + ': ', '')}")
    names = []
    started = False
    for line in out.split("\n"):
        if re.match(r"^\s*flat\s+flat%", line):
            started = True
            continue
        m = TOP_ROW.match(line) if started else None
        if m:
            names.append(m.group(6).strip())
    return names, out


ALLOCATOR_FRAME = re.compile(r"^(mi_|_mi_)")


def google_pprof_total(path, binary):
    """google-pprof's text report's total in-use bytes."""
    rc, out, err = _run(["google-pprof", "--text", "--show_bytes", "--inuse_space", binary, path], "google-pprof")
    m = re.search(r"^Total: (-?\d+) B$", out, re.M)
    if rc == 0 and not m and not out.strip() and "Heap version 2" in err:
        return 0  # no sample: no report
    if rc != 0 or not m:
        raise RuntimeError(f"google-pprof rejected it (exit {rc}): {(err or out).replace(path + ': ', '')[-800:]}")
    return int(m.group(1))


def protoc_decode(data):
    """protoc --decode against Debian's profile.proto: (ok, message)."""
    if not os.path.exists(PROFILE_PROTO):
        return False, f"no {PROFILE_PROTO} (install golang-github-google-pprof-dev)"
    r = subprocess.run(["protoc", "--decode=perftools.profiles.Profile", "-I", os.path.dirname(PROFILE_PROTO),
                        os.path.basename(PROFILE_PROTO)], input=data, capture_output=True, timeout=TIMEOUT)
    if r.returncode != 0:
        return False, r.stderr.decode(errors="replace").strip()
    return True, ""


# ---- The whole check ------------------------------------------------------------------

def looks_like_text(data):
    return data[:2] != b"\x1f\x8b" and all(c in (9, 10, 13) or 32 <= c < 127 for c in data[:4096])


def default_binary(maps):
    for mp in maps:
        if "x" in mp[2] and mp[4].startswith("/") and os.path.exists(mp[4]):
            return mp[4]
    return "/bin/true"


def check_file(path, binary=None, no_allocator_frames=False):
    """Every check on one file: [(checker, message)] of the rejections."""
    rejections = []

    def add(checker, errs):
        rejections.extend((checker, e) for e in errs)

    with open(path, "rb") as f:
        data = f.read()
    if looks_like_text(data):
        errs = []
        try:
            t = parse_text(data.decode("ascii"), errs)
        except UnicodeDecodeError:
            t = None
            errs.append("not ASCII")
        add("structure", errs)
        if t is None:
            return rejections
        kind = "text"
    else:
        errs = []
        raw_bytes = proto_bytes(path, errs)
        p = None
        if raw_bytes is not None:
            try:
                p = decode_proto(raw_bytes)
            except ProtoError as e:
                errs.append(f"not a profile.proto (wire format: {e}); not heap_v2 text either")
        if p is not None:
            check_proto(p, errs)
        add("structure", errs)
        if raw_bytes is not None:
            ok, msg = protoc_decode(raw_bytes)
            if not ok:
                add("protoc", [f"--decode rejected it: {msg}"])
        kind = "proto"

    # Go pprof: it must parse the file, and read what the file says
    try:
        raw = raw_profile(path, binary)
    except RuntimeError as e:
        add("go-pprof", [str(e)])
        raw = None
    if raw is not None and kind == "text":
        add("go-pprof", cross_check_text(t, raw))
    if raw is not None and kind == "proto" and p is not None:
        add("go-pprof", cross_check_proto(p, raw))
    if raw is not None:
        try:
            names, _ = top_functions(path, binary)
            if no_allocator_frames:
                bad = [n for n in names if ALLOCATOR_FRAME.match(n)]
                if bad:
                    add("go-pprof", [f"-top lists allocator frames: {', '.join(bad[:5])}"])
        except RuntimeError as e:
            add("go-pprof", [str(e)])
    if kind == "text":
        try:
            total = google_pprof_total(path, binary or default_binary(t.maps))
            if raw is not None and "inuse_space" in type_sums(raw):
                go_total = type_sums(raw)["inuse_space"]
                # perl unsamples in floating point without truncating: < 1 per record apart
                if abs(total - go_total) > len(t.records) + 1:
                    add("google-pprof", [f"total in-use {total} B, Go pprof's {go_total} B "
                                         f"(more than 1 per record apart: a record was skipped or read differently)"])
        except RuntimeError as e:
            add("google-pprof", [str(e)])
    return rejections


def cross_check_text(t, raw):
    """Go's reading of the text against ours: the same records, stacks and
    unsampled values (within 1 for the floating-point exp)."""
    errs = []
    if t.header is None:
        return errs
    if len(raw.samples) != len(t.records):
        return [f"read {len(raw.samples)} samples from {len(t.records)} records"]
    h = t.header  # Go's hasAlloc (parseHeapHeader)
    accum = (h[2] != h[0] and h[2] != 0) or (h[3] != h[1] and h[3] != 0)
    want_types = ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"] if accum else ["objects", "space"]
    if raw.types != want_types:
        errs.append(f"sample types {raw.types}, expected {want_types}")
        return errs
    if raw.period != t.period:
        errs.append(f"period {raw.period}, the header says {t.period}")
    for n, (rec, smp) in enumerate(zip(t.records, raw.samples)):
        addrs = tuple(raw.locations[i][0] for i in smp[1] if i in raw.locations)
        if addrs != tuple(a - 1 for a in rec[4]):
            errs.append(f"record {n + 1}: Go's stack {[hex(a) for a in addrs]} is not the record's "
                        f"{[hex(a - 1) for a in rec[4]]} (return address - 1)")
        want = []
        if accum:
            want += scale_heap_sample(rec[2], rec[3], t.period)
        want += scale_heap_sample(rec[0], rec[1], t.period)
        if len(smp[0]) != len(want) or any(abs(a - b) > 1 for a, b in zip(smp[0], want)):
            errs.append(f"record {n + 1}: Go's values {smp[0]}, unsampled by Go's formula {want}")
        if errs and len(errs) > 5:
            break
    return errs


def cross_check_proto(p, raw):
    errs = []
    if len(raw.samples) != len(p["sample"]):
        return [f"read {len(raw.samples)} samples of {len(p['sample'])}"]
    for n, (smp, r) in enumerate(zip(p["sample"], raw.samples)):
        if r[0] != smp["value"]:
            errs.append(f"sample {n}: Go read {r[0]}, the file has {smp['value']}")
            break
    return errs


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    opts = [a for a in argv[1:] if a.startswith("--")]
    if not 1 <= len(args) <= 2 or any(o not in ("--no-allocator-frames",) for o in opts):
        print(__doc__)
        return 2
    path = args[0]
    binary = args[1] if len(args) > 1 else None
    try:
        rejections = check_file(path, binary, "--no-allocator-frames" in opts)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"{path}: cannot check: {e}")
        return 2
    for checker, msg in rejections:
        print(f"{path}: {checker}: {msg}")
    print(f"{path}: {'accepted' if not rejections else 'REJECTED'}")
    return 0 if not rejections else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
