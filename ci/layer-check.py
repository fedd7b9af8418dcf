#!/usr/bin/env python3
"""Layer check of src/ (ci/lint.sh, docs/lint.md): every file of src/ has a
layer in ci/layers.txt, and includes no header of a higher layer but the
allowed ones listed there.

  ci/layer-check.py                 check every file of src/ (git ls-files)
  ci/layer-check.py --as PATH FILE  check FILE as if it were at PATH (the
                                    control: a planted inclusion upwards)

A finding is one line: "layer: FILE: includes HEADER (NAME, rank R) from
NAME (rank R)". Exit 1 if there is any."""
import fnmatch, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def load_table():
    ranks, allowed = [], {}
    for line in open(os.path.join(ROOT, "ci", "layers.txt")):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "allow":
            allowed[(words[1], words[2])] = " ".join(words[3:])
        else:
            ranks.append((int(words[0]), words[1], words[2:]))
    return ranks, allowed


def layer_of(path, ranks):
    for rank, name, patterns in ranks:
        if any(fnmatch.fnmatchcase(path, p) for p in patterns):
            return rank, name
    return None


def check(path, text, ranks, allowed, findings):
    mine = layer_of(path, ranks)
    if mine is None:
        findings.append("layer: %s: in no layer (add it to ci/layers.txt)" % path)
        return
    for inc in INCLUDE.findall(text):
        target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
        if not target.startswith("src/"):
            continue  # include/, the public headers
        theirs = layer_of(target, ranks)
        if theirs is None or theirs[0] <= mine[0] or (path, target) in allowed:
            continue
        findings.append("layer: %s: includes %s (%s, rank %d) from %s (rank %d)" %
                        (path, target, theirs[1], theirs[0], mine[1], mine[0]))


def main():
    ranks, allowed = load_table()
    findings = []
    if len(sys.argv) == 4 and sys.argv[1] == "--as":
        check(sys.argv[2], open(sys.argv[3]).read(), ranks, allowed, findings)
    else:
        files = subprocess.run(["git", "ls-files", "src/*.c", "src/*.h"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.split()
        for f in files:
            check(f, open(os.path.join(ROOT, f)).read(), ranks, allowed, findings)
        used = {(f, t) for (f, t) in allowed if any(
            os.path.normpath(os.path.join(os.path.dirname(f), i)) == t
            for i in INCLUDE.findall(open(os.path.join(ROOT, f)).read()))}
        for stale in sorted(set(allowed) - used):
            findings.append("layer: ci/layers.txt: allows %s to include %s, which it does not (remove the line)" % stale)
        if not findings:
            print("layer check: %d files, each including only its own layer and those below (%d allowed exceptions)" %
                  (len(files), len(allowed)))
    for f in findings:
        print(f)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
