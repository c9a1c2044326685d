// What gpuwatch took from a job whose cores were all busy (DataLoader workers, OpenMP pools,
// other jobs on the host): the budget's account (OverheadFacts::AddedNs, the time its code
// ran on the job's threads) stretched by the threads' waits for a core, and the CPU of its
// threads beside the job where every core was busy (proto/contention.h, the model the
// library's budget spends by). From the rank's process samples (input_io.h) and the cores
// it may use (its affinity); checked against measured runs by
// scripts/bench_launch_summary.sh (docs/PERFORMANCE.md).
#pragma once
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

struct ContendedCost {
  bool known = false;         // process samples, the affinity and the collector's CPU all known
  double beside_cpu_s = 0;    // the sender's, the sampler thread's and the collector's CPU
  double busy_share = 0;      // of the sampled time, the share in which every core was busy
  double stretch = 1;         // the job's threads' (CPU + run-queue wait) / CPU
  size_t cpus = 0;            // the cores the job may use
  double added_s = 0;         // wire::ContendedWall: AddedNs x stretch + beside_cpu_s x busy_share / cpus
};

ContendedCost MeasureContendedCost(const RankResult& r);

}  // namespace gpuwatch::collector
