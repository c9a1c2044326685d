#!/usr/bin/env bash
# Packs what the device check needs from a build made here into .devcarry/ (ignored by git):
# the device machine has CUDA, PyTorch and Python but none of the Debian libraries, so the
# stripped programs travel with the two shared libraries they need (spdlog, fmt, benchmark).
#   bash tests/device/pack.sh [BUILD_DIR]      # then: device run, carry [".devcarry"]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
D=.devcarry
rm -rf "$D"; mkdir -p "$D/lib" "$D/bin" "$D/deps"
strip -o "$D/lib/libgpuwatch.so" "$B/lib/libgpuwatch.so"
for p in gpuwatch-collector gpuwatch gpuwatch-scenario gpuwatch-scenario-rank hook_bench hot_path_bench; do
  strip -o "$D/bin/$p" "$B/bin/$p"
done
# The Debian libraries they need (spdlog, fmt, benchmark, protobuf if linked shared); the
# C/C++ runtime, CUDA, NCCL and CUPTI are the device machine's own.
ldd "$D"/lib/* "$D"/bin/* 2>/dev/null | awk '/=> \// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt|ld-linux[^/]*|libcuda[^/]*|libnccl[^/]*|libcupti[^/]*)\.so' |
  while read -r so; do cp -L "$so" "$D/deps/"; done
du -sh "$D"
