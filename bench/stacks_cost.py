#!/usr/bin/env python3
"""The cost of the secure build's allocation stacks against AddressSanitizer (Python 3, stdlib only).

Usage (normally through stacks-cost.sh):
    stacks_cost.py [--rounds N] [--rows LIST] [--glibc] [--build DIR] [--asan-build DIR]
                   [--timeout S] [--nice N] [--report-only] OUTDIR LIB

Configurations, on the rows of the mimalloc-bench subset kept in $PEERS (../shared/peers):
  secure         the Release programs built by $PEERS/build.sh, LD_PRELOAD=LIB (the reference)
  secure+stacks  the same with MIMALLOC_SECURE_STACKS=1
  asan           the same programs built with -fsanitize=address -fno-omit-frame-pointer -O2 -g
                 (into --asan-build), no preload, ASAN_OPTIONS=detect_leaks=0
  glibc          (--glibc) the Release programs, no preload

The rows, their arguments, the time metric of each (wall time, or the benchmark's own throughput
figure turned into a time) and the launcher (tools/launch.c: wall time and the child's peak RSS)
are those of $PEERS/tools/mimalloc_bench.py, imported from there; so is its method: one untimed
warm-up run per row and binary, then per round every configuration once per row, the order
rotated by one per round and per row; a ratio is the median over rounds of the per-round ratio to
`secure` (paired), with the min-max of those per-round ratios.

A row is n/a under ASan when its ASan program does not build, or when the warm-up run of it
reports an error ("==PID==ERROR: AddressSanitizer: ..." in its output): its asan runs are then
skipped, and it is listed with the reason. A timed asan run that reports an error is not counted.

Outputs in OUTDIR: records.jsonl (one JSON object per run), meta.json, probe.txt, asan-build.txt,
results.md (the tables, also printed), results.csv.
"""
import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

PEERS = os.environ.get("PEERS", "/work/shared/peers")
sys.path.insert(0, os.path.join(PEERS, "tools"))
sys.dont_write_bytecode = True  # no __pycache__ in the shared peers folder
try:
    import mimalloc_bench as mb  # ROWS, INSENSITIVE, SELF_METRIC, metric(), compile_tools(), probe()
except ImportError as e:
    sys.exit("stacks-cost: cannot import %s/tools/mimalloc_bench.py (%s); set PEERS" % (PEERS, e))

ASAN_CFLAGS = "-fsanitize=address -fno-omit-frame-pointer"
ASAN_OPT = "-O2 -g -DNDEBUG"  # CMAKE_<LANG>_FLAGS_RELEASE: the Release build's -O3 replaced
ASAN_OPTIONS = "detect_leaks=0"
# Rows known not to run under ASan, with the reason (found with gcc 12's ASan; all 21 programs
# build with it). They are insensitive rows, left out by default anyway; with --rows their asan
# configuration is skipped and they are listed as n/a. Other rows whose ASan warm-up reports an
# error are found and listed the same way at run time.
_MISMATCH = ("ASan reports an error: alloc-dealloc-mismatch (operator new [] vs operator delete): "
             "the program frees its `new char[]` objects with `delete` (cache-scratch.cpp:75), "
             "so ASan aborts at the first such free")
NA_ASAN = {"cache-scratch-1t": _MISMATCH, "cache-scratch-2t": _MISMATCH}
REF = "secure"


def die(msg):
    sys.exit("stacks-cost: " + msg)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# the ASan copy of the programs
# ---------------------------------------------------------------------------------------------
def is_asan(exe):
    try:
        with open(exe, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def build_asan(src_dir, asan_dir, targets, jobs, outdir):
    """Configure the bench CMake project with ASan into asan_dir and build the targets that are
    missing, one by one. Returns {target: reason} for those that do not build."""
    os.makedirs(asan_dir, exist_ok=True)
    cc, cxx = os.environ.get("ASAN_CC", os.environ.get("CC", "cc")), \
        os.environ.get("ASAN_CXX", os.environ.get("CXX", "c++"))
    stamp = os.path.join(asan_dir, "ASAN_FLAGS")
    want = "%s | %s | %s | %s" % (cc, cxx, ASAN_CFLAGS, ASAN_OPT)
    cfg = ["cmake", "-S", src_dir, "-B", asan_dir, "-DCMAKE_BUILD_TYPE=Release",
           "-DCMAKE_C_COMPILER=" + cc, "-DCMAKE_CXX_COMPILER=" + cxx,
           "-DCMAKE_C_FLAGS=" + ASAN_CFLAGS, "-DCMAKE_CXX_FLAGS=" + ASAN_CFLAGS,
           "-DCMAKE_C_FLAGS_RELEASE=" + ASAN_OPT, "-DCMAKE_CXX_FLAGS_RELEASE=" + ASAN_OPT,
           "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address"]
    blog = open(os.path.join(outdir, "asan-build.txt"), "a")
    old = open(stamp).read().strip() if os.path.exists(stamp) else None
    if old != want or not os.path.exists(os.path.join(asan_dir, "CMakeCache.txt")):
        if old is not None:  # flags changed: start over
            for t in targets:
                if os.path.exists(os.path.join(asan_dir, t)):
                    os.remove(os.path.join(asan_dir, t))
        log("asan build: configuring %s -> %s" % (src_dir, asan_dir))
        blog.write("$ %s\n" % " ".join(cfg))
        r = subprocess.run(cfg, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        blog.write(r.stdout)
        if r.returncode != 0:
            die("cmake configure of the ASan build failed (%s/asan-build.txt)" % outdir)
        with open(stamp, "w") as f:
            f.write(want + "\n")
    failed = {}
    for t in targets:
        exe = os.path.join(asan_dir, t)
        if is_asan(exe):
            continue
        log("asan build: %s" % t)
        cmd = ["cmake", "--build", asan_dir, "-j", str(jobs), "--target", t]
        blog.write("$ %s\n" % " ".join(cmd))
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        blog.write(r.stdout)
        if r.returncode != 0 or not is_asan(exe):
            errs = [l for l in r.stdout.splitlines() if "error" in l.lower()]
            failed[t] = "does not build with ASan: " + (errs[0].strip() if errs else
                                                        "exit %d" % r.returncode)
    with open(os.path.join(asan_dir, "SOURCE_DIR"), "w") as f:
        f.write(src_dir + "\n")
    blog.close()
    return failed


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------
ASAN_ERR = re.compile(r"^==\d+==ERROR: AddressSanitizer: *(.*)$", re.M)
ASAN_SUMMARY = re.compile(r"^SUMMARY: AddressSanitizer: *(.*)$", re.M)


def base_env():
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "MIMALLOC_SECURE_STACKS", "ASAN_OPTIONS"):
        env.pop(k, None)
    return env


def configs(lib, bench_dir, asan_dir, glibc):
    c = [dict(name="secure", dir=bench_dir, preload=lib, env={}),
         dict(name="secure+stacks", dir=bench_dir, preload=lib, env={"MIMALLOC_SECURE_STACKS": "1"}),
         dict(name="asan", dir=asan_dir, preload="", env={"ASAN_OPTIONS": ASAN_OPTIONS})]
    if glibc:
        c.append(dict(name="glibc", dir=bench_dir, preload="", env={}))
    return c


def run(launch, workdir, timeout, nice, src_dir, row, cfg, rnd, warm=False):
    name, argv, stdin, kind = row
    argv = [a.replace("{src}", src_dir) for a in argv]
    out = os.path.join(workdir, "child.out")
    cmd = ["nice", "-n", str(nice)] if nice else []
    cmd += [launch, "-t", str(timeout), "-p", cfg["preload"], "-o", out]
    if stdin:
        cmd += ["-i", stdin.replace("{src}", src_dir)]
    cmd += ["--", os.path.join(cfg["dir"], argv[0])] + argv[1:]
    env = base_env()
    env.update(cfg["env"])
    load1 = float(open("/proc/loadavg").read().split()[0])
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env)
    f = r.stdout.split()
    if r.returncode != 0 or len(f) != 5:
        die("launcher failed: %s\n%s" % (" ".join(cmd), r.stderr))
    wall, usr, sy, rss, status = float(f[0]), float(f[1]), float(f[2]), int(f[3]), int(f[4])
    with open(out, errors="replace") as fo:
        text = fo.read()
    m = mb.metric(kind, wall, text) if status == 0 else None
    rec = dict(bench=name, config=cfg["name"], round=rnd, warm=warm, wall=wall, user=usr, sys=sy,
               rss_kb=rss, status=status, metric=m, load1=load1, t=t)
    e = ASAN_ERR.search(text)
    if e:
        s = ASAN_SUMMARY.search(text)
        rec["asan_error"] = (s.group(1) if s else e.group(1)).strip()[:200]
        rec["metric"] = m = None
    if m is None:
        rec["tail"] = text[-400:]
    return rec


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------
def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, d=2):
    return "—" if x is None else "%.*f" % (d, x)


def report(outdir, meta):
    names, rows, na = meta["configs"], meta["rows"], dict(meta.get("na_asan", {}))
    with open(os.path.join(outdir, "records.jsonl")) as f:
        recs = [json.loads(l) for l in f if l.strip()]
    timed = [r for r in recs if not r["warm"]]
    data = {}  # (row, config) -> {round: record}
    for r in timed:
        if r["metric"] is not None:
            data.setdefault((r["bench"], r["config"]), {})[r["round"]] = r
    fails = [r for r in timed if r["metric"] is None]
    for r in recs:  # an ASan report in a run, warm-up or timed: the row is n/a under ASan
        if r["config"] == "asan" and r.get("asan_error") and r["bench"] not in na:
            na[r["bench"]] = "ASan reports an error: " + r["asan_error"]
    kinds = {r[0]: r[3] for r in mb.ROWS}

    def paired(b, a, key):
        mine, base = data.get((b, a), {}), data.get((b, REF), {})
        xs = [mine[k][key] / base[k][key] for k in mine if k in base and base[k][key]]
        return (statistics.median(xs), min(xs), max(xs)) if xs else None

    def median(b, a, key):
        xs = [r[key] for r in data.get((b, a), {}).values()]
        return statistics.median(xs) if xs else None

    out = []
    P = out.append
    P("# Allocation stacks vs AddressSanitizer: mimalloc-bench subset")
    P("")
    P("- library: `%s`; programs: `%s` (Release, -O3), ASan copy: `%s` (%s %s, link "
      "-fsanitize=address; ASAN_OPTIONS=%s)" % (meta["lib"], meta["bench_dir"], meta["asan_dir"],
                                                ASAN_CFLAGS, ASAN_OPT, ASAN_OPTIONS))
    if timed:
        t0 = min(r["t"] for r in timed)
        t1 = max(r["t"] + r["wall"] for r in timed)
        la = [r["load1"] for r in timed]
        P("- rounds: %d; runs: %d (+%d warm-up); failed or not counted: %d" %
          (len({r["round"] for r in timed}), len(timed), len(recs) - len(timed), len(fails)))
        P("- window: %s – %s; load average (1 min) at run starts: min %.2f, median %.2f, max %.2f" %
          (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t0)),
           time.strftime("%H:%M:%S", time.localtime(t1)), min(la), statistics.median(la), max(la)))
    for x in fails:
        P("- not counted: %s %s round %s, wait status %s, %s" %
          (x["bench"], x["config"], x["round"], x["status"],
           ("ASan: " + x["asan_error"]) if x.get("asan_error") else
           "output tail %r" % x.get("tail", "")[-160:]))
    P("- each cell: median over rounds of the per-round ratio to **%s** (same round), and in "
      "brackets the min–max of those ratios; < 1 = faster / smaller. Rows marked * use the "
      "benchmark's own throughput figure as a time. The geomeans take the rows where every "
      "configuration has a figure." % REF)
    others = [a for a in names if a != REF]

    def table(title, key, unit, scale, digits):
        P("")
        P("### %s" % title)
        P("")
        P("| row | %s (%s) | " % (REF, unit) + " | ".join(others) + " |")
        P("|---" * (len(others) + 2) + "|")
        ratio = {}
        for b in rows:
            ratio[b] = {a: paired(b, a, key) for a in others}
            star = "*" if key == "metric" and kinds.get(b) in mb.SELF_METRIC else ""
            ref = median(b, REF, key)
            cells = []
            for a in others:
                p = ratio[b][a]
                if p is None:
                    cells.append("n/a" if a == "asan" and b in na else "—")
                elif len(data[(b, a)]) == 1:
                    cells.append(fmt(p[0]))
                else:
                    cells.append("%s [%s–%s]" % (fmt(p[0]), fmt(p[1]), fmt(p[2])))
            P("| %s%s | %s | " % (b, star, fmt(ref * scale if ref is not None else None, digits))
              + " | ".join(cells) + " |")
        full = [b for b in rows if all(ratio[b][a] is not None for a in others)]
        if full:
            g = [geomean([ratio[b][a][0] for b in full]) for a in others]
            P("| **geomean (%d row%s)** | | " % (len(full), "s"[:len(full) - 1]) + " | ".join("**%s**" % fmt(x) for x in g)
              + " |")
        return ratio

    tr = table("Time, ratio to %s" % REF, "metric", "s", 1, 3)
    rr = table("Peak RSS, ratio to %s" % REF, "rss_kb", "MiB", 1 / 1024, 1)
    left = [b for b in mb.ROW_NAMES if b not in rows]
    known = {b: why for b, why in NA_ASAN.items() if b in left} \
        if set(left) <= mb.INSENSITIVE else {}  # with the default rows: say why they would be n/a
    if na or known:
        P("")
        P("### n/a under ASan")
        P("")
        for b, why in na.items():
            P("- %s: %s" % (b, why))
        for b, why in known.items():
            P("- %s (not run here): %s" % (b, why))
    if left:
        P("")
        P("Rows not run: %s%s." % (", ".join(left), " (the allocator-insensitive ones, left out by "
                                   "default; --rows adds them)" if set(left) <= mb.INSENSITIVE
                                   else ""))
    P("")
    text = "\n".join(out) + "\n"
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(outdir, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "config", "rounds", "median_time", "time_metric",
                    "time_ratio", "time_ratio_min", "time_ratio_max", "median_wall_s",
                    "median_peak_rss_kib", "rss_ratio", "rss_ratio_min", "rss_ratio_max", "note"])
        for b in rows:
            for a in names:
                t = tr[b].get(a) or ((1, 1, 1) if a == REF and (b, a) in data else (None,) * 3)
                m = rr[b].get(a) or ((1, 1, 1) if a == REF and (b, a) in data else (None,) * 3)
                w.writerow([b, a, len(data.get((b, a), {})), fmt(median(b, a, "metric"), 4),
                            "wall_s" if kinds.get(b) == "wall" else kinds.get(b)]
                           + [fmt(x, 4) for x in t] + [fmt(median(b, a, "wall"), 4),
                                                       fmt(median(b, a, "rss_kb"), 0)]
                           + [fmt(x, 4) for x in m]
                           + [na[b] if a == "asan" and b in na else ""])
    return text


# ---------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(
        prog="stacks-cost.sh",
        description="Time and peak RSS of the secure library, with MIMALLOC_SECURE_STACKS=1, and "
                    "of ASan-built programs, on the mimalloc-bench subset, interleaved.")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--rows", default="", help="comma-separated rows or families (default: the "
                    "allocator-sensitive rows that run under ASan); all: " + ",".join(mb.ROW_NAMES))
    ap.add_argument("--glibc", action="store_true", help="also run glibc (no preload)")
    ap.add_argument("--build", default=os.environ.get("PEERS_BUILD", "/tmp/peers"),
                    help="build.sh's OUTDIR (default $PEERS_BUILD or /tmp/peers)")
    ap.add_argument("--asan-build", default=os.environ.get("ASAN_BUILD"),
                    help="the ASan copy's build dir (default BUILD/bench-asan)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run (default 300)")
    ap.add_argument("--nice", type=int, default=None,
                    help="niceness of the benchmark processes (default -10 as root, else 0)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "2")),
                    help="build jobs (default $JOBS or 2)")
    ap.add_argument("--report-only", action="store_true",
                    help="only rebuild the tables from OUTDIR/records.jsonl")
    ap.add_argument("outdir")
    ap.add_argument("lib", nargs="?", help="the secure library (libmimalloc-secure.so)")
    o = ap.parse_args()

    outdir = os.path.abspath(o.outdir)
    if o.report_only:
        print(report(outdir, json.load(open(os.path.join(outdir, "meta.json")))), end="")
        return
    if not o.lib:
        ap.error("give LIB, the secure library")
    if o.rounds < 1:
        ap.error("--rounds must be >= 1")
    lib = os.path.abspath(o.lib)
    if not os.path.isfile(lib):
        die("library %s not found" % lib)
    if o.rows:
        rows = mb.select_rows(o.rows)
    else:
        rows = [r for r in mb.ROWS if r[0] not in mb.INSENSITIVE and r[0] not in NA_ASAN]
    build = os.path.abspath(o.build)
    bench_dir = os.path.join(build, "bench")
    asan_dir = os.path.abspath(o.asan_build or os.path.join(build, "bench-asan"))
    try:
        src_dir = open(os.path.join(bench_dir, "SOURCE_DIR")).read().strip()
    except OSError:
        die("%s/SOURCE_DIR not found: run %s/build.sh %s first" % (bench_dir, PEERS, build))
    for r in rows:
        if not os.access(os.path.join(bench_dir, r[1][0]), os.X_OK):
            die("%s/%s missing: run %s/build.sh %s" % (bench_dir, r[1][0], PEERS, build))
    nice = o.nice if o.nice is not None else (-10 if os.geteuid() == 0 else 0)

    os.makedirs(outdir, exist_ok=True)
    workdir = os.path.join(outdir, "work")  # rptest writes files into its working directory
    os.makedirs(workdir, exist_ok=True)
    launch, probe_exe = mb.compile_tools(outdir)

    targets = sorted({r[1][0] for r in rows})
    na = {}
    broken = build_asan(src_dir, asan_dir, targets, o.jobs, outdir)
    for r in rows:
        if r[1][0] in broken:
            na[r[0]] = broken[r[1][0]]
    for r in rows:
        if r[0] in NA_ASAN:
            na.setdefault(r[0], NA_ASAN[r[0]])

    cfgs = configs(lib, bench_dir, asan_dir, o.glibc)
    probe_allocs = [(REF, lib)] + ([("glibc", "")] if o.glibc else [])
    lines, bad = mb.probe(probe_exe, probe_allocs, outdir)
    log("\n".join(lines))
    if bad:
        die("preload check failed for %s (see %s/probe.txt)" % (", ".join(bad), outdir))

    names = [c["name"] for c in cfgs]
    meta = dict(configs=names, lib=lib, rows=[r[0] for r in rows], rounds=o.rounds,
                bench_dir=bench_dir, asan_dir=asan_dir, nice=nice, na_asan=na,
                mimalloc_env={k: v for k, v in os.environ.items() if k.startswith("MIMALLOC_")},
                started=time.strftime("%Y-%m-%d %H:%M:%S"))
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)

    with open(os.path.join(outdir, "records.jsonl"), "w") as fo:
        def go(row, cfg, rnd, warm=False):
            rec = run(launch, workdir, o.timeout, nice, src_dir, row, cfg, rnd, warm)
            fo.write(json.dumps(rec) + "\n")
            fo.flush()
            return rec

        for rnd in range(o.rounds):
            t_round = time.time()
            for bi, row in enumerate(rows):
                if rnd == 0:  # untimed warm-up of both binaries; the ASan one is also the check
                    go(row, cfgs[0], -1, warm=True)
                    if row[0] not in na:
                        w = go(row, cfgs[2], -1, warm=True)
                        if w.get("asan_error"):
                            na[row[0]] = "ASan reports an error: " + w["asan_error"]
                        elif w["metric"] is None:
                            log("note: %s under ASan failed in the warm-up (wait status %d)" %
                                (row[0], w["status"]))
                run_cfgs = [c for c in cfgs if not (c["name"] == "asan" and row[0] in na)]
                k = (rnd + bi) % len(run_cfgs)  # rotate the order by one per round and per row
                cells = []
                for cfg in run_cfgs[k:] + run_cfgs[:k]:
                    rec = go(row, cfg, rnd)
                    cells.append("%s %s" % (cfg["name"], fmt(rec["metric"], 3)
                                            if rec["metric"] is not None else
                                            "FAIL(%d)" % rec["status"]))
                if row[0] in na:
                    cells.append("asan n/a")
                log("round %d/%d %-16s %s" % (rnd + 1, o.rounds, row[0], "  ".join(cells)))
            log("round %d took %.0f s (%s)" % (rnd + 1, time.time() - t_round,
                                               time.strftime("%H:%M:%S")))
    meta["na_asan"] = na
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(report(outdir, meta), end="")
    log("written: %s/results.md, results.csv, records.jsonl" % outdir)


if __name__ == "__main__":
    main()
