#!/usr/bin/env python3
"""Compare two runs of one test suite, test case by test case.

usage: compare-junit.py BASE.xml BASE.log UNDER.xml UNDER.log [--base NAME] [--under NAME]

BASE is the reference run (glibc's malloc), UNDER the same run with the
library preloaded. Each XML is a JUnit-style report (CPython's regrtest
--junit-xml); each log is regrtest's own output, whose per-module lines
("[ 3/40] test_dict passed", "test_x crashed (Exit code -6)") tell a module
that left no test cases (it crashed or timed out before reporting).

A test case's outcome is one of passed, failed (error or failure), skipped,
expected-failure, unexpected-success; a case present in one run only is
"missing" in the other. Every case whose outcome differs is a difference, and
so is every module whose closing status differs in kind (passed, failed,
crashed, timed out, skipped): a case that fails in both runs is none. Prints
each difference and one closing line; exits 1 if there is any, 2 if either
run reported no test case at all (a run that never started)."""
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
    for kind in ("crashed", "timed out", "failed", "skipped", "resource denied", "passed", "did not run",
                 "interrupted", "uncaught exception"):
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


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    names = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    base_name, under_name = names.get("base", "glibc"), names.get("under", "preloaded")
    if len(args) != 4:
        print(__doc__)
        return 2
    base, under = read_cases(args[0]), read_cases(args[2])
    base_mod, under_mod = read_modules(args[1]), read_modules(args[3])
    if not base or not under:
        print(f"compare: no test case in {'the ' + base_name if not base else 'the ' + under_name} run")
        return 2
    diffs = []
    for name in sorted(set(base) | set(under)):
        b, u = sorted(base.get(name, [])), sorted(under.get(name, []))
        if b == u:
            continue
        width = max(len(b), len(u))
        b += ["missing"] * (width - len(b))
        u += ["missing"] * (width - len(u))
        diffs.append(f"case {name}: {', '.join(b)} on {base_name}, {', '.join(u)} {under_name}")
    for mod in sorted(set(base_mod) | set(under_mod)):
        b, u = base_mod.get(mod, "not run"), under_mod.get(mod, "not run")
        if b != u:
            diffs.append(f"module {mod}: {b} on {base_name}, {u} {under_name}")
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
    print(f"compare: {len(base_mod)} modules, {ncases} test cases on {base_name} ({nfailed} failed there too), "
          f"{sum(len(v) for v in under.values())} {under_name}: {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
