#!/usr/bin/env bash
# Issue 42's program: python3 under the preloaded library builds 20 MB of
# bytes objects and a dict of 200000 entries, drops them, and exits. The
# exit dump then holds almost nothing; the peak file
# (MIMALLOC_PROF_DUMP_AT_PEAK) holds the heap at its largest. Both are
# text profiles at the default interval (512 KiB), seeded; their in-use
# bytes are unsampled here as pprof does it (per record, by its average
# size). docs/pprof.md, "Which dump for which program", shows the same run
# through pprof -top.
# usage: highwater-python.sh LIBMIMALLOC.so
set -u
LIB=${1:?usage: highwater-python.sh LIBMIMALLOC.so}
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-prof-hw-python.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
# the interpreter itself, not a wrapper script (pyenv's shims are bash)
PY=$(python3 -c 'import sys; print(sys.executable)')
cat >"$WORK/grow.py" <<'EOF'
blobs = [bytes(100000) for _ in range(200)]      # 20 MB, each block from malloc
table = {i: i * 2 for i in range(200000)}        # its hash table from malloc too
print(len(blobs), len(table))
del blobs, table
EOF
# (the MIMALLOC_* of the caller's environment left out)
mapfile -t unset < <(env | sed -n 's/^\(MIMALLOC_[A-Za-z0-9_]*\)=.*/-u\n\1/p')
env "${unset[@]}" PYTHONHASHSEED=0 MIMALLOC_PROF=1 MIMALLOC_PROF_SEED=1 \
  MIMALLOC_PROF_DUMP_AT_EXIT="$WORK/exit.heap" MIMALLOC_PROF_DUMP_AT_PEAK="$WORK/peak.heap" \
  LD_PRELOAD="$LIB" "$PY" "$WORK/grow.py" || { echo "python3 failed"; exit 1; }
python3 - "$WORK/peak.heap" "$WORK/exit.heap" <<'EOF'
import math, re, sys

def inuse(path):
    """The in-use bytes pprof reads from a heap_v2 text profile."""
    lines = open(path).read().splitlines()
    period = int(re.search(r"heap_v2/(\d+)", lines[0]).group(1))
    total = 0.0
    for line in lines[1:]:
        m = re.match(r"\s*(\d+): (\d+) \[", line)
        if not m or "@" not in line or int(m.group(1)) == 0:
            continue
        objs, size = int(m.group(1)), int(m.group(2))
        avg = size / objs
        total += size if period <= 1 else size / (1 - math.exp(-avg / period))
    return total

peak, at_exit = inuse(sys.argv[1]), inuse(sys.argv[2])
print(f"peak file: {peak / 1e6:.1f} MB in use; exit dump: {at_exit / 1e6:.1f} MB")
ok = peak >= 15e6 and at_exit <= 3e6
print("highwater-python: " + ("ok" if ok else "FAILED: the peak file must hold >= 15 MB, the exit dump <= 3 MB"))
sys.exit(0 if ok else 1)
EOF
