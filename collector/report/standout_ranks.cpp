// See standout_ranks.h.
#include "report/standout_ranks.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/format.h"
#include "common/median.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

double StepS(const RankResult& r) { return r.steps_total() ? r.StepPercentileNs(0.5) * 1e-9 : 0.0; }

double BusyShare(const RankResult& r) { return r.cupti() && r.gpu.active_ns ? r.gpu.utilization() : -1.0; }

MedianRank MedianRankOf(const JobView& job) {
  std::vector<double> steps, busy;
  for (const RankView& v : job.ranks) {
    if (const double s = StepS(*v.result); s > 0) steps.push_back(s);
    if (const double b = BusyShare(*v.result); b >= 0) busy.push_back(b);
  }
  MedianRank m;
  m.step_s = Median(steps);
  if (!busy.empty()) m.busy = Median(busy);
  return m;
}

std::vector<StandOut> RanksThatStandOut(const JobView& job) {
  const JobResult& j = *job.result;
  const size_t n = job.ranks.size();
  const MedianRank median = MedianRankOf(job);
  // Hangs name ranks by number (the rank's hello).
  std::map<int, std::string> hung;
  for (const Hang& h : *job.hangs) hung.emplace(h.rank, h.api);
  std::vector<StandOut> out;
  for (size_t i = 0; i < n; ++i) {
    const RankView& v = job.ranks[i];
    const RankResult& r = *v.result;
    const int rank = v.hello->rank();
    StandOut s;
    s.index = i;
    if (!v.ended_normally) s.why.push_back("ended abnormally");
    if (auto h = hung.find(rank); h != hung.end()) s.why.push_back("hung in " + h->second);
    if (!s.why.empty()) s.tier = 2;
    for (const Finding& f : j.findings) {
      if (f.severity == "low" || 2 * f.ranks.size() > n) continue;
      if (std::find(f.ranks.begin(), f.ranks.end(), rank) == f.ranks.end()) continue;
      s.why.push_back(f.id);
      s.tier = std::max(s.tier, 1);
    }
    const double step = StepS(r), busy = BusyShare(r);
    if (step > 0 && median.step_s > 0 &&
        (step >= kStandOutStepRatio * median.step_s || kStandOutStepRatio * step <= median.step_s)) {
      s.why.push_back(Printf("step %s (median %s)", FmtDuration(step).c_str(), FmtDuration(median.step_s).c_str()));
      s.by_step = true;
    }
    if (busy >= 0 && median.busy >= 0 && std::abs(busy - median.busy) >= kStandOutBusyPoints) {
      s.why.push_back(Printf("GPU busy %.0f%% (median %.0f%%)", 100 * busy, 100 * median.busy));
      s.by_busy = true;
    }
    if (step > 0 && median.step_s > 0) s.distance = std::max(step, median.step_s) / std::min(step, median.step_s) - 1;
    if (busy >= 0 && median.busy >= 0) s.distance = std::max(s.distance, std::abs(busy - median.busy));
    if (!s.why.empty()) out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const StandOut& a, const StandOut& b) {
    return a.tier != b.tier ? a.tier > b.tier : a.distance > b.distance;
  });
  return out;
}

}  // namespace gpuwatch::collector
