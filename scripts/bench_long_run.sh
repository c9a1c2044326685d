#!/usr/bin/env bash
# A long launch-heavy run on the simulator (issue 53, "always on for days"): one rank
# launching 2 us kernels at ~220k launches/s for GPUWATCH_LONG_RUN_S seconds (default 600),
# with the defaults. Every 30 s: the collector's resident memory and its peak so far
# (checkpoints' encoding included: GPUWATCH_JOURNAL_CHECKPOINT_S, default 60), the journal's
# and the trace's size on disk (its parts while the job runs: --trace-keep), and at the end which
# spans of the run it keeps in full detail, at the summary level, or not at all (a small
# GPUWATCH_TRACE_MAX_MIB shows what a run of days does at the default cap). Then the same
# run with the collector SIGKILLed at 90% of its length: `gpuwatch report` must give the
# undisturbed run's counts exactly (launches, syncs, steps) and its device figures within 2%.
# Not part of CI or bench.sh (it takes twice the length).
#   bash scripts/bench_long_run.sh              # 10 minutes, twice
#   GPUWATCH_LONG_RUN_S=120 bash scripts/bench_long_run.sh
#   GPUWATCH_LONG_RUN_S=120 GPUWATCH_TRACE_MAX_MIB=1 bash scripts/bench_long_run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
B=${GPUWATCH_BUILD:-$PWD/build}
LIB=$B/lib/libgpuwatch.so
D=${GPUWATCH_LONG_RUN_S:-600}
W=$(mktemp -d /tmp/gpuwatch-long-run.XXXXXX)
trap 'rm -rf "$W"' EXIT
export GPUWATCH_SOCKET_DIR=$W/sock
# ~9 ms a step (2000 launches at 4 us, then a sync): D seconds of steps.
steps=$(awk -v d="$D" 'BEGIN{printf "%d", d / 0.0092}')
cat >"$W/loop.json" <<EOF
{"name": "long_run", "description": "scripts/bench_long_run.sh", "ranks": 1, "steps": $steps,
 "gpu": {"launch_us": 4, "default_kernel_us": 0}, "nvtx": true,
 "step": [{"op": "kernels", "count": 2000, "us": 2}, {"op": "sync"}]}
EOF

collector_pid() { pgrep -f -- "--listen $GPUWATCH_SOCKET_DIR" | head -1; }
kib() { du -skc "$@" 2>/dev/null | tail -1 | awk '{print $1}'; }

# $1: output dir, $2: seconds after which to SIGKILL the collector (0: never).
run() {
  local out=$1 kill_at=$2 t0 now pid
  GPUWATCH_OUT=$out LD_PRELOAD=$LIB "$B/bin/gpuwatch-scenario" --sim "$W/loop.json" >/dev/null 2>&1 &
  local job=$!
  t0=$(date +%s)
  printf '%6s %12s %12s %12s %12s\n' "t (s)" "RSS (KiB)" "peak KiB" "journal KiB" "trace KiB"
  local next=30 killed=0
  while kill -0 "$job" 2>/dev/null; do
    sleep 1
    now=$(( $(date +%s) - t0 ))
    pid=$(collector_pid || true)
    if [ "$kill_at" -gt 0 ] && [ "$killed" = 0 ] && [ "$now" -ge "$kill_at" ] && [ -n "$pid" ]; then
      kill -9 "$pid"
      killed=1
      echo "  collector SIGKILLed at ${now} s"
    fi
    if [ "$now" -ge "$next" ]; then
      local rss=- peak=-
      [ -n "$pid" ] && rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || echo -)
      [ -n "$pid" ] && peak=$(awk '/VmHWM/{print $2}' "/proc/$pid/status" 2>/dev/null || echo -)
      printf '%6d %12s %12s %12s %12s\n' "$now" "$rss" "$peak" "$(kib "$out/.gpuwatch")" "$(kib "$out"/trace*)"
      next=$((next + 30))
    fi
  done
  wait "$job" || true
  while [ -n "$(collector_pid || true)" ]; do sleep 0.2; done
}

echo "undisturbed, ${D} s:"
run "$W/a" 0
echo "collector SIGKILLed at 90%:"
run "$W/b" $((D * 9 / 10))
"$B/bin/gpuwatch" report "$W/b" >/dev/null 2>&1 || { echo "gpuwatch report failed" >&2; exit 1; }
python3 - "$W/a/summary.json" "$W/b/summary.json" <<'EOF'
import json, sys
whole = json.load(open(sys.argv[1]))
a = whole["ranks"][0]
b = json.load(open(sys.argv[2]))["ranks"][0]
t = whole.get("trace")
if t:
    spans = ", ".join(f"{s['detail']} {s['from_s']:.0f}-{s['to_s']:.0f} s" for s in t["detail_spans"])
    print(f"  trace        {t['bytes'] / 1e6:.2f} MB ({t['keep']}): {spans}")
rows = [("launches", a["kernels"]["launches"], b["kernels"]["launches"], 0),
        ("syncs", a["sync"]["count"], b["sync"]["count"], 0),
        ("steps", a["steps"]["count"], b["steps"]["count"], 0),
        ("gpu busy s", a["gpu"]["busy_s"], b["gpu"]["busy_s"], 0.02),
        ("gpu kernels", a["gpu"]["kernels"]["count"], b["gpu"]["kernels"]["count"], 0.02)]
j = a["storage"]["journal"]
print(f"  checkpoints  {j['checkpoints']}, the last {j['checkpoint_bytes'] / 1e6:.2f} MB, encoded and written in "
      f"{j['checkpoint_ms']:.0f} ms on the collector's thread")
ok = True
for name, x, y, tol in rows:
    good = x == y if tol == 0 else abs(x - y) <= tol * abs(x)
    ok = ok and good
    print(f"  {name:12s} undisturbed {x!s:>14}  rebuilt {y!s:>14}  {'ok' if good else 'DIFFERS'}")
print("report after the kill: " + ("the undisturbed run's figures" if ok else "DIFFERS"))
sys.exit(0 if ok else 1)
EOF
