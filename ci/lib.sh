# Shared by the jobs (ci/test-all.sh, ci/asan.sh, ci/tsan.sh, ci/valgrind.sh).
# Source it after setting `root` (the repository) and `status` (the job's
# exit status, set to 1 by a failed check here).

# ci_build DIR CC BUILD_TYPE [CMAKE_ARGS...] [-- TARGETS...]: configure and
# build a test build in DIR (all targets unless some are named), with the
# logs beside it; on failure show their tails and return 1. The one build
# helper of every job (ci/test-all.sh and the jobs' own scripts).
ci_build() {
  local dir=$1 cc=$2 type=$3
  shift 3
  local cmake_args=() targets=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    cmake_args+=("$1")
    shift
  done
  [ $# -gt 0 ] && shift
  local t
  for t in "$@"; do targets+=(--target "$t"); done
  CC=$cc cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DMI_BUILD_TESTS=ON "${cmake_args[@]}" >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j2 "${targets[@]}" >"$dir.build.log" 2>&1 ||
    {
      tail -50 "$dir.configure.log" "$dir.build.log" 2>/dev/null
      return 1
    }
}

# ci_expect_report JOB NAME RC LOG REGEX...: a positive control (a planted
# bug) must have failed its run (RC != 0) and its tool's report in LOG must
# match every extended REGEX: the report header, anchored, and where given
# the planting function in the stack, never a bare keyword.
ci_expect_report() {
  local job=$1 name=$2 rc=$3 log=$4
  shift 4
  local found=1 re
  [ "$rc" -ne 0 ] || found=0
  for re in "$@"; do grep -Eq "$re" "$log" || found=0; done
  if [ "$found" = 1 ]; then
    echo "$job: positive control $name: reported (exit $rc)"
  else
    echo "$job: positive control $name: NOT reported (exit $rc)"
    cat "$log"
    status=1
  fi
}

# ci_expect_clean JOB WHAT RC LOG: the control run beside the plants (same
# program, no bug) must have exited 0.
ci_expect_clean() {
  local job=$1 what=$2 rc=$3 log=$4
  if [ "$rc" -eq 0 ]; then
    echo "$job: control ($what): clean"
  else
    echo "$job: control reported an error"
    cat "$log"
    status=1
  fi
}
