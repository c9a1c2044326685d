# Sourced by scripts/fuzz.sh and scripts/sanitize_unit.sh: configures one clang build tree
# (default build-fuzz) with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer's
# coverage instrumentation, so the fuzzer and the unit tests under the sanitizers share its
# compiled collector core. -O0 with line tables only: sanitizer reports keep file:line, and
# clang compiles it ~40% faster than -O1 (measured per file), which CI's 15 minutes on 2
# cores need; the fuzzer runs fewer inputs per second for it.
# Sets $build to the tree's path.
build=${GPUWATCH_FUZZ_BUILD:-build-fuzz}
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPUWATCH_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_CXX_FLAGS_RELEASE="-O0 -gline-tables-only" \
  -DCMAKE_C_FLAGS_RELEASE="-O0 -gline-tables-only" \
  -DGPUWATCH_SKIP_TEST_DIRS="sim;scenario;e2e" >/dev/null
