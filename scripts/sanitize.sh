#!/usr/bin/env bash
# The unit tests and the fault, lifecycle and TCP end-to-end tests under AddressSanitizer +
# UndefinedBehaviorSanitizer, in a second build tree (default build-asan). Any sanitizer
# report, in the test binary or in any process it starts (collector, ranks, the preloaded
# library), fails the run. Usage: scripts/sanitize.sh [BUILD_DIR]
# Environment: GPUWATCH_JOBS (build parallelism, default 2), GPUWATCH_CMAKE_ARGS (extra
# configure arguments, e.g. a compiler launcher).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
# shellcheck disable=SC2086  # GPUWATCH_CMAKE_ARGS is a list of arguments
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUWATCH_SANITIZE=address,undefined \
  -DGPUWATCH_SKIP_TEST_DIRS=bench ${GPUWATCH_CMAKE_ARGS:-} >/dev/null
# e2e_tests depends on everything it runs: libgpuwatch.so, the collector, the scenario
# driver, the simulated GPU, gw_fault_app, gpuwatch report.
cmake --build "$build" -j"${GPUWATCH_JOBS:-2}" --target collector_tests inject_unit_tests e2e_tests

# Every process writes its reports to a file of its own (log_path.PID) besides aborting:
# a report in a child the test cannot see (a collector dying after its summary was written,
# a forked child) still fails the run below.
logs="$PWD/$build/sanitizer-logs"
rm -rf "$logs" && mkdir -p "$logs"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
# The preloaded library under ASan: the ASan runtime must be first in the process's initial
# library list, or it refuses to start ("ASan runtime does not come first"). An instrumented
# libgpuwatch.so preloaded alone comes before the libasan.so its program links. So with
# GPUWATCH_SANITIZE=address the e2e tests preload "libasan.so libgpuwatch.so"
# (tests/e2e/CMakeLists.txt, GPUWATCH_LIB): that works both for the instrumented driver
# programs (same runtime, loaded once) and for uninstrumented ones such as /bin/sh, which
# then run under the preloaded runtime. The collector the library starts gets no LD_PRELOAD
# and is instrumented itself.

status=0
run() {
  echo "== $*"
  "$@" || status=1
}
run "$build/bin/inject_unit_tests"
run "$build/bin/collector_tests"
run "$build/bin/e2e_tests" "faults:*,lifecycle:*,tcp:*"

if compgen -G "$logs/*" >/dev/null; then
  echo "sanitizer reports:" >&2
  for f in "$logs"/*; do
    echo "--- $f" >&2
    cat "$f" >&2
  done
  status=1
fi
[ "$status" -eq 0 ] && echo "sanitize: no sanitizer report, every test passed"
exit "$status"
