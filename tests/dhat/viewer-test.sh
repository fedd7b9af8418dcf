#!/usr/bin/env bash
# In the real viewer: a profile written by the preloaded library (python3
# running a short script, or sort if python3 is missing) loads into
# Valgrind's dh_view.html in headless Chromium, which must show the file's
# totals and no error; a broken file must fail the same check (positive
# control). playwright-core (pinned in viewer/package.json) is installed
# into viewer/node_modules by ci/install-deps.sh (group dhat).
# usage: viewer-test.sh /path/to/libmimalloc.so [screenshot.png]
set -u
LIB="${1:?usage: $0 libmimalloc.so}"
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
SHOT="${2:-}"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-dhat-view.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
for need in node npm /usr/bin/chromium /usr/libexec/valgrind/dh_view.html; do
  command -v "$need" >/dev/null 2>&1 || [ -e "$need" ] || { echo "missing $need (ci/install-deps.sh)"; exit 1; }
done
# installed with the packages (ci/install-deps.sh dhat), not here: a test
# that fetches from the network on its first run fails offline, or slowly
if [ ! -d "$HERE/viewer/node_modules/playwright-core" ]; then
  echo "missing playwright-core in $HERE/viewer (bash ci/install-deps.sh dhat)"
  exit 1
fi
failed=0
if command -v python3 >/dev/null; then
  (cd "$WORK" && MIMALLOC_DHAT=1 MIMALLOC_DHAT_FILE="$WORK/real.json" LD_PRELOAD="$LIB" \
    python3 -c 'import json; d={str(i): list(range(i % 50)) for i in range(20000)}; s=json.dumps(d); print(len(json.loads(s)))' >/dev/null)
else
  (cd "$WORK" && seq 1 100000 | MIMALLOC_DHAT=1 MIMALLOC_DHAT_FILE="$WORK/real.json" LD_PRELOAD="$LIB" sort -r >/dev/null)
fi
[ -f "$WORK/real.json" ] || { echo "no profile written"; exit 1; }
echo "--- a real program's profile"
node "$HERE/viewer/view.mjs" "$WORK/real.json" $SHOT || failed=1
echo "--- positive control: a broken file (dhatFileVersion 1)"
python3 - "$WORK/real.json" "$WORK/broken.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["dhatFileVersion"] = 1
json.dump(d, open(sys.argv[2], "w"))
PY
if node "$HERE/viewer/view.mjs" "$WORK/broken.json" >"$WORK/broken.log" 2>&1; then
  echo "broken file NOT caught"; cat "$WORK/broken.log"; failed=1
else
  echo "broken file caught: $(grep -m1 'viewer error' "$WORK/broken.log")"
fi
[ $failed -eq 0 ] && echo "viewer-test: ok" || echo "viewer-test: FAILED"
exit $failed
