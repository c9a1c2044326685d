#!/usr/bin/env bash
# The README's test command: install what is needed, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
# Timing tests compare two stopwatches on a 2-core machine; one that a burst of load made
# fail gets one more run (both results are in the log).
(cd build && ctest --output-on-failure -j2 --repeat until-pass:2 "$@")
# CI: a bounded fuzzing run of the collector's stream decoder (docs/RELIABILITY.md).
if [ "${GPUWATCH_FUZZ_SECONDS:-0}" -gt 0 ]; then bash scripts/fuzz.sh "$GPUWATCH_FUZZ_SECONDS"; fi
