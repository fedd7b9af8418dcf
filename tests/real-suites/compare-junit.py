#!/usr/bin/env python3
"""Compare two runs of one test suite, test case by test case.

usage: compare-junit.py BASE.xml BASE.log UNDER.xml UNDER.log [--base NAME] [--under NAME]
                        [--differing FILE] [--base-again XML]...

BASE is the reference run (glibc's malloc), UNDER the same run with the
library preloaded. Each XML is a JUnit-style report (CPython's regrtest
--junit-xml); each log is regrtest's own output, whose per-module lines
("[ 3/40] test_dict passed", "test_x crashed (Exit code -6)") tell a module
that left no test cases (it crashed or timed out before reporting).

A test case's outcome is one of passed, failed (error or failure), skipped,
expected-failure, unexpected-success; a case present in one run only is
"missing" in the other. Every case whose outcome differs is a difference, and
so is every module whose closing status differs in kind (passed, failed,
crashed, timed out, skipped, not run): a case that fails in both runs is
none. A module whose status differs only among passed, failed and "env
changed" (regrtest's warning that a thread, a process or a file was left
behind, which timing alone can raise) is a note unless one of its cases is
a counted difference: its cases tell it.

A case the reference run itself is flaky on is no difference: with
--base-again, the differing cases run again on the reference (regrtest
--matchfile of the ids that --differing wrote), and a case whose outcome in
the other run was seen there too is a note. A case that fails under the
library only is never excused, however it fares again. Prints
each difference and one closing line; exits 1 if there is any, 2 if either
run reported no test case at all (a run that never started)."""
import argparse
import collections
import re
import sys
import xml.etree.ElementTree as ET


def case_outcome(case):
    kinds = {child.tag for child in case}
    if "error" in kinds or "failure" in kinds:
        return "failed"
    if "skipped" in kinds:
        return "skipped"
    if "expected_failure" in kinds or case.get("result") == "expected_failure":
        return "expected-failure"
    if "unexpected_success" in kinds:
        return "unexpected-success"
    return "passed"


def read_cases(path):
    """name -> list of outcomes (a name may repeat: subtests)"""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"compare: cannot read {path}: {e}")
        return {}
    cases = collections.defaultdict(list)
    for case in root.iter("testcase"):
        cases[case.get("name", "?")].append(case_outcome(case))
    return cases


MODULE_LINE = re.compile(r"\[\s*\d+/\d+(?:/\d+)?\] (test_\w+(?:\.\w+)*) (.*?)(?: -- running: .*)?$")


def module_kind(status):
    """regrtest's closing word(s) for a module, reduced to its kind"""
    if status.startswith("failed (env changed)"):
        return "env changed"
    for kind in ("crashed", "timed out", "failed", "skipped", "resource denied", "passed", "ran no tests",
                 "interrupted"):
        if status.startswith(kind):
            return "skipped" if kind == "resource denied" else kind
    return status.split(" ")[0]


def read_modules(path):
    modules = {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = MODULE_LINE.search(line.rstrip("\n"))
                if m:
                    modules[m.group(1)] = module_kind(m.group(2))
    except OSError as e:
        print(f"compare: cannot read {path}: {e}")
    return modules


SHOWN_PER_MODULE = 20  # differing cases printed per module (all are counted)


def module_of(case_name):
    parts = case_name.split(".")
    return next((p for p in parts if p.startswith("test_")), parts[0])


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base_xml")
    ap.add_argument("base_log")
    ap.add_argument("under_xml")
    ap.add_argument("under_log")
    ap.add_argument("--base", default="glibc", help="the reference run's name")
    ap.add_argument("--under", default="preloaded", help="the other run's name")
    ap.add_argument("--differing", metavar="FILE",
                    help="write the differing cases' test ids to FILE, their modules to FILE.modules")
    ap.add_argument("--base-again", metavar="XML", action="append", default=[],
                    help="a rerun of the differing cases on the reference (repeatable)")
    return ap.parse_args(argv)


def main(argv):
    a = parse_args(argv)
    base_name, under_name = a.base, a.under
    base, under = read_cases(a.base_xml), read_cases(a.under_xml)
    base_mod, under_mod = read_modules(a.base_log), read_modules(a.under_log)
    again = [read_cases(x) for x in a.base_again]
    if not base or not under:
        print(f"compare: no test case in {'the ' + base_name if not base else 'the ' + under_name} run")
        return 2
    diffs, notes, differing = [], [], []
    counted_modules = set()
    for name in sorted(set(base) | set(under)):
        b, u = sorted(base.get(name, [])), sorted(under.get(name, []))
        if b == u:
            continue
        width = max(len(b), len(u))
        shown_b = b + ["missing"] * (width - len(b))
        shown_u = u + ["missing"] * (width - len(u))
        line = f"case {name}: {', '.join(shown_b)} on {base_name}, {', '.join(shown_u)} {under_name}"
        differing.append(name)
        if any(sorted(run.get(name, [])) == u for run in again):
            # the reference itself gave the other run's outcome when run again
            notes.append(line + f" (and {', '.join(u)} on {base_name} again: flaky there)")
        else:
            diffs.append(line)
            counted_modules.add(module_of(name))
    for mod in sorted(set(base_mod) | set(under_mod)):
        b, u = base_mod.get(mod, "not run"), under_mod.get(mod, "not run")
        if b == u:
            continue
        line = f"module {mod}: {b} on {base_name}, {u} {under_name}"
        # passed, failed or "env changed" (a thread, a process or a file left
        # behind: regrtest's warning, which timing alone can raise) say no
        # more than the module's cases, compared above; a crash, a timeout or
        # a module not run is a difference of its own
        if {b, u} <= {"passed", "failed", "env changed"} and mod not in counted_modules:
            notes.append(line)
        else:
            diffs.append(line)
    if a.differing:
        with open(a.differing, "w") as f:
            f.writelines(re.sub(r" \(.*\)$", "", n) + "\n" for n in sorted(set(differing)))
        with open(a.differing + ".modules", "w") as f:
            f.writelines(m + "\n" for m in sorted({module_of(n) for n in differing}))
    for n in notes:
        print("compare: note (not counted): " + n)
    shown = collections.Counter()
    for d in diffs:
        mod = module_of(d.split(" ")[1]) if d.startswith("case ") else None
        shown[mod] += 1
        if mod is None or shown[mod] <= SHOWN_PER_MODULE:
            print("compare: differs: " + d)
    for mod, n in sorted((m, n) for m, n in shown.items() if m is not None and n > SHOWN_PER_MODULE):
        print(f"compare: differs: ... and {n - SHOWN_PER_MODULE} more cases of {mod}")
    ncases = sum(len(v) for v in base.values())
    nfailed = sum(v.count("failed") for v in base.values())
    print(f"compare: {len(base_mod)} modules, {ncases} test cases on {base_name} ({nfailed} failed there), "
          f"{sum(len(v) for v in under.values())} {under_name}: {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
