#!/usr/bin/env bash
# Builds the collector's stream-decoder fuzzer and `gpuwatch import`'s trace-reader fuzzer
# with clang (libFuzzer, ASan, UBSan) in build-fuzz/ and runs them for SECONDS (default 60)
# in all, a third of it the reader's, on seed corpora of real frames and real traces.
# Findings (crash-*, leak-*, timeout-*) land in build-fuzz/findings/; exit status non-zero
# when there is one. Usage: scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}; shift || true
# shellcheck source=scripts/clang_sanitizer_tree.sh
. scripts/clang_sanitizer_tree.sh
cmake --build "$build" --target fuzz_stream fuzz_kineto fuzz_make_seeds -j"${GPUWATCH_JOBS:-2}"
corpus="$build/corpus"; findings="$build/findings"
mkdir -p "$corpus" "$findings"
ASAN_OPTIONS=detect_leaks=0 "$build/bin/fuzz_make_seeds" "$corpus" >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Inputs that once crashed them (tests/fuzz/regressions/, kineto_regressions/), each run once
# before the search.
"$build/bin/fuzz_stream" tests/fuzz/regressions/* >/dev/null 2>"$findings/regressions.log" ||
  { tail -40 "$findings/regressions.log"; echo "fuzz: an input in tests/fuzz/regressions/ fails again" >&2; exit 1; }
"$build/bin/fuzz_kineto" tests/fuzz/kineto_regressions/* >/dev/null 2>"$findings/kineto-regressions.log" ||
  { tail -40 "$findings/kineto-regressions.log"; echo "fuzz: an input in tests/fuzz/kineto_regressions/ fails again" >&2; exit 1; }
# The trace reader: small hand-written traces of both dialects and a real one (gzip).
kcorpus="$build/corpus-kineto"
mkdir -p "$kcorpus"
cp tests/fuzz/kineto_seeds/* tests/data/kineto/alexnet_a100.json.gz "$kcorpus/"
ksecs=$(( secs / 3 > 5 ? secs / 3 : 5 ))
"$build/bin/fuzz_kineto" "$kcorpus" -max_total_time="$ksecs" -max_len=65536 -rss_limit_mb=2048 \
  -artifact_prefix="$findings/kineto-" -print_final_stats=1 "$@"
secs=$(( secs - ksecs > 5 ? secs - ksecs : 5 ))
exec "$build/bin/fuzz_stream" "$corpus" -max_total_time="$secs" -max_len=65536 \
  -rss_limit_mb=2048 -artifact_prefix="$findings/" -print_final_stats=1 "$@"
