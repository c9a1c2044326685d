#!/usr/bin/env bash
# What runs inside the job under a sanitizer: libgpuwatch.so built with ASan + UBSan
# (target gpuwatch_asan; CI) or with TSan (gpuwatch_tsan; by hand, `tsan`: about 12 minutes,
# the rings between the job's threads and the sender, its exit paths), preloaded after GCC's
# runtime into the programs of the isolation suite and of the fault tests. The collector and
# the programs stay the plain build's. Every process logs its reports to a file of its own;
# any report fails the run, as does a failed test. Leaks are not checked here (python3 and
# the shell leak at exit by design; the unit stage checks the library's code for leaks).
# Needs the build of scripts/test.sh. Usage: scripts/sanitize_preload.sh [asan|tsan]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${GPUWATCH_BUILD:-build}
mode=${1:-asan}
cmake --build "$B" -j"$(nproc)" --target "gpuwatch_$mode" isolation_tests e2e_tests >/dev/null
logs="$PWD/$B/sanitizer-$mode-logs"
rm -rf "$logs" && mkdir -p "$logs"
case "$mode" in
  asan)
    runtime=libasan.so
    export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=0:log_path=$logs/report"
    export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$logs/report" ;;
  tsan)
    # The simulator and the test programs are not instrumented: what TSan reports inside
    # them (their function-local statics, a descriptor the fd test's job closes on purpose)
    # is not a race it can judge (tests/isolation/tsan.supp).
    runtime=libtsan.so
    export TSAN_OPTIONS="halt_on_error=0:log_path=$logs/report:suppressions=$PWD/tests/isolation/tsan.supp" ;;
  *) echo "usage: $0 [asan|tsan]" >&2; exit 2 ;;
esac
export GPUWATCH_TEST_PRELOAD="$(gcc -print-file-name=$runtime):$PWD/$B/lib/libgpuwatch_$mode.so"
status=0
run() {
  echo "== $* (library under $mode)"
  # A suite that fails is run once more (its tests time real processes, slowed several times
  # by the instrumented library on 2 cores); a sanitizer report fails the run whatever the
  # second try says.
  "$@" >"$logs/run.txt" 2>&1 || { tail -n 40 "$logs/run.txt"; echo "== again"; "$@" >"$logs/run.txt" 2>&1; } ||
    { tail -n 60 "$logs/run.txt"; status=1; }
  tail -n 2 "$logs/run.txt"
}
run "$B/bin/isolation_tests"
run "$B/bin/e2e_tests" "faults:*"
if compgen -G "$logs/report*" >/dev/null; then
  echo "sanitizer reports:" >&2
  for f in "$logs"/report*; do echo "--- $f" >&2; cat "$f" >&2; done
  status=1
fi
[ "$status" -eq 0 ] && echo "sanitize_preload: no $mode report, the isolation and fault tests passed"
exit "$status"
