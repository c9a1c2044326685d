#!/usr/bin/env bash
# What a launch outside CUPTI's windows costs now that the library summarizes it
# (libinject/record/launch_summary.h; docs/PERFORMANCE.md, "Launches outside the windows"):
#   1. hooks only (GPUWATCH_CUPTI=off: every launch outside a window) on the ~9 s launch loop
#      (tests/bench/launch_loop_10s.json), plain vs preloaded, interleaved: ns added a launch
#      and % of wall; the sender's and the collector's CPU a launch, and the journal's bytes a
#      launch, against GPUWATCH_LAUNCH_RECORDS=all (every launch a record) in the same rounds;
#   2. the default on a launch-heavy loop (tests/bench/launch_loop_busy.json) while two busy
#      threads per core run beside the job (each pinned to its core), as DataLoader workers
#      do: plain vs default, interleaved (GPUWATCH_BENCH_BUSY_ROUNDS, default 8: a round's
#      difference moves by ~+-15 ms), and the summary's own figures against the measured one:
#      the budget's account (added_s) and what it took where every core was busy
#      (contended.added_s).
# Part of scripts/bench.sh (--rows); alone:
#   bash scripts/bench_launch_summary.sh      # GPUWATCH_BENCH_ROUNDS=3 rounds, ~6 minutes
set -euo pipefail
cd "$(dirname "$0")/.."
B=${GPUWATCH_BUILD:-$PWD/build}
LIB=$B/lib/libgpuwatch.so
W=$(mktemp -d /tmp/gpuwatch-bench-launches.XXXXXX)
BUSY_PIDS=()
cleanup() { [ ${#BUSY_PIDS[@]} -eq 0 ] || kill "${BUSY_PIDS[@]}" 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
export GPUWATCH_SOCKET_DIR=$W/sock
ROUNDS=${GPUWATCH_BENCH_ROUNDS:-3}
row() { printf '%-46s %14s   %s\n' "$1" "$2" "$3"; }
[ "${1:-}" = --rows ] || printf '%-46s %14s   %s\n' "figure" "measured" "target"
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }

# The collector the library starts, run under a shell that writes its CPU time when it ends.
cat >"$W/collector.sh" <<EOF
#!/usr/bin/env bash
"$B/bin/gpuwatch-collector" "\$@"
rc=\$?
times >"$W/collector-times"  # not in a pipeline: a subshell has no children to report
tail -1 "$W/collector-times" | awk '{gsub(/[ms]/, " "); print \$1 * 60 + \$2 + \$3 * 60 + \$4}' >>"$W/collector-cpu"
exit \$rc
EOF
chmod +x "$W/collector.sh"
export GPUWATCH_COLLECTOR_BIN=$W/collector.sh

loop() {  # $1: scenario, $2: preload or ""; prints wall seconds
  local t0 t1
  t0=$(date +%s%N)
  LD_PRELOAD=$2 "$B/bin/gpuwatch-scenario" --sim "$1" >/dev/null 2>&1 || { echo "the launch loop failed" >&2; return 1; }
  t1=$(date +%s%N)
  while pgrep -f -- "--listen $GPUWATCH_SOCKET_DIR" >/dev/null; do sleep 0.05; done
  sync
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f\n", (b-a)/1e9}'
}
fig() { python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
o = r["overhead"]
print({"launches": r["kernels"]["launches"] + r["kernels"]["driver_launches"], "elapsed": o["elapsed_s"],
       "sender": o["sender_cpu_s"], "added": o["added_s"], "beside": o["beside_cpu_s"],
       "contended": (o["contended"] or {"added_s": float("nan")})["added_s"],
       "busy": (o["contended"] or {"cores_busy_share": float("nan")})["cores_busy_share"],
       "stretch": (o["contended"] or {"stretch": float("nan")})["stretch"]}[sys.argv[2]])' "$1" "$2"; }
journal_bytes() { cat "$1"/.gpuwatch/rank-*.frames | wc -c; }
collector_cpu() { tail -1 "$W/collector-cpu"; }

# 1. Hooks only. Each round also plays a loop as long with few launches: what the sender and
# the collector spend on a rank whatever it does (their cycles, samplers, heartbeats), taken
# off the launch loop's CPU in proportion to its length, leaves what its launches cost.
LOOP=tests/bench/launch_loop_10s.json
IDLE=tests/bench/idle_loop_9s.json
for i in $(seq "$ROUNDS"); do
  p=$(loop $LOOP "")
  o=$(GPUWATCH_CUPTI=off GPUWATCH_OUT=$W/o$i loop $LOOP "$LIB"); oc=$(collector_cpu)
  a=$(GPUWATCH_CUPTI=off GPUWATCH_LAUNCH_RECORDS=all GPUWATCH_OUT=$W/a$i loop $LOOP "$LIB"); ac=$(collector_cpu)
  GPUWATCH_CUPTI=off GPUWATCH_OUT=$W/i$i loop $IDLE "$LIB" >/dev/null; ic=$(collector_cpu)
  n=$(fig "$W/o$i/summary.json" launches)
  # per second of the idle run: the sender's and the collector's fixed CPU
  base=$(awk -v s="$(fig "$W/i$i/summary.json" sender)" -v c="$ic" -v e="$(fig "$W/i$i/summary.json" elapsed)" \
    'BEGIN{printf "%.6f %.6f", s/e, c/e}')
  echo "$p $o $a $n $(fig "$W/o$i/summary.json" sender) $oc $(fig "$W/a$i/summary.json" sender) $ac \
$(journal_bytes "$W/o$i") $(journal_bytes "$W/a$i") $(fig "$W/o$i/summary.json" elapsed) $(fig "$W/a$i/summary.json" elapsed) $base" >>"$W/hooks"
done
# Columns: 1 plain s, 2 summarized s, 3 every-launch s, 4 launches, 5 sender s, 6 collector s,
# 7-8 the same every launch a record, 9-10 journal bytes, 11-12 elapsed, 13-14 fixed CPU per s.
n=$(awk '{print $4}' "$W/hooks" | median)
row "hooks only, added per launch (~9 s loop)" "$(awk '{printf "%.1f\n", ($2-$1)*1e9/$4}' "$W/hooks" | median) ns" \
  "<= 100 ns; $(awk '{printf "%+.2f\n", ($2/$1-1)*100}' "$W/hooks" | median)% of wall (<= 2%), median of $ROUNDS paired rounds, $n launches"
row "  every launch a record (LAUNCH_RECORDS=all)" "$(awk '{printf "%.1f\n", ($3-$1)*1e9/$4}' "$W/hooks" | median) ns" \
  "$(awk '{printf "%+.2f\n", ($3/$1-1)*100}' "$W/hooks" | median)% of wall, the same rounds"
row "sender + collector CPU per launch outside windows" \
  "$(awk '{printf "%.1f\n", ($5+$6-($13+$14)*$11)*1e9/$4}' "$W/hooks" | median) ns" \
  "<= 20 ns (sender $(awk '{printf "%.1f\n", ($5-$13*$11)*1e9/$4}' "$W/hooks" | median), collector $(awk '{printf "%.1f\n", ($6-$14*$11)*1e9/$4}' "$W/hooks" | median); every launch a record: $(awk '{printf "%.0f\n", ($7+$8-($13+$14)*$12)*1e9/$4}' "$W/hooks" | median) ns)"
row "  their fixed CPU, whatever the rank launches" "$(awk '{printf "%.1f\n", ($13+$14)*1000}' "$W/hooks" | median) ms/s" \
  "(sender $(awk '{printf "%.1f\n", $13*1000}' "$W/hooks" | median), collector $(awk '{printf "%.1f\n", $14*1000}' "$W/hooks" | median) ms of CPU a second: the idle loop)"
row "journal bytes per launch outside windows" "$(awk '{printf "%.2f\n", $9/$4}' "$W/hooks" | median) B" \
  "<= 1 B (every launch a record: $(awk '{printf "%.1f\n", $10/$4}' "$W/hooks" | median) B)"

# 2. The default beside two busy threads per core, each pinned to its core: unpinned, the job
# beside 2M spinners on M cores shares a core with one or with two of them as the scheduler
# happens to place it, and its wall time moved by a third from one round to the next.
LOOP=tests/bench/launch_loop_busy.json
for i in $(seq 0 $(( $(nproc) * 2 - 1 ))); do
  taskset -c $(( i % $(nproc) )) sh -c 'while :; do :; done' &
  BUSY_PIDS+=($!)
done
BUSY_ROUNDS=${GPUWATCH_BENCH_BUSY_ROUNDS:-8}
# Rounds alternate which run goes first (plain, default; then default, plain): whatever the
# first run of a pair leaves the second (caches, the spinners' place in the run queue) falls
# on each side alike.
for i in $(seq "$BUSY_ROUNDS"); do
  if (( i % 2 )); then
    p=$(loop $LOOP "")
    d=$(GPUWATCH_OUT=$W/d$i loop $LOOP "$LIB")
  else
    d=$(GPUWATCH_OUT=$W/d$i loop $LOOP "$LIB")
    p=$(loop $LOOP "")
  fi
  s=$W/d$i/summary.json
  echo "$p $d $(fig "$s" added) $(fig "$s" contended) $(fig "$s" beside) $(fig "$s" busy) $(fig "$s" stretch)" >>"$W/busy"
done
kill "${BUSY_PIDS[@]}" 2>/dev/null || true
BUSY_PIDS=()
plain=$(awk '{print $1}' "$W/busy" | median)
dms=$(awk '{printf "%.1f\n", ($2-$1)*1000}' "$W/busy" | median)
self=$(awk '{printf "%.1f\n", $3*1000}' "$W/busy" | median)
contended=$(awk '{printf "%.1f\n", $4*1000}' "$W/busy" | median)
row "default, launch loop beside 2 busy threads/core" "$(awk '{printf "%+.2f\n", ($2/$1-1)*100}' "$W/busy" | median)% ($(printf %+.0f "$dms") ms)" \
  "<= $(awk -v p="$plain" 'BEGIN{printf "%.0f", 10*p+50}') ms = 1% + 50 ms (plain $plain s, median of $BUSY_ROUNDS paired rounds; quartiles $(awk '{printf "%.0f\n", ($2-$1)*1000}' "$W/busy" | sort -g | awk '{a[NR]=$1} END {printf "%+d..%+d", a[int((NR+3)/4)], a[int((3*NR+3)/4)]}') ms)"
row "  self-reported: where every core was busy" "$(printf %.0f "$contended") ms" \
  "within 1.5x of the measured $(printf %+.0f "$dms") ms ($(awk -v s="$contended" -v m="$dms" 'BEGIN{if (m<=0) print "measured <= 0"; else printf "ratio %.2f", s/m}'); cores all busy $(awk '{printf "%.2f\n", $6}' "$W/busy" | median) of the time, stretch $(awk '{printf "%.2f\n", $7}' "$W/busy" | median), beside the job $(awk '{printf "%.0f\n", $5*1000}' "$W/busy" | median) ms CPU)"
row "  each round: measured/self-reported" "" "$(awk '{printf "%+.0f/%.0f ", ($2-$1)*1000, $4*1000}' "$W/busy")ms"
row "  self-reported: the budget's account" "$(printf %.0f "$self") ms" "added_s: the time on the job's threads, as if they never waited for a core"
