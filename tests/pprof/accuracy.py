#!/usr/bin/env python3
"""The sampled heap profiler's accuracy test (the spec's 1.10(a)): runs the
sites program (tests/pprof/sites.c) and reads its dumps through the real
clients (Go pprof -raw and -top; every dump kept for criterion 1 also
through pprof_check.py's full check).

  accuracy.py SITES [--only C,...] [--expect-failure C] [--keep DIR]

The criteria (names for --only and --expect-failure):
  per-run        each live site |est/true - 1| <= 4 sigma_rel + 0.5% (est:
                 Go pprof -raw per leaf function), site_c exact, site_d
                 in-use 0 and with accum its alloc within 4 sigma; in the
                 seeded, start_ex + accum, environment and proto runs (and
                 the seeded dump without its period must fail it)
  unbiasedness   seeds 1..20: each site's mean relative error within
                 4 sigma_rel / sqrt(20) (the planted uniform sampler fails it)
  header         header = the records' sums, period line heap_v2/4096
  exact          interval 1: Go's totals equal the truth exactly (and the
                 allocator's malloc_requested, when it keeps it)
  determinism    the same seed in two processes: the same multiset of
                 record values, the same number of live samples
  text-proto     one dump as text and as proto: the same pprof -raw sums
  symbols        pprof -top lists the site functions and no mi_/_mi_ frame;
                 a dump whose stacks start in mi_malloc must fail it
--expect-failure C: exit 0 only if criterion C fails (a positive control,
e.g. the MI_PROF_PLANT_UNIFORM build) and every other one run passes.
Exit 0 when every criterion run passes, 1 otherwise, 2 on a usage error.
"""
import bisect
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_check  # noqa: E402

R = 4096
LIVE_SITES = ("site_a", "site_b", "site_c", "site_e")
CRITERIA = ("per-run", "unbiasedness", "header", "exact", "determinism", "text-proto", "symbols")
SEEDS = range(1, 21)


class Failed(Exception):
    pass


class Run:
    """One run of sites: its files, the truth and the counters it printed."""

    def __init__(self, sites, work, tag, args, env=None, text=True, proto=False):
        self.text = os.path.join(work, f"{tag}.heap") if text else None
        # proto: True for a gzip dump (".pb.gz"), or the file's suffix (".pb": plain)
        self.proto = os.path.join(work, tag + (proto if isinstance(proto, str) else ".pb.gz")) if proto else None
        cmd = [sites] + args + (["--text", self.text] if text else []) + (["--proto", self.proto] if proto else [])
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("MIMALLOC_PROF"):
                del e[k]
        e.update(env or {})
        r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=600)
        self.cmd = " ".join(cmd)
        if r.returncode != 0:
            raise Failed(f"{self.cmd}: exit {r.returncode}: {r.stderr.strip()}")
        self.sites = {}
        self.prof = {}
        self.requested = None
        for line in r.stdout.splitlines():
            w = line.split()
            if w[0] == "site":
                self.sites[w[1]] = dict(size=int(w[3]), live=int(w[5]), freed=int(w[7]))
            elif w[0] == "prof":
                self.prof = {w[i]: int(w[i + 1]) for i in range(1, len(w) - 1, 2)}
            elif w[0] == "requested":
                self.requested = dict(before=int(w[2]), at_dump=int(w[4]), detailed=int(w[6]))
        if set(self.sites) != {"site_a", "site_b", "site_c", "site_d", "site_e"}:
            raise Failed(f"{self.cmd}: no truth table in its output: {r.stdout!r}")

    def true_inuse(self, site):
        s = self.sites[site]
        return s["live"] * s["size"]

    def true_alloc(self, site):
        s = self.sites[site]
        return (s["live"] + s["freed"]) * s["size"]


def sigma_rel(size, n, rate=R):
    p = 1 - math.exp(-size / rate)
    return math.sqrt((1 - p) / (n * p)) if n else 0.0


def text_of(path):
    errs = []
    with open(path) as f:
        t = pprof_check.parse_text(f.read(), errs)
    return t, errs


def estimates(run, path, binary):
    """{site: {type: value}} from Go pprof -raw, by leaf function."""
    leaves = pprof_check.per_leaf(path, binary)
    return {s: leaves.get(s, {}) for s in run.sites}, leaves


def check_per_run(run, path, binary, accum, out):
    """Criterion 1 on one dump; returns the failures."""
    fails = []
    est, leaves = estimates(run, path, binary)
    for s in LIVE_SITES:
        info = run.sites[s]
        tru = run.true_inuse(s)
        got = est[s].get("inuse_space", 0)
        err = got / tru - 1
        if s == "site_c":
            ok = got == tru
            bound = "exact"
        else:
            lim = 4 * sigma_rel(info["size"], info["live"]) + 0.005
            ok = abs(err) <= lim
            bound = f"|err| <= {100 * lim:.2f}%"
        out.append(f"    {s}: est {got} true {tru} err {100 * err:+.2f}% ({bound}) {'ok' if ok else 'FAILED'}")
        if not ok:
            fails.append(f"{s} in-use {100 * err:+.2f}% ({bound})")
        if accum and est[s].get("alloc_space", 0) != got:
            fails.append(f"{s}: alloc_space {est[s].get('alloc_space', 0)} != inuse_space {got} (every block live)")
    d = est["site_d"]
    if d.get("inuse_space", 0) != 0 or d.get("inuse_objects", 0) != 0:
        fails.append(f"site_d in-use {d.get('inuse_objects', 0)} objects {d.get('inuse_space', 0)} B, not 0")
    out.append(f"    site_d: in-use {d.get('inuse_space', 0)} (0 exactly)")
    if accum:
        info = run.sites["site_d"]
        tru = run.true_alloc("site_d")
        got = d.get("alloc_space", 0)
        err = got / tru - 1
        lim = 4 * sigma_rel(info["size"], info["freed"])
        ok = abs(err) <= lim
        out.append(f"    site_d: alloc est {got} true {tru} err {100 * err:+.2f}% (|err| <= {100 * lim:.2f}%) "
                   f"{'ok' if ok else 'FAILED'}")
        if not ok:
            fails.append(f"site_d alloc {100 * err:+.2f}% (|err| <= {100 * lim:.2f}%)")
    missing = [s for s in LIVE_SITES if s not in leaves]
    if missing:
        fails.append(f"no sample has {', '.join(missing)} as its leaf (leaves: {', '.join(sorted(leaves)[:8])})")
    return fails


def full_check(path, binary, out):
    rej = pprof_check.check_file(path, binary, no_allocator_frames=True)
    for checker, msg in rej:
        out.append(f"    {os.path.basename(path)}: {checker}: {msg}")
    checkers = sorted({c for c, _ in rej})
    return [f"{os.path.basename(path)} rejected by {', '.join(checkers)}"] if rej else []


def crit_per_run(sites, work, out):
    fails = []
    runs = [
        ("seeded", dict(args=["--seed", "7"]), False),
        ("ex-accum", dict(args=["--seed", "8", "--accum"]), True),
        ("env", dict(args=["--start", "env"], env={"MIMALLOC_PROF": "1", "MIMALLOC_PROF_SAMPLE_INTERVAL": str(R),
                                                   "MIMALLOC_PROF_SEED": "9", "MIMALLOC_PROF_ACCUM": "1"}), True),
    ]
    for tag, kw, accum in runs:
        run = Run(sites, work, "per-run-" + tag, text=True, proto=(tag == "ex-accum"), **kw)
        out.append(f"  {tag}: {run.cmd}")
        fails += full_check(run.text, sites, out)
        fails += [f"{tag}: {f}" for f in check_per_run(run, run.text, sites, accum, out)]
        if tag == "seeded":
            fails += missing_period_control(run, sites, work, out)
        if run.proto:
            out.append(f"  {tag} (proto):")
            fails += full_check(run.proto, sites, out)
            fails += [f"{tag} proto: {f}" for f in check_per_run(run, run.proto, sites, accum, out)]
    return fails


def missing_period_control(run, sites, work, out):
    """The positive control of the criterion: the same dump without its
    period (Go then does not unsample) must fail it."""
    planted = os.path.join(work, "per-run-no-period.heap")
    with open(run.text) as f:
        content = f.read()
    with open(planted, "w") as g:
        g.write(re.sub(r"@ heap_v2/\d+\n", "@ heap_v2\n", content, count=1))
    sub = []
    found = check_per_run(run, planted, sites, False, sub)
    out.append(f"    control, the same dump without its period: "
               f"{'fails: ' + '; '.join(found) if found else 'PASSES'}")
    return [] if found else ["control: the dump without its period passed the per-run criterion"]


def crit_unbiasedness(sites, work, out):
    rel = {s: [] for s in LIVE_SITES + ("site_d",)}
    truth = None
    for seed in SEEDS:
        run = Run(sites, work, f"seed-{seed}", args=["--seed", str(seed), "--accum"])
        truth = run
        est, _ = estimates(run, run.text, sites)
        for s in LIVE_SITES:
            rel[s].append(est[s].get("inuse_space", 0) / run.true_inuse(s) - 1)
        rel["site_d"].append(est["site_d"].get("alloc_space", 0) / run.true_alloc("site_d") - 1)
    fails = []
    n = len(SEEDS)
    for s, v in rel.items():
        info = truth.sites[s]
        count = info["live"] if s != "site_d" else info["freed"]
        mean = sum(v) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in v) / n)
        lim = 4 * sigma_rel(info["size"], count) / math.sqrt(n)
        what = "in-use" if s != "site_d" else "alloc"
        ok = abs(mean) <= lim if s != "site_c" else all(x == 0 for x in v)
        bound = f"|mean| <= {100 * lim:.2f}%" if s != "site_c" else "exact in every run"
        out.append(f"    {s} {what}: mean {100 * mean:+.2f}% sd {100 * sd:.2f}% "
                   f"(theory {100 * sigma_rel(info['size'], count):.2f}%) over {n} seeds, {bound}: "
                   f"{'ok' if ok else 'FAILED'}")
        if not ok:
            fails.append(f"{s} {what} mean error {100 * mean:+.2f}% ({bound})")
    return fails


def crit_header(sites, work, out):
    fails = []
    for tag, args in (("accum-off", ["--seed", "3"]), ("accum-on", ["--seed", "4", "--accum"]),
                      ("empty", ["--seed", "5", "--empty"])):
        run = Run(sites, work, "header-" + tag, args=args, proto=".pb" if tag == "empty" else False)
        t, errs = text_of(run.text)
        with open(run.text) as f:
            first = f.readline().rstrip("\n")
        out.append(f"    {tag}: {first}")
        if errs:
            fails += [f"{tag}: {e}" for e in errs]
        if not first.endswith(f"@ heap_v2/{R}"):
            fails.append(f"{tag}: the header does not end in '@ heap_v2/{R}'")
        if tag == "empty":
            if t.header != (0, 0, 0, 0) or t.records:
                fails.append(f"empty: header {t.header} with {len(t.records)} records, want 0: 0 [0: 0] and none")
            fails += full_check(run.text, sites, out)
            fails += full_check(run.proto, sites, out)
    return fails


def crit_exact(sites, work, out):
    fails = []
    run = Run(sites, work, "exact", args=["--exact", "--seed", "1", "--accum"], proto=True)
    t, errs = text_of(run.text)
    fails += errs
    if t.period != 1:
        fails.append(f"period {t.period}, want heap_v2/1")
    tru_space = sum(run.true_inuse(s) for s in run.sites)
    tru_objs = sum(i["live"] for i in run.sites.values())
    tru_aspace = sum(run.true_alloc(s) for s in run.sites)
    tru_aobjs = sum(i["live"] + i["freed"] for i in run.sites.values())
    for path in (run.text, run.proto):
        raw = pprof_check.raw_profile(path, sites)
        sums = pprof_check.type_sums(raw)
        want = dict(inuse_space=tru_space, inuse_objects=tru_objs, alloc_space=tru_aspace, alloc_objects=tru_aobjs)
        for k, v in want.items():
            ok = sums.get(k) == v
            out.append(f"    {os.path.basename(path)}: {k} {sums.get(k)} (true {v}) {'ok' if ok else 'FAILED'}")
            if not ok:
                fails.append(f"{os.path.basename(path)}: {k} {sums.get(k)}, true {v}")
        est, _ = estimates(run, path, sites)
        for s in run.sites:
            if est[s].get("inuse_space", 0) != run.true_inuse(s):
                fails.append(f"{os.path.basename(path)}: {s} in-use {est[s].get('inuse_space', 0)}, "
                             f"true {run.true_inuse(s)}")
    if run.prof.get("live_samples") != tru_objs:
        fails.append(f"live_samples {run.prof.get('live_samples')}, {tru_objs} blocks live")
    if run.requested and run.requested["detailed"]:
        delta = run.requested["at_dump"] - run.requested["before"]
        ok = delta == tru_space
        out.append(f"    malloc_requested grew by {delta} from the start to the dump "
                   f"(inuse_space {tru_space}) {'ok' if ok else 'FAILED'}")
        if not ok:
            fails.append(f"malloc_requested grew by {delta}, the profile's inuse_space is {tru_space}")
    else:
        out.append("    malloc_requested: not kept in this build (MI_STAT < 2): not compared")
    return fails


def values_multiset(path):
    t, errs = text_of(path)
    if errs:
        raise Failed(f"{path}: {errs[0]}")
    return sorted(r[:4] for r in t.records)


def crit_determinism(sites, work, out):
    a = Run(sites, work, "det-1", args=["--seed", "42", "--accum"])
    b = Run(sites, work, "det-2", args=["--seed", "42", "--accum"])
    c = Run(sites, work, "det-3", args=["--seed", "43", "--accum"])
    va, vb, vc = values_multiset(a.text), values_multiset(b.text), values_multiset(c.text)
    out.append(f"    seed 42 twice: {len(va)} and {len(vb)} records, live_samples {a.prof.get('live_samples')} "
               f"and {b.prof.get('live_samples')}")
    fails = []
    if va != vb:
        fails.append(f"seed 42 gave different records: {va} / {vb}")
    if a.prof.get("live_samples") != b.prof.get("live_samples"):
        fails.append("seed 42 gave different live_samples")
    # the control: another seed gives other samples (or the comparison proves nothing)
    out.append(f"    control, seed 43: {'different' if vc != va else 'THE SAME'} records")
    if vc == va:
        fails.append("seeds 42 and 43 gave the same records: the seed does not reach the sampler")
    return fails


def crit_text_proto(sites, work, out):
    fails = []
    for tag, args in (("accum-off", ["--seed", "11"]), ("accum-on", ["--seed", "12", "--accum"])):
        run = Run(sites, work, "tp-" + tag, args=args, proto=".pb" if tag == "accum-off" else True)
        st = pprof_check.type_sums(pprof_check.raw_profile(run.text, sites))
        sp = pprof_check.type_sums(pprof_check.raw_profile(run.proto, sites))
        out.append(f"    {tag}: text {st}")
        out.append(f"    {tag}: proto {sp}")
        for k, v in st.items():
            if sp.get(k) != v:
                fails.append(f"{tag}: {k}: text {v}, proto {sp.get(k)}")
        if tag == "accum-on" and set(st) != set(sp):
            fails.append(f"{tag}: text types {sorted(st)}, proto types {sorted(sp)}")
    return fails


def symbols_problems(path, binary):
    """What is wrong with the stacks as `pprof -top` shows them: a site
    function missing, an allocator frame named, or a node of the program
    itself left unnamed ("[sites]": a frame in code without debug
    information, which in this program can only be the allocator's)."""
    names, _ = pprof_check.top_functions(path, binary)
    probs = [f"-top does not list {s}" for s in LIVE_SITES if s not in names]
    bad = [n for n in names if pprof_check.ALLOCATOR_FRAME.match(n)]
    if bad:
        probs.append(f"-top lists allocator frames {', '.join(bad[:5])}")
    if binary and f"[{os.path.basename(binary)}]" in names:
        probs.append(f"-top lists [{os.path.basename(binary)}]: a frame of the program pprof cannot name "
                     "(not the site functions, which have debug information)")
    return probs, names


def nm_symbols(binary):
    """[(address, name)] of the binary's functions, sorted."""
    r = subprocess.run(["nm", "-n", "--defined-only", binary], capture_output=True, text=True)
    syms = []
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) == 3 and w[1] in "TtWw":
            syms.append((int(w[0], 16), w[2]))
    return syms


def leaf_functions(path, binary):
    """{function (from the binary's symbol table, not pprof's symboliser):
    records} of frame 0 of every record of a text dump."""
    t, _ = text_of(path)
    base = _pie_base(t, binary)
    syms = nm_symbols(binary)
    addrs = [a for a, _ in syms]
    out = {}
    for r in t.records:
        a = r[4][0] - 1 - (base or 0)
        i = bisect.bisect_right(addrs, a) - 1
        name = syms[i][1] if base is not None and i >= 0 else f"{r[4][0]:#x}"
        out[name] = out.get(name, 0) + 1
    return out


def leaf_problems(path, binary):
    leaves = leaf_functions(path, binary)
    probs = [f"frame 0 of {n} record(s) is in {f} (nm)" for f, n in leaves.items()
             if pprof_check.ALLOCATOR_FRAME.match(f)]
    probs += [f"no record's frame 0 is in {s} (nm)" for s in LIVE_SITES if s not in leaves]
    return probs, leaves


def crit_symbols(sites, work, out):
    fails = []
    run = Run(sites, work, "symbols", args=["--seed", "13"], proto=".pb")
    for path, binary in ((run.text, sites), (run.proto, sites), (run.proto, None)):
        probs, names = symbols_problems(path, binary)
        out.append(f"    pprof -top {'BINARY ' if binary else ''}{os.path.basename(path)}: {', '.join(names[:8])}")
        fails += [f"{os.path.basename(path)}{'' if binary else ' (no binary)'}: {p}" for p in probs]
    probs, leaves = leaf_problems(run.text, sites)
    out.append(f"    frame 0 by the binary's symbol table: {leaves}")
    fails += [f"{os.path.basename(run.text)}: {p}" for p in probs]
    # the proto's own functions (pprof would hide an mi_ leaf behind the
    # file's drop_frames, a second defence only)
    leaves = pprof_check.proto_leaf_functions(run.proto)
    out.append(f"    frame 0 by the proto's function table: {leaves}")
    fails += [f"{os.path.basename(run.proto)}: frame 0 of {n} sample(s) is in {f}" for f, n in leaves.items()
              if pprof_check.ALLOCATOR_FRAME.match(f)]
    fails += [f"{os.path.basename(run.proto)}: no sample's frame 0 is in {s}" for s in LIVE_SITES if s not in leaves]
    # the positive control: the same dump with every stack starting inside
    # mi_malloc (frame 0 an address in it, as a capture that starts too
    # early gives) must fail the same check
    nm = subprocess.run(["nm", "--defined-only", sites], capture_output=True, text=True)
    m = re.search(r"^([0-9a-f]+) [Tt] mi_malloc$", nm.stdout, re.M)
    t, _ = text_of(run.text)
    pie_base = _pie_base(t, sites)
    if not m or pie_base is None:
        fails.append("control: no mi_malloc in the binary, or no mapping of it in the dump")
        return fails
    inside = pie_base + int(m.group(1), 16) + 8 + 1  # a return address 8 bytes into mi_malloc
    planted = os.path.join(work, "symbols-planted.heap")
    with open(run.text) as f, open(planted, "w") as g:
        for line in f:
            if pprof_check.RECORD.match(line.rstrip("\n")):
                line = line.replace(" @ ", " @ 0x%x " % inside, 1)
            g.write(line)
    probs, names = symbols_problems(planted, sites)
    out.append(f"    control, stacks starting in mi_malloc, pprof -top: "
               f"{'rejected: ' + '; '.join(probs) if probs else 'NOT rejected'}")
    if not probs:
        fails.append("control: a dump whose stacks start in mi_malloc passed pprof -top's check")
    probs, _ = leaf_problems(planted, sites)
    out.append(f"    control, stacks starting in mi_malloc, symbol table: "
               f"{'rejected: ' + '; '.join(probs) if probs else 'NOT rejected'}")
    if not any("mi_malloc" in p for p in probs):
        fails.append("control: a dump whose stacks start in mi_malloc passed the symbol table's check")
    return fails


def _pie_base(t, binary):
    """The load address of the binary in the dump's map: the start of its
    mapping at file offset 0 (0 for a non-PIE binary)."""
    real = os.path.realpath(binary)
    for start, limit, perms, offset, path in t.maps:
        if path and os.path.exists(path) and os.path.realpath(path) == real and offset == 0:
            ehdr = open(real, "rb").read(18)
            return start if ehdr[16] == 3 else 0  # ET_DYN: PIE
    return None


def main(argv):
    args = argv[1:]
    if not args or args[0].startswith("--"):
        print(__doc__)
        return 2
    sites = os.path.abspath(args.pop(0))
    only = list(CRITERIA)
    expect = None
    keep = None
    while args:
        a = args.pop(0)
        if a == "--only" and args:
            only = args.pop(0).split(",")
        elif a == "--expect-failure" and args:
            expect = args.pop(0)
        elif a == "--keep" and args:
            keep = args.pop(0)
        else:
            print(__doc__)
            return 2
    if any(c not in CRITERIA for c in only) or (expect and expect not in only):
        print(__doc__)
        return 2
    work = keep or tempfile.mkdtemp(prefix="mi-pprof-accuracy.")
    os.makedirs(work, exist_ok=True)
    print(f"accuracy: Go pprof: {' '.join(pprof_check.go_pprof())}")
    funcs = {"per-run": crit_per_run, "unbiasedness": crit_unbiasedness, "header": crit_header,
             "exact": crit_exact, "determinism": crit_determinism, "text-proto": crit_text_proto,
             "symbols": crit_symbols}
    failed = []
    try:
        for c in only:
            out = []
            try:
                fails = funcs[c](sites, work, out)
            except (Failed, RuntimeError) as e:
                fails = [f"could not run: {e}"]
            print(f"criterion {c}: {'ok' if not fails else 'FAILED'}")
            for line in out:
                print(line)
            for f in fails:
                print(f"  {c}: {f}")
            sys.stdout.flush()
            if fails:
                failed.append((c, fails))
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    if expect:
        others = [c for c, _ in failed if c != expect]
        mine = [f for c, fs in failed if c == expect for f in fs]
        ran = mine and not any(f.startswith("could not run") for f in mine)
        if ran and not others:
            print(f"accuracy: positive control: criterion {expect} failed, as it must")
            return 0
        print(f"accuracy: positive control: criterion {expect} "
              f"{'did not fail' if not mine else 'could not run'}"
              f"{'; other criteria failed: ' + ', '.join(others) if others else ''}")
        return 1
    print("accuracy: " + ("ok" if not failed else "FAILED: " + ", ".join(c for c, _ in failed)))
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
