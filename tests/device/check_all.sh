#!/usr/bin/env bash
# Every device check, as one prepared script for a lent GPU machine (see README.md here).
# Needs .devcarry/ from pack.sh (carried), PyTorch and the NVIDIA driver on that machine.
# Writes check.log and results.tar.gz (summaries, traces) into $OUT (or /tmp/gw-device).
set -u
cd "$(dirname "$0")/../.."
C=$PWD/.devcarry LIB=$PWD/.devcarry/lib/libgpuwatch.so
O=${OUT:-/tmp/gw-device}; W=/tmp/gw-dev
mkdir -p "$O"; rm -rf "$W"; mkdir -p "$W"
exec > >(tee -a "$O/check.log") 2>&1
say() { echo; echo "== $* ($(date +%T))"; }
# ONLY=A,B runs just those sections (a short re-check); all by default.
want() { [ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$1,"* ]]; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
wait_file() { for _ in $(seq 150); do [ -s "$1" ] && return 0; sleep 0.1; done; echo "MISSING $1"; return 1; }

say machine
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'
# The simulator starts one driver thread with its model (docs/simulator.md): how many threads
# a real process has before and after its CUDA context, and their names.
python3 -c 'import os, torch
t = lambda: sorted(open(f"/proc/self/task/{x}/comm").read().strip() for x in os.listdir("/proc/self/task"))
a = t(); torch.zeros(1, device="cuda"); torch.cuda.synchronize(); b = t()
print("threads before CUDA:", len(a), a, "| after its context:", len(b), b)'
SITE=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
find "$SITE/nvidia" /usr/local/cuda*/ \( -name 'libcupti.so.13*' -o -name 'libcudart.so.13*' -o -name 'libnccl.so.2*' \) 2>/dev/null | sort
pick() { find "$SITE/nvidia" /usr/local/cuda*/ -name "$1" 2>/dev/null | head -1; }
CUPTI=${GW_CUPTI:-$(pick 'libcupti.so.13')}; CUDART=$(pick 'libcudart.so.13'); NCCL=$(pick 'libnccl.so.2')
echo "using CUPTI=$CUPTI CUDART=$CUDART NCCL=$NCCL"
# GW_LIBDIRS overrides where the CUDA runtime and NCCL come from, GW_CUPTI which CUPTI (a dry run
# here: build/sim and build/sim/libcupti.so.13).
export LD_LIBRARY_PATH=$C/deps:${GW_LIBDIRS:-$(dirname "$CUDART"):$(dirname "$NCCL")}
export GPUWATCH_SOCKET_DIR=$W/sock GPUWATCH_CUPTI_LIB=$CUPTI PYTHONUNBUFFERED=1

if want A; then
say "A. torch.profiler vs gpuwatch, same process (issue 4's device check)"
GPUWATCH_LIB=$LIB timeout 180 bash tests/device/run.sh "$W/tvp"; echo "exit $?"
grep -E '"source|"busy_s|"utilization' "$W/tvp/gpuwatch/summary.json" | head -5
head -12 "$W/tvp/gpuwatch/summary.txt"

fi
if want B; then
say "B. NCCL (torch.distributed, world 1) + DataLoader workers that fork"
GPUWATCH_OUT=$W/nccl GPUWATCH_SOCKET_DIR=$W/nccl.sock timeout 180 env LD_PRELOAD=$LIB python3 tests/device/nccl_dataloader.py "$W/nccl-truth.json"; echo "exit $?"
wait_file "$W/nccl/summary.json" && python3 - "$W/nccl/summary.json" "$W/nccl-truth.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
print("ranks in summary:", len(s["ranks"]), "(1 expected: forked workers stay silent)")
r = s["ranks"][0]
print("collectives:", json.dumps(r.get("collectives"))[:600])
print("truth:", t, "| gpu.source:", (r.get("gpu") or {}).get("source"), "| dropped:", r.get("dropped"))
PY
# The same with CUPTI off: every all-reduce timed by its CUDA event pair, cut at the call's
# return mark (libinject/record/collective_timer.h), against B's CUPTI kernel times (a short
# run: traced whole).
GPUWATCH_CUPTI=off GPUWATCH_OUT=$W/nccl-off GPUWATCH_SOCKET_DIR=$W/nccl-off.sock timeout 180 env LD_PRELOAD=$LIB python3 tests/device/nccl_dataloader.py "$W/nccl-off-truth.json"; echo "exit $?"
wait_file "$W/nccl-off/summary.json" && python3 - "$W/nccl/summary.json" "$W/nccl-off/summary.json" <<'PY'
import json, sys
for name, path in (("CUPTI kernels", sys.argv[1]), ("event pairs", sys.argv[2])):
    a = json.load(open(path))["ranks"][0].get("collectives", {}).get("allreduce", {})
    n = a.get("count", 0) - a.get("no_gpu_time_count", 0)
    print(f"B2 {name}: {a.get('count')} all-reduces, {n} timed, {a.get('total_s')} s, {1e6 * a.get('total_s', 0) / max(n, 1):.2f} us a call")
PY

fi
if want C; then
say "C. bundled scenarios on the real GPU, one rank each (straggler needs two GPUs)"
for f in tests/scenarios/*.json; do
  n=$(basename "$f" .json); [ "$n" = straggler ] && continue
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); s["ranks"]=1; json.dump(s,open(sys.argv[2],"w"))' "$f" "$W/$n.json"
  GPUWATCH_OUT=$W/scn-$n GPUWATCH_SOCKET_DIR=$W/scn-$n.sock timeout 120 env LD_PRELOAD=$LIB "$C/bin/gpuwatch-scenario" --truth "$W/truth-$n" "$W/$n.json" >/dev/null 2>"$W/scn-$n.err"
  echo "-- $n: exit $?"; tail -2 "$W/scn-$n.err"
  wait_file "$W/scn-$n/summary.json" && python3 - "$W/scn-$n/summary.json" "$W/truth-$n/truth-rank-0.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
r = s["ranks"][0]; g = r.get("gpu") or {}; st = r.get("steps") or {}
print("   findings:", [(f["id"], f["severity"], round(f.get("time_lost_s", 0), 3)) for f in s["job"].get("findings", [])][:4])
print("   gpu:", g.get("source"), "busy_s", g.get("busy_s"), "util", g.get("utilization"), "kernels", (g.get("kernels") or {}).get("count"),
      "| steps", st.get("count"), st.get("source"), "| truth steps", t.get("steps"), "wall_s", round(t.get("wall_s", 0), 3))
PY
done

fi
if want D; then
say "D. hook cost per call on the real CUDA runtime and NCCL (Google Benchmark, 3 interleaved rounds)"
hb() { timeout 30 "$C/bin/hook_bench" --benchmark_filter="$1" --benchmark_format=csv --benchmark_min_time=0.3 2>/dev/null | awk -F, '/^"BM_/ {gsub(/"/,"",$1); print $1, $3}'; }
for i in 1 2 3; do
  hb 'Kernel|Memcpy|Sync' >>"$W/hb-plain"
  GPUWATCH_CUPTI=off GPUWATCH_OUT=$W/hb-h$i GPUWATCH_SOCKET_DIR=$W/hb-h$i.sock LD_PRELOAD=$LIB hb 'Kernel|Memcpy|Sync' >>"$W/hb-hooks"
  GPUWATCH_OUT=$W/hb-c$i GPUWATCH_SOCKET_DIR=$W/hb-c$i.sock LD_PRELOAD=$LIB hb 'Kernel|Memcpy|Sync' >>"$W/hb-cupti"
done
# The NCCL enqueue once per variant, apart: a hang there (seen in the simulator) costs 30 s, not 9 rounds.
hb AllReduce >>"$W/hb-plain"
GPUWATCH_CUPTI=off GPUWATCH_OUT=$W/hb-ha GPUWATCH_SOCKET_DIR=$W/hb-ha.sock LD_PRELOAD=$LIB hb AllReduce >>"$W/hb-hooks"
GPUWATCH_OUT=$W/hb-ca GPUWATCH_SOCKET_DIR=$W/hb-ca.sock LD_PRELOAD=$LIB hb AllReduce >>"$W/hb-cupti"
printf '%-22s %10s %12s %12s\n' bench plain_ns hooks_add_ns cupti_add_ns
for bm in BM_KernelLaunch BM_MemcpyAsyncPinned BM_StreamSyncIdle BM_AllReduceEnqueue; do
  a=$(awk -v b=$bm '$1==b {print $2}' "$W/hb-plain" | median); h=$(awk -v b=$bm '$1==b {print $2}' "$W/hb-hooks" | median)
  c=$(awk -v b=$bm '$1==b {print $2}' "$W/hb-cupti" | median)
  awk -v n=$bm -v a="$a" -v h="$h" -v c="$c" 'BEGIN{printf "%-22s %10.0f %12.0f %12.0f\n", n, a, h-a, c-a}'
done

fi
if want D2; then
say "D2. the pieces of a hook on this machine"
timeout 60 "$C/bin/hot_path_bench" --benchmark_min_time=0.2 2>/dev/null | grep -E 'stamp|^BM_'

fi
if want E; then
say "E. end to end, launch-bound PyTorch loop (100k x.add_), 3 interleaved rounds; CUPTI record kinds compared"
# name|GPUWATCH_CUPTI|GPUWATCH_CUPTI_KINDS|GPUWATCH_CUPTI_API_RECORDS ("-" = not preloaded)
# "full": every launch traced (GPUWATCH_CUPTI=on is the budget now; section O measures that).
# cupti_all: API records of the enqueueing calls only (the default); cupti_allapi: of every
# call (PyTorch's cudaGetLastError after each launch, its device guards' cudaGetDevice).
VARIANTS="plain|-|-| hooks|off|| cupti_all|full|| cupti_allapi|full||all cupti_noruntime|full|kernel,memcpy,memset,sync,driver| cupti_device|full|kernel,memcpy,memset,sync|"
for i in 1 2 3; do
  for v in $VARIANTS; do
    IFS='|' read -r name cup kinds api <<<"$v"
    if [ "$cup" = "-" ]; then
      timeout 120 python3 tests/device/launch_loop.py 100000 >>"$W/ll-$name"
    else
      GPUWATCH_CUPTI=$cup GPUWATCH_CUPTI_KINDS=$kinds GPUWATCH_CUPTI_API_RECORDS=$api GPUWATCH_OUT=$W/ll-$name$i GPUWATCH_SOCKET_DIR=$W/ll-$name$i.sock \
        timeout 120 env LD_PRELOAD=$LIB python3 tests/device/launch_loop.py 100000 >>"$W/ll-$name" 2>/dev/null
    fi
  done
done
for v in $VARIANTS; do
  name=${v%%|*}
  drops=""; [ -f "$W/ll-${name}1/summary.json" ] && drops=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["ranks"][0]; g = r.get("gpu") or {}; print("dropped", r.get("dropped"), "gpu kernels", (g.get("kernels") or {}).get("count"), "tied to launches", (g.get("launch_delay") or {}).get("count"), "|", g.get("source_detail"), "| launches", r.get("kernels",{}).get("launches") if isinstance(r.get("kernels"),dict) else "")' "$W/ll-${name}1/summary.json" 2>/dev/null)
  echo "$name: loop_s $(grep -o '"loop_s": [0-9.]*' "$W/ll-$name" | awk '{print $2}' | tr '\n' ' ') launches/s median $(grep -o '"launches_per_s": [0-9.]*' "$W/ll-$name" | awk '{print $2}' | median) | $drops"
done

fi
if want F; then
say "F. end to end, the launch_heavy scenario (1 rank), 3 interleaved rounds"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); s["ranks"]=1; json.dump(s,open(sys.argv[2],"w"))' tests/bench/launch_heavy.json "$W/lh.json"
for i in 1 2 3; do
  for v in plain hooks cupti; do
    case $v in plain) pre="" ;; *) pre=$LIB ;; esac
    cup=on; [ $v = hooks ] && cup=off
    GPUWATCH_CUPTI=$cup GPUWATCH_OUT=$W/lh-$v$i GPUWATCH_SOCKET_DIR=$W/lh-$v$i.sock LD_PRELOAD=$pre timeout 120 "$C/bin/gpuwatch-scenario" --truth "$W/lht-$v$i" "$W/lh.json" >/dev/null 2>&1
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_s"])' "$W/lht-$v$i/truth-rank-0.json" >>"$W/lh-$v"
  done
done
for v in plain hooks cupti; do echo "$v: wall_s $(tr '\n' ' ' <"$W/lh-$v") median $(median <"$W/lh-$v")"; done

fi
if want O; then
say "O. the overhead budget (issue 15): launch-bound PyTorch loop of ~10 s, plain / default / full or off / plain again, interleaved"
# GW_LOOP_N launches a run (~10 s plain at H200's 134k/s), GW_ROUNDS rounds (~75 s each, ~5 min
# in all). Each round: plain, the default (GPUWATCH_CUPTI unset: what a user runs), `full` (odd
# rounds) or `off` (even), plain again: the A/A pair says what the machine resolves. The loop's
# thread is pinned to one CPU in every run (GW_PIN_CPU, the last CPU unless set; empty: not
# pinned): unpinned, two plain processes differed by 18% on the H200.
N=${GW_LOOP_N:-1300000} R=${GW_ROUNDS:-4}
export GW_PIN_CPU=${GW_PIN_CPU-$(($(nproc) - 1))}
for i in $(seq "$R"); do
  x=full; [ $((i % 2)) = 0 ] && x=off
  for v in plain default $x plain2; do
    if [ ${v%2} = plain ]; then
      timeout 120 python3 tests/device/launch_loop.py "$N" >"$W/ob-$v$i.loop"
    else
      cup=$v; [ $v = default ] && cup=  # unset: what a user runs
      GPUWATCH_CUPTI=$cup GPUWATCH_OUT=$W/ob-$v$i GPUWATCH_SOCKET_DIR=$W/ob-$v$i.sock \
        timeout 120 env LD_PRELOAD=$LIB python3 tests/device/launch_loop.py "$N" >"$W/ob-$v$i.loop" 2>"$W/ob-$v$i.err"
      wait_file "$W/ob-$v$i/summary.json" >/dev/null
    fi
  done
done
unset GW_PIN_CPU
python3 tests/device/overhead_budget.py "$W" "$R"
grep -h -A3 "own cost" "$W"/ob-default1/summary.txt 2>/dev/null | head -4

fi
if want L; then
say "L. CUPTI's cost after its kinds are disabled again, and cuptiFinalize (cupti_linger.py; gpuwatch not loaded)"
timeout 120 python3 tests/device/cupti_linger.py "$CUPTI" 200000
say "L2. the launch loop with a budget of 0.001% (one window at the start, from the 50 ms allowance), against plain and off, and kept attached (GPUWATCH_CUPTI_DETACH=0), 2 rounds"
for i in 1 2; do
  for v in plain zero attached off; do
    case $v in
      plain) timeout 120 python3 tests/device/launch_loop.py 1300000 >"$W/lz-$v$i.loop" ;;
      zero|attached)
        detach=1; [ $v = attached ] && detach=0
        GPUWATCH_CUPTI_DETACH=$detach GPUWATCH_OVERHEAD=0.001% GPUWATCH_OUT=$W/lz-$v$i GPUWATCH_SOCKET_DIR=$W/lz-$v$i.sock \
          timeout 120 env LD_PRELOAD=$LIB python3 tests/device/launch_loop.py 1300000 >"$W/lz-$v$i.loop" 2>"$W/lz-$v$i.err"
        wait_file "$W/lz-$v$i/summary.json" >/dev/null ;;
      off) GPUWATCH_CUPTI=off GPUWATCH_OUT=$W/lz-$v$i GPUWATCH_SOCKET_DIR=$W/lz-$v$i.sock \
             timeout 120 env LD_PRELOAD=$LIB python3 tests/device/launch_loop.py 1300000 >"$W/lz-$v$i.loop" 2>/dev/null
           wait_file "$W/lz-$v$i/summary.json" >/dev/null ;;
    esac
    echo "$v round $i: $(cat "$W/lz-$v$i.loop")"
  done
  for v in zero attached; do
    echo "   $v: $(grep -o '"window_s": [0-9.e-]*\|"windows": [0-9]*\|"cupti_us_per_call": [0-9.e-]*\|"cupti_detaches": [0-9]*\|"cupti_detach_s": [0-9.e-]*\|"gpu_records_incomplete": [0-9]*' "$W/lz-$v$i/summary.json" | tr '\n' ' ')"
    tail -2 "$W/lz-$v$i.err"
  done
done

fi
if want OB; then
say "OB. GPU-bound (bf16 matmuls, a deep queue): the default's sampled busy and kernels against full's, with and without a sync per step"
for m in sync nosync; do
  for v in default full; do
    cup=$v; [ $v = default ] && cup=
    GPUWATCH_CUPTI=$cup GPUWATCH_OUT=$W/gb-$m-$v GPUWATCH_SOCKET_DIR=$W/gb-$m-$v.sock \
      timeout 120 env LD_PRELOAD=$LIB python3 tests/device/gpu_bound_loop.py 10 $m >"$W/gb-$m-$v.loop" 2>"$W/gb-$m-$v.err"
    wait_file "$W/gb-$m-$v/summary.json" >/dev/null
    echo "$m $v: $(cat "$W/gb-$m-$v.loop")"; tail -2 "$W/gb-$m-$v.err"
  done
  python3 - "$W/gb-$m-default/summary.json" "$W/gb-$m-full/summary.json" <<'PY'
import json, sys
def rank(p):
    try:
        return json.load(open(p))["ranks"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        sys.exit(f"   no summary {p}: {e}")
d, f = rank(sys.argv[1]), rank(sys.argv[2])
for name, r in (("default", d), ("full", f)):
    g = r.get("gpu") or {}; o = r.get("overhead") or {}
    print(f"   {name}: busy_s {g.get('busy_s')} of active_s {g.get('active_s')} | kernels {(g.get('kernels') or {}).get('count')}"
          f" | launches {(r.get('kernels') or {}).get('launches')} | coverage {g.get('coverage')} | windows {o.get('windows')}"
          f" detaches {o.get('cupti_detaches')} | added_s {o.get('added_s')} | dropped {r.get('dropped')}")
bd, bf = (d.get("gpu") or {}).get("busy_s"), (f.get("gpu") or {}).get("busy_s")
ad, af = (d.get("gpu") or {}).get("active_s"), (f.get("gpu") or {}).get("active_s")
if bd and bf and ad and af:
    print(f"   utilization default {bd / ad:.3f} vs full {bf / af:.3f}  [sampled busy within 5% of the traced one]")
PY
done

fi
if want OT; then
say "OT. the budget on torch.compile'd steps (Triton's cuLaunchKernelEx), plain / default, 2 interleaved rounds"
N=${GW_COMPILE_N:-200000}
for i in 1 2; do
  timeout 180 python3 tests/device/compile_loop.py "$N" >"$W/ot-plain$i.loop" 2>"$W/ot-plain$i.err"
  GPUWATCH_OUT=$W/ot-default$i GPUWATCH_SOCKET_DIR=$W/ot-default$i.sock \
    timeout 180 env LD_PRELOAD=$LIB python3 tests/device/compile_loop.py "$N" >"$W/ot-default$i.loop" 2>"$W/ot-default$i.err"
  wait_file "$W/ot-default$i/summary.json" >/dev/null
done
cat "$W"/ot-*.loop; tail -3 "$W/ot-plain1.err"
for i in 1 2; do
  python3 - "$W/ot-default$i/summary.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))["ranks"][0]
except (OSError, ValueError, KeyError, IndexError) as e:
    sys.exit(f"   no summary: {e}")
o = r.get("overhead") or {}; g = r.get("gpu") or {}; k = r.get("kernels") or {}
print("   driver_launches", k.get("driver_launches"), "launches", k.get("launches"), "| cupti_calls", o.get("cupti_calls"),
      "cupti_us_per_call", o.get("cupti_us_per_call"), "measured", o.get("cupti_cost_measured"), "| windows", o.get("windows"),
      "coverage", (g.get("coverage") or {}).get("share"), "| added_s", o.get("added_s"), "share", o.get("share_of_wall"),
      "| busy_s", g.get("busy_s"), "| dropped", r.get("dropped"))
PY
done

fi
if want OG; then
say "OG. the budget on graph replays (torch.cuda.graphs, 200 nodes), plain / default / full, 2 interleaved rounds"
N=${GW_GRAPH_N:-5000}
for i in 1 2; do
  for v in plain default full; do
    if [ $v = plain ]; then
      timeout 120 python3 tests/device/graph_loop.py "$N" >"$W/og-$v$i.loop" 2>"$W/og-$v$i.err"
    else
      cup=$v; [ $v = default ] && cup=
      GPUWATCH_CUPTI=$cup GPUWATCH_OUT=$W/og-$v$i GPUWATCH_SOCKET_DIR=$W/og-$v$i.sock \
        timeout 120 env LD_PRELOAD=$LIB python3 tests/device/graph_loop.py "$N" >"$W/og-$v$i.loop" 2>"$W/og-$v$i.err"
      wait_file "$W/og-$v$i/summary.json" >/dev/null
    fi
  done
done
tail -2 "$W/og-plain1.err"
python3 tests/device/graph_budget.py "$W" 2

fi
if want G; then
say "G. device state (issue 17; untested until a device run): NVML and memory vs nvidia-smi and torch"
for dt in fp32 bf16; do
  nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks_event_reasons.active --format=csv,nounits -lms 200 >"$W/smi-$dt.csv" &
  smi=$!
  GPUWATCH_OUT=$W/dev-$dt GPUWATCH_SOCKET_DIR=$W/dev-$dt.sock GPUWATCH_NVML_MS=200 timeout 120 env LD_PRELOAD=$LIB python3 tests/device/device_state.py run $dt 15 "$W/dev-$dt-truth.json"; echo "exit $?"
  kill $smi
  wait_file "$W/dev-$dt/summary.json" && python3 tests/device/device_state.py compare "$W/dev-$dt/summary.json" "$W/dev-$dt-truth.json" "$W/smi-$dt.csv"
done
fi

if want P; then
say "P. Python frames on real torch (issue 16; untested before a device session)"
for m in item loader logging; do
  GPUWATCH_OUT=$W/py-$m GPUWATCH_SOCKET_DIR=$W/py-$m.sock timeout 120 env LD_PRELOAD=$LIB python3 tests/device/python_frames_torch.py $m >/dev/null 2>"$W/py-$m.err"
  echo "-- $m: exit $?"; tail -2 "$W/py-$m.err"
  wait_file "$W/py-$m/summary.json" && python3 - "$W/py-$m/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); r = s["ranks"][0]
print("   python", sys.version.split()[0], "| sampler:", (r.get("overhead") or {}).get("host_sampler"))
for f in r.get("findings", []):
    ev = f.get("evidence") or {}
    site = ev.get("call_site") or {}
    print("  ", f["id"], f["severity"], round(f.get("time_lost_s", 0), 3), "| call_site:", site.get("python"),
          "| host_frames:", ev.get("host_frames"))
PY
done
fi
say done
(cd "$W" && find . -maxdepth 3 -type f -not -path '*/.gpuwatch/*' \( -name 'summary.*' -o -name '*.json' -o -name '*.loop' -o -name '*.err' \
  -o \( -name trace.perfetto-trace \( -path './tvp/*' -o -path './nccl/*' -o -path './scn-*' \) \) \) -print0 |
  tar czf "$O/results.tar.gz" --null -T -)
ls -la "$O"

