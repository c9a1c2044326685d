#!/usr/bin/env bash
# Interleaved A/B of configurations of the library on one scenario: each round runs the
# scenario plain, then under each configuration; a configuration's figure is the median of
# its differences from the plain run of the same round (this VM drifts by a few % between
# runs: only pairs close in time compare). Used for docs/PERFORMANCE.md's tables.
#   bash scripts/ab_runs.sh SCENARIO ROUNDS "LIB [VAR=VALUE ...]" ...
#   bash scripts/ab_runs.sh tests/bench/launch_loop_10s.json 8 \
#     "build/lib/libgpuwatch.so GPUWATCH_CUPTI=off" "build/lib/libgpuwatch.so GPUWATCH_DISABLE=1"
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,8p "$0"; exit 2; }
B=${GPUWATCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
S=$1 N=$2
shift 2
CFGS=("$@")
W=$(mktemp -d /tmp/gpuwatch-ab.XXXXXX)
trap 'rm -rf "$W"' EXIT
export GPUWATCH_SOCKET_DIR=$W/sock
run() {  # prints the wall milliseconds of one run; waits for its collector and the disk
  local a b
  a=$(date +%s%N)
  "$@" >/dev/null 2>&1 || echo "a run failed: $*" >&2
  b=$(date +%s%N)
  while pgrep -f -- "--listen $GPUWATCH_SOCKET_DIR" >/dev/null; do sleep 0.05; done
  sync
  echo $(((b - a) / 1000000))
}
for _ in $(seq "$N"); do
  line=$(run "$B/bin/gpuwatch-scenario" --sim "$S")
  for c in "${CFGS[@]}"; do
    read -r lib vars <<<"$c"
    # shellcheck disable=SC2086  # the variables are words on purpose
    line="$line $(run env $vars GPUWATCH_OUT="$W/out" LD_PRELOAD="$lib" "$B/bin/gpuwatch-scenario" --sim "$S")"
  done
  echo "$line" >>"$W/rounds"
done
awk -v n="${#CFGS[@]}" '
  { plain[NR] = $1; for (k = 1; k <= n; k++) d[k, NR] = $(k + 1) - $1 }
  function median(k,   i, j, t, a) {
    for (i = 1; i <= NR; i++) a[i] = d[k, i]
    for (i = 2; i <= NR; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
  }
  END {
    printf "plain: %d rounds, first %d ms\n", NR, plain[1]
    for (k = 1; k <= n; k++) {
      printf "config %d: %+.0f ms (median of paired differences) [", k, median(k)
      for (i = 1; i <= NR; i++) printf "%s%+d", (i > 1 ? " " : ""), d[k, i]
      print "]"
    }
  }' "$W/rounds"
printf '%s\n' "${CFGS[@]}" | awk '{print "config " NR ": " $0}'
