// What gpuwatch costs a job whose cores are all busy (DataLoader workers, OpenMP pools, other
// jobs on the host), where its CPU costs the job more than the time its code runs:
// - its work on the job's threads, which wait for a core, takes longer on the wall than on
//   the CPU by the threads' stretch: (CPU + run-queue wait) / CPU;
// - its threads beside the job (the sender, the sampler, the collector) take their CPU from
//   whoever the scheduler would have run: with every core busy, the job's threads get that
//   much less, on M cores CPU / M of wall.
// Both from samples of the rank's process tree (its CPU and run-queue wait). The library's
// overhead budget spends by it (libinject/enrich/cupti_budget.h) and the collector reports it
// (collector/analyze/contended_cost.h).
#pragma once
#include <algorithm>
#include <cstddef>

namespace gpuwatch::wire {

// 5 ms of run-queue wait in a 100 ms sample: well above the wake-up latency of an idle
// machine's scheduler (tens of us an interval), well below the 33% each of three CPU-bound
// threads waits on two cores. An interval past it had every core the job may use busy.
inline constexpr double kContendedWaitShare = 0.05;

inline bool ContendedInterval(double length, double run_wait) { return run_wait >= kContendedWaitShare * length; }

// The wall time `on_threads` of work on the job's threads and `beside` of CPU beside them
// cost the job, with its threads' `stretch`, the share of the time every core was busy, and
// the cores it may use (0: unknown, the work beside it is not charged).
inline double ContendedWall(double on_threads, double beside, double stretch, double busy_share, size_t cpus) {
  return on_threads * std::max(1.0, stretch) +
         (cpus > 0 ? beside * std::clamp(busy_share, 0.0, 1.0) / static_cast<double>(cpus) : 0.0);
}

// The tree's samples summed: the stretch and the busy share over a run.
struct ContentionTally {
  double length = 0, cpu = 0, run_wait = 0, contended = 0;

  // One interval between two samples: its length, the tree's CPU and run-queue wait in it.
  void Add(double interval, double interval_cpu, double interval_wait) {
    length += interval;
    cpu += interval_cpu;
    run_wait += interval_wait;
    if (ContendedInterval(interval, interval_wait)) contended += interval;
  }
  double Stretch() const { return cpu > 0 ? 1.0 + run_wait / cpu : 1.0; }
  double BusyShare() const { return length > 0 ? std::min(1.0, contended / length) : 0.0; }
};

}  // namespace gpuwatch::wire
