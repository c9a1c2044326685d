// See rank_result.h.
#include "analyze/rank_result.h"

#include <algorithm>
#include <cmath>

#include "analyze/sampled_estimate.h"

namespace gpuwatch::collector {

std::vector<uint64_t> StepDurations(const RankResult& r) {
  std::vector<uint64_t> v;
  v.reserve(r.steps.steps.size());
  for (const auto& s : r.steps.steps) v.push_back(s.end > s.start ? s.end - s.start : 0);
  return v;
}

uint64_t Percentile(std::vector<uint64_t> v, double p) {
  if (v.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * v.size()));
  rank = std::clamp<size_t>(rank, 1, v.size());
  std::nth_element(v.begin(), v.begin() + (rank - 1), v.end());
  return v[rank - 1];
}

namespace {

bool StepsAllKept(const RankResult& r) { return r.found.total <= r.steps.steps.size() || r.found.stats.count() == 0; }

}  // namespace

double RankResult::WallS() const { return host_last_ns > host_first_ns ? (host_last_ns - host_first_ns) * 1e-9 : 0.0; }

double RankResult::ActiveS() const {
  if (cupti() && gpu.last_ns > gpu.first_ns) return (gpu.last_ns - gpu.first_ns) * 1e-9;
  return WallS();
}

uint64_t RankResult::StepPercentileNs(double p) const {
  return StepsAllKept(*this) ? Percentile(StepDurations(*this), p) : found.stats.Percentile(p);
}

uint64_t RankResult::StepMaxNs() const {
  if (!StepsAllKept(*this)) return found.stats.max_ns();
  const auto dur = StepDurations(*this);
  return dur.empty() ? 0 : *std::max_element(dur.begin(), dur.end());
}

double RankResult::StepsTotalS() const {
  if (!StepsAllKept(*this)) return found.stats.sum_ns() * 1e-9;
  double t = 0;
  for (const auto& s : steps.steps) t += (s.end > s.start ? s.end - s.start : 0) * 1e-9;
  return t;
}

PerStepMean MeanPerStep(const RankResult& r) {
  PerStepMean m;
  const double n = static_cast<double>(r.steps_total());
  if (n <= 0) return m;
  m.known = true;
  m.per_step = r.per_step_device;
  DeviceSlice t = r.per_step_device ? DeviceSlice{} : r.gpu.run;
  uint64_t sync = r.per_step_device ? 0 : r.sync.KindNs();
  uint64_t graph_launches = r.per_step_device ? 0 : r.graphs.launches;
  size_t covered = 0;
  uint64_t covered_ns = 0;
  if (r.per_step_device) {
    for (const auto& s : r.steps.steps) {
      if (!s.covered) continue;  // outside the overhead budget's windows: no whole device figures
      ++covered;
      covered_ns += s.end > s.start ? s.end - s.start : 0;
      t.Add(s.dev);
      sync += s.sync_mid;
      graph_launches += s.graph_launches;
    }
    TypicalCoveredSteps(r, covered, covered_ns, t);
  }
  m.steps = r.per_step_device ? covered : r.steps_total();
  const double k = (r.per_step_device ? static_cast<double>(covered) : n) * 1e6;  // -> ms
  m.compute_ms = t.compute / k;
  m.comm_not_overlapped_ms = t.ExposedComm() / k;
  for (int i = 0; i < kIdleKinds; ++i) m.idle_ms[i] = t.idle[i] / k;
  m.host_blocked_in_syncs_ms = sync / k;
  m.copies_ms = t.copy / k;
  m.graph_launches = static_cast<double>(graph_launches) * 1e6 / k;
  m.graph_kernels = static_cast<double>(t.graph_kernels) * 1e6 / k;
  return m;
}

double RankResult::StepMedianS() const { return StepPercentileNs(0.5) * 1e-9; }

}  // namespace gpuwatch::collector
