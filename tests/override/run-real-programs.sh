#!/usr/bin/env bash
# Run real programs twice, plain and with LD_PRELOAD=<libmimalloc.so>, and
# check that both runs succeed and produce identical output.
# usage: run-real-programs.sh /path/to/libmimalloc.so
set -u

LIB="${1:-}"
if [ -z "$LIB" ] || [ ! -f "$LIB" ]; then
  echo "usage: $0 /path/to/libmimalloc.so" >&2
  exit 2
fi
LIB="$(cd "$(dirname "$LIB")" && pwd)/$(basename "$LIB")"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/mi-override.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export LC_ALL=C
unset MIMALLOC_VERBOSE MIMALLOC_SHOW_STATS

FAILED=0
PYTHON="$(command -v python3 || true)"
if [ -n "$PYTHON" ]; then
  # resolve wrapper scripts (pyenv shims) to the real interpreter
  PYTHON="$("$PYTHON" -c 'import sys; print(sys.executable)')"
fi

result() { # name status detail
  printf '%-8s %-4s %s\n' "$1" "$2" "$3"
  if [ "$2" != "ok" ]; then FAILED=1; fi
}

# run <name> <outfile-prefix> <cmd...>: runs cmd plain and preloaded.
# Each run writes its own output into $WORK/<prefix>.plain / .preload (stdout)
# and must exit 0. Returns 0 if both runs succeeded.
run_both() {
  local prefix="$1"; shift
  local rc1 rc2
  ( "$@" ) >"$WORK/$prefix.plain" 2>"$WORK/$prefix.plain.err"; rc1=$?
  ( export LD_PRELOAD="$LIB"; "$@" ) >"$WORK/$prefix.preload" 2>"$WORK/$prefix.preload.err"; rc2=$?
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
    echo "  exit status: plain $rc1, preloaded $rc2" >&2
    tail -5 "$WORK/$prefix.preload.err" >&2
    return 1
  fi
  return 0
}

compare() { # name prefix
  if cmp -s "$WORK/$2.plain" "$WORK/$2.preload"; then
    result "$1" ok "identical output ($(wc -c <"$WORK/$2.plain") bytes)"
  else
    result "$1" FAIL "output differs"
    diff "$WORK/$2.plain" "$WORK/$2.preload" | head -10 >&2
  fi
}

# --- 0. the preloaded library is actually serving malloc -----------------------
if [ -n "$PYTHON" ]; then
  out="$(LD_PRELOAD="$LIB" "$PYTHON" "$HERE/serves-malloc.py" 2>&1)"
  case "$out" in
    [0-9]*" True") result preload ok "mi_version and malloc served by the library: $out" ;;
    [0-9]*) result preload FAIL "library loaded (mi_version $out) but malloc is not served by it" ;;
    *) result preload FAIL "mi_version not callable in a preloaded process: $out" ;;
  esac
else
  result preload skip "python3 not found"
fi

# --- a. python: threads, dicts/lists/strings --------------------------------------
if [ -n "$PYTHON" ]; then
  if (export PYTHONMALLOC=malloc; run_both py "$PYTHON" "$HERE/alloc_heavy.py"); then
    compare python py
  else
    result python FAIL "a run failed"
  fi
else
  result python skip "python3 not found"
fi

# --- b. cc -O2 -c of a large generated C file ---------------------------------------
CC_BIN="$(command -v cc || command -v gcc || true)"
if [ -n "$CC_BIN" ]; then
  awk 'BEGIN {
    print "#include <stddef.h>";
    for (i = 0; i < 2000; i++) {
      printf "struct s%d { int a; long b; double c[%d]; };\n", i, i % 7 + 1;
      printf "long f%d(const long* v, size_t n) {\n", i;
      printf "  long acc = %d;\n", i;
      printf "  for (size_t k = 0; k < n; k++) {\n";
      printf "    acc += v[k] * %d + (acc >> %d);\n", i % 13 + 1, i % 5 + 1;
      printf "    if (acc %% %d == 0) acc ^= (long)k;\n", i % 11 + 2;
      printf "  }\n";
      printf "  struct s%d s = { %d, acc, { 0 } };\n", i, i;
      printf "  return s.a + s.b + (long)s.c[0];\n";
      printf "}\n";
    }
  }' >"$WORK/big.c"
  mkdir -p "$WORK/ccp" "$WORK/ccl"
  ( cd "$WORK/ccp" && "$CC_BIN" -O2 -c ../big.c -o big.o ) >/dev/null 2>"$WORK/cc.plain.err"; rc1=$?
  ( cd "$WORK/ccl" && LD_PRELOAD="$LIB" "$CC_BIN" -O2 -c ../big.c -o big.o ) >/dev/null 2>"$WORK/cc.preload.err"; rc2=$?
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
    result cc FAIL "compile failed: plain $rc1, preloaded $rc2"
    tail -5 "$WORK/cc.preload.err" >&2
  else
    nm "$WORK/ccp/big.o" >"$WORK/cc.plain"; objdump -d "$WORK/ccp/big.o" | tail -n +3 | sha256sum >>"$WORK/cc.plain"
    nm "$WORK/ccl/big.o" >"$WORK/cc.preload"; objdump -d "$WORK/ccl/big.o" | tail -n +3 | sha256sum >>"$WORK/cc.preload"
    compare cc cc
  fi
else
  result cc skip "no C compiler"
fi

# --- c. git: a few hundred files, log --stat, gc, fsck, ls-tree ----------------------
if command -v git >/dev/null 2>&1; then
  git_run() { # dir
    local d="$1"
    rm -rf "$d"; mkdir -p "$d"; cd "$d" || return 1
    export HOME="$d" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com \
      GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com \
      GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
    git init -q -b main repo && cd repo || return 1
    for c in 1 2 3; do
      for i in $(seq 1 150); do
        mkdir -p "dir$((i % 10))"
        awk -v i="$i" -v c="$c" 'BEGIN { for (k = 0; k < 40 + i; k++) print "line", k, "of file", i, "commit", c, (k * i * c) % 977 }' \
          >"dir$((i % 10))/file$i.txt"
      done
      git add -A && git commit -q -m "commit $c" || return 1
    done
    git log --stat
    git gc -q --aggressive || return 1
    git fsck --full 2>&1 || return 1
    git ls-tree -r HEAD
    git rev-parse HEAD
  }
  ( git_run "$WORK/gitp" ) >"$WORK/git.plain" 2>"$WORK/git.plain.err"; rc1=$?
  ( export LD_PRELOAD="$LIB"; git_run "$WORK/gitl" ) >"$WORK/git.preload" 2>"$WORK/git.preload.err"; rc2=$?
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
    result git FAIL "a run failed: plain $rc1, preloaded $rc2"
    tail -5 "$WORK/git.preload.err" >&2
  else
    compare git git
  fi
else
  result git skip "git not found"
fi

# --- d. sort of 2 million generated lines ------------------------------------------
awk 'BEGIN { srand(12345); for (i = 0; i < 2000000; i++) printf "%08d %s %d\n", int(rand() * 100000000), substr("abcdefghijklmnopqrstuvwxyz", i % 26 + 1, i % 7 + 1), i }' >"$WORK/lines.txt"
sort_run() { sort -S 64M "$WORK/lines.txt" | sha256sum; sort -r -k2,2 -k1,1n "$WORK/lines.txt" | sha256sum; }
if run_both sort sort_run; then compare sort sort; else result sort FAIL "a run failed"; fi

# --- e. sqlite3: 200k inserts in a transaction, aggregates --------------------------
if command -v sqlite3 >/dev/null 2>&1; then
  awk 'BEGIN {
    print "CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL);";
    print "BEGIN;";
    for (i = 1; i <= 200000; i++) printf "INSERT INTO t VALUES(%d, %d, %c%s-%d%c, %d.%d);\n", i, i % 97, 39, "name", (i * 7919) % 100003, 39, i % 1000, i % 10;
    print "COMMIT;";
    print "CREATE INDEX t_grp ON t(grp);";
    print "SELECT count(*), sum(grp), round(avg(val), 6), min(name), max(name) FROM t;";
    print "SELECT grp, count(*), round(sum(val), 3), max(length(name)) FROM t GROUP BY grp ORDER BY grp;";
    print "SELECT name, count(*) c FROM t GROUP BY name HAVING c > 2 ORDER BY c DESC, name LIMIT 20;";
    print "SELECT group_concat(id) FROM (SELECT id FROM t WHERE grp = 5 ORDER BY val DESC, id LIMIT 100);";
    print "DELETE FROM t WHERE id % 3 = 0; VACUUM;";
    print "SELECT count(*), total(val) FROM t;";
  }' >"$WORK/sql.txt"
  sqlite_run() { rm -f "$WORK/db.$1"; sqlite3 "$WORK/db.$1" <"$WORK/sql.txt"; }
  ( sqlite_run p ) >"$WORK/sql.plain" 2>"$WORK/sql.plain.err"; rc1=$?
  ( export LD_PRELOAD="$LIB"; sqlite_run l ) >"$WORK/sql.preload" 2>"$WORK/sql.preload.err"; rc2=$?
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
    result sqlite3 FAIL "a run failed: plain $rc1, preloaded $rc2"
    tail -5 "$WORK/sql.preload.err" >&2
  else
    compare sqlite3 sql
  fi
else
  result sqlite3 skip "sqlite3 not installed"
fi

if [ $FAILED -ne 0 ]; then
  echo "override: FAILED"
  exit 1
fi
echo "override: all programs produced identical output"
exit 0
