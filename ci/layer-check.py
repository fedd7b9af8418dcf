#!/usr/bin/env python3
"""Layer check of src/ (ci/lint.sh, docs/lint.md): every file of src/ has a
layer in ci/layers.txt, includes no header of a higher layer, and (with
--calls) calls no function and uses no variable of a file of a higher layer,
but the allowed ones listed there.

  ci/layer-check.py                 check every file of src/ (git ls-files)
  ci/layer-check.py --as PATH FILE  check FILE as if it were at PATH (the
                                    control: a planted inclusion upwards)
  ci/layer-check.py --calls BUILD... [--as PATH OBJ]
                                    read `nm` of the static library's objects
                                    of each CMake build tree BUILD (the file
                                    of each defined symbol, the symbols each
                                    file uses) and check every link between
                                    two files; with --as, OBJ's undefined
                                    symbols are counted as PATH's (the controls:
                                    a planted call upwards, a planted cycle)

An include finding is one line: "layer: FILE: includes HEADER (NAME, rank R)
from NAME (rank R)"; a call finding: "call: FILE -> TARGET (NAME, rank R) from
NAME (rank R): SYMBOL...", or for folders that call each other (even of one
rank): "call: folders in a cycle: FOLDER...: A -> B N, ...; the A -> B links:
FILE -> FILE: SYMBOL...; ...". Exit 1 if there is any."""
import fnmatch, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
OBJECTS = os.path.join("CMakeFiles", "mimalloc-static.dir")  # in a build tree: OBJECTS/src/.../x.c.o


def load_table():
    ranks, allowed, calls = [], {}, []
    for line in open(os.path.join(ROOT, "ci", "layers.txt")):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] == "allow":
            allowed[(words[1], words[2])] = " ".join(words[3:])
        elif words[0] == "allow-call":
            calls.append((words[1], words[2], " ".join(words[3:])))
        else:
            ranks.append((int(words[0]), words[1], words[2:]))
    return ranks, allowed, calls


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


def includes_main(argv):
    ranks, allowed, _ = load_table()
    findings = []
    if len(argv) == 3 and argv[0] == "--as":
        check(argv[1], open(argv[2]).read(), ranks, allowed, findings)
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


# ---- calls ------------------------------------------------------------------------

def nm(obj):
    """(defined, used): the global symbols OBJ defines and those it leaves
    undefined, from `nm -P` (lower-case types but u and i are local)."""
    defined, used = set(), set()
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        words = line.split()
        if len(words) < 2:
            continue
        name, kind = words[0], words[1]
        if kind in "Uwv":
            used.add(name)
        elif kind.isupper() or kind in "ui":
            defined.add(name)
    return defined, used


def read_build(build, findings):
    """{source file: (defined, used)} of BUILD's static library objects."""
    top = os.path.join(build, OBJECTS)
    files = {}
    for d, _, names in os.walk(top):
        for n in names:
            if n.endswith(".o"):
                src = os.path.relpath(os.path.join(d, n), top)[:-2]
                if not os.path.isfile(os.path.join(ROOT, src)):
                    findings.append("call: %s: object of no source file of the tree" % os.path.join(d, n))
                    continue
                files[src] = nm(os.path.join(d, n))
    if not files:
        findings.append("call: %s: no objects under %s (build the mimalloc-static target)" % (build, top))
    return files


def links_of(files):
    """{(file, target file): symbols}: each undefined symbol of a file, by the
    file that defines it."""
    owner = {}
    for f, (defined, _) in sorted(files.items()):
        for s in defined:
            owner.setdefault(s, f)
    links = {}
    for f, (_, used) in files.items():
        for s in used:
            t = owner.get(s)
            if t is not None and t != f:
                links.setdefault((f, t), set()).add(s)
    return links


def folder(path):
    return path.split("/")[1] if path.count("/") >= 2 else "src"


def components(nodes, edges):
    """The strongly connected components of the graph (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(out, key=lambda c: (-len(c), c))


def calls_main(argv):
    plant = None
    if len(argv) >= 3 and argv[-3] == "--as":
        plant, argv = (argv[-2], argv[-1]), argv[:-3]
    ranks, _, allowed = load_table()
    findings, links, objects = [], {}, 0
    for build in argv:
        files = read_build(build, findings)
        objects += len(files)
        if plant is not None and files:
            defined, used = files.get(plant[0], (set(), set()))
            files[plant[0]] = (defined, used | nm(plant[1])[1])
        for k, syms in links_of(files).items():
            links.setdefault(k, set()).update(syms)
    used_lines, upward, why_count = set(), [], {}
    for (f, t), syms in sorted(links.items()):
        mine, theirs = layer_of(f, ranks), layer_of(t, ranks)
        for p, l in ((f, mine), (t, theirs)):
            if l is None:
                findings.append("call: %s: in no layer (add it to ci/layers.txt)" % p)
        if mine is None or theirs is None or theirs[0] <= mine[0]:
            continue
        bad, reasons = [], set()
        for s in sorted(syms):
            by = [i for i, (af, at, _) in enumerate(allowed) if fnmatch.fnmatchcase(f, af) and (
                fnmatch.fnmatchcase(t, at) if at.startswith("src/") else at == s)]
            used_lines.update(by)
            reasons.update(allowed[i][2] for i in by)
            if not by:
                bad.append(s)
        line = "%s -> %s (%s, rank %d) from %s (rank %d): %s" % (f, t, theirs[1], theirs[0], mine[1], mine[0],
                                                               " ".join(sorted(syms)))
        upward.append(line + ("" if bad else "  [allowed]"))
        if bad:
            findings.append("call: %s -> %s (%s, rank %d) from %s (rank %d): %s" %
                            (f, t, theirs[1], theirs[0], mine[1], mine[0], " ".join(bad)))
        else:
            for r in reasons:
                why_count[r] = why_count.get(r, 0) + 1
    for i, (af, at, _) in enumerate(allowed):
        if i not in used_lines:
            findings.append("call: ci/layers.txt: allows %s to call %s, which it does not (remove the line)" % (af, at))
    print("call check: %d objects of %d builds, %d links between files, %d of them upward (%d allowed, %d not)" %
          (objects, len(argv), len(links), len(upward), len(upward) - sum(1 for u in upward if not u.endswith("]")),
           sum(1 for u in upward if not u.endswith("]"))))
    for why in sorted(why_count):
        print("  allowed %3d: %s" % (why_count[why], why))
    print("upward links (file -> file: symbols):")
    for u in upward:
        print("  " + u)
    edges = {}
    for (f, t) in links:
        if folder(f) != folder(t):
            edges.setdefault(folder(f), set()).add(folder(t))
    nodes = {folder(f) for k in links for f in k}
    comps = components(nodes, edges)
    print("folders by calls: %d folders, %d in cycles; strongly connected components:" %
          (len(nodes), sum(len(c) for c in comps if len(c) > 1)))
    for c in comps:
        print("  %s" % " ".join(c))
        if len(c) > 1:
            # a cycle of folders, even of one rank (api/ and secure/ call one
            # way): each pair of its folders with its count of links, and the
            # links of the rarest pair, the likeliest to close it
            pairs = {}
            for (f, t), syms in sorted(links.items()):
                if folder(f) in c and folder(t) in c and folder(f) != folder(t):
                    pairs.setdefault((folder(f), folder(t)), []).append("%s -> %s: %s" % (f, t, " ".join(sorted(syms))))
            rare = min(pairs, key=lambda k: (len(pairs[k]), k))
            findings.append("call: folders in a cycle: %s: %s; the %s -> %s links: %s" % (
                " ".join(c), ", ".join("%s -> %s %d" % (a, b, len(v)) for (a, b), v in sorted(pairs.items())),
                rare[0], rare[1], "; ".join(pairs[rare])))
    for f in findings:
        print(f)
    return 1 if findings else 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--calls":
        return calls_main(sys.argv[2:])
    return includes_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
