#!/usr/bin/env python3
"""Which client names which function from which dump (docs/pprof.md, "Which
format"), on the program of shlib-main.c: four allocation sites, two in a
shared library (shlib-site.c) and two in the program; in each object one site
is named in its own DWARF entry (DW_AT_name) and one only through an abstract
origin (a static function also inlined elsewhere, as CPython's
_PyObject_Malloc is). Every allocation is sampled, so each site's in-use bytes
are exact. The program dumps the same state as heap_v2 text and as
profile.proto, and each client's report must give each site's bytes to the
site's name, or to its module, as the table in the docs says:

  client                          proto               text
  go tool pprof (Go's toolchain)  every site named    DW_AT_name sites named; the
                                                      others as [module]
  pprof (github.com/google/pprof, every site named    every site named
   addr2line and nm)
  google-pprof (gperftools, perl) cannot read it      every site named

The proto carries the names (resolved at dump time from the objects' symbol
tables). The text carries addresses and the memory map: its client resolves
them. go tool pprof does it with its own DWARF reader (cmd/pprof/pprof.go),
which names a function only from the DW_AT_name of its code's own entry; the
other two run addr2line and nm. A cell that now does better than the table
says fails too, naming the docs to update.

  shlib_names.py PROGRAM LIBRARY
Exit 0 when every cell is as the table says, 1 otherwise, 77 (skipped) where
Go is absent. The offline-built pprof is pprof_check.py's (built once into
$MI_PPROF_TOOLS); where it cannot be built its cells are skipped, as is
google-pprof's where it is not installed, each with a message.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_check  # noqa: E402

SKIP = 77
GO_TOOL = ["go", "tool", "pprof"]
GOOGLE_ROW = re.compile(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.*)$")
SITE_LINE = re.compile(r"^site (\S+) bytes (\d+) module (library|program)$")


def run_program(program, text, proto):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_PROF") and k != "LD_PRELOAD"}
    r = subprocess.run([program, text, proto], capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"shlib_names: {program} failed (exit {r.returncode}): {r.stderr.strip()}")
    sites = {}
    for line in r.stdout.splitlines():
        m = SITE_LINE.match(line)
        if m:
            sites[m.group(1)] = (int(m.group(2)), m.group(3))
    if len(sites) != 4:
        raise SystemExit(f"shlib_names: {program} printed {len(sites)} sites, not 4:\n{r.stdout}")
    return sites


def dwarf_dies(path):
    """readelf's DWARF entries of PATH: a list of {attribute: value}."""
    r = subprocess.run(["readelf", "--debug-dump=info", path], capture_output=True, text=True, timeout=300)
    dies, cur = [], None
    for line in r.stdout.splitlines():
        if re.match(r"^\s*<\d+><[0-9a-f]+>: Abbrev Number:", line):
            cur = {}
            dies.append(cur)
        elif cur is not None:
            m = re.match(r"^\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s*(.*)$", line)
            if m:
                cur[m.group(1)] = m.group(2).strip()
    return dies


def premise(sites, program, library):
    """The sites are named in DWARF the way their names say (else a cell
    would test nothing): *_named by an entry with its name and its code,
    *_origin only by an abstract entry (DW_AT_inline)."""
    if not shutil.which("readelf"):
        print("note: no readelf, the sites' DWARF not checked")
        return []
    errs = []
    dies = {"library": dwarf_dies(library), "program": dwarf_dies(program)}
    for name, (_, module) in sites.items():
        mine = [d for d in dies[module] if re.search(r"(^|: )" + re.escape(name) + r"$", d.get("DW_AT_name", ""))]
        with_code = [d for d in mine if "DW_AT_low_pc" in d]
        abstract = [d for d in mine if "DW_AT_inline" in d]
        if name.endswith("_named") and not with_code:
            errs.append(f"premise: {name} has no DWARF entry with its name and its code")
        if name.endswith("_origin") and (with_code or not abstract):
            errs.append(f"premise: {name} is not named through an abstract origin only "
                        f"({len(with_code)} entries with name and code, {len(abstract)} abstract)")
    return errs


def go_flat(cmd, binary, path):
    """{name: flat bytes} of `pprof -top`; (None, message) if it fails."""
    rc, out, err = pprof_check._run(cmd + ["-top", "-nodecount=1000", "-unit=B", binary, path], "pprof -top")
    if rc != 0:
        return None, f"exit {rc}: {err}"
    flat, started = {}, False
    for line in out.split("\n"):
        if re.match(r"^\s*flat\s+flat%", line):
            started = True
            continue
        m = pprof_check.TOP_ROW.match(line) if started else None
        if m and m.group(1).endswith("B"):
            flat[m.group(6).strip()] = int(m.group(1)[:-1])
    return flat, out


def google_flat(binary, path):
    rc, out, err = pprof_check._run(["google-pprof", "--text", "--show_bytes", "--nodecount=1000", binary, path],
                                    "google-pprof")
    if rc != 0 or "Total:" not in out:
        return None, f"exit {rc}: {(err or out).strip()[-300:]}"
    flat = {}
    for line in out.split("\n"):
        m = GOOGLE_ROW.match(line)
        if m:
            flat[m.group(2).strip()] = int(m.group(1))
    return flat, out


def first_rows(out, n=5):
    """The report's table: its header and first N rows."""
    lines = out.split("\n")
    at = next((i for i, ln in enumerate(lines) if re.match(r"^\s*(flat\s+flat%|Total:)", ln)), 0)
    return "\n".join("    " + ln for ln in lines[at:at + n + 1] if ln.strip())


def expect_named(flat, sites, names):
    errs = []
    for name in names:
        want = sites[name][0]
        if flat.get(name) != want:
            errs.append(f"{name}: {flat.get(name, 'absent')}, not its {want} bytes")
    return errs


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    program, library = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    if not shutil.which("go"):
        print("SKIP: no Go, so no go tool pprof (install golang-go: ci/install-deps.sh)")
        return SKIP
    work = tempfile.mkdtemp(prefix="mi-pprof-shlib.")
    try:
        text, proto = os.path.join(work, "shlib.heap"), os.path.join(work, "shlib.pb.gz")
        sites = run_program(program, text, proto)
        failures = premise(sites, program, library)
        for f in failures:
            print(f"FAIL {f}")
        every = sorted(sites)
        named = [s for s in every if s.endswith("_named")]
        origin = [s for s in every if s.endswith("_origin")]
        module_node = {"library": f"[{os.path.basename(library)}]", "program": f"[{os.path.basename(program)}]"}

        standalone = pprof_check.go_pprof()
        readers = [("go tool pprof", GO_TOOL)]
        if standalone != GO_TOOL:
            readers.append(("pprof (addr2line)", standalone))
        else:
            print("SKIP cells of pprof (addr2line): the offline pprof could not be built, only go tool pprof is here")

        def cell(what, flat, out, errs):
            if flat is None:
                errs = [f"the client failed: {out}"]
            print(f"{'ok  ' if not errs else 'FAIL'} {what}")
            if flat is not None:
                print(first_rows(out))
            for e in errs:
                print(f"    {e}")
                failures.append(f"{what}: {e}")

        for label, cmd in readers:
            flat, out = go_flat(cmd, program, proto)
            cell(f"{label} / proto: every site named", flat, out,
                 expect_named(flat, sites, every) if flat is not None else [])
            flat, out = go_flat(cmd, program, text)
            if cmd == GO_TOOL:
                errs = []
                if flat is not None:
                    errs = expect_named(flat, sites, named)
                    for s in origin:
                        if s in flat:
                            errs.append(f"{s}: named ({flat[s]} bytes): go tool pprof now names a function "
                                        f"named through an abstract origin; update docs/pprof.md, 'Which format'")
                        elif flat.get(module_node[sites[s][1]]) != sites[s][0]:
                            errs.append(f"{s}: its {sites[s][0]} bytes not under {module_node[sites[s][1]]} "
                                        f"({flat.get(module_node[sites[s][1]], 'absent')})")
                cell(f"{label} / text: the DW_AT_name sites named, the others as [module]", flat, out, errs)
            else:
                cell(f"{label} / text: every site named", flat, out,
                     expect_named(flat, sites, every) if flat is not None else [])

        if shutil.which("google-pprof"):
            flat, out = google_flat(program, text)
            cell("google-pprof / text: every site named", flat, out,
                 expect_named(flat, sites, every) if flat is not None else [])
            flat, out = google_flat(program, proto)
            ok = flat is None
            print(f"{'ok  ' if ok else 'FAIL'} google-pprof / proto: not read ({out if ok else 'it read it'})")
            if not ok:
                failures.append("google-pprof now reads profile.proto; update docs/pprof.md, 'Which format'")
        else:
            print("SKIP cells of google-pprof: not installed (google-perftools)")

        if failures:
            print(f"shlib_names: {len(failures)} failure(s)")
            return 1
        print("shlib_names: every cell as docs/pprof.md's table says")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
