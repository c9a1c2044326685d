#!/usr/bin/env bash
# Issue 18's device check, UNTESTED (written without a GPU): torch.compile(mode=
# "reduce-overhead") vs eager on the same model under gpuwatch. Expected, per summary.json:
# graphs: graphs.launches > 0 and graphs.kernels ~ 60/10 x the profiler's kernels per
# profiled step (the profiler sees 10 steps, gpuwatch's CUPTI the 60 before the hand-over);
# launch_bound among the eager run's findings and not the graphs run's; a Triton kernel
# (name starting "triton_") in gpu.kernels.top of either run.
#   GPUWATCH_LIB=.devcarry/lib/libgpuwatch.so OUT=/tmp/out bash tests/device/graphs_check.sh
set -u
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/gw-graphs}; mkdir -p "$O"
for m in eager graphs; do
  rm -rf "$O/$m"; mkdir -p "$O/$m"
  GPUWATCH_OUT=$O/$m/gw GPUWATCH_SOCKET_DIR=$O/$m/sock GPUWATCH_CUPTI=full \
    LD_PRELOAD=${GPUWATCH_LIB:-$PWD/build/lib/libgpuwatch.so} timeout 300 \
    python3 tests/device/graphs_compile.py "$m" "$O/$m/profiler.json"; echo "exit $?"
  for _ in $(seq 100); do [ -s "$O/$m/gw/summary.json" ] && break; sleep 0.1; done
done
python3 - "$O" <<'PY'
import json, sys
o = sys.argv[1]
for m in ("eager", "graphs"):
    s = json.load(open(f"{o}/{m}/gw/summary.json")); p = json.load(open(f"{o}/{m}/profiler.json"))
    r = s["ranks"][0]; g = r["graphs"]; k = r["gpu"]["kernels"]
    ids = [f["id"] for f in r["findings"]]
    top = [t["name"] for t in k["top"]]
    print(m, "graph launches", g["launches"], "graph kernels", g["kernels"], "kernels", k["count"],
          "in_graphs", k["in_graphs"], "| profiler kernels/step", p["profiler_kernels"] / p["profiled_steps"],
          "graph launches", p["profiler_graph_launches"], "| launch_bound" if "launch_bound" in ids else "| -",
          "| triton" if any(n.startswith("triton") for n in top) else "| no triton in top",
          "| driver launches (Triton's dlsym'd cuLaunchKernelEx)", r["kernels"].get("driver_launches"))
PY
