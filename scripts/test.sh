#!/usr/bin/env bash
# The README's test command: install what is needed, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# -O2 without debug info: a quarter less compile time than RelWithDebInfo, which CI's 15
# minutes on 2 cores need (call sites are named from dynamic symbols, not debug info).
# With GPUWATCH_SANITIZE_UNIT=1 (CI) the unit suites are built and run only in the
# sanitizer stage below, instrumented, instead of twice.
skip=""; [ "${GPUWATCH_SANITIZE_UNIT:-0}" = 1 ] && skip="unit"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DGPUWATCH_SKIP_TEST_DIRS="$skip" >/dev/null
cmake --build build -j"$(nproc)"
(cd build && ctest --output-on-failure -j2 "$@")
# CI: the unit suites under ASan + UBSan in one clang tree, the library under ASan + UBSan
# preloaded into the isolation and fault tests' programs, then a bounded fuzzing run of the
# collector's stream decoder (docs/RELIABILITY.md).
if [ "${GPUWATCH_SANITIZE_UNIT:-0}" = 1 ]; then bash scripts/sanitize_unit.sh; bash scripts/sanitize_preload.sh asan; fi
if [ "${GPUWATCH_FUZZ_SECONDS:-0}" -gt 0 ]; then bash scripts/fuzz.sh "$GPUWATCH_FUZZ_SECONDS"; fi
