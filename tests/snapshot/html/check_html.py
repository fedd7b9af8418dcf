#!/usr/bin/env python3
"""Judge what tools/mi-heapview.html showed (the "result" lines of view.mjs)
against the fixtures' ground truth (expected.json from make_fixture.py) and
against the reference reader (tools/mi_snapshot.py), which computes the diff
rows on its own.

usage: check_html.py RESULTS FIXDIR CONTROLDIR

Prints "check <name>: ok" or "check <name>: FAILED: why" per check; the
planted controls (a footer count off by one, a page whose occupancy was
flipped) must make the same checks fail, and are reported as passing when
they do. Exit status 1 when any check failed.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
import mi_snapshot  # noqa: E402  (the reference reader)

failures = 0


def report(name, problems, note=None):
    global failures
    if problems:
        failures += 1
        print("check %s: FAILED: %s" % (name, "; ".join(problems)))
    else:
        print("check %s: ok%s" % (name, " (%s)" % note if note else ""))


def common(r):
    """Problems any load may show: the job failed, the page threw, the
    viewer reached for the network."""
    p = []
    if r.get("failure"):
        p.append("job failed: " + r["failure"])
    if r.get("pageErrors"):
        p.append("page errors: " + " | ".join(r["pageErrors"]))
    if r.get("foreignRequests"):
        p.append("requests besides the viewer: " + " ".join(r["foreignRequests"]))
    return p


def fmt(n):
    return "{:,}".format(n)


def check_snapshot(r, truth):
    """One snapshot loaded: the summary and the visible totals equal the truth."""
    p = common(r)
    s = r.get("summary") or {}
    if s.get("status") != "ok":
        return p + ["status %r, error %r" % (s.get("status"), s.get("error"))]
    if r.get("errorShown"):
        p.append("#error shown: %r" % r.get("errorText"))
    snaps = s.get("snapshots") or []
    if len(snaps) != 1:
        return p + ["%d snapshots in the summary" % len(snaps)]
    sn = snaps[0]
    want = {
        "pageCount": truth["page_count"], "arenaCount": truth["arena_count"],
        "heapCount": truth["heap_count"], "committed": truth["page_committed"],
        "live": truth["page_used_bytes"], "waste": truth["page_waste"],
        "arenaReserved": truth["arena_reserved"], "arenaCommitted": truth["arena_committed"],
        "cellsDrawn": truth["page_count"],
    }
    for k, v in want.items():
        if sn.get(k) != v:
            p.append("%s %r, truth %r" % (k, sn.get(k), v))
    text = r.get("totalsText") or ""
    for v in (truth["page_count"], truth["page_committed"], truth["page_used_bytes"]):
        if fmt(v) not in text:
            p.append("#totals does not show %s" % fmt(v))
    return p


def diff_truth(a, b):
    """Per block size B - A, sorted by |dcommitted| then block size; sizes
    where nothing changed left out. Addresses that appeared and vanished."""
    def sizes(snap):
        m = {}
        for pg in mi_snapshot.all_pages(snap):
            r = m.setdefault(pg["block_size"], [0, 0, 0])
            r[0] += 1
            r[1] += pg["committed"]
            r[2] += pg["used"] * pg["block_size"]
        return m
    sa, sb = sizes(a), sizes(b)
    rows = []
    for bs in set(sa) | set(sb):
        x, y = sa.get(bs, [0, 0, 0]), sb.get(bs, [0, 0, 0])
        row = {"blockSize": bs, "pagesA": x[0], "pagesB": y[0], "dPages": y[0] - x[0],
               "dCommitted": y[1] - x[1], "dLive": y[2] - x[2]}
        if row["dPages"] or row["dCommitted"] or row["dLive"]:
            rows.append(row)
    rows.sort(key=lambda q: (-abs(q["dCommitted"]), q["blockSize"]))
    key = lambda snap: {(pg["page_start"], pg["block_size"]) for pg in mi_snapshot.all_pages(snap)}
    ka, kb = key(a), key(b)
    # a page counts as the same when its address and block size are
    appeared = sum(1 for k in kb if k not in ka)
    gone = sum(1 for k in ka if k not in kb)
    return rows, appeared, gone, sum(1 for _ in mi_snapshot.all_pages(b))


def check_diff(r, a_path, b_path):
    p = common(r)
    s = r.get("summary") or {}
    if s.get("status") != "ok":
        return p + ["status %r, error %r" % (s.get("status"), s.get("error"))]
    a, b = mi_snapshot.load(a_path), mi_snapshot.load(b_path)
    rows, appeared, gone, bpages = diff_truth(a, b)
    d = s.get("diff") or {}
    if d.get("a") != os.path.basename(a_path) or d.get("b") != os.path.basename(b_path):
        p.append("diff is %r -> %r, want the earlier clock first" % (d.get("a"), d.get("b")))
    got = s.get("diffRows")
    if got != rows:
        p.append("diff rows differ from the reference reader's:\n      viewer %s\n      python %s"
                 % (json.dumps(got), json.dumps(rows)))
    if not rows:
        p.append("no diff rows at all: the fixtures should differ")
    for k, v in (("appeared", appeared), ("disappeared", gone), ("cellsDrawn", bpages),
                 ("goneDrawn", gone)):
        if d.get(k) != v:
            p.append("diff %s %r, want %r" % (k, d.get(k), v))
    if r.get("diffTableRows") != len(rows):
        p.append("diff table has %r rows, want %d" % (r.get("diffTableRows"), len(rows)))
    return p


def check_error(r, word):
    p = common(r)
    s = r.get("summary") or {}
    if s.get("status") != "error":
        p.append("status %r, want 'error'" % s.get("status"))
    err = s.get("error") or ""
    if word not in err:
        p.append("error %r does not name %r" % (err, word))
    if not r.get("errorShown") or word not in (r.get("errorText") or ""):
        p.append("#error not shown with %r (shown %r: %r)" % (word, r.get("errorShown"), r.get("errorText")))
    if s.get("snapshots") or s.get("cellsDrawn") or r.get("canvasCount") or not r.get("viewsEmpty"):
        p.append("something was drawn: %d snapshots, %r cells, %r canvases, views empty %r"
                 % (len(s.get("snapshots") or []), s.get("cellsDrawn"), r.get("canvasCount"), r.get("viewsEmpty")))
    return p


def check_stats(r, paths):
    p = common(r)
    s = r.get("summary") or {}
    if s.get("status") != "ok":
        return p + ["status %r, error %r" % (s.get("status"), s.get("error"))]
    n = len(paths)
    if s.get("statsCount") != n:
        p.append("statsCount %r, want %d" % (s.get("statsCount"), n))
    pts = s.get("statsPoints") or {}
    for k in ("reserved", "committed", "malloc_requested"):
        if pts.get(k) != n:
            p.append("%d points on the %s line, want %d" % (pts.get(k, 0), k, n))
    if r.get("statsCircles") != 3 * n:
        p.append("%r point markers in the chart, want %d" % (r.get("statsCircles"), 3 * n))
    # the table shows the last dump by elapsed time, whatever the load order
    dumps = [json.load(open(q)) for q in paths]
    last = max(dumps, key=lambda d: d["process"]["elapsed_msecs"])
    heads = r.get("statsTables") or []
    for obj in ("secure", "fault"):
        if obj in last and obj not in heads:
            p.append("no %r table (tables: %s)" % (obj, heads))
    text = r.get("statsText") or ""
    probes = [("secure.quarantine_blocks", "quarantine_blocks", last["secure"]["quarantine_blocks"]),
              ("fault events.commit_failed", "events.commit_failed", last["fault"]["events"]["commit_failed"]),
              ("malloc_requested.current", "malloc_requested", last["malloc_requested"]["current"])]
    lines = text.split("\n")
    for what, key, val in probes:
        if not any(key in ln and fmt(val) in ln for ln in lines):
            p.append("the last dump's %s (%s) is not in the tables" % (what, fmt(val)))
    return p


def check_parity(results, mutdir):
    """Each mutant: the viewer's verdict and message are the reference
    reader's (the viewer may add detail after the reader's text); an
    accepted file shows the reader's page count and live bytes."""
    p = []
    names = sorted(os.listdir(mutdir))
    accepted = 0
    for name in names:
        r = results.get("mut-" + name)
        if r is None:
            p.append("%s: no result" % name)
            continue
        p += ["%s: %s" % (name, q) for q in common(r)]
        s = r.get("summary") or {}
        data = open(os.path.join(mutdir, name), "rb").read()
        try:
            snap = mi_snapshot.parse(data)
            ref = None
        except mi_snapshot.FormatError as e:
            ref = str(e)
        if ref is None:
            accepted += 1
            pages = list(mi_snapshot.all_pages(snap))
            sn = (s.get("snapshots") or [{}])[0]
            live = sum(pg["used"] * pg["block_size"] for pg in pages)
            if s.get("status") != "ok" or sn.get("pageCount") != len(pages) or sn.get("live") != live:
                p.append("%s: the reader accepts it (%d pages, %d live) but the viewer shows %r %r pages %r live"
                         % (name, len(pages), live, s.get("error") or s.get("status"), sn.get("pageCount"), sn.get("live")))
        else:
            err = s.get("error") or ""
            msg = err.split(": ", 1)[1] if err.startswith(name + ": ") else err
            if s.get("status") != "error" or not msg.startswith(ref):
                p.append("%s: the reader says %r, the viewer %r" % (name, ref, err or s.get("status")))
    if not p and (accepted == 0 or accepted == len(names)):
        p.append("the mutants are all accepted or all refused (%d of %d accepted): no test" % (accepted, len(names)))
    return p, "%d refused with the reader's message, %d accepted with its totals" % (len(names) - accepted, accepted)


def main(argv):
    results_path, fx, ctl = argv[1:4]
    results = {}
    for line in open(results_path):
        if line.startswith("result "):
            r = json.loads(line[len("result "):])
            results[r["id"]] = r
    expected = json.load(open(os.path.join(fx, "expected.json")))
    truth = expected["files"]

    def get(i):
        if i not in results:
            print("check %s: FAILED: no result (view.mjs did not run the job)" % i)
            return None
        return results[i]

    for name in ("small.bin", "fragmented.bin"):
        r = get("snap-" + name)
        if r:
            report("snapshot-" + name, check_snapshot(r, truth[name]))
    r = get("json-small")
    if r:
        report("snapshot-json-form (mi_snapshot.py FILE, the shape of `mi-heapview FILE json`)",
               check_snapshot(r, truth["small.bin"]))
    r = results.get("json-cli-fragmented")
    if r:
        report("snapshot-json-cli (mi-heapview fragmented.bin json)", check_snapshot(r, truth["fragmented.bin"]))
    r = get("diff")
    if r:
        report("diff fragmented.bin -> after.bin",
               check_diff(r, os.path.join(fx, "fragmented.bin"), os.path.join(fx, "after.bin")))
    r = get("diff2")
    if r:
        report("diff small.bin -> fragmented.bin",
               check_diff(r, os.path.join(fx, "small.bin"), os.path.join(fx, "fragmented.bin")))
    for name, word in sorted(expected["corrupt"].items()):
        r = get("bad-" + name)
        if r:
            report("corrupt-%s (%s)" % (name, word), check_error(r, word))
    report("parity with mi_snapshot.py on %d mutants" % len([i for i in results if i.startswith("mut-")]),
           *check_parity(results, os.path.join(ctl, "mut")))
    r = get("mixed")
    if r:
        report("all-or-nothing (small.bin with bad-magic.bin)", check_error(r, "bad magic"))
    r = get("good-then-bad")
    if r:
        report("bad-load-clears (fragmented.bin, then truncated.bin)", check_error(r, "truncated"))
    r = get("drop-small.bin")
    if r:
        report("drag-and-drop (small.bin)", check_snapshot(r, truth["small.bin"]))
    stats = sorted(os.path.join(HERE, "fixtures", f) for f in os.listdir(os.path.join(HERE, "fixtures"))
                   if f.startswith("stats-") and f.endswith(".json"))
    r = get("stats")
    if r:
        report("stats (%d dumps, loaded newest first)" % len(stats), check_stats(r, stats))

    # planted controls: the checks above must fail on these
    for cid, base, what in (("control-footer", "fragmented.bin", "footer page_count + 1"),
                            ("control-flip", "fragmented.bin", "one page's used count flipped")):
        r = get(cid)
        if not r:
            continue
        problems = check_snapshot(r, truth[base])
        if problems:
            print("check %s: ok (%s caught: %s)" % (cid, what, problems[0].split("\n")[0]))
        else:
            report(cid, ["the snapshot check passed on a file with %s" % what])
    r = get("control-diff-flip")
    if r:
        problems = check_diff(r, os.path.join(fx, "fragmented.bin"), os.path.join(fx, "after.bin"))
        if problems:
            print("check control-diff-flip: ok (diff against a flipped after.bin caught: %s)"
                  % problems[0].split("\n")[0])
        else:
            report("control-diff-flip", ["the diff check passed with a flipped page in B"])
    r = get("control-stats-two")
    if r:
        problems = check_stats(r, stats)
        if problems:
            print("check control-stats-two: ok (two of the three dumps caught: %s)" % problems[0])
        else:
            report("control-stats-two", ["the stats check passed with a dump missing"])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
