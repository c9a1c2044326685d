#include "interpret/step_pattern.h"

#include "common/thresholds.h"

namespace gpuwatch::collector {

uint64_t FindPeriod(const std::vector<uint64_t>& sig) {
  const uint64_t n = sig.size();
  for (uint64_t p = 1; p <= kMaxPeriod && 2 * p <= n; ++p) {
    uint64_t same = 0;
    for (uint64_t i = p; i < n; ++i) same += sig[i] == sig[i - p];
    if (same >= kPeriodMatch * (n - p)) return p;
  }
  return 0;
}

void StepPattern::Boundary(uint64_t t_ns) {
  if (boundary_count_ > 0) stats_.Add(t_ns > last_boundary_ ? t_ns - last_boundary_ : 0);
  last_boundary_ = t_ns;
  ++boundary_count_;
  if (boundaries_.size() <= kMaxSteps) boundaries_.push_back(t_ns);
}

void StepPattern::Search() {
  std::vector<uint64_t> sig;
  sig.reserve(window_.size());
  for (const Anchor& a : window_) sig.push_back(a.sig);
  searched_ = true;
  period_ = FindPeriod(sig);
  if (period_)
    for (size_t i = 0; i < window_.size(); i += period_) Boundary(window_[i].t_ns);
  std::vector<Anchor>().swap(window_);
}

void StepPattern::Add(uint64_t sig, uint64_t t_ns) {
  const uint64_t index = seen_++;
  if (searched_) {
    if (period_ && index % period_ == 0) Boundary(t_ns);
    return;
  }
  window_.push_back({sig, t_ns});
  if (window_.size() == kAnchorWindow) Search();
}

bool StepPattern::Result(std::vector<StepMark>* steps, uint64_t* total, StepStats* stats) const {
  if (!searched_) {  // fewer anchors than the window: searched whole, now
    StepPattern whole = *this;
    whole.Search();
    return whole.Result(steps, total, stats);
  }
  if (period_ == 0 || boundary_count_ < 3) return false;  // at least two steps
  *stats = stats_;
  *total = boundary_count_ - 1;
  for (size_t i = 0; i + 1 < boundaries_.size() && steps->size() < kMaxSteps; ++i) {
    steps->push_back(StepMark{boundaries_[i], boundaries_[i + 1], false});
  }
  return true;
}

}  // namespace gpuwatch::collector
