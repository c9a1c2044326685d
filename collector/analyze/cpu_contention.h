// cpu_contention: how long the ranks of one host waited for a CPU, from their process
// samples (input_io.h: the run-queue wait of every thread of the rank's process tree, and its
// cgroup's throttling). More busy threads than cores (8 ranks, their DataLoader workers and
// OpenMP pools on a few cores) delay whichever rank the scheduler leaves waiting, a different
// one each step: symmetric ranks then take turns reaching the collectives last.
#pragma once
#include <string>
#include <vector>

#include "analyze/rank_result.h"

namespace gpuwatch::collector {

struct HostContention {
  std::string host;
  std::vector<int> ranks;        // on the host, in the order of the rank list
  size_t cpus = 0;               // CPUs the ranks may run on (their affinity lists' union); 0: unknown
  double cores_busy = 0;         // the ranks' trees' CPU time per second of sampled time, summed
  double sampled_s = 0;          // the median rank's sampled time
  // Median over the ranks: their threads' run-queue wait, and their cgroup's throttled time,
  // per second of sampled time; and both together over the sampled time (about the run: the
  // samples start at the rank's first CUDA call).
  double run_wait_share = 0, throttled_share = 0, wait_s = 0;
  std::vector<double> run_wait_share_by_rank;  // as `ranks`
  // Median over the ranks: GPU time idle waiting for the host while the rank's threads waited
  // for a CPU, over the run: the run-queue wait inside the host-wait gaps, at most the gaps'
  // time x the share of the tree's CPU demand there that waited (wait / (CPU + wait)), scaled
  // from the sampled gaps to all of them.
  double gpu_idle_waiting_for_cpu_s = 0;

  bool sampled() const { return sampled_s > 0; }
  double WaitShare() const { return run_wait_share + throttled_share; }
  // Whether the waits explain a spread between ranks of `spread_s` over the run (the
  // straggler's peers' wait, thresholds.h kOversubscribedExplains) and are long enough to matter.
  bool ExplainsSpread(double spread_s) const;
  // Whether the host's threads waited for a CPU long enough to name it at all.
  bool Oversubscribed() const;
};

// The figures of the ranks of `ranks` on `host`.
HostContention MeasureHost(const RankList& ranks, const std::string& host);

}  // namespace gpuwatch::collector
