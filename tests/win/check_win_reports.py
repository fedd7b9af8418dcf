#!/usr/bin/env python3
"""The secure build's reports on Windows (docs/windows.md): run
tests/win/report-misuse.c's program under Wine (cmake/wine-run.sh), each
misuse in its own process, without and with MIMALLOC_SECURE_STACKS=1, and
check each report:

  - the process ended abnormally (abort: exit 3 under Wine), its clean twin
    with exit 0 and no report;
  - the first line, its address as 0x... as on Linux; the block line; the
    thread that detected it;
  - "detected at:": the program's function that made the misuse first (the
    allocator's own frames hidden), `main` after it;
  - without the option: the line saying the sites were not recorded and how
    to have them; with it: "allocated by thread N at:" whose first frame is
    the function that allocated the block, and for a double free "freed by
    thread N at:" whose first frame is the one that freed it first.

  check_win_reports.py PROGRAM.exe            exit 1 on any failure
  check_win_reports.py PROGRAM.exe --control  the checker's positive
      control: real reports, planted wrong (the detecting function renamed,
      the allocation section's frames swapped with the free's, the stack
      section gone, the address printed as Windows' %p), must each be
      rejected
"""
import os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
WINE_RUN = os.path.join(HERE, "..", "..", "cmake", "wine-run.sh")

CASES = {
    "double-free": dict(first=r"^mimalloc: error: double free detected of block 0x[0-9a-f]+ \(size \d+\)$",
                        detector="misuse_double_free", allocated="alloc_for_double_free",
                        freed="free_for_double_free"),
    "heap-buffer-overflow": dict(first=r"^mimalloc: error: heap buffer overflow detected in block 0x[0-9a-f]+ "
                                       r"\(size 48\)$",
                                 block=r"^mimalloc:   block 0x[0-9a-f]+ of \d+ bytes, 48 asked for; the bad byte at "
                                       r"offset 48",
                                 detector="free_for_overflow", allocated="alloc_for_overflow", freed=None),
}
FRAME = re.compile(r"^mimalloc:     #(\d+) 0x[0-9a-f]+ (?:in (\S+) )?\(")


def run(exe, kind, stacks):
    env = dict(os.environ)
    env["MIMALLOC_GUARDED_SAMPLE_RATE"] = "0"  # a sampled block's misuse is the guard page's report, not the case's
    env.pop("MIMALLOC_SECURE_STACKS", None)
    if stacks:
        env["MIMALLOC_SECURE_STACKS"] = "1"
    p = subprocess.run(["bash", WINE_RUN, exe, kind], env=env, capture_output=True, text=True, timeout=300)
    return p.returncode, (p.stdout + p.stderr).replace("\r", "")


def section(lines, heading_re):
    """the frames' function names under the first heading matching"""
    out, inside = [], False
    for line in lines:
        if inside:
            m = FRAME.match(line)
            if not m:
                break
            out.append(m.group(2) or "?")
        elif re.match(heading_re, line):
            inside = True
    return out if inside else None


def check(kind, stacks, rc, text):
    """the failures of one report (empty: it is right)"""
    c = CASES[kind]
    bad = []
    lines = text.splitlines()
    if rc == 0:
        bad.append("exited 0: no abort")
    first = [l for l in lines if l.startswith("mimalloc: error:")]
    if not first or not re.match(c["first"], first[0]):
        bad.append("first line: %r" % (first[0] if first else None))
    if "block" in c and not any(re.match(c["block"], l) for l in lines):
        bad.append("no block line matching %s" % c["block"])
    if not any(re.match(r"^mimalloc:   detected by thread \d+$", l) for l in lines):
        bad.append("no thread line")
    detected = section(lines, r"^mimalloc:   detected at:$")
    if not detected:
        bad.append("no detected-at section")
    else:
        if detected[0] != c["detector"]:
            bad.append("detected at: first frame %s, not %s" % (detected[0], c["detector"]))
        if "main" not in detected[1:]:
            bad.append("detected at: no main after the first frame: %s" % detected)
    allocated = section(lines, r"^mimalloc:   allocated by thread \d+ at:$")
    freed = section(lines, r"^mimalloc:   freed by thread \d+ at:$")
    not_recorded = any("where the block was allocated and freed: not recorded; rerun with MIMALLOC_SECURE_STACKS=1"
                       in l for l in lines)
    if not stacks:
        if not not_recorded:
            bad.append("no line saying the sites were not recorded")
        if allocated is not None:
            bad.append("an allocation section without the option")
    else:
        if not allocated or allocated[0] != c["allocated"]:
            bad.append("allocated by: %s, not %s first" % (allocated, c["allocated"]))
        if c["freed"] and (not freed or freed[0] != c["freed"]):
            bad.append("freed by: %s, not %s first" % (freed, c["freed"]))
        if not_recorded:
            bad.append("says not recorded with the option on")
    return bad


def plants(text, c):
    """wrong copies of a real report, each of which the checker must reject"""
    out = {
        "detector renamed": text.replace(" in %s " % c["detector"], " in some_other_function ", 1),
        "stack section gone": "\n".join(l for l in text.splitlines() if not FRAME.match(l)),
        "address as %p": re.sub(r"(block) 0x([0-9a-f]+)", lambda m: "%s %016X" % (m.group(1), int(m.group(2), 16)),
                                text, count=1),
    }
    if c["freed"] and c["freed"] in text and c["allocated"] in text:
        out["allocation and free swapped"] = (text.replace(c["allocated"], "@@A@@").replace(c["freed"], c["allocated"])
                                              .replace("@@A@@", c["freed"]))
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    exe, control = sys.argv[1], "--control" in sys.argv[2:]
    failures = 0
    if not control:
        rc, text = run(exe, "clean", True)
        if rc != 0 or "mimalloc: error" in text or "no report" not in text:
            print("check_win_reports: FAIL clean twin: exit %d\n%s" % (rc, text))
            failures += 1
        else:
            print("check_win_reports: clean twin: exit 0, no report")
    for kind in CASES:
        for stacks in (False, True):
            rc, text = run(exe, kind, stacks)
            name = "%s%s" % (kind, " (stacks)" if stacks else "")
            bad = check(kind, stacks, rc, text)
            if control:
                if bad:
                    print("check_win_reports: FAIL %s: the real report is rejected: %s" % (name, bad))
                    failures += 1
                    continue
                for plant, wrong in plants(text, CASES[kind]).items():
                    if check(kind, stacks, rc, wrong):
                        print("check_win_reports: control %s: %s rejected" % (name, plant))
                    else:
                        print("check_win_reports: FAIL control %s: %s NOT rejected" % (name, plant))
                        failures += 1
            elif bad:
                print("check_win_reports: FAIL %s (exit %d): %s\n%s" % (name, rc, "; ".join(bad), text))
                failures += 1
            else:
                print("check_win_reports: %s: exit %d, report right" % (name, rc))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
