#!/usr/bin/env bash
# CI's sanitizer stage: the unit test suites (collector_tests, inject_unit_tests) built with
# clang under AddressSanitizer + UndefinedBehaviorSanitizer in the fuzzer's tree
# (scripts/clang_sanitizer_tree.sh, build-fuzz), and run with every report fatal. The
# collector they start (socket, TCP, reliability tests) is the same tree's, instrumented
# too. scripts/sanitize.sh adds the fault/lifecycle/TCP end-to-end tests with the preloaded
# library under ASan (a second full build; too slow for CI on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/clang_sanitizer_tree.sh
. scripts/clang_sanitizer_tree.sh
cmake --build "$build" --target collector_tests inject_unit_tests -j"${GPUWATCH_JOBS:-2}" >/dev/null
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for t in inject_unit_tests collector_tests; do
  echo "== $t under ASan + UBSan"
  "$build/bin/$t" | tail -n 3 || status=1
done
[ "$status" -eq 0 ] && echo "sanitize_unit: no sanitizer report, every unit test passed"
exit "$status"
