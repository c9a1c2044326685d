// See host_placement.h.
#include "analyze/host_placement.h"

#include <algorithm>
#include <cstdlib>

namespace gpuwatch::collector {

std::vector<int> ParseCpuList(const std::string& list) {
  std::vector<int> cpus;
  const char* p = list.c_str();
  while (*p) {
    char* end = nullptr;
    const long a = std::strtol(p, &end, 10);
    if (end == p || a < 0) return {};
    long b = a;
    p = end;
    if (*p == '-') {
      b = std::strtol(p + 1, &end, 10);
      if (end == p + 1 || b < a) return {};
      p = end;
    }
    for (long c = a; c <= b && cpus.size() < kMaxCpus; ++c) cpus.push_back(static_cast<int>(c));
    if (*p == ',') ++p;
    else if (*p && *p != '\n') return {};
    else break;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

PlacementFigures Placement(const EnvFacts& env) {
  PlacementFigures p;
  const std::vector<int> mine = ParseCpuList(env.cpu_affinity);
  p.affinity_known = !mine.empty();
  p.cpus = mine.size();
  p.cgroup_version = env.cgroup_version;
  if (env.cpu_quota_us && env.cpu_period_us)
    p.quota_cores = static_cast<double>(env.cpu_quota_us) / static_cast<double>(env.cpu_period_us);
  if (env.device_numa_node >= 0) {
    const std::vector<int> node = ParseCpuList(env.device_numa_cpus);
    p.numa_node = env.device_numa_node;
    p.node_cpus = node.size();
    for (int c : mine) p.cpus_on_node += std::binary_search(node.begin(), node.end(), c);
  }
  return p;
}

}  // namespace gpuwatch::collector
