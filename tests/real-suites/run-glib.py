#!/usr/bin/env python3
"""GLib's own installed tests (Debian's libglib2.0-tests) run twice, on
glibc's malloc and with LD_PRELOAD of LIB, and compared test case by test
case: any difference fails (docs/real-suites.md).

usage: run-glib.py OUT LIB [PROGRAMS_FILE]

Each program of PROGRAMS_FILE (default glib-programs.txt beside this
script; one a line, '#' comments) runs with --tap in a scratch directory of
its own, two at a time, each under a timeout. Its TAP lines ("ok 3 /hash/misc",
"not ok", "# SKIP") give each case's outcome; a program that exits non-zero,
is killed by a signal or times out also differs as a whole. G_SLICE=always-malloc
in both runs, so that GLib's slices are malloc's blocks too. A case whose
outcome under the library glibc gives too when its program runs again on
glibc (REAL_SUITE_AGAIN times more, default 2, for the programs that
differ) is glibc's flake: a note.
Exits 0 if the runs agree, 1 if they differ, 2 if a run could not be made."""
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TESTS = "/usr/libexec/installed-tests/glib"
TIMEOUT = int(os.environ.get("REAL_SUITE_TIMEOUT", "120"))
# programs at once: many wait on timers and main loops (4: 36 s a run, against 53 s with 2)
JOBS = int(os.environ.get("REAL_SUITE_GLIB_JOBS", "4"))
AGAIN = int(os.environ.get("REAL_SUITE_AGAIN", "2"))  # reruns on glibc of the programs that differ
SHOWN_PER_PROGRAM = 20  # differing cases printed per program (all are counted)
SEED = "--seed=R02S0000002a0000002a0000002a0000002a"  # one seed: the random cases the same in every run
TAP = re.compile(r"^(not ok|ok) \d+ (\S+)(.*)$")


def run_program(prog, env, out_dir, tag):
    """(status, {case: [outcomes]}) of one run of prog"""
    scratch = tempfile.mkdtemp(prefix=f"glib-{prog}-", dir=out_dir)
    e = dict(os.environ, G_SLICE="always-malloc", HOME=scratch, TMPDIR=scratch, XDG_RUNTIME_DIR=scratch,
             G_TEST_SRCDIR=TESTS, G_TEST_BUILDDIR=TESTS, **env)
    for k in ("DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY"):
        e.pop(k, None)
    log = os.path.join(out_dir, f"{tag}.{prog}.log")
    with open(log, "wb") as f:
        p = subprocess.Popen([os.path.join(TESTS, prog), "--tap", SEED], cwd=scratch, env=e, stdout=f,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = p.wait(timeout=TIMEOUT)
            status = "exit 0" if rc == 0 else (f"killed by {signal.Signals(-rc).name}" if rc < 0 else "exit non-zero")
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            status = "timed out"
    shutil.rmtree(scratch, ignore_errors=True)
    cases = {}
    with open(log, errors="replace") as f:
        for line in f:
            m = TAP.match(line.rstrip("\n"))
            if not m:
                continue
            outcome = "passed" if m.group(1) == "ok" else "failed"
            if "# SKIP" in m.group(3):
                outcome = "skipped"
            elif "# TODO" in m.group(3):
                outcome = "todo-" + outcome
            cases.setdefault(m.group(2), []).append(outcome)
    return status, cases


def run_all(progs, env, out_dir, tag):
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        results = dict(zip(progs, ex.map(lambda p: run_program(p, env, out_dir, tag), progs)))
    print(f"real-suite: glib {tag} run: {len(progs)} programs, "
          f"{sum(len(c) for _, cs in results.values() for c in cs.values())} cases, {time.time() - t0:.0f} s")
    return results


def differences(base, under, again):
    diffs, notes = [], []
    for prog in base:
        (bs, bc), (us, uc) = base[prog], under[prog]
        for case in sorted(set(bc) | set(uc)):
            b, u = sorted(bc.get(case, [])), sorted(uc.get(case, []))
            if b == u:
                continue
            line = f"{prog} {case}: {', '.join(b) or 'missing'} on glibc, {', '.join(u) or 'missing'} under the library"
            if any(sorted(a[prog][1].get(case, [])) == u for a in again if prog in a):
                notes.append(line + " (glibc gave it too when run again: flaky there)")
            else:
                diffs.append(line)
        if bs != us:
            line = f"{prog}: {bs} on glibc, {us} under the library"
            if any(a[prog][0] == us for a in again if prog in a):
                notes.append(line + " (glibc too when run again)")
            else:
                diffs.append(line)
    return diffs, notes


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    out_dir, lib = os.path.abspath(argv[0]), os.path.realpath(argv[1])
    listing = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                         "glib-programs.txt")
    progs = [l.strip() for l in open(listing) if l.strip() and not l.startswith("#")]
    missing = [p for p in progs if not os.access(os.path.join(TESTS, p), os.X_OK)]
    if missing or not os.path.isfile(lib):
        print(f"real-suite: glib: missing {missing or lib} (libglib2.0-tests installed?)")
        return 2
    os.makedirs(out_dir, exist_ok=True)
    base = run_all(progs, {}, out_dir, "glibc")
    under = run_all(progs, {"LD_PRELOAD": lib}, out_dir, "preloaded")
    diffs, _ = differences(base, under, [])
    again = []
    if diffs and AGAIN > 0:
        redo = sorted({d.split(" ")[0].rstrip(":") for d in diffs})
        again = [run_all(redo, {}, out_dir, f"glibc-again{i}") for i in range(1, AGAIN + 1)]
        diffs, notes = differences(base, under, again)
        for n in notes:
            print("compare: note (not counted): glib " + n)
    shown = {}
    for d in diffs:
        prog = d.split(" ")[0].rstrip(":")
        shown[prog] = shown.get(prog, 0) + 1
        if shown[prog] <= SHOWN_PER_PROGRAM or not d.split(" ")[1].startswith("/"):
            print("compare: differs: glib " + d)
    for prog, n in sorted(shown.items()):
        if n > SHOWN_PER_PROGRAM + 1:
            print(f"compare: differs: glib ... {prog}: {n} differences in all")
    ncases = sum(len(c) for _, cs in base.values() for c in cs.values())
    nfailed = sum(c.count("failed") for _, cs in base.values() for c in cs.values())
    print(f"compare: glib: {len(progs)} programs, {ncases} test cases on glibc ({nfailed} failed there): "
          f"{len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
