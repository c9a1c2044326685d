// Where the rank ran on its host (issue 17): `cpu_affinity` (its CPUs away from its GPU's
// NUMA node) and `cpu_throttled` (its cgroup's CPU quota throttled it while the GPU waited
// for the host). host_placement.h, input_io.h; thresholds: thresholds.h.
#include "analyze/findings.h"
#include "analyze/host_placement.h"
#include "common/format.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

std::optional<Finding> CpuAffinity(const RankContext& c, const std::vector<Finding>&) {
  const PlacementFigures p = Placement(c.r.env);
  const double off = p.OffNodeShare();
  if (!p.numa_known() || off < kOffNodeShare) return std::nullopt;
  // The GPU's host-wait time is what slower host work would lengthen.
  const double host_wait_s = c.r.io.host_wait_s;
  Finding f = MakeFinding("cpu_affinity", host_wait_s * off * kCrossNumaSlowdown, c.run_base);
  f.evidence = {{"cpu_affinity", c.r.env.cpu_affinity},
                {"cpus", p.cpus},
                {"gpu_numa_node", p.numa_node},
                {"gpu_node_cpus", c.r.env.device_numa_cpus},
                {"cpus_on_gpu_node", p.cpus_on_node},
                {"off_node_share", off},
                {"gpu_idle_waiting_for_host_s", host_wait_s},
                {"assumed_slowdown", kCrossNumaSlowdown}};
  f.summary = Printf("%zu of the rank's %zu CPUs (%s) are off its GPU's NUMA node %d (CPUs %s)", p.cpus - p.cpus_on_node,
                     p.cpus, Clip(c.r.env.cpu_affinity, 40).c_str(), p.numa_node,
                     Clip(c.r.env.device_numa_cpus, 40).c_str());
  return f;
}

std::optional<Finding> CpuThrottled(const RankContext& c, const std::vector<Finding>&) {
  const InputIoFigures& io = c.r.io;
  if (!io.cgroup || io.throttled_periods <= 0 || io.gap_s <= 0) return std::nullopt;
  // Sampled gaps stand for every host-wait gap (samples start at the first CUDA call).
  const double lost = io.throttled_gap_s * (io.host_wait_s / io.gap_s);
  const PlacementFigures p = Placement(c.r.env);
  Finding f = MakeFinding("cpu_throttled", lost, c.run_base);
  f.evidence = {{"cgroup_version", p.cgroup_version},
                {"cpu_quota_cores", p.quota_cores > 0 ? nlohmann::json(p.quota_cores) : nlohmann::json(nullptr)},
                {"throttled_share_in_gaps", io.ThrottledShareInGaps()},
                {"throttled_periods_in_gaps", io.throttled_periods},
                {"periods_in_gaps", io.periods},
                {"throttled_s_in_gaps", io.throttled_s},
                {"throttled_periods", io.all_throttled_periods},
                {"periods", io.all_periods},
                {"throttled_s", io.all_throttled_s},
                {"gpu_idle_waiting_for_host_s", io.host_wait_s}};
  f.summary = Printf("the cgroup's CPU quota (%s) throttled the rank in %.0f%% of the scheduler periods while the GPU "
                     "waited for the host",
                     p.quota_cores > 0 ? Printf("%.2f cores", p.quota_cores).c_str() : "no quota seen",
                     100 * io.ThrottledShareInGaps());
  return f;
}

}  // namespace gpuwatch::collector
