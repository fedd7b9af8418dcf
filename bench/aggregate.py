#!/usr/bin/env python3
"""Aggregate the raw measurements written by bench/run.sh (python3 stdlib only).

usage: aggregate.py --raw RESULTS/raw --out RESULTS

Reads   raw/times.csv       workload,threads,allocator,run,wall_s,maxrss_kb,status
        raw/idle.csv        allocator,run,t_ms,rss_kb          (workload 8)
        raw/allocators.csv  allocator,state,library,note
        raw/meta.txt        key=value lines
Writes  latest.csv          workload,threads,allocator,median_s,min_s,max_s,peak_rss_kb
        latest.md           Markdown report
        rss-after-idle.csv  allocator,threads,runs,before_free_kb,rss_0ms_kb,rss_100ms_kb,rss_1000ms_kb,rss_5000ms_kb
        scaling-<workload>.png, rss-after-idle.png   (if gnuplot is installed)

Only successful runs (status 0) count. median/min/max are over the runs of one
(workload, threads, allocator); peak_rss_kb is the median over those runs of
the child's ru_maxrss. Configurations where every run failed are left out of
latest.csv and listed as FAILED in latest.md.

The pseudo-allocator `zero-floor` (bench/zero_floor.c) is the time that zeroing
the blocks the secure build zeroes on free takes alone, and `fence-floor` that
zeroing with the fence of the freed large blocks (zero_floor -F); they are rows
of latest.csv like the others and are set against `ours-secure` in latest.md's
table of the secure build's cost, not in the per-workload tables.
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys

ALLOCATORS = ["glibc", "jemalloc", "tcmalloc", "mimalloc-2.0.9", "mimalloc-2.4.1", "mimalloc-3.4.3", "scudo", "ours",
              "ours-secure", "zero-floor", "fence-floor"]
# the ratio column's reference: the current peer when it ran, else Debian's (2022)
MIMALLOC_REFERENCES = ["mimalloc-2.4.1", "mimalloc-2.0.9"]
FLOOR = "zero-floor"
FENCE_FLOOR = "fence-floor"
FLOORS = (FLOOR, FENCE_FLOOR)
# issue 18: (ours-secure - zero-floor) / ours at most this, and ours-secure faster than scudo
SECURE_TARGET = 2.5
WORKLOADS = ["churn", "xthread", "falseshare", "randsizes", "realloc", "large", "shortthreads"]
DESCRIPTION = {
    "churn": "w1: single-thread small-object churn (cfrac/espresso-like)",
    "xthread": "w2: cross-thread free, producer/consumer ring (larson/xmalloc-like)",
    "falseshare": "w3: allocator-induced false sharing (cache-scratch-like)",
    "randsizes": "w4: random sizes 8 B..1 MiB, log-skewed (alloc-test/mstress-like)",
    "realloc": "w5: realloc growth of buffers",
    "large": "w6: large and huge blocks 64 KiB..64 MiB",
    "shortthreads": "w7: thousands of short-lived threads (threads = concurrency)",
}
IDLE_TIMES = [-1, 0, 100, 1000, 5000]
IDLE_LABELS = ["before free", "0 ms", "100 ms", "1 s", "5 s"]
# fixed gnuplot line styles so an allocator keeps its colour in every chart
STYLE = {
    "glibc": "lc rgb '#555555' lw 2 pt 7",
    "jemalloc": "lc rgb '#009e73' lw 2 pt 5",
    "tcmalloc": "lc rgb '#0072b2' lw 2 pt 9",
    "mimalloc-2.0.9": "lc rgb '#e6c060' lw 2 dt 2 pt 11",
    "mimalloc-2.4.1": "lc rgb '#e69f00' lw 2 pt 11",
    "mimalloc-3.4.3": "lc rgb '#b35900' lw 2 pt 12",
    "scudo": "lc rgb '#9400d3' lw 2 pt 13",
    "ours": "lc rgb '#d50000' lw 3 pt 7",
    "ours-secure": "lc rgb '#8b0000' lw 3 dt 2 pt 6",
    "zero-floor": "lc rgb '#999999' lw 2 dt 3 pt 1",
    "fence-floor": "lc rgb '#666666' lw 2 dt 4 pt 2",
}


def order_key(name, order):
    return (order.index(name) if name in order else len(order), name)


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_meta(path):
    meta = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k] = v
    return meta


def read_allocators(path):
    rows = []
    if os.path.exists(path):
        with open(path, newline="") as f:
            for r in csv.reader(f):
                if len(r) >= 4:
                    rows.append({"allocator": r[0], "state": r[1], "library": r[2], "note": r[3]})
    return rows


def fmt_s(x):
    return f"{x:.3f}" if x < 10 else f"{x:.2f}"


def fmt_ratio(x):
    return f"{x:.2f}×"


def fmt_mb(kb):
    return f"{kb / 1024:.1f}"


def aggregate_times(rows):
    groups, failed = {}, {}
    for r in rows:
        key = (r["workload"], int(r["threads"]), r["allocator"])
        if r["status"] == "0":
            groups.setdefault(key, []).append((float(r["wall_s"]), int(r["maxrss_kb"])))
        else:
            failed.setdefault(key, []).append(r["status"])
    stats = {}
    for key, runs in groups.items():
        times = [t for t, _ in runs]
        rss = [m for _, m in runs]
        stats[key] = {
            "median": statistics.median(times),
            "min": min(times),
            "max": max(times),
            "rss": int(statistics.median(rss)),
            "n": len(runs),
        }
    return stats, failed


def sorted_keys(keys):
    return sorted(keys, key=lambda k: (order_key(k[0], WORKLOADS), k[1], order_key(k[2], ALLOCATORS)))


def write_latest_csv(path, stats):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["workload", "threads", "allocator", "median_s", "min_s", "max_s", "peak_rss_kb"])
        for k in sorted_keys(stats.keys()):
            s = stats[k]
            w.writerow([k[0], k[1], k[2], f"{s['median']:.6f}", f"{s['min']:.6f}", f"{s['max']:.6f}", s["rss"]])


def aggregate_idle(rows):
    per = {}
    for r in rows:
        per.setdefault(r["allocator"], {}).setdefault(int(r["t_ms"]), []).append(int(r["rss_kb"]))
    out = {}
    for a, by_t in per.items():
        runs = max(len(v) for v in by_t.values())
        out[a] = {"runs": runs}
        for t in IDLE_TIMES:
            v = by_t.get(t)
            out[a][t] = int(statistics.median(v)) if v else None
    return out


def write_idle_csv(path, idle, threads):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["allocator", "threads", "runs", "before_free_kb", "rss_0ms_kb", "rss_100ms_kb",
                    "rss_1000ms_kb", "rss_5000ms_kb"])
        for a in sorted(idle, key=lambda a: order_key(a, ALLOCATORS)):
            d = idle[a]
            w.writerow([a, threads, d["runs"]] + ["" if d[t] is None else d[t] for t in IDLE_TIMES])


def secure_cost_lines(stats, meta):
    """The secure build against the default build, its zeroing floor and scudo."""
    keys = sorted({(k[0], k[1]) for k in stats if k[2] == "ours-secure"},
                  key=lambda k: (order_key(k[0], WORKLOADS), k[1]))
    if not keys:
        return []
    L = ["## The secure build's cost", "",
         "Per workload and thread count, medians in seconds: `ours`, `ours-secure`, and `zero-floor`, "
         "the time that zeroing the blocks the secure build zeroes on free in that run takes alone "
         "(`zero_floor.c`, measured in the same rounds; README, \"The floor of zero on free\"). "
         f"Targets (issue 18): `(secure − floor) ÷ ours` at most {SECURE_TARGET:g}×, `secure ÷ scudo` below 1×. "
         "`fence-floor`: that zeroing and the fence the secure build puts on each freed large block "
         "(two `mprotect` calls), also with no allocator (`zero_floor -F`); "
         "`(secure − fence floor) ÷ ours` is the ratio with both subtracted.",
         ""]
    if meta.get("mode") == "smoke":
        L += ["At smoke scale process start-up dominates every time: the ratios mean nothing.", ""]
    L += ["| workload | threads | ours s | ours-secure s | zero-floor s | fence-floor s | secure ÷ ours | "
          "(secure − floor) ÷ ours | (secure − fence floor) ÷ ours | secure ÷ scudo | targets |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    worst_adj = worst_scudo = None
    for wl, t in keys:
        sec = stats[(wl, t, "ours-secure")]["median"]
        ours, floor, fence, scudo = (stats.get((wl, t, a)) for a in ("ours", FLOOR, FENCE_FLOOR, "scudo"))
        cells, missed = [], []
        cells.append(fmt_s(ours["median"]) if ours else "–")
        cells.append(fmt_s(sec))
        cells.append(fmt_s(floor["median"]) if floor else "–")
        cells.append(fmt_s(fence["median"]) if fence else "–")
        cells.append(fmt_ratio(sec / ours["median"]) if ours and ours["median"] > 0 else "–")
        if ours and floor and ours["median"] > 0:
            adj = (sec - floor["median"]) / ours["median"]
            cells.append(fmt_ratio(adj))
            worst_adj = adj if worst_adj is None else max(worst_adj, adj)
            if adj > SECURE_TARGET:
                missed.append(f"over {SECURE_TARGET:g}×")
        else:
            cells.append("–")
        if ours and fence and ours["median"] > 0:
            cells.append(fmt_ratio((sec - fence["median"]) / ours["median"]))
        else:
            cells.append("–")
        if scudo and scudo["median"] > 0:
            rs = sec / scudo["median"]
            cells.append(fmt_ratio(rs))
            worst_scudo = rs if worst_scudo is None else max(worst_scudo, rs)
            if rs >= 1:
                missed.append("not below scudo")
        else:
            cells.append("–")
        cells.append(", ".join(missed) if missed else "met")
        L.append(f"| {wl} | {t} | " + " | ".join(cells) + " |")
    L.append("")
    if worst_adj is not None or worst_scudo is not None:
        parts = []
        if worst_adj is not None:
            parts.append(f"worst `(secure − floor) ÷ ours` {fmt_ratio(worst_adj)}")
        if worst_scudo is not None:
            parts.append(f"worst `secure ÷ scudo` {fmt_ratio(worst_scudo)}")
        L += ["; ".join(parts) + ".", ""]
    return L


def write_markdown(path, stats, failed, idle, meta, allocs, plots):
    L = []
    L.append("# mimalloc-pprof benchmark results")
    L.append("")
    L.append(f"Mode `--{meta.get('mode', '?')}`: {meta.get('runs', '?')} run(s) per point, "
             f"scale {meta.get('scale', '?')}; {meta.get('date', '')}; "
             f"{meta.get('cpu', '?')}, {meta.get('cores', '?')} cores, Linux {meta.get('kernel', '?')}, "
             f"glibc {meta.get('glibc', '?')}; commit `{meta.get('commit', '?')}`; "
             f"suite took {meta.get('elapsed_s', '?')} s.")
    if meta.get("mode") == "smoke":
        L.append("")
        L.append("**Smoke run**: tiny scale, single runs. These numbers only prove the suite works; "
                 "do not compare allocators with them.")
    L.append("")
    ref = next((r for r in MIMALLOC_REFERENCES if any(k[2] == r for k in stats)), MIMALLOC_REFERENCES[0])
    L.append("Times are wall-clock seconds of the whole process (median of the runs, runs interleaved "
             f"round-robin across allocators). `×{ref}` / `×glibc`: median time divided by that "
             "allocator's median for the same workload and thread count (lower is better). "
             "`min–max`: spread over the runs. `RSS`: peak resident set (ru_maxrss, median over runs), MB. "
             "Multi-threaded workloads divide a fixed total amount of work among the threads; "
             "the machine has "
             f"{meta.get('cores', '?')} cores.")
    L.append("")
    L.append("## Allocators")
    L.append("")
    L.append("| allocator | state | library | note |")
    L.append("|---|---|---|---|")
    for a in allocs:
        lib = f"`{a['library']}`" if a["library"] else ("(no preload: libc.so.6)" if a["allocator"] == "glibc" else "–")
        L.append(f"| {a['allocator']} | {a['state']} | {lib} | {a['note']} |")
    L.append("")
    L += secure_cost_lines(stats, meta)

    by_wl = {}
    for k in set(stats) | set(failed):
        by_wl.setdefault(k[0], set()).add(k)
    for wl in sorted(by_wl, key=lambda w: order_key(w, WORKLOADS)):
        L.append(f"## {wl}")
        L.append("")
        L.append(DESCRIPTION.get(wl, ""))
        L.append("")
        L.append(f"| threads | allocator | median s | ×{ref} | ×glibc | min–max s | RSS MB |")
        L.append("|---:|---|---:|---:|---:|---:|---:|")
        for k in sorted_keys(by_wl[wl]):
            _, t, a = k
            if a in FLOORS and k in stats:
                continue  # in the table of the secure build's cost
            if k not in stats:
                L.append(f"| {t} | {a} | FAILED ({', '.join(failed[k])}) | | | | |")
                continue
            s = stats[k]
            mi = stats.get((wl, t, ref))
            gl = stats.get((wl, t, "glibc"))
            rm = fmt_ratio(s["median"] / mi["median"]) if mi and mi["median"] > 0 else "–"
            rg = fmt_ratio(s["median"] / gl["median"]) if gl and gl["median"] > 0 else "–"
            nfail = len(failed.get(k, []))
            note = f" ({nfail} failed)" if nfail else ""
            L.append(f"| {t} | {a} | {fmt_s(s['median'])}{note} | {rm} | {rg} | "
                     f"{fmt_s(s['min'])}–{fmt_s(s['max'])} | {fmt_mb(s['rss'])} |")
        if f"scaling-{wl}.png" in plots:
            L.append("")
            L.append(f"![{wl} thread scaling](scaling-{wl}.png)")
        L.append("")

    if idle:
        L.append("## idle_rss: memory returned after idle")
        L.append("")
        L.append(f"w8: {meta.get('idle_threads', '2')} threads allocate ~"
                 f"{round(300 * float(meta.get('idle_scale', '1')))} MB, free it all, then block without "
                 "allocator calls; RSS (MB, median of "
                 f"{meta.get('idle_runs', '1')} run(s)) sampled from /proc/self/statm before the free and "
                 "0 ms / 100 ms / 1 s / 5 s after it.")
        L.append("")
        L.append("| allocator | " + " | ".join(IDLE_LABELS) + " | returned after 5 s |")
        L.append("|---|" + "---:|" * (len(IDLE_LABELS) + 1))
        for a in sorted(idle, key=lambda a: order_key(a, ALLOCATORS)):
            d = idle[a]
            cells = ["–" if d[t] is None else fmt_mb(d[t]) for t in IDLE_TIMES]
            ret = "–"
            if d[-1] and d[5000] is not None:
                ret = f"{100.0 * (d[-1] - d[5000]) / d[-1]:.0f}%"
            L.append(f"| {a} | " + " | ".join(cells) + f" | {ret} |")
        if "rss-after-idle.png" in plots:
            L.append("")
            L.append("![RSS after idle](rss-after-idle.png)")
        L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def gnuplot_terminal(gp):
    r = subprocess.run([gp, "-e", "set terminal pngcairo"], capture_output=True, text=True)
    if r.returncode == 0 and "unknown" not in r.stderr.lower():
        return "pngcairo size 900,560 font ',10'"
    return "png size 900,560"


def gp_quote(s):
    return "'" + s.replace("'", "''") + "'"


def make_plots(out_dir, raw_dir, stats, idle):
    gp = shutil.which("gnuplot")
    if not gp:
        print("aggregate: gnuplot not found, no plots", file=sys.stderr)
        return []
    term = gnuplot_terminal(gp)
    plot_dir = os.path.join(raw_dir, "plot")
    os.makedirs(plot_dir, exist_ok=True)
    made = []
    for f in os.listdir(out_dir):  # drop stale plots from earlier runs
        if f.endswith(".png") and (f.startswith("scaling-") or f == "rss-after-idle.png"):
            os.remove(os.path.join(out_dir, f))

    wls = sorted({k[0] for k in stats}, key=lambda w: order_key(w, WORKLOADS))
    for wl in wls:
        threads = sorted({k[1] for k in stats if k[0] == wl})
        if len(threads) < 2:
            continue
        # the floors are no allocators (and may be 0, which a log axis cannot show)
        allocs = sorted({k[2] for k in stats if k[0] == wl and k[2] not in FLOORS},
                        key=lambda a: order_key(a, ALLOCATORS))
        dat = os.path.join(plot_dir, f"scaling-{wl}.dat")
        with open(dat, "w") as f:
            for a in allocs:
                f.write(f"# {a}\n")
                for t in threads:
                    s = stats.get((wl, t, a))
                    if s:
                        f.write(f"{t} {s['median']:.6f} {s['min']:.6f} {s['max']:.6f}\n")
                f.write("\n\n")
        png = os.path.join(out_dir, f"scaling-{wl}.png")
        plots = ", ".join(
            f"{gp_quote(dat)} index {i} using 1:2:3:4 with yerrorlines {STYLE.get(a, 'lw 2')} title {gp_quote(a)}"
            for i, a in enumerate(allocs))
        script = "\n".join([
            f"set terminal {term}",
            f"set output {gp_quote(png)}",
            f"set title {gp_quote(wl + ': ' + DESCRIPTION.get(wl, ''))} noenhanced",
            "set xlabel 'threads'",
            "set ylabel 'wall time, s (median; bars: min..max; log scale)'",
            "set logscale x 2",
            "set logscale y",  # one slow allocator would squash the others into a band
            f"set xtics ({', '.join(str(t) for t in threads)})",
            f"set xrange [{threads[0] / 1.3}:{threads[-1] * 1.3}]",
            "set grid",
            "set key outside right noenhanced",
            f"plot {plots}",
            ""])
        if run_gnuplot(gp, plot_dir, f"scaling-{wl}.gp", script):
            made.append(f"scaling-{wl}.png")

    if idle:
        allocs = sorted(idle, key=lambda a: order_key(a, ALLOCATORS))
        dat = os.path.join(plot_dir, "rss-after-idle.dat")
        with open(dat, "w") as f:
            for a in allocs:
                f.write(f"# {a}\n")
                for i, t in enumerate(IDLE_TIMES):
                    if idle[a][t] is not None:
                        f.write(f"{i} {idle[a][t] / 1024:.1f}\n")
                f.write("\n\n")
        png = os.path.join(out_dir, "rss-after-idle.png")
        xt = ", ".join(f"{gp_quote(l)} {i}" for i, l in enumerate(IDLE_LABELS))
        plots = ", ".join(f"{gp_quote(dat)} index {i} using 1:2 with linespoints {STYLE.get(a, 'lw 2')} title {gp_quote(a)}"
                          for i, a in enumerate(allocs))
        script = "\n".join([
            f"set terminal {term}",
            f"set output {gp_quote(png)}",
            "set title 'idle\\_rss: RSS after freeing everything, threads idle'",
            "set xlabel 'time after the free'",
            "set ylabel 'RSS, MB'",
            f"set xtics ({xt})",
            f"set xrange [-0.3:{len(IDLE_TIMES) - 0.7}]",
            "set yrange [0:*]",
            "set grid",
            "set key outside right noenhanced",
            f"plot {plots}",
            ""])
        if run_gnuplot(gp, plot_dir, "rss-after-idle.gp", script):
            made.append("rss-after-idle.png")
    return made


def run_gnuplot(gp, plot_dir, name, script):
    path = os.path.join(plot_dir, name)
    with open(path, "w") as f:
        f.write(script)
    r = subprocess.run([gp, path], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"aggregate: gnuplot failed on {path}:\n{r.stderr}", file=sys.stderr)
        return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    meta = read_meta(os.path.join(args.raw, "meta.txt"))
    stats, failed = aggregate_times(read_csv(os.path.join(args.raw, "times.csv")))
    idle = aggregate_idle(read_csv(os.path.join(args.raw, "idle.csv")))
    allocs = read_allocators(os.path.join(args.raw, "allocators.csv"))

    os.makedirs(args.out, exist_ok=True)
    write_latest_csv(os.path.join(args.out, "latest.csv"), stats)
    write_idle_csv(os.path.join(args.out, "rss-after-idle.csv"), idle, meta.get("idle_threads", "2"))
    plots = make_plots(args.out, args.raw, stats, idle)
    write_markdown(os.path.join(args.out, "latest.md"), stats, failed, idle, meta, allocs, plots)
    print(f"aggregate: {len(stats)} points, {len(idle)} idle series, {len(plots)} plots -> {args.out}")


if __name__ == "__main__":
    main()
