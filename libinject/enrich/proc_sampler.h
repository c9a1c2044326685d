// CPU time and read I/O of the rank's process tree (the process and its descendants, e.g.
// DataLoader workers) for the `input_io` finding: the collector relates the samples to the
// GPU's data-loading gaps, telling a CPU-bound input pipeline from one waiting on reads.
#pragma once
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuwatch::inject {

struct ProcTotals {
  uint64_t t_ns = 0;        // CLOCK_MONOTONIC
  uint64_t cpu_ns = 0;      // utime + stime + cutime + cstime over the tree
  uint64_t read_chars = 0;  // rchar over the tree
  uint64_t read_bytes = 0;  // read_bytes over the tree
  uint32_t processes = 0;
  uint64_t run_wait_ns = 0;  // runnable, waiting for a CPU (every thread, /proc/PID/task/TID/schedstat)
  // gpuwatch's collector where the rank started it (a descendant, left out of the tree): its
  // CPU (utime + stime), for the overhead budget (proto/contention.h). Not on the wire.
  uint64_t collector_cpu_ns = 0;
  // The cgroup's cpu.stat (filled by the sender from EnvironmentProbe::CgroupStat).
  uint64_t cgroup_periods = 0, cgroup_throttled_periods = 0, cgroup_throttled_ns = 0;
};

// Sender thread only, never an application thread. Bounded cost: at most one sample per
// kSampleIntervalNs (100 ms), reading /proc/PID/{stat,io,schedstat} of at most kMaxProcs
// processes; the tree is re-discovered at most once a second from
// /proc/PID/task/TID/children (at most kMaxTasks threads per process), or, on kernels
// without that file (CONFIG_PROC_CHILDREN off), by a scan of the parent ids in
// /proc/*/stat at most every kScanIntervalNs over at most kMaxScan entries.
// The collector the rank may have started (its child) is left out of the tree.
// tests/unit/inject/enrich/proc_sampler_test.cpp measures a sample's cost.
class ProcSampler {
 public:
  static constexpr uint64_t kSampleIntervalNs = 100'000'000;
  static constexpr uint64_t kTreeIntervalNs = 1'000'000'000;
  static constexpr uint64_t kScanIntervalNs = 2'000'000'000;
  static constexpr size_t kMaxProcs = 64;
  static constexpr size_t kMaxTasks = 256;
  static constexpr size_t kMaxScan = 8192;

  explicit ProcSampler(pid_t root);
  // A sample when one is due (every kSampleIntervalNs); nothing otherwise.
  std::optional<ProcTotals> SampleIfDue(uint64_t now_ns);
  // Takes a sample now (tests, and SampleIfDue).
  ProcTotals Sample(uint64_t now_ns);
  const std::vector<pid_t>& tree() const { return tree_; }

 private:
  void Discover(uint64_t now_ns);
  bool ChildrenFromTasks(pid_t pid, std::vector<pid_t>& out);
  void ChildrenFromScan();

  pid_t root_;
  std::vector<pid_t> tree_;
  std::vector<pid_t> collectors_;  // gpuwatch collectors among the tree's children
  uint64_t next_sample_ns_ = 0, next_tree_ns_ = 0, next_scan_ns_ = 0;
  bool children_files_ = true;  // false once the kernel turned out not to have them
};

}  // namespace gpuwatch::inject
