#!/usr/bin/env python3
"""Checks a DHAT file against the field rules of the format (version 2, as
Valgrind's dh_view.js reads it), and compares two DHAT files.

  dhat_check.py validate FILE [--stacks-start-outside]
                                              exit 0 if FILE follows the rules (and, with
                                              the option, no stack starts inside the allocator)
  dhat_check.py compare VALGRIND OURS [--totals-only]
                                              exit 0 if the counts agree
"""
import json
import re
import sys

TOP = {"dhatFileVersion": int, "mode": str, "verb": str, "bklt": bool, "bkacc": bool,
       "tu": str, "Mtu": str, "cmd": str, "pid": int, "te": int, "pps": list, "ftbl": list}
PP_ALWAYS = ["tb", "tbk", "fs"]
PP_LIFETIME = ["tl", "mb", "mbk", "gb", "gbk", "eb", "ebk"]
PP_ACCESS = ["rb", "wb"]


def validate(d):
    """Returns a list of rule violations (empty: the file is valid)."""
    errs = []
    if not isinstance(d, dict):
        return ["top level is not an object"]
    for f, t in TOP.items():
        if f not in d:
            errs.append(f"missing field {f}")
        elif not isinstance(d[f], t) or (t is int and isinstance(d[f], bool)):
            errs.append(f"field {f} is not {t.__name__}")
    if errs:
        return errs
    if d["dhatFileVersion"] != 2:
        errs.append("dhatFileVersion is not 2")
    if d["mode"] not in ("heap", "copy", "ad-hoc"):
        errs.append(f"unknown mode {d['mode']}")
    if d["bklt"]:
        for f in ("tg", "tuth"):
            if not isinstance(d.get(f), int):
                errs.append(f"bklt is true but {f} is missing or not an integer")
        if isinstance(d.get("tg"), int) and d["tg"] > d["te"]:
            errs.append("tg > te")
    ftbl = d["ftbl"]
    if not ftbl or ftbl[0] != "[root]":
        errs.append('ftbl[0] is not "[root]"')
    if not all(isinstance(s, str) for s in ftbl):
        errs.append("ftbl holds a non-string")
    seen = set()
    need = PP_ALWAYS + (PP_LIFETIME if d["bklt"] else []) + (PP_ACCESS if d["bkacc"] else [])
    for i, pp in enumerate(d["pps"]):
        where = f"pps[{i}]"
        missing = [f for f in need if f not in pp]
        if missing:
            errs.append(f"{where} misses {missing}")
            continue
        for f in need:
            if f == "fs":
                continue
            v = pp[f]
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                errs.append(f"{where}.{f} is not a non-negative integer")
        fs = pp["fs"]
        if not isinstance(fs, list) or not fs:
            errs.append(f"{where}.fs is empty or not a list")
            continue
        if any((not isinstance(x, int)) or x <= 0 or x >= len(ftbl) for x in fs):
            errs.append(f"{where}.fs has an index outside ftbl[1..]")
        key = tuple(fs)
        if key in seen:
            errs.append(f"{where}.fs repeats another program point's stack")
        seen.add(key)
        if pp["tbk"] < 1 or pp["tb"] < pp["tbk"] and d["mode"] == "heap":
            errs.append(f"{where}: tb < tbk (every block counts at least one byte)")
        if d["bklt"]:
            if pp["ebk"] > pp["tbk"] or pp["gbk"] > pp["tbk"] or pp["mbk"] > pp["tbk"]:
                errs.append(f"{where}: more live blocks than blocks allocated")
            if pp["eb"] > pp["tb"] or pp["gb"] > pp["tb"] or pp["mb"] > pp["tb"]:
                errs.append(f"{where}: more live bytes than bytes allocated")
        if d["bkacc"] and "acc" in pp and not isinstance(pp["acc"], list):
            errs.append(f"{where}.acc is not a list")
    if d["bklt"] and d["pps"]:
        gb = sum(pp.get("gb", 0) for pp in d["pps"])
        for pp in d["pps"]:
            if pp.get("gb", 0) > gb:
                errs.append("a site holds more at t-gmax than the whole heap")
    return errs


FRAME = re.compile(r"^0x[0-9A-Fa-f]+: (\S+)")


def names(d, pp):
    out = []
    for i in pp["fs"]:
        s = d["ftbl"][i]
        if "vgpreload_" in s:  # Valgrind's own malloc replacement
            continue
        m = FRAME.match(s)
        out.append(m.group(1) if m else s)
    return tuple(out)


def loader_site(d, pp):
    """An allocation by the dynamic loader itself (thread-local storage
    vectors). Preloading our library adds a TLS module, which changes the
    size and number of these blocks: they are reported, not compared."""
    for i in pp["fs"]:
        s = d["ftbl"][i]
        if "vgpreload_" in s:
            continue
        return "ld-linux" in s or "/ld-" in s or "dl-tls.c" in s or "rtld-malloc" in s
    return False


def program_pps(d):
    kept = []
    for pp in d["pps"]:
        if loader_site(d, pp):
            print(f"  not compared (dynamic loader): tb {pp['tb']} tbk {pp['tbk']}")
        else:
            kept.append(pp)
    return kept


LOCATION = re.compile(r"\(([^()\s]+:\d+)\)$")


def locations(d, pp):
    """The source locations of a stack's frames ("basic.c:16"; None where
    the frame string has none), in the order names() gives the frames."""
    out = []
    for i in pp["fs"]:
        s = d["ftbl"][i]
        if "vgpreload_" in s:
            continue
        m = LOCATION.search(s)
        out.append(m.group(1) if m else None)
    return tuple(out)


def per_site_locations(d):
    sites = {}
    for pp in d["pps"]:
        sites.setdefault(names(d, pp), set()).add(locations(d, pp))
    return sites


def per_site(d):
    sites = {}
    for pp in d["pps"]:
        k = names(d, pp)
        acc = sites.setdefault(k, dict.fromkeys(("tb", "tbk", "gb", "gbk", "eb", "ebk"), 0))
        for f in acc:
            acc[f] += pp.get(f, 0)
    return sites


def totals(d):
    t = dict.fromkeys(("tb", "tbk", "gb", "gbk", "eb", "ebk"), 0)
    for pp in d["pps"]:
        for f in t:
            t[f] += pp.get(f, 0)
    return t


def compare(vg, ours, totals_only):
    ok = True
    vg = dict(vg, pps=program_pps(vg))
    ours = dict(ours, pps=program_pps(ours))
    tv, to = totals(vg), totals(ours)
    fields = ("tb", "tbk") if totals_only else ("tb", "tbk", "gb", "gbk", "eb", "ebk")
    for f in fields:
        flag = "ok" if tv[f] == to[f] else "DIFFERENT"
        ok &= tv[f] == to[f]
        print(f"total {f:4}: valgrind {tv[f]:>10}  ours {to[f]:>10}  {flag}")
    if totals_only:
        return ok
    sv, so = per_site(vg), per_site(ours)
    for k in sorted(set(sv) | set(so)):
        a, b = sv.get(k), so.get(k)
        same = a == b
        ok &= same
        print(f"site {' <- '.join(k) or '(empty)'}: {'ok' if same else 'DIFFERENT'}")
        if not same:
            print(f"    valgrind {a}\n    ours     {b}")
    # source lines (symbolize.c, lines.c): each frame Valgrind gives a file
    # and line for has the same file and line in ours
    lv, lo = per_site_locations(vg), per_site_locations(ours)
    for k in sorted(set(lv) & set(lo)):
        for want in lv[k]:
            if not any(all(w is None or w == g for w, g in zip(want, got)) for got in lo[k]):
                ok = False
                print(f"site {' <- '.join(k)}: source lines DIFFERENT\n    valgrind {want}\n    ours     {sorted(lo[k], key=str)}")
    return ok


ALLOCATOR = re.compile(r"^0x[0-9A-Fa-f]+: (mi_|_mi_|malloc |calloc |realloc |free |posix_memalign |aligned_alloc |memalign )")


def stacks_start_outside(d):
    """Stacks start at the caller of the allocation function."""
    errs = []
    for i, pp in enumerate(d.get("pps", [])):
        fs = pp.get("fs") or []
        if fs and isinstance(fs[0], int) and 0 < fs[0] < len(d["ftbl"]) and ALLOCATOR.match(d["ftbl"][fs[0]]):
            errs.append(f"pps[{i}] starts inside the allocator: {d['ftbl'][fs[0]]}")
    return errs


def main(argv):
    if len(argv) >= 3 and argv[1] == "validate":
        with open(argv[2]) as f:
            d = json.load(f)
        errs = validate(d)
        if not errs and "--stacks-start-outside" in argv:
            errs = stacks_start_outside(d)
        for e in errs:
            print(f"{argv[2]}: {e}")
        print(f"{argv[2]}: {'valid' if not errs else 'INVALID'}")
        return 0 if not errs else 1
    if len(argv) >= 4 and argv[1] == "compare":
        with open(argv[2]) as f:
            vg = json.load(f)
        with open(argv[3]) as f:
            ours = json.load(f)
        ok = compare(vg, ours, "--totals-only" in argv)
        print("compare: " + ("equal" if ok else "DIFFERENT"))
        return 0 if ok else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
