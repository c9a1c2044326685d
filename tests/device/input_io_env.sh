#!/usr/bin/env bash
# Device check for input_io and environment (issue 6), small enough for a short lease.
# Needs .devcarry/ with lib/libgpuwatch.so, bin/gpuwatch-collector and deps/ (pack.sh makes
# it; only those three are used), PyTorch and the NVIDIA driver. Output in $OUT/io-env.log.
set -u
cd "$(dirname "$0")/../.."
C=$PWD/.devcarry LIB=$PWD/.devcarry/lib/libgpuwatch.so
O=${OUT:-/tmp/gw-device}; W=/tmp/gw-io
mkdir -p "$O"; rm -rf "$W"; mkdir -p "$W"
exec > >(tee -a "$O/io-env.log") 2>&1
SITE=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
pick() { find "$SITE/nvidia" /usr/local/cuda*/ -name "$1" 2>/dev/null | head -1; }
CUPTI=$(pick 'libcupti.so.13'); CUDART=$(pick 'libcudart.so.13'); NCCL=$(pick 'libnccl.so.2')
export LD_LIBRARY_PATH=$C/deps:$(dirname "$CUDART"):$(dirname "$NCCL")
export GPUWATCH_CUPTI_LIB=$CUPTI PYTHONUNBUFFERED=1
if ls /proc/self/task/*/children >/dev/null 2>&1; then echo "children files: yes"; else echo "children files: no (the sampler scans /proc)"; fi
for mode in cpu sleep; do
  echo "== $mode ($(date +%T))"
  GPUWATCH_OUT=$W/$mode GPUWATCH_SOCKET_DIR=$W/$mode.sock NCCL_P2P_DISABLE=1 timeout 150 \
    env LD_PRELOAD=$LIB python3 tests/device/input_io_env.py $mode; echo "exit $?"
  for _ in $(seq 150); do [ -s "$W/$mode/summary.json" ] && break; sleep 0.1; done
  python3 - "$W/$mode/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("verdict:", s["job"].get("verdict"))
for r in s["ranks"]:
    print("rank", r["rank"], "environment:", json.dumps(r.get("environment")))
    print("  steps:", json.dumps(r.get("steps", {}))[:200])
    for f in r.get("findings", []):
        print("  ", f["id"], f["severity"], round(f["time_lost_s"], 3), json.dumps(f["evidence"])[:400])
PY
  cp "$W/$mode/summary.txt" "$O/summary-$mode.txt" 2>/dev/null; cp "$W/$mode/summary.json" "$O/summary-$mode.json" 2>/dev/null
done
