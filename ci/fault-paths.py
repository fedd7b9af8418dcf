#!/usr/bin/env python3
"""List every failure path of the OS layer and its callers, and whether the
fault tests executed it.

A failure path is a source line that runs only when a primitive call (or
what is built on one) has failed: lines marked with the comment
`/* fault path */`, and lines that record a fault event (`mi_fault_event(`).
Execution counts come from gcovr JSON reports (one per coverage build;
counts are added up across them).

Paths that only a Windows build takes (everything in src/prim/windows, and
lines marked `/* fault path: Windows */`, such as the placement of aligned
ranges where a reservation cannot be released in parts) are listed apart:
the coverage builds here are POSIX ones. The Windows job (ci/windows.sh)
runs the fault sweeps under Wine instead.

Usage: fault-paths.py ROOT REPORT.json... [--require-all]
Prints one line per path and a summary "fault paths: X of Y executed";
with --require-all, exits 1 unless every POSIX path was executed.
"""
import json
import os
import sys


def failure_paths(root):
    paths = []
    src = os.path.join(root, "src")
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(".c"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if rel == os.path.join("src", "prim", "fault.c"):
                continue  # the injection machinery itself
            with open(path) as f:
                for number, text in enumerate(f, 1):
                    if "/* fault path" in text or "mi_fault_event(" in text:
                        paths.append((rel, number, text.strip()))
    return sorted(paths)


def line_counts(reports):
    counts = {}
    for report in reports:
        with open(report) as f:
            data = json.load(f)
        for entry in data.get("files", []):
            rel = os.path.normpath(entry["file"])
            for line in entry.get("lines", []):
                key = (rel, line["line_number"])
                counts[key] = counts.get(key, 0) + line.get("count", 0)
    return counts


def windows_only(rel, text):
    return rel.startswith(os.path.join("src", "prim", "windows")) or "/* fault path: Windows */" in text


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    require_all = "--require-all" in sys.argv
    if len(args) < 2:
        print(__doc__)
        return 2
    root, reports = args[0], args[1:]
    counts = line_counts(reports)
    paths = failure_paths(root)
    windows = [p for p in paths if windows_only(p[0], p[2])]
    paths = [p for p in paths if not windows_only(p[0], p[2])]
    executed = 0
    for rel, number, text in paths:
        count = counts.get((rel, number))
        if count is None:
            state = "no data"
        elif count > 0:
            state = "executed %d" % count
            executed += 1
        else:
            state = "NOT EXECUTED"
        print("%-28s %-16s %s" % ("%s:%d" % (rel, number), state, text[:90]))
    for rel, number, text in windows:
        print("%-28s %-16s %s" % ("%s:%d" % (rel, number), "Windows only", text[:90]))
    print("fault paths: %d of %d executed (%d more in Windows-only code)" % (executed, len(paths), len(windows)))
    if require_all and executed < len(paths):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
