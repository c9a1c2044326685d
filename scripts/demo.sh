#!/usr/bin/env bash
# The README's demo in one command on a fresh machine: installs what the build needs
# (scripts/setup.sh), builds only what the demo runs, and plays a bundled scenario on the
# simulated GPU under `gpuwatch run`.
#   bash scripts/demo.sh [SCENARIO] [OUT]     (default: dataloader_bound, ./gpuwatch-demo)
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-dataloader_bound}
out=${2:-gpuwatch-demo}
file=tests/scenarios/$scenario.json
[ -f "$file" ] || { echo "demo: no scenario $file (see tests/scenarios/)" >&2; exit 2; }
bash scripts/setup.sh
B=${GPUWATCH_BUILD:-build}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$B" -j"$(nproc)" --target gpuwatch gpuwatch_cli gpuwatch-collector gpuwatch-scenario \
  gpuwatch-scenario-rank simgpu_cudart simgpu_nccl simgpu_cupti >/dev/null
exec "$B/bin/gpuwatch" run -o "$out" -- "$B/bin/gpuwatch-scenario" --sim "$file"
