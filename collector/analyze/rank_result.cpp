// See rank_result.h.
#include "analyze/rank_result.h"

#include <algorithm>
#include <cmath>

#include "analyze/sampled_estimate.h"
#include "common/format.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

std::vector<uint64_t> StepDurations(const RankResult& r) {
  const auto& st = r.steps.steps;
  std::vector<uint64_t> v;
  v.reserve(st.size());
  for (size_t k = 0; k < st.size(); ++k) {
    const StepRec& s = st[k];
    if (s.done && (k == 0 || st[k - 1].done))
      v.push_back(s.done - (k ? st[k - 1].done : s.start));
    else  // no pace known (inferred steps rebuilt without a timeline): the host range
      v.push_back(s.end > s.start ? s.end - s.start : 0);
  }
  return v;
}

std::vector<uint64_t> HostRanges(const RankResult& r) {
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

// Every step's time, past the kept records: the pace where it was measured.
const StepStats& AllSteps(const RankResult& r) {
  return r.steps.pace.step.count() ? r.steps.pace.step : r.found.stats;
}

}  // namespace

double RankResult::WallS() const { return host_last_ns > host_first_ns ? (host_last_ns - host_first_ns) * 1e-9 : 0.0; }

double RankResult::ActiveS() const {
  if (cupti() && gpu.last_ns > gpu.first_ns) return (gpu.last_ns - gpu.first_ns) * 1e-9;
  return WallS();
}

uint64_t RankResult::StepPercentileNs(double p) const {
  return StepsAllKept(*this) ? Percentile(StepDurations(*this), p) : AllSteps(*this).Percentile(p);
}

uint64_t RankResult::StepMaxNs() const {
  if (!StepsAllKept(*this)) return AllSteps(*this).max_ns();
  const auto dur = StepDurations(*this);
  return dur.empty() ? 0 : *std::max_element(dur.begin(), dur.end());
}

double RankResult::StepsTotalS() const {
  if (!StepsAllKept(*this)) return AllSteps(*this).sum_ns() * 1e-9;
  double t = 0;
  for (uint64_t d : StepDurations(*this)) t += d * 1e-9;
  return t;
}

uint64_t RankResult::HostRangeMedianNs() const {
  return StepsAllKept(*this) ? Percentile(HostRanges(*this), 0.5) : found.stats.Percentile(0.5);
}

uint64_t RankResult::HostPeriodMedianNs() const { return steps.pace.host_period.Percentile(0.5); }
uint64_t RankResult::DevicePeriodMedianNs() const { return steps.pace.device_period.Percentile(0.5); }

// The slower side sets the pace. Where both periods agree (a loop that syncs every step: each
// side waits for the other), the side that waits less does: the device when it was idle for
// a smaller share of the step than the host was blocked in syncs.
const char* RankResult::PacedBy() const {
  const double host = static_cast<double>(HostPeriodMedianNs()), dev = static_cast<double>(DevicePeriodMedianNs());
  if (dev <= 0) return "host";
  if (dev > kPaceTolerance * host) return "device";
  if (host > kPaceTolerance * dev) return "host";
  const double span = StepsTotalS();
  if (span <= 0) return "host";
  const PerStepMean& m = per_step;
  double idle_ms = 0;
  for (double i : m.idle_ms) idle_ms += i;
  const double idle_share = m.known ? idle_ms * 1e-3 * static_cast<double>(steps_total()) / span : 0.0;
  const double blocked_share = Seconds(sync.KindNs()) / span;
  return idle_share < blocked_share ? "device" : "host";
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
    const std::vector<uint64_t> dur = StepDurations(r);
    for (size_t k = 0; k < r.steps.steps.size(); ++k) {
      const StepRec& s = r.steps.steps[k];
      if (!s.covered) continue;  // outside the overhead budget's windows: no whole device figures
      ++covered;
      covered_ns += dur[k];
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
  // A sampled timeline's covered steps were cut to the mean step (TypicalCoveredSteps).
  m.step_ms = r.per_step_device && !r.gpu.coverage.sampled && covered ? static_cast<double>(covered_ns) / k
                                                                       : r.StepsTotalS() * 1e3 / n;
  return m;
}

double RankResult::StepMedianS() const { return StepPercentileNs(0.5) * 1e-9; }

}  // namespace gpuwatch::collector
