#!/usr/bin/env bash
# CI's sanitizer stage, and CI's only run of the unit suites (test.sh leaves them out of the
# main build then): collector_tests and inject_unit_tests built with clang under
# AddressSanitizer + UndefinedBehaviorSanitizer in the fuzzer's tree
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
# A suite that fails is run once more (its socket tests time real processes, which the
# instrumented build runs several times slower on 2 cores); both outputs stay in the log. A
# sanitizer report aborts the process, so it fails both runs.
status=0
for t in inject_unit_tests collector_tests; do
  echo "== $t under ASan + UBSan"
  log="$build/$t.log"
  if "$build/bin/$t" >"$log" 2>&1 || { cat "$log"; echo "== $t: again"; "$build/bin/$t" >"$log" 2>&1; }; then
    tail -n 3 "$log"
  else
    cat "$log"
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "sanitize_unit: no sanitizer report, every unit test passed"
exit "$status"
