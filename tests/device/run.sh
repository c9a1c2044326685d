#!/usr/bin/env bash
# Device check for the GPU timeline (issue "complete GPU timeline"): see README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/gpuwatch-device-check}
rm -rf "$out"; mkdir -p "$out"
export GPUWATCH_OUT="$out/gpuwatch" GPUWATCH_SOCKET_DIR="$out/sock"
LD_PRELOAD=${GPUWATCH_LIB:-$PWD/build/lib/libgpuwatch.so} python3 tests/device/torch_vs_profiler.py "$out/profiler.json"
for _ in $(seq 100); do [ -f "$out/gpuwatch/summary.json" ] && break; sleep 0.1; done
python3 tests/device/compare.py "$out/gpuwatch/summary.json" "$out/profiler.json"
