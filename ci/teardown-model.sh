#!/usr/bin/env bash
# Check the Promela model of the teardown protocol (docs/teardown-protocol.pml)
# with spin: both parts must show no violation (assertions, invalid end
# states), and the planted bugs (-DPLANT: the purge race; -DPLANT_CLAIM:
# an unlocked claim; -DPLANT_TAG: a claim-on-free CAS that compares the
# owner state and not the generation; -DLATE -DPLANT_LATE_ID: late thread
# data that keeps its thread's id, which a thread on the same stack then
# writes as its own) must be found, and part 3 (-DLATE, late thread data)
# must show none.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/out/ci/teardown-model}
mkdir -p "$work" && cd "$work" || exit 1
cp "$root/docs/teardown-protocol.pml" .
check() { # check NAME EXPECTED_ERRORS [spin -D flags...]
  local name=$1 expect=$2
  shift 2
  rm -f pan pan.* ./*.trail
  spin "$@" -a teardown-protocol.pml >"$name.spin.log" 2>&1 && gcc -O2 -o pan pan.c >"$name.gcc.log" 2>&1 ||
    { echo "teardown-model: $name: spin or gcc failed"; cat "$name.spin.log" "$name.gcc.log"; return 1; }
  ./pan -a >"$name.pan.log" 2>&1
  local errors
  errors=$(sed -n 's/^State-vector .*, errors: \([0-9]*\)$/\1/p' "$name.pan.log" | head -1) # pan's summary line
  echo "teardown-model: $name: errors: ${errors:-?} (expected $expect); $(grep -m1 'states, stored' "$name.pan.log")"
  if [ "$errors" != "$expect" ]; then
    grep -E 'assertion violated|invalid end state|pan:' "$name.pan.log" | head -5
    return 1
  fi
  # a planted bug must be found by the assertion it breaks, not another one
  if [ -n "${want:-}" ] && ! grep -q "assertion violated ($want)" "$name.pan.log"; then
    echo "teardown-model: $name: expected the violation of ($want), got:"
    grep -E 'assertion violated|invalid end state' "$name.pan.log" | head -3
    return 1
  fi
  [ -n "${want:-}" ] && echo "teardown-model: $name: $(grep -m1 'assertion violated' "$name.pan.log")"
  return 0
}
ok=0
check ownership 0 || ok=1
check purge 0 -DPURGE || ok=1
check purge-planted 1 -DPURGE -DPLANT || ok=1
check claim-planted 1 -DPLANT_CLAIM || ok=1
want='abandonments==seen' check tag-planted 1 -DPLANT_TAG || ok=1
check late 0 -DLATE || ok=1
want='late_holder==3' check late-id-planted 1 -DLATE -DPLANT_LATE_ID || ok=1
exit $ok
