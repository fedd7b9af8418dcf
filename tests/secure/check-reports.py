#!/usr/bin/env python3
"""The secure build's reports, kind by kind (tests/secure/report-cases.cc).

  check-reports.py BINARY [KIND...]   each kind (all by default) run in a
                                      child: its report checked, its JSON
                                      copy too, its clean twin silent; then
                                      again with MIMALLOC_SECURE_STACKS=1,
                                      the block's allocation and free
                                      sections checked by name
  check-reports.py BINARY --control   the checker's positive control: a real
                                      report, planted wrong (an offset off by
                                      one, two frames swapped, the stack
                                      section gone, the JSON's kind changed),
                                      must be rejected each time (and a
                                      guarded report's and a recorded
                                      block's allocation and free sections
                                      swapped)

A report is checked for: the abort; its first line; the block line (the
block's size, the size asked for, the bad byte's offset, as the program
knows them); the thread (the main thread's number is the process id); the
"caught late" line where the misuse is found after the fact, and only
there; the "detected at:" section, starting at the allocator's entry point,
naming the misusing function before main and no other case's function; each
frame of the program with file:line as addr2line reads the same address;
the JSON copy's keys and values, the same as the text's (its dedup key the
text's DEDUP_TOKEN line); the dedup key
stable across runs. Exit 1 on any failure."""
import json, os, re, signal, subprocess, sys, tempfile

ENTRY = ("free", "malloc", "mi_usable_size", "mi_heap_malloc", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdlPvSt11align_val_t")
CASES = {
    "double-free": dict(first=r"double free detected of block (0x[0-9a-f]+) \(size 64\)", block_size=64,
                        requested=None, offset=None, late=None, detector="misuse_double_free",
                        stacks_allocated="alloc_for_double_free", stacks_freed="free_for_double_free"),
    "heap-buffer-overflow": dict(first=r"heap buffer overflow detected in block (0x[0-9a-f]+) \(size 48\)",
                                 block_size=64, requested=48, offset=48, late="at the block's free",
                                 detector="free_for_overflow", stacks_allocated="alloc_for_overflow"),
    "interior-free": dict(first=r"invalid free detected of interior pointer (0x[0-9a-f]+) \(size \d+\)",
                          block_size=None, requested=None, offset=16, late=None, detector="misuse_interior_free",
                          block_before=True, stacks_allocated="alloc_for_interior_free"),
    "use-after-free-write": dict(first=r"use-after-free write detected in block (0x[0-9a-f]+) \(size 64\)",
                                 block_size=64, requested=None, offset=20,
                                 late="when the block was handed out again", detector="reuse_for_stale_write",
                                 stacks_allocated="alloc_for_stale_write", stacks_freed="free_for_stale_write"),
    "freed-block-use": dict(first=r"use of a freed block detected at (0x[0-9a-f]+) \(size 64\)", block_size=64,
                            requested=None, offset=None, late=None, detector="misuse_freed_use",
                            stacks_allocated="alloc_for_freed_use", stacks_freed="free_for_freed_use"),
    "kind-mismatch": dict(first=r"allocation kind mismatch detected \(new\[\] freed by delete\) of block "
                                r"(0x[0-9a-f]+) \(size 40\)", block_size=None, requested=40, offset=None,
                          late=None, detector="misuse_kind_mismatch", stacks_allocated="alloc_for_kind_mismatch"),
    "sized-delete-mismatch": dict(first=r"sized deallocation mismatch detected \(32 bytes given\) of block "
                                        r"(0x[0-9a-f]+) \(size 40\)", block_size=None, requested=40, offset=None,
                                  late=None, detector="misuse_sized_delete",
                                  stacks_allocated="alloc_for_sized_delete"),
    "aligned-delete-mismatch": dict(first=r"invalid aligned deallocation detected \(alignment 48\) of pointer "
                                          r"(0x[0-9a-f]+) \(size 40\)", block_size=None, requested=40,
                                    offset=None, late=None, detector="misuse_aligned_delete",
                                    stacks_allocated="alloc_for_aligned_delete"),
    "invalid-heap": dict(first=r"invalid heap detected at (0x[0-9a-f]+) \(size \d+\)", block_size=None,
                         requested=None, offset=None, late=None, detector="misuse_invalid_heap", no_block=True),
    "use-after-free-link-write": dict(first=r"use-after-free write detected in block (0x[0-9a-f]+) \(size 64\)",
                                      block_size=64, requested=None, offset=0,
                                      late="when the block left the quarantine", detector="reuse_for_link_write",
                                      json_kind="use-after-free-write", stacks_allocated="alloc_for_link_write",
                                      stacks_freed="free_for_link_write"),
    "corrupted-free-list": dict(first=r"corrupted free list detected at (0x[0-9a-f]+) \(size 64\)", block_size=64,
                                requested=None, offset=0, late="when the block was handed out again",
                                detector="reuse_for_free_list", env={"MIMALLOC_GUARDED_SAMPLE_RATE": "0"},
                                stacks_allocated="alloc_for_free_list", stacks_freed="free_for_free_list"),
    "corrupted-header": dict(first=r"corrupted segment header detected at (0x[0-9a-f]+) \(size \d+\)",
                             block_size=None, requested=None, offset=None, late=None,
                             detector="free_for_corrupted_header", no_block=True,
                             env={"MIMALLOC_GUARDED_SAMPLE_RATE": "0"}),
    # faults, reported by the fault handler: the access's own stack
    "guarded-heap-buffer-overflow": dict(first=r"guarded heap buffer overflow detected at (0x[0-9a-f]+) in block "
                                               r"(0x[0-9a-f]+) \(size 48\)", block_size=48, requested=48,
                                         offset=68, late=None, detector="misuse_guarded_overflow", fault=True,
                                         env={"MIMALLOC_GUARDED_SAMPLE_RATE": "1"}, json_kind="heap-buffer-overflow",
                                         allocated="alloc_for_guarded_overflow"),
    "guarded-use-after-free": dict(first=r"use-after-free detected in guarded block at (0x[0-9a-f]+) in block "
                                         r"(0x[0-9a-f]+) \(size 48\)", block_size=48, requested=None, offset=5,
                                   late=None, detector="misuse_guarded_freed_use", fault=True,
                                   env={"MIMALLOC_GUARDED_SAMPLE_RATE": "1"}, json_kind="use-after-free",
                                   allocated="alloc_for_guarded_freed_use", freed="free_for_guarded_freed_use"),
    "destroyed-heap-block-use": dict(first=r"use-after-free detected in destroyed heap's block at (0x[0-9a-f]+) "
                                           r"in block (0x[0-9a-f]+) \(size 64\)", block_size=64, requested=None,
                                     offset=3, late=None, detector="misuse_destroyed_heap_use", fault=True,
                                     stacks_allocated="alloc_for_destroyed_heap_use"),
    "large-use-after-free": dict(first=r"use-after-free detected in freed large block at (0x[0-9a-f]+) in block "
                                       r"(0x[0-9a-f]+) \(size \d+\)", block_size=None, requested=None, offset=5,
                                 late=None, detector="misuse_large_freed_use", fault=True, json_kind="use-after-free",
                                 stacks_allocated="alloc_for_large_freed_use", stacks_freed="free_for_large_freed_use"),
    "zero-size-block-use": dict(first=r"access to a zero-size allocation detected at (0x[0-9a-f]+) \(size 0\)",
                                block_size=None, requested=0, offset=None, late=None, detector="misuse_zero_size_use",
                                fault=True, no_block=True),
}
FRAME = re.compile(r"^mimalloc:     #(\d+) 0x([0-9a-f]+)(?: in (\S+))?(?: (\S+):(\d+))?(?: \((\S+)\+0x([0-9a-f]+)\))?$")


def stack_sections(lines):
    """each stack section of a report: {name: (thread, [frame matches])}"""
    sections, current = {}, None
    for l in lines:
        h = re.match(r"^mimalloc:   (detected|allocated by thread (\d+)|freed by thread (\d+)) at:$", l)
        if h:
            name = h.group(1).split(" ")[0]
            thread = int(h.group(2) or h.group(3)) if (h.group(2) or h.group(3)) else None
            current = sections.setdefault(name, (thread, []))
            continue
        fm = FRAME.match(l)
        if fm and current is not None:
            current[1].append(fm)
        else:
            current = None
    return sections


def run(binary, kind, clean, out_dir, stacks=False):
    env = dict(os.environ, MIMALLOC_REPORT_FILE=os.path.join(out_dir, "report-%p.json"))
    # no guarded samples but where a case asks for them: at the default rate
    # a case's block is sampled now and then (one in 4,000), and its misuse
    # is then the guard page's report, not the one the case checks (a CI run
    # saw heap-buffer-overflow fault on a sampled block)
    env["MIMALLOC_GUARDED_SAMPLE_RATE"] = "0"
    env.pop("MIMALLOC_SECURE_STACKS", None)
    env.update(CASES[kind].get("env", {}))
    if stacks:
        env["MIMALLOC_SECURE_STACKS"] = "1"
    p = subprocess.Popen([binary, kind] + (["clean"] if clean else []), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    out, err = p.communicate(timeout=120)
    path = os.path.join(out_dir, "report-%d.json" % p.pid)
    doc = None
    if os.path.exists(path):
        with open(path) as f:
            doc = f.read()
        os.unlink(path)
    return p.pid, p.returncode, err.decode(errors="replace"), doc


def addr2line(module, offset):
    """function and line of the call before a return address, as addr2line reads it"""
    r = subprocess.run(["addr2line", "-f", "-e", module, "0x%x" % (offset - 1)], capture_output=True, text=True)
    lines = r.stdout.split("\n")
    if len(lines) < 2:
        return None, None
    m = re.search(r":(\d+)", lines[1])
    return lines[0], (int(m.group(1)) if m else None)


def check(kind, pid, status, err, doc, binary, checked_lines, stacks=False):
    """the list of what is wrong with one kind's report (`stacks`: run with
    MIMALLOC_SECURE_STACKS=1, every block's stacks recorded)"""
    case = CASES[kind]
    bad = []
    want = -signal.SIGSEGV if case.get("fault") else -signal.SIGABRT
    if status != want:
        bad.append("exit status %s, not %s" % (status, want))
    lines = err.rstrip("\n").split("\n")
    m = re.match(r"^mimalloc: error: " + case["first"] + "$", lines[0] if lines else "")
    if not m:
        return bad + ["first line %r does not match %r" % (lines[0] if lines else "", case["first"])]
    addr = m.group(1)  # the first line's address (a fault's: the access's)
    block_addr = m.group(m.lastindex)  # the block's (a fault's: after "in block")
    block = [l for l in lines if l.startswith("mimalloc:   block ")]
    if case.get("no_block"):
        if block:
            bad.append("a block line where none is known: %r" % block[0])
    else:
        if len(block) != 1:
            return bad + ["%d block lines, not 1" % len(block)]
        bm = re.match(r"^mimalloc:   block (0x[0-9a-f]+)(?: of (\d+) bytes)?(?:, (\d+) asked for)?"
                      r"(?:; the (?:bad byte|pointer freed) at offset (\d+)(?:, (\d+) past the end asked for)?)?$",
                      block[0])
        if not bm:
            return bad + ["block line %r unreadable" % block[0]]
        if case.get("block_before"):  # the first line's address is inside the block, at the offset
            block_addr = "0x%x" % (int(addr, 16) - (case["offset"] or 0))
        if bm.group(1) != block_addr:
            bad.append("block line's address %s, not the first line's %s" % (bm.group(1), block_addr))
        for what, got, want in (("block size", bm.group(2) if case["block_size"] is not None else None,
                                 case["block_size"]),
                                ("size asked for", bm.group(3), case["requested"]),
                                ("offset", bm.group(4), case["offset"])):
            if (None if got is None else int(got)) != want:
                bad.append("%s %s, not %s" % (what, got, want))
        if bm.group(5) is not None and int(bm.group(5)) != int(bm.group(4)) - int(bm.group(3)):
            bad.append("past the end %s, not offset - size asked for" % bm.group(5))
    tm = [re.match(r"^mimalloc:   detected by thread (\d+)$", l) for l in lines]
    tm = [t for t in tm if t]
    thread = int(tm[0].group(1)) if tm else None
    if thread != pid:
        bad.append("detected by thread %s, not the main thread %d" % (thread, pid))
    late = [l for l in lines if l.startswith("mimalloc:   caught late: ")]
    if case["late"] is None and late:
        bad.append("a caught-late line for a misuse seen at the act: %r" % late[0])
    if case["late"] is not None and (len(late) != 1 or not late[0].startswith("mimalloc:   caught late: " + case["late"])
                                     or "MIMALLOC_GUARDED_SAMPLE_RATE=1" not in late[0]):
        bad.append("caught-late line %r, not %r with the rerun line" % (late, case["late"]))
    if "mimalloc:   detected at:" not in lines:
        return bad + ["no 'detected at:' section"]
    sections = stack_sections(lines)
    frames = sections["detected"][1]
    names = [f.group(3) for f in frames]
    # a guarded sample's allocation and free stacks (and with the stacks
    # kept, every block's): where recorded, and only there
    for sec in ("allocated", "freed"):
        want = case.get(sec)
        if stacks and want is None:
            want = case.get("stacks_" + sec)
        got = sections.get(sec)
        if want is None and got is not None:
            bad.append("a '%s by' section where none is recorded" % sec)
        elif want is not None:
            if got is None:
                bad.append("no '%s by' section" % sec)
                continue
            snames = [f.group(3) for f in got[1]]
            if want not in snames or "main" not in snames or snames.index(want) > snames.index("main"):
                bad.append("the %s section names %s, not %s then main" % (sec, snames, want))
            if got[0] != pid:
                bad.append("%s by thread %s, not the main thread %d" % (sec, got[0], pid))
    # a block whose sites were not kept says how to have them, and only then
    hint = [l for l in lines if l.startswith("mimalloc:   where the block was allocated and freed: not recorded")]
    want_hint = not stacks and not case.get("no_block") and case.get("allocated") is None
    if want_hint and (len(hint) != 1 or "MIMALLOC_SECURE_STACKS=1" not in hint[0]):
        bad.append("no line saying the block's sites were not recorded, with the rerun line")
    if not want_hint and hint:
        bad.append("a 'not recorded' line where the sites are recorded or no block is known: %r" % hint[0])
    if [int(f.group(1)) for f in frames] != list(range(len(frames))):
        bad.append("frames not numbered 0..%d in order" % (len(frames) - 1))
    # frame #0 the allocator's entry point the program called, or where the
    # entry point tail-called an internal function (its frame gone), the
    # program's function that called it: never an internal one; a fault's:
    # the faulting function itself
    ours = lambda n: n is not None and (n in ENTRY or n.startswith(("mi_", "_mi_")))
    if case.get("fault"):
        if not names or names[0] != case["detector"]:
            bad.append("frame #0 %r is not the faulting function %s" % (names[0] if names else None, case["detector"]))
        if any(ours(n) for n in names):
            bad.append("allocator frames in a fault's stack: %s" % names)
    else:
        if not names or not (ours(names[0]) or names[0] == case["detector"]) or names[0].startswith("_mi_"):
            bad.append("frame #0 %r is neither the allocator's entry point nor the misuse's function" %
                       (names[0] if names else None))
        if any(ours(n) for n in names[1:]):
            bad.append("allocator frames past #0: %s" % names)
    if case["detector"] not in names or "main" not in names or names.index(case["detector"]) > names.index("main"):
        bad.append("the misuse's function %s then main not in the stack %s" % (case["detector"], names))
    others = [n for n in names if n and n.startswith(("alloc_for_", "free_for_", "misuse_", "reuse_for_"))
              and n != case["detector"]]
    if others:
        bad.append("another function of the case in the detecting stack: %s" % others)
    if doc is None:
        return bad + ["no JSON copy"]
    try:
        j = json.loads(doc)
    except ValueError as e:
        return bad + ["JSON copy unreadable: %s" % e]
    for key in ("kind", "address", "block_size", "requested_size", "offset", "thread", "detected", "allocated",
                "freed", "dedup"):
        if key not in j:
            bad.append("JSON: no key %s" % key)
    if bad:
        return bad
    if j["kind"] != case.get("json_kind", kind):
        bad.append("JSON kind %r, not %r" % (j["kind"], case.get("json_kind", kind)))
    if not case.get("no_block") and j.get("block") != block_addr:
        bad.append("JSON block %s, not the text's %s" % (j.get("block"), block_addr))
    if j["address"] != addr or j["thread"] != thread:
        bad.append("JSON address %s / thread %s, not the text's %s / %s" % (j["address"], j["thread"], addr, thread))
    if j["requested_size"] != case["requested"] or j["offset"] != case["offset"]:
        bad.append("JSON size asked for %s / offset %s, not %s / %s" % (j["requested_size"], j["offset"],
                                                                       case["requested"], case["offset"]))
    if not re.match(r"^[0-9a-f]{16}$", j["dedup"]):
        bad.append("JSON dedup %r is not 16 hex digits" % j["dedup"])
    tokens = [l for l in lines if l.startswith("mimalloc:   DEDUP_TOKEN: ")]
    if tokens != ["mimalloc:   DEDUP_TOKEN: " + j["dedup"]]:
        bad.append("text DEDUP_TOKEN lines %s, not the JSON's dedup %s" % (tokens, j["dedup"]))
    jnames = [f.get("function") for f in j["detected"]]
    if jnames != names:
        bad.append("JSON detected stack %s, not the text's %s" % (jnames, names))
    for sec in ("allocated", "freed"):
        text = sections.get(sec)
        js = j.get(sec)
        if (text is None) != (js is None):
            bad.append("JSON %s %s, the text's %s" % (sec, "absent" if js is None else "present",
                                                     "absent" if text is None else "present"))
        elif text is not None:
            if [f.get("function") for f in js] != [f.group(3) for f in text[1]] or j.get(sec + "_thread") != text[0]:
                bad.append("JSON %s stack or thread differs from the text's" % sec)
    frames_json = [("detected", k, f) for k, f in enumerate(j["detected"])]
    for sec in ("allocated", "freed"):
        frames_json += [(sec, k, f) for k, f in enumerate(j.get(sec) or [])]
    for sec, k, f in frames_json:
        for key in ("pc", "function", "file", "line", "module"):
            if key not in f:
                bad.append("JSON frame without %s: %s" % (key, f))
        # the program's own frames, named and placed as addr2line reads them
        if f.get("module") and os.path.realpath(f["module"]) == os.path.realpath(binary) and f.get("file"):
            # (a fault's frame #0 is the faulting instruction, not a return address)
            exact = case.get("fault") and sec == "detected" and k == 0
            fn, line = addr2line(f["module"], int(f["module_offset"], 16) + (1 if exact else 0))
            if fn != f["function"] or line != f["line"]:
                bad.append("frame %s %s:%s, addr2line says %s:%s" % (f["function"], f["file"], f["line"], fn, line))
            else:
                checked_lines.append(f["function"])
    return bad


def mutations(err, doc):
    """a real report planted wrong, each way the checker must see"""
    lines = err.split("\n")
    off = [re.sub(r"offset (\d+)", lambda m: "offset %d" % (int(m.group(1)) + 1), l) if "block " in l else l
           for l in lines]
    yield "offset off by one", "\n".join(off), doc
    i = lines.index("mimalloc:   detected at:")
    sw = list(lines)
    # the detector's frame and main's swapped, numbers kept
    body = lambda l: l.split(" ", 6)[-1]
    a = next(k for k in range(i + 1, len(lines)) if " in free_for_overflow " in lines[k])
    b = next(k for k in range(i + 1, len(lines)) if " in main " in lines[k])
    sw[a] = sw[a].replace(body(lines[a]), body(lines[b]))
    sw[b] = sw[b].replace(body(lines[b]), body(lines[a]))
    yield "two frames swapped", "\n".join(sw), doc
    yield "stack section gone", "\n".join(l for l in lines if not l.startswith("mimalloc:     #")
                                          and l != "mimalloc:   detected at:"), doc
    yield "JSON kind changed", err, doc.replace('"kind":"heap-buffer-overflow"', '"kind":"double-free"')
    yield "DEDUP_TOKEN changed", re.sub(r"DEDUP_TOKEN: [0-9a-f]{16}", "DEDUP_TOKEN: " + "0" * 16, err), doc


def mutations_guarded(err, doc):
    """a guarded sample's report with its allocation and free sections swapped"""
    sw = re.sub(r"allocated by thread", "@@", err)
    sw = re.sub(r"freed by thread", "allocated by thread", sw)
    yield "allocation and free sections swapped", sw.replace("@@", "freed by thread"), doc


# what the secure build's light level (MIMALLOC_SECURE_LEVEL=light) does not
# catch: zero on free's check at reuse, the fence of freed large blocks
LIGHT_LEAVES_OUT = ("use-after-free-write", "use-after-free-link-write", "large-use-after-free")


def light_level():
    return os.environ.get("MIMALLOC_SECURE_LEVEL", "").strip().lower() in ("light", "1")


def main():
    binary = os.path.abspath(sys.argv[1])
    args = sys.argv[2:]
    failed = 0
    with tempfile.TemporaryDirectory() as out:
        if args == ["--control"]:
            pid, status, err, doc = run(binary, "heap-buffer-overflow", False, out)
            real = check("heap-buffer-overflow", pid, status, err, doc, binary, [])
            if real:
                print("control: FAIL: the real report is rejected: %s" % real)
                return 1
            for name, e, d in mutations(err, doc):
                found = check("heap-buffer-overflow", pid, status, e, d, binary, [])
                if found:
                    print("control: %s: rejected (%s)" % (name, found[0]))
                else:
                    print("control: FAIL: %s: accepted" % name)
                    failed += 1
            kind = "guarded-use-after-free"
            pid, status, err, doc = run(binary, kind, False, out)
            real = check(kind, pid, status, err, doc, binary, [])
            if real:
                print("control: FAIL: the real guarded report is rejected: %s" % real)
                return 1
            for name, e, d in mutations_guarded(err, doc):
                found = check(kind, pid, status, e, d, binary, [])
                if found:
                    print("control: %s: rejected (%s)" % (name, found[0]))
                else:
                    print("control: FAIL: %s: accepted" % name)
                    failed += 1
            # a block's recorded stacks (MIMALLOC_SECURE_STACKS=1): the same swap
            kind = "double-free"
            pid, status, err, doc = run(binary, kind, False, out, stacks=True)
            real = check(kind, pid, status, err, doc, binary, [], stacks=True)
            if real:
                print("control: FAIL: the real report with the blocks' stacks is rejected: %s" % real)
                return 1
            for name, e, d in mutations_guarded(err, doc):
                found = check(kind, pid, status, e, d, binary, [], stacks=True)
                if found:
                    print("control: %s (MIMALLOC_SECURE_STACKS=1): rejected (%s)" % (name, found[0]))
                else:
                    print("control: FAIL: %s (MIMALLOC_SECURE_STACKS=1): accepted" % name)
                    failed += 1
            return 1 if failed else 0
        # the JSON copy's path cannot be written: the report says so and still aborts
        env = dict(os.environ, MIMALLOC_REPORT_FILE=os.path.join(out, "no-such-dir", "report-%p.json"))
        env.pop("MIMALLOC_GUARDED_SAMPLE_RATE", None)
        p = subprocess.run([binary, "double-free"], capture_output=True, env=env, timeout=120)
        err = p.stderr.decode(errors="replace")
        if p.returncode != -signal.SIGABRT or not re.search(
                r"^mimalloc:   \(the report's JSON copy could not be written to .*no-such-dir/report-\d+\.json\)$",
                err, re.M):
            failed += 1
            print("FAIL unwritable JSON path: status %s, the report:\n%s" % (p.returncode, err))
        else:
            print("ok unwritable JSON path: said so, aborted")
        for stacks in (False, True):
            mode = " (MIMALLOC_SECURE_STACKS=1)" if stacks else ""
            for kind in args or list(CASES):
                if kind in LIGHT_LEAVES_OUT and light_level():
                    print("skipped %s%s: the light level leaves it out (MIMALLOC_SECURE_LEVEL)" % (kind, mode))
                    continue
                checked = []
                pid, status, err, doc = run(binary, kind, False, out, stacks)
                bad = check(kind, pid, status, err, doc, binary, checked, stacks)
                if not bad:
                    # the same bug reached the same way groups as one
                    pid2, status2, err2, doc2 = run(binary, kind, False, out, stacks)
                    if doc2 is None or json.loads(doc2)["dedup"] != json.loads(doc)["dedup"]:
                        bad.append("dedup differs between two runs")
                cpid, cstatus, cerr, cdoc = run(binary, kind, True, out, stacks)
                if cstatus != 0 or cerr != "" or cdoc is not None:
                    bad.append("clean twin: status %s, stderr %r, JSON %s" % (cstatus, cerr[:200], cdoc is not None))
                if bad:
                    failed += 1
                    print("FAIL %s%s:" % (kind, mode))
                    for b in bad:
                        print("  " + b)
                    print("  the report:\n" + "\n".join("    " + l for l in err.rstrip("\n").split("\n")))
                else:
                    print("ok %s%s: %s; addr2line agrees on %s" % (kind, mode, err.split("\n")[0], ", ".join(checked)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
