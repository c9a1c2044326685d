// Where the rank runs on its host (issue 17: `cpu_affinity`, `cpu_throttled`): the CPUs it may
// run on (sched_getaffinity), its GPU's NUMA node and that node's CPUs (sysfs), its cgroup's
// CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us) and the cgroup's
// throttling counters (cpu.stat: nr_periods, nr_throttled, throttled_usec or, v1,
// throttled_time in ns).
//
// Files are read under GPUWATCH_HOST_ROOT when it is set (a test-only fixture root holding
// proc/self/cgroup, sys/bus/pci/devices/..., sys/devices/system/node/..., sys/fs/cgroup/...),
// else under /. Sender thread only; each read is one small file, never blocking on the job.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace gpuwatch::inject {

struct HostPlacement {
  std::string cpu_affinity;      // the CPUs the process may run on, as a cpulist "0-7,16-23"
  int device_numa_node = -1;     // the GPU's NUMA node (sysfs numa_node); -1: not known
  std::string device_numa_cpus;  // that node's cpulist; empty: not known
  int cgroup_version = 0;        // 1 or 2; 0: no CPU controller found
  uint64_t cpu_quota_us = 0;     // per period; 0: no quota ("max", -1)
  uint64_t cpu_period_us = 0;
  bool operator==(const HostPlacement&) const = default;
};

struct CgroupCpuStat {
  bool known = false;
  uint64_t nr_periods = 0, nr_throttled = 0, throttled_ns = 0;
};

// A cpulist ("0-3,8") of the first `n` CPUs in `set` (a cpu_set_t's bytes).
std::string CpuList(const void* set, size_t bytes);

// The first line of a small (sysfs, /proc) file, trailing space cut; empty when unreadable.
std::string FirstLine(const std::string& path);

class HostPlacementProbe {
 public:
  // `root`: the fixture root ("" = the real files).
  explicit HostPlacementProbe(std::string root) : root_(std::move(root)) {}
  // GPUWATCH_HOST_ROOT, else "".
  static std::string RootFromEnvironment();

  // Reads everything again; the GPU's node from `pci_bus_id` ("00000000:BB:DD.0", empty:
  // not known yet). Finds the cgroup's directory for CpuStat.
  HostPlacement Read(const std::string& pci_bus_id);
  // The cgroup's cpu.stat now (after a Read found the cgroup).
  CgroupCpuStat CpuStat() const;

 private:
  std::string root_;
  std::string cgroup_dir_;  // the cgroup's directory under root_ (with its CPU controller)
  int cgroup_version_ = 0;
};

}  // namespace gpuwatch::inject
