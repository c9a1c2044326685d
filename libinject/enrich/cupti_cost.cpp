// See cupti_cost.h.
#include "enrich/cupti_cost.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpuwatch::inject {

void CuptiCost::Recent::Push(const LaunchTimes& cycle) {
  parts.push_back({cycle.timed(), cycle.TrimmedMean()});
  timed += cycle.timed();
  leaned = 0;  // a new reference
  // Bounded: every part holds a timed call, so at most kRefCycles + kRefCalls parts stay.
  while (parts.size() > kRefCycles && timed - parts.front().timed >= kRefCalls) {
    timed -= parts.front().timed;
    parts.pop_front();
  }
}

double CuptiCost::Recent::Median() const {
  std::vector<double> means;
  means.reserve(parts.size());
  for (const Part& p : parts) means.push_back(p.mean_ns);
  const auto mid = means.begin() + static_cast<std::ptrdiff_t>(means.size() / 2);
  std::nth_element(means.begin(), mid, means.end());
  return *mid;
}

void CuptiCost::Differences::Add(uint64_t now_ns, double diff, double w, uint64_t n) {
  if (calls > 0 && now_ns > faded_at_ns) {
    const double keep = std::exp(-static_cast<double>(now_ns - faded_at_ns) / kFadeNs);
    diff_ns *= keep;
    weight *= keep;
  }
  faded_at_ns = now_ns;
  diff_ns += diff * w;
  weight += w;
  calls += n;
}

void CuptiCost::Add(uint64_t now_ns, bool in_window, const LaunchTimes& cycle) {
  (in_window ? in_ : out_).Merge(cycle);
  if (cycle.timed() == 0) return;  // no call, or every one waited (a full queue): nothing to compare
  const double mean = cycle.TrimmedMean();
  Recent& other = in_window ? recent_out_ : recent_in_;
  if (in_window && other.timed > 0) {
    // This cycle's weight: its calls, up to what is left of the reference's (cupti_cost.h).
    const double w = std::min(static_cast<double>(cycle.timed()),
                              std::max(0.0, static_cast<double>(other.timed) - other.leaned));
    other.leaned += w;
    before_.Add(now_ns, mean - other.Median(), w, cycle.timed());
  } else if (!in_window && other.timed > 0 && before_.calls == 0) {
    // (Not capped: the calls since the run's first window are all there is until a window
    // has calls before it, and the nearest of them are the ones its records' handling slows.)
    after_.Add(now_ns, other.Median() - mean, static_cast<double>(cycle.timed()), cycle.timed());
  }
  (in_window ? recent_in_ : recent_out_).Push(cycle);
}

}  // namespace gpuwatch::inject
