#!/usr/bin/env bash
# Builds the collector's stream-decoder fuzzer with clang (libFuzzer, ASan, UBSan) in
# build-fuzz/ and runs it for SECONDS (default 60) on a seed corpus of real frames.
# Findings (crash-*, leak-*, timeout-*) land in build-fuzz/findings/; exit status non-zero
# when there is one. Usage: scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}; shift || true
# shellcheck source=scripts/clang_sanitizer_tree.sh
. scripts/clang_sanitizer_tree.sh
cmake --build "$build" --target fuzz_stream fuzz_make_seeds -j"${GPUWATCH_JOBS:-2}"
corpus="$build/corpus"; findings="$build/findings"
mkdir -p "$corpus" "$findings"
ASAN_OPTIONS=detect_leaks=0 "$build/bin/fuzz_make_seeds" "$corpus" >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Inputs that once crashed it (tests/fuzz/regressions/), each run once before the search.
"$build/bin/fuzz_stream" tests/fuzz/regressions/* >/dev/null 2>"$findings/regressions.log" ||
  { tail -40 "$findings/regressions.log"; echo "fuzz: an input in tests/fuzz/regressions/ fails again" >&2; exit 1; }
exec "$build/bin/fuzz_stream" "$corpus" -max_total_time="$secs" -max_len=65536 \
  -rss_limit_mb=2048 -artifact_prefix="$findings/" -print_final_stats=1 "$@"
