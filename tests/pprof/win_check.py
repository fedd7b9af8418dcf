#!/usr/bin/env python3
"""The Windows check of the sampled heap profiler's stacks and modules
(docs/pprof.md, "Windows"): run a program of tests/pprof/win-sites.c under
Wine with every allocation sampled (MIMALLOC_PROF=1,
MIMALLOC_PROF_SAMPLE_INTERVAL=1) and dumped at exit, once as profile.proto
(.pb.gz) and once as heap_v2 text, then check each profile on the Linux side:

  - the clients read it: tests/pprof/pprof_check.py's checks (the format
    rules, protoc for the proto, Go pprof, google-pprof for the text, and
    no mi_ function in `pprof -top`);
  - modules: every mapping is a module file that exists (its Windows path
    through the Wine prefix's drives), a PE whose SizeOfImage is the
    mapping's length, at file offset 0; the program is the first mapping,
    at the load address the program printed; every location lies in a
    mapping (in the proto, in the one it names); with --relocated MODULE,
    that module was loaded away from its preferred ImageBase (so that the
    arithmetic below is really exercised);
  - frames: each frame's address in its module's file is
    address - mapping start + ImageBase (ImageBase from
    x86_64-w64-mingw32-objdump -p), and x86_64-w64-mingw32-addr2line -f on
    it must name: for frame 0 of every sample a site function (win_site_*),
    for frame 1 its caller (win_sites_run, or win_sites_thread for the
    thread's site), for frame 2 of the main thread's samples `main`, the
    last frame; no frame lies in the allocator's DLL or resolves to an
    mi_/_mi_ function; each site's in-use objects are the blocks the
    program says it allocated (every allocation is sampled); and in the
    proto, the function the profile names for frame 0 is addr2line's.

  win_check.py --run PROGRAM.exe --out DIR [--relocated MODULE] [--plant-unrebased]

--plant-unrebased is the positive control: the checker takes a frame's
run-time address for its address in the file (the rebasing forgotten),
and must then fail on a relocated module's frames.

Prints the addr2line evidence ("win_check: addr2line -f -e MODULE ADDR ->
NAME" for the frames it resolved), one "win_check: FAIL: ..." line per
failed check, and last "win_check: accepted" (exit 0) or "win_check:
REJECTED (N failures)" (exit 1); exit 2 if the program could not be run.
WINEPREFIX is used as set, else the one cmake/wine-run.sh takes (the
build tree's wine-prefix)."""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_check  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WINE_RUN = os.path.join(ROOT, "cmake", "wine-run.sh")
MINGW = os.environ.get("MI_MINGW_PREFIX", "x86_64-w64-mingw32")
SITES = {"win_site_malloc", "win_site_calloc", "win_site_aligned", "win_site_zalloc", "win_site_realloc",
         "win_site_large", "win_site_thread"}
ALLOCATOR = re.compile(r"^(mi_|_mi_)")
TIMEOUT = 600

failures = []


def fail(msg):
    failures.append(msg)
    print(f"win_check: FAIL: {msg}")


def wine_prefix(exe):
    """As cmake/wine-run.sh chooses it."""
    if os.environ.get("WINEPREFIX"):
        return os.environ["WINEPREFIX"]
    top = os.path.dirname(os.path.abspath(exe))
    while top != "/" and not os.path.exists(os.path.join(top, "CMakeCache.txt")):
        top = os.path.dirname(top)
    if not os.path.exists(os.path.join(top, "CMakeCache.txt")):
        top = os.path.dirname(os.path.abspath(exe))
    return os.path.join(top, "wine-prefix")


def windows_path(path):
    """A Linux path as Wine's Z: drive shows it."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


def linux_path(prefix, path):
    """The file a Windows path names, through the prefix's drive links
    (dosdevices/c: -> drive_c, z: -> /), each component matched without
    case as Wine matches it; None if there is none."""
    m = re.match(r"^([A-Za-z]):\\(.*)$", path)
    if not m:
        return None
    cur = os.path.realpath(os.path.join(prefix, "dosdevices", m.group(1).lower() + ":"))
    for part in [p for p in m.group(2).split("\\") if p]:
        try:
            names = os.listdir(cur)
        except OSError:
            return None
        exact = [n for n in names if n == part] or [n for n in names if n.lower() == part.lower()]
        if not exact:
            return None
        cur = os.path.join(cur, exact[0])
    return cur if os.path.isfile(cur) else None


_pe = {}


def pe_info(path):
    """(ImageBase, SizeOfImage) from objdump -p, or None if it is not a PE."""
    if path not in _pe:
        r = subprocess.run([f"{MINGW}-objdump", "-p", path], capture_output=True, text=True, timeout=TIMEOUT)
        base = re.search(r"^ImageBase\s+([0-9a-fA-F]+)$", r.stdout, re.M)
        size = re.search(r"^SizeOfImage\s+([0-9a-fA-F]+)$", r.stdout, re.M)
        _pe[path] = (int(base.group(1), 16), int(size.group(1), 16)) if r.returncode == 0 and base and size else None
    return _pe[path]


def addr2line(path, addrs):
    """{file address: function name} by addr2line -f (one run per module)."""
    addrs = sorted(set(addrs))
    if not addrs:
        return {}
    r = subprocess.run([f"{MINGW}-addr2line", "-f", "-a", "-e", path] + [f"{a:#x}" for a in addrs],
                       capture_output=True, text=True, timeout=TIMEOUT)
    out = {}
    lines = r.stdout.split("\n")  # per address: "0x<address>", the function, "file:line"
    for i, line in enumerate(lines[:-1]):
        m = re.match(r"^0x([0-9a-f]+)$", line)
        if m:
            out[int(m.group(1), 16)] = lines[i + 1]
    return out


def run_program(exe, out_dir, fmt):
    """Runs the program under Wine with the exit dump in `fmt`; (profile
    path, its stdout lines)."""
    ext = ".pb.gz" if fmt == "proto" else ".heap"
    profile = os.path.join(out_dir, os.path.basename(exe).replace(".exe", "") + ext)
    if os.path.exists(profile):
        os.remove(profile)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    env.update(MIMALLOC_PROF="1", MIMALLOC_PROF_SAMPLE_INTERVAL="1", MIMALLOC_PROF_DUMP_AT_EXIT=windows_path(profile),
               WINEPREFIX=wine_prefix(exe))
    if fmt == "proto":
        env["MIMALLOC_PROF_DUMP_FORMAT"] = "proto"
    r = subprocess.run(["bash", WINE_RUN, exe], capture_output=True, text=True, env=env, timeout=TIMEOUT,
                       cwd=out_dir)
    log = os.path.join(out_dir, os.path.basename(profile) + ".run.log")
    with open(log, "w") as f:
        f.write(r.stdout + r.stderr)
    if r.returncode != 0 or not os.path.exists(profile):
        print(f"win_check: {exe} under Wine: exit {r.returncode}, profile {'written' if os.path.exists(profile) else 'missing'}:")
        print(r.stdout + r.stderr)
        sys.exit(2)
    return profile, r.stdout.splitlines()


class Profile:
    """mappings [(start, limit, offset, path)], samples [(inuse objects,
    [frame addresses: the call, return address - 1], [frame 0's function
    name in the proto, or None])], location mapping ids (proto)."""

    def __init__(self):
        self.mappings = []
        self.samples = []
        self.loc_mapping = []  # (address, mapping (start, limit)) the proto pairs


def read_profile(path):
    p = Profile()
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".heap"):
        errs = []
        t = pprof_check.parse_text(data.decode("utf-8", "replace"), errs)
        for e in errs:
            fail(f"text: {e}")
        p.mappings = [(s, l, o, f) for (s, l, perms, o, f) in t.maps]
        for rec in t.records:
            p.samples.append((rec[0], [a - 1 for a in rec[4]], None))
        return p
    errs = []
    raw = pprof_check.proto_bytes(path, errs)
    for e in errs:
        fail(f"proto: {e}")
    pr = pprof_check.decode_proto(raw)
    st = pr["string_table"]
    maps = {m["id"]: m for m in pr["mapping"]}
    p.mappings = [(m["memory_start"], m["memory_limit"], m["file_offset"], st[m["filename"]]) for m in pr["mapping"]]
    funcs = {f["id"]: st[f["name"]] for f in pr["function"]}
    locs = {loc["id"]: loc for loc in pr["location"]}
    for loc in pr["location"]:
        m = maps.get(loc["mapping_id"])
        p.loc_mapping.append((loc["address"], (m["memory_start"], m["memory_limit"]) if m else None))
    for smp in pr["sample"]:
        frames = [locs[i]["address"] for i in smp["location_id"]]
        first = locs[smp["location_id"][0]] if smp["location_id"] else None
        name0 = funcs.get(first["line"][0]["function_id"]) if first and first["line"] else None
        p.samples.append((smp["value"][2], frames, name0))
    return p


def check(exe, fmt, profile, stdout, prefix, relocated, plant):
    what = f"{fmt} {os.path.basename(profile)}"
    p = read_profile(profile)
    said = {"sites": {}}
    for line in stdout:
        m = re.match(r"^module (0x[0-9a-f]+)$", line)
        if m:
            said["module"] = int(m.group(1), 16)
        m = re.match(r"^prof enabled ([01])$", line)
        if m:
            said["enabled"] = m.group(1) == "1"
        m = re.match(r"^site (\w+) (\d+)$", line)
        if m:
            said["sites"][m.group(1)] = int(m.group(2))
    if not said.get("enabled"):
        fail(f"{what}: the program says the profiler did not start")
    if set(said["sites"]) != SITES:
        fail(f"{what}: the program printed the sites {sorted(said['sites'])}, not {sorted(SITES)}")

    # -- the clients (pprof_check.py: the format rules, protoc, Go pprof,
    # google-pprof for the text; `pprof -top` names no mi_ function)
    for checker, msg in pprof_check.check_file(profile, no_allocator_frames=True):
        fail(f"{what}: {checker}: {msg}")

    # -- modules
    files = {}
    for start, limit, offset, path in p.mappings:
        local = linux_path(prefix, path)
        info = pe_info(local) if local else None
        if local is None:
            fail(f"{what}: mapping {start:#x}-{limit:#x}: {path!r} is no file (prefix {prefix})")
        elif info is None:
            fail(f"{what}: mapping {start:#x}-{limit:#x}: {path} ({local}) is not a PE file")
        elif limit - start != info[1] or offset != 0:
            fail(f"{what}: mapping {start:#x}-{limit:#x} offset {offset:#x} of {path}: "
                 f"not its image (SizeOfImage {info[1]:#x}, offset 0)")
        files[(start, limit)] = (path, local, info)
    if not p.mappings:
        fail(f"{what}: no mappings")
    else:
        start, limit, offset, path = p.mappings[0]
        if path.split("\\")[-1].lower() != os.path.basename(exe).lower() or start != said.get("module"):
            fail(f"{what}: the first mapping is {path} at {start:#x}, not the program at "
                 f"{said.get('module', 0):#x}")
    if relocated:
        hits = [(s, info) for (s, l), (path, local, info) in files.items()
                if info and path.split("\\")[-1].lower() == relocated.lower()]
        if not hits:
            fail(f"{what}: no mapping of {relocated}")
        for s, info in hits:
            if s == info[0]:
                fail(f"{what}: {relocated} was loaded at its ImageBase {s:#x}: the rebasing is not exercised")
            else:
                print(f"win_check: {what}: {relocated} loaded at {s:#x}, its ImageBase {info[0]:#x}: relocated")

    def mapping_of(addr):
        for (s, lim), f in files.items():
            if s <= addr < lim:
                return s, lim, f
        return None

    for addr, m in p.loc_mapping:
        if m is None or not m[0] <= addr < m[1]:
            fail(f"{what}: location {addr:#x}: not in the mapping it names")
    # -- frames: each one's address in its file, named by addr2line
    wanted = {}  # local file -> file addresses
    place = {}  # run-time address -> (local file, file address, module name)
    for _, frames, _ in p.samples:
        for addr in frames:
            m = mapping_of(addr)
            if m is None:
                fail(f"{what}: frame {addr:#x} lies in no mapping")
                continue
            start, limit, (path, local, info) = m
            if local is None or info is None:
                continue
            faddr = addr if plant else addr - start + info[0]
            wanted.setdefault(local, set()).add(faddr)
            place[addr] = (local, faddr, path.split("\\")[-1])
    names = {}
    for local, addrs in wanted.items():
        for faddr, name in addr2line(local, addrs).items():
            names[(local, faddr)] = name

    def name_of(addr):
        if addr not in place:
            return None
        return names.get(place[addr][:2], "??")

    shown = set()

    def show(addr):
        if addr in place and addr not in shown:
            shown.add(addr)
            local, faddr, mod = place[addr]
            print(f"win_check: addr2line -f -e {local} {faddr:#x} -> {name_of(addr)}   "
                  f"(run-time {addr:#x} in {mod})")

    per_site = {}
    for n, (objs, frames, name0) in enumerate(p.samples, start=1):
        if not frames:
            fail(f"{what}: sample {n}: no frames")
            continue
        for k, addr in enumerate(frames):
            m = mapping_of(addr)
            if m and m[2][0].split("\\")[-1].lower().startswith("libmimalloc"):
                fail(f"{what}: sample {n}: frame {k} {addr:#x} lies in the allocator's DLL {m[2][0]}")
            nm = name_of(addr)
            if nm and ALLOCATOR.match(nm):
                fail(f"{what}: sample {n}: frame {k} {addr:#x} is the allocator's {nm}")
        f0 = name_of(frames[0])
        show(frames[0])
        if f0 not in SITES:
            local, faddr, mod = place.get(frames[0], ("?", 0, "?"))
            fail(f"{what}: frame 0 of sample {n}: {frames[0]:#x} in {mod} resolves to '{f0}' "
                 f"(file address {faddr:#x}), not a site function")
            continue
        per_site[f0] = per_site.get(f0, 0) + objs
        if name0 is not None and name0 != f0:
            fail(f"{what}: frame 0 of sample {n}: the profile names it {name0}, addr2line {f0}")
        caller = "win_sites_thread" if f0 == "win_site_thread" else "win_sites_run"
        f1 = name_of(frames[1]) if len(frames) > 1 else None
        if len(frames) > 1:
            show(frames[1])
        if f1 != caller:
            fail(f"{what}: frame 1 of sample {n} ({f0}): '{f1}', not {caller}")
        if caller == "win_sites_run":
            f2 = name_of(frames[2]) if len(frames) > 2 else None
            if len(frames) > 2:
                show(frames[2])
            if f2 != "main" or len(frames) != 3:
                fail(f"{what}: sample {n} ({f0}): frames {[name_of(a) for a in frames]}, "
                     f"not [{f0}, win_sites_run, main] (the stack ends at main)")
    for site, count in sorted(said["sites"].items()):
        if per_site.get(site) != count:
            fail(f"{what}: {site}: {per_site.get(site, 0)} objects in use in the profile, the program "
                 f"allocated {count} (every allocation sampled)")
    if not any(f.startswith(what) for f in failures):
        print(f"win_check: {what}: {len(p.samples)} samples, {len(p.mappings)} modules; frame 0 of each a "
              f"site function ({', '.join(f'{s} x{c}' for s, c in sorted(per_site.items()))}), "
              f"frame 1 its caller, no allocator frame")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="the program (win-sites.exe or win-sites-dll.exe)")
    ap.add_argument("--out", required=True, help="where the profiles go")
    ap.add_argument("--relocated", help="a module that must have been loaded away from its ImageBase")
    ap.add_argument("--plant-unrebased", action="store_true", help="positive control: forget the rebasing")
    ap.add_argument("--formats", default="proto,text")
    a = ap.parse_args()
    for tool in (f"{MINGW}-addr2line", f"{MINGW}-objdump"):
        if not shutil.which(tool):
            print(f"win_check: no {tool} (binutils-mingw-w64-x86-64)")
            return 2
    os.makedirs(a.out, exist_ok=True)
    exe = os.path.abspath(a.run)
    prefix = wine_prefix(exe)
    for fmt in a.formats.split(","):
        profile, stdout = run_program(exe, os.path.abspath(a.out), fmt)
        check(exe, fmt, profile, stdout, prefix, a.relocated, a.plant_unrebased)
    if failures:
        print(f"win_check: REJECTED ({len(failures)} failures)")
        return 1
    print("win_check: accepted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
