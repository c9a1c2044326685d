#!/usr/bin/env bash
# Performance figures of gpuwatch (docs/PERFORMANCE.md explains each). Every figure is an
# A/B measured side by side in this run. Needs the build from scripts/test.sh.
#   bash scripts/bench.sh            # about 6 minutes on 2 cores, after the build
#   GPUWATCH_BENCH_ROUNDS=3 bash scripts/bench.sh   # fewer rounds of the 9 s launch loop
set -euo pipefail
cd "$(dirname "$0")/.."
B=${GPUWATCH_BUILD:-$PWD/build}
cmake --build "$B" -j"$(nproc)" --target hook_bench ingest_bench scale_bench what_if_bench maxrss gpuwatch gpuwatch_cli gpuwatch-collector gpuwatch-scenario e2e_tests >/dev/null
LIB=$B/lib/libgpuwatch.so
W=$(mktemp -d /tmp/gpuwatch-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
export GPUWATCH_SOCKET_DIR=$W/sock GPUWATCH_OUT=$W/out
ZERO="launch_us=0,default_kernel_us=0,h2d_pinned_gbps=0,h2d_pageable_gbps=0,d2h_gbps=0,coll_latency_us=0,busbw_gbps=0"
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; print m}'; }
row() { printf '%-46s %14s   %s\n' "$1" "$2" "$3"; }

echo "gpuwatch benchmarks on $(nproc) cores, $(date -u +%Y-%m-%d)"
printf '%-46s %14s   %s\n' "figure" "measured" "target"

# 1. Added cost per intercepted call: the same binary, plain vs preloaded, interleaved.
hooks() {  # $1: "" or the library; prints "name ns" lines
  LD_PRELOAD=$1 LD_LIBRARY_PATH=$B/sim SIMGPU_CONFIG=$ZERO "$B/bin/hook_bench" \
    --benchmark_format=csv --benchmark_min_time=0.2 2>/dev/null | awk -F, '/^"BM_/ {gsub(/"/,"",$1); print $1, $3}'
}
# A collector takes the preloaded runs' data, as in real use.
"$B/bin/gpuwatch-collector" --listen "$W/sock.c" --out "$W/out-c" >/dev/null 2>&1 &
CPID=$!
for i in 1 2 3 4 5; do
  hooks "" >>"$W/plain.txt"
  GPUWATCH_CUPTI=off GPUWATCH_COLLECTOR=$W/sock.c hooks "$LIB" >>"$W/hooked.txt"
done
kill $CPID 2>/dev/null; wait $CPID 2>/dev/null || true
for bm in BM_KernelLaunch BM_MemcpyAsyncPinned BM_StreamSyncIdle BM_AllReduceEnqueue; do
  a=$(awk -v b=$bm '$1==b {print $2}' "$W/plain.txt" | median)
  h=$(awk -v b=$bm '$1==b {print $2}' "$W/hooked.txt" | median)
  row "hook cost ${bm#BM_} (ns added, median of 5)" "$(awk -v a="$a" -v h="$h" 'BEGIN{printf "%.0f", h-a}')" "<= 100 ns (plain $(printf %.0f "$a") ns; CUPTI off)"
done

# 2. End to end on a launch-bound scenario (2 ranks), interleaved runs.
run_scn() {  # $1: preload or ""; prints wall seconds
  local t0 t1
  t0=$(date +%s%N)
  LD_PRELOAD=$1 "$B/bin/gpuwatch-scenario" --sim tests/bench/launch_heavy.json >/dev/null 2>&1
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f\n", (b-a)/1e9}'
}
: >"$W/e2e-plain"; : >"$W/e2e-hooked"; : >"$W/e2e-cupti"
for i in 1 2 3 4 5; do
  run_scn "" >>"$W/e2e-plain"
  GPUWATCH_CUPTI=off GPUWATCH_OUT=$W/out-e2e-$i run_scn "$LIB" >>"$W/e2e-hooked"
  GPUWATCH_OUT=$W/out-e2e-c$i run_scn "$LIB" >>"$W/e2e-cupti"
done
p=$(median <"$W/e2e-plain"); h=$(median <"$W/e2e-hooked"); c=$(median <"$W/e2e-cupti")
spread() { sort -g "$1" | awk '{a[NR]=$1} END {printf "%.3f-%.3f s", a[1], a[NR]}'; }
row "end-to-end overhead, launch-bound, 2 ranks" "$(awk -v p="$p" -v h="$h" 'BEGIN{printf "%+.2f%%", (h/p-1)*100}')" \
  "<= 1% (hooks only; median plain $p s [$(spread "$W/e2e-plain")], preloaded $h s [$(spread "$W/e2e-hooked")])"
row "  default (CUPTI in budget windows)" "$(awk -v p="$p" -v h="$c" 'BEGIN{printf "%+.2f%%", (h/p-1)*100}')" \
  "(median $c s [$(spread "$W/e2e-cupti")]; a 0.5 s run: mostly the 50 ms allowance)"
launches=$(awk '{print $0}' tests/bench/launch_heavy.json | grep -o '"count": [0-9]*' | head -1 | grep -o '[0-9]*')
row "  launch rate per rank (plain run)" "$(awk -v p="$p" -v n="$launches" 'BEGIN{printf "%.0f/s", n*60/p}')" ">= 50000/s"

# 3. The overhead budget on a ~9 s launch loop: scripts/bench_overhead.sh.
GPUWATCH_BUILD=$B bash scripts/bench_overhead.sh --rows
# The same when every kernel is launched through the driver (Triton's launcher, cuBLAS): the
# budget charges those launches too. ~3.5 s, 3 paired rounds (scripts/ab_runs.sh).
tri=$(GPUWATCH_BUILD=$B bash scripts/ab_runs.sh tests/bench/launch_loop_triton.json 3 "$LIB")
tp=$(grep -o 'first [0-9]*' <<<"$tri" | grep -o '[0-9]*'); td=$(grep -o 'config 1: [+-][0-9]* ms.*\]' <<<"$tri")
row "  default, every launch through the driver" "$(grep -o '[+-][0-9]* ms' <<<"$td" | head -1)" \
  "<= $(awk -v p="$tp" 'BEGIN{printf "%.0f", p/100+50}') ms = 1% + 50 ms (median of 3 paired rounds [${td#*[}; plain $tp ms, Triton's cuLaunchKernelEx)"

# 3b. Launches outside the windows, summarized in the library: hooks only, the sender's,
# the collector's and the journal's share a launch, and the default beside busy threads.
GPUWATCH_BUILD=$B bash scripts/bench_launch_summary.sh --rows
# 4. Collector ingest: 4 concurrent senders, two mixes (tests/bench/ingest_bench.cpp):
# "every16" has a copy, a sync and a collective in every 16 records (a 48 us "step": the
# most analysis work per record); "steps" has 1024-record training steps.
ingest() {  # $1: senders batches events [mix]; prints the JSON line
  rm -rf "$W/ingest"; mkdir -p "$W/ingest"
  "$B/bin/ingest_bench" "$B/bin/gpuwatch-collector" "$W/ingest" "$@" 2>/dev/null | tail -1
}
field() { grep -o "\"$1\": [0-9.]*" | grep -o '[0-9.]*$'; }
for mix in every16 steps; do
  rate=$(ingest 4 250 1000 $mix | field records_per_cpu_s)
  row "collector ingest, $mix (records per CPU-second)" "$rate" ">= 3000000 (decode + aggregate + journal + trace)"
done

# 4b. The steps' dependency graphs and their what-ifs beside the rest of a rank's analysis
# (tests/bench/what_if_bench.cpp): 8 ranks x 1000 steps of 2000 events, in process.
wi=$("$B/bin/what_if_bench" 8 1000 2000 | tail -1)
row "critical path + what-ifs, share of the rank analysis's CPU" \
  "$(echo "$wi" | field share_of_model | awk '{printf "%.1f%%", 100*$1}')" \
  "<= 10% (graphs $(echo "$wi" | field graphs_cpu_s) s + what-ifs $(echo "$wi" | field what_if_cpu_s) s + the job's joined $(echo "$wi" | field job_what_if_cpu_s) s of $(echo "$wi" | field model_cpu_s) s)"

# 5. Memory: the library's added resident memory; the collector over a 10x longer run.
rss() { "$@" 2>&1 >/dev/null | grep -o 'maxrss_kib=[0-9]*' | tail -1 | cut -d= -f2; }
r0=$(LD_LIBRARY_PATH=$B/sim SIMGPU_CONFIG=$ZERO rss "$B/bin/maxrss" "$B/bin/hook_bench" --benchmark_min_time=0.05)
r1=$(GPUWATCH_CUPTI=off GPUWATCH_AUTOSTART=0 LD_PRELOAD=$LIB LD_LIBRARY_PATH=$B/sim SIMGPU_CONFIG=$ZERO rss "$B/bin/maxrss" "$B/bin/hook_bench" --benchmark_min_time=0.05)
row "library added RSS per process" "$(( (r1 - r0) / 1024 )) MiB" "<= 16 MiB ($r0 -> $r1 KiB)"
for mix in every16 steps; do
  m1=$(ingest 2 500 1000 $mix | field collector_max_rss_kib)
  m10=$(ingest 2 5000 1000 $mix | field collector_max_rss_kib)
  row "collector RSS, 10x longer run, $mix (ratio)" "$(awk -v a="$m1" -v b="$m10" 'BEGIN{printf "%.2fx", b/a}')" "< 1.2x ($m1 -> $m10 KiB; 1M -> 10M records, 2 ranks)"
done

# 6. Trace size: bundled scenarios' traces read back by the test suite's validator (bytes of
# the file over slices + counter samples + instants).
for scn in healthy launch_bound; do
  # Into a file first: `| head -1` on the test's output could end it with SIGPIPE, which
  # pipefail turned into the end of this script.
  "$B/bin/e2e_tests" "trace: $scn run*" -s >"$W/trace-$scn.txt" 2>&1 || true
  per=$(grep -o '[0-9.]* bytes per event' "$W/trace-$scn.txt" | head -1 | cut -d' ' -f1)
  row "trace size, $scn (bytes per event)" "$per" "<= 30"
done

# 7. Scale: 64 sender processes into one collector.
mkdir -p "$W/s64"
j=$("$B/bin/ingest_bench" "$B/bin/gpuwatch-collector" "$W/s64" 64 20 1000 2>/dev/null | tail -1)
cpu=$(echo "$j" | grep -o '"collector_cpu_s": [0-9.]*' | grep -o '[0-9.]*$')
failed=$(echo "$j" | grep -o '"failed_senders": [0-9]*' | grep -o '[0-9]*$')
row "64 ranks: collector CPU-s per 1.28M records" "$cpu s" "failed senders: $failed"
row "  => CPU-s per rank-hour at 50k events/s" "$(awk -v c="$cpu" 'BEGIN{printf "%.1f", c/1280000*50000*3600}')" "(extrapolated)"

# 8. Several hosts (tests/bench/scale_bench.cpp): GPUWATCH_SCALE_HOSTS host collectors x 8
# synthetic ranks over loopback TCP into one root, 10 s of job, at two call rates per rank.
# The hosts send their ranks' figures (the default): the root's cost must not follow the rate.
H=${GPUWATCH_SCALE_HOSTS:-64}
scale() {  # $1: calls per rank per second; [$2: raw]; prints the JSON line
  rm -rf "$W/scale"; mkdir -p "$W/scale"
  "$B/bin/scale_bench" "$B/bin/gpuwatch-collector" "$W/scale" "$H" 8 10 "$@" 2>/dev/null | tail -1
}
for rate in 200 2000; do
  j=$(scale $rate)
  row "$H hosts x 8 ranks, $rate calls/s/rank: root CPU per job-s" "$(echo "$j" | field root_cpu_per_job_s)" \
    "flat in the rate; root max RSS $(echo "$j" | field root_max_rss_kib) KiB"
  row "  bytes upstream per rank per second" "$(echo "$j" | field bytes_up_per_rank_s)" \
    "bounded; job end to root summary $(echo "$j" | field end_to_summary_s) s, $(echo "$j" | field ranks_in_summary) ranks"
done

# 9. What a process that never calls CUDA pays: 200 starts of /bin/true and of a shell that
# runs one, plain and preloaded, interleaved (5 rounds; the median round).
starts() {  # $1: "" or the library; prints the seconds 200 starts took
  local t0 t1
  t0=$(date +%s%N)
  for _ in $(seq 200); do LD_PRELOAD=$1 /bin/sh -c /bin/true; done
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f\n", (b-a)/1e9}'
}
for i in 1 2 3 4 5; do starts "" >>"$W/starts-plain.txt"; starts "$LIB" >>"$W/starts-lib.txt"; done
sp=$(median <"$W/starts-plain.txt"); sl=$(median <"$W/starts-lib.txt")
row "start-up added, no CUDA (sh -c true, 2 processes)" "$(awk -v p="$sp" -v l="$sl" 'BEGIN{printf "%.2f ms", (l-p)/200*1000}')" \
  "close to nothing (plain $(awk -v p="$sp" 'BEGIN{printf "%.2f", p/200*1000}') ms a start)"

# 10. `gpuwatch import` of a 1 GB torch.profiler trace (tests/bench/make_kineto_trace.py: a
# real V100 trace repeated to 1 GB), plain and gzip'd: wall time and peak RSS.
python3 tests/bench/make_kineto_trace.py "$W/big.json" 1000 2>/dev/null
gzip -1 -c "$W/big.json" >"$W/big.json.gz"
for f in big.json big.json.gz; do
  t0=$(date +%s%N)
  kib=$(rss "$B/bin/maxrss" "$B/bin/gpuwatch" import "$W/$f" -o "$W/import" -q)
  t1=$(date +%s%N)
  row "import of a 1 GB trace ($f)" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f s", (b-a)/1e9}')" \
    "< 60 s; peak RSS $((kib / 1024)) MiB (< 1 GiB)"
done
rm -f "$W/big.json" "$W/big.json.gz"
