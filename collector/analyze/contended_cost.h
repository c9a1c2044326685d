// What gpuwatch took from a job whose cores were all busy (DataLoader workers, OpenMP pools,
// other jobs on the host). There its CPU costs the job more than the budget's account
// (OverheadFacts::AddedNs, the time its code ran on the job's threads) says:
// - work on a job's thread that waits for a core takes longer on the wall than on the CPU,
//   by the thread's stretch: (CPU + run-queue wait) / CPU;
// - the threads beside the job (the sender, the sampler, the collector) take their CPU from
//   whoever the scheduler would have run, and with every core busy the job's threads get that
//   much less: on M cores, a job whose threads are CPU-bound there loses their CPU / M of wall.
// Both from the rank's process samples (input_io.h: run-queue wait and CPU of its tree, and
// the sampled time in which it waited for a core) and the cores it may use (its affinity).
// An estimate from a model of the scheduler, checked against measured runs by
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
  double added_s = 0;         // AddedNs x stretch + beside_cpu_s x busy_share / cpus
};

ContendedCost MeasureContendedCost(const RankResult& r);

}  // namespace gpuwatch::collector
