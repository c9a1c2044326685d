// See cupti_cost.h.
#include "enrich/cupti_cost.h"

#include <cmath>

namespace gpuwatch::inject {

void CuptiCost::Recent::Push(uint64_t cycle_no, const LaunchTimes& cycle) {
  last_cycle = cycle_no;
  parts.push_back({cycle.timed(), cycle.timed_sum_ns()});
  timed += cycle.timed();
  sum_ns += cycle.timed_sum_ns();
  // Bounded: every part holds a timed call, so at most kRefCycles + kRefCalls parts stay.
  while (parts.size() > kRefCycles && timed - parts.front().timed >= kRefCalls) {
    timed -= parts.front().timed;
    sum_ns -= parts.front().sum_ns;
    parts.pop_front();
  }
}

void CuptiCost::Differences::Add(uint64_t now_ns, double diff, uint64_t n) {
  if (calls > 0 && now_ns > faded_at_ns) {
    const double keep = std::exp(-static_cast<double>(now_ns - faded_at_ns) / kFadeNs);
    diff_ns *= keep;
    weight *= keep;
  }
  faded_at_ns = now_ns;
  diff_ns += diff * static_cast<double>(n);
  weight += static_cast<double>(n);
  calls += n;
}

void CuptiCost::Add(uint64_t now_ns, bool in_window, const LaunchTimes& cycle) {
  (in_window ? in_ : out_).Merge(cycle);
  if (cycle.timed() == 0) return;  // no call, or every one waited (a full queue): nothing to compare
  ++cycles_;
  const double mean = static_cast<double>(cycle.timed_sum_ns()) / static_cast<double>(cycle.timed());
  const Recent& other = in_window ? recent_out_ : recent_in_;
  if (other.timed > 0 && cycles_ - other.last_cycle <= kFreshCycles) {
    if (in_window) before_.Add(now_ns, mean - other.Mean(), cycle.timed());
    else if (before_.calls == 0) after_.Add(now_ns, other.Mean() - mean, cycle.timed());
  }
  (in_window ? recent_in_ : recent_out_).Push(cycles_, cycle);
}

}  // namespace gpuwatch::inject
