// See stall_period.h.
#include "analyze/stall_period.h"

#include <map>
#include <set>

#include "common/thresholds.h"

namespace gpuwatch::collector {

StallPeriod FindStallPeriod(const std::vector<size_t>& long_steps) {
  StallPeriod best;
  double best_fill = 0;
  if (long_steps.size() < kMinStalls) return best;
  // Candidate periods: the spacings between a long step and the next few (a noise step
  // between two stalls splits their spacing in two).
  std::set<size_t> periods;
  for (size_t i = 0; i < long_steps.size(); ++i)
    for (size_t j = i + 1; j < long_steps.size() && j <= i + 3; ++j) periods.insert(long_steps[j] - long_steps[i]);
  for (const size_t p : periods) {
    if (p < 2) continue;
    std::map<size_t, std::vector<size_t>> by_phase;  // step % p -> the long steps there
    for (const size_t k : long_steps) by_phase[k % p].push_back(k);
    for (auto& [phase, on] : by_phase) {
      if (on.size() < kMinStalls || on.size() < best.stalls.size()) continue;
      const double fill = static_cast<double>(on.size()) / static_cast<double>((on.back() - on.front()) / p + 1);
      if (fill < kStallPeriodFill || (on.size() == best.stalls.size() && fill <= best_fill)) continue;
      if (on.size() < 3 && on.size() < long_steps.size()) continue;  // two among others: chance
      best.period = p;
      best.stalls = on;
      best_fill = fill;
    }
  }
  return best;
}

}  // namespace gpuwatch::collector
