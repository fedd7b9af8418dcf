#!/usr/bin/env bash
# listeners.sh BINARY EXPECTED [missed]: the features' listeners to the rare
# events (src/base/listeners.h) that BINARY's start-up found in the table
# the linker gathers, read from its verbose line ("listening: ..."), must be
# EXPECTED (comma-separated, in the order they are told). With "missed",
# BINARY is the positive control, linked with a copy of the static library
# whose table was cut out (objcopy -R mi_listeners): the same comparison
# must be seen to fail, naming what is missing.
set -euo pipefail
bin=$1
want=$2
mode=${3:-found}

listening() {
  local err
  err=$(MIMALLOC_VERBOSE=1 "$bin" 2>&1 >/dev/null) || { echo "FAIL: $bin exited with $?"; return 2; }
  sed -n 's/.* initialised (.*; listening: \(.*\))$/\1/p' <<<"$err" | head -1
}

check() {
  local got
  got=$(listening) || return 2
  if [ "$got" != "$want" ]; then
    echo "FAIL: $bin listens to '${got}', not '${want}' (a feature's listener not linked in)"
    return 1
  fi
  echo "ok: $bin listens to: $got"
}

case $mode in
  found) check ;;
  missed)
    set +e
    out=$(check)
    status=$?
    set -e
    echo "$out"
    [ $status -eq 1 ] && grep -q "^FAIL: .* listens to '" <<<"$out" ||
      { echo "FAIL: the control's cut table was not seen (status $status)"; exit 1; }
    echo "ok: the check saw the control's table cut out"
    ;;
  *) echo "usage: listeners.sh BINARY EXPECTED [found|missed]"; exit 2 ;;
esac
