// host_placement: where a rank ran on its host (issue 17), from its environment facts: the
// CPUs it was allowed (sched_getaffinity), how many of them sit on its GPU's NUMA node, and
// its cgroup's CPU quota. `cpu_affinity` and `cpu_throttled` read these with the rank's
// process samples (input_io.h: the cgroup's throttling during the GPU's host-wait gaps).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

// The CPUs of a cpulist ("0-3,8,10-11"), sorted; empty for an empty or malformed list.
// At most kMaxCpus CPUs are taken (a bound for a hostile list).
std::vector<int> ParseCpuList(const std::string& list);
inline constexpr size_t kMaxCpus = 8192;

struct PlacementFigures {
  bool affinity_known = false;
  size_t cpus = 0;                 // CPUs the rank may run on
  int numa_node = -1;              // its GPU's node; -1: not known
  size_t node_cpus = 0;            // CPUs of that node
  size_t cpus_on_node = 0;         // of the rank's CPUs, on that node
  int cgroup_version = 0;          // 0: no CPU controller found
  double quota_cores = 0;          // quota / period; 0: no quota

  bool numa_known() const { return affinity_known && numa_node >= 0 && node_cpus > 0; }
  // The share of the rank's CPUs away from its GPU's node.
  double OffNodeShare() const {
    return numa_known() && cpus ? 1.0 - static_cast<double>(cpus_on_node) / static_cast<double>(cpus) : 0.0;
  }
};

PlacementFigures Placement(const EnvFacts& env);

}  // namespace gpuwatch::collector
