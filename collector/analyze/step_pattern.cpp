#include "analyze/step_pattern.h"

#include "analyze/thresholds.h"

namespace gpuwatch::collector::diag {

uint64_t FindPeriod(const std::vector<uint64_t>& sig) {
  const uint64_t n = sig.size();
  for (uint64_t p = 1; p <= kMaxPeriod && 2 * p <= n; ++p) {
    uint64_t same = 0;
    for (uint64_t i = p; i < n; ++i) same += sig[i] == sig[i - p];
    if (same >= kPeriodMatch * (n - p)) return p;
  }
  return 0;
}

namespace {
std::vector<uint64_t> Signatures(const auto& anchors) {
  std::vector<uint64_t> sig;
  sig.reserve(anchors.size());
  for (const auto& a : anchors) sig.push_back(a.sig);
  return sig;
}
}  // namespace

void StepPattern::Boundary(uint64_t t_ns) {
  if (boundary_count_ > 0) stats_.Add(t_ns > last_boundary_ ? t_ns - last_boundary_ : 0);
  last_boundary_ = t_ns;
  ++boundary_count_;
  if (boundaries_.size() <= kMaxSteps) boundaries_.push_back(t_ns);
}

void StepPattern::Add(uint64_t sig, uint64_t t_ns) {
  const uint64_t index = seen_++;
  if (searched_) {
    if (period_ && index % period_ == 0) Boundary(t_ns);
    return;
  }
  window_.push_back({sig, t_ns});
  if (window_.size() < kAnchorWindow) return;
  searched_ = true;
  period_ = FindPeriod(Signatures(window_));
  if (period_)
    for (size_t i = 0; i < window_.size(); i += period_) Boundary(window_[i].t_ns);
  std::vector<Anchor>().swap(window_);
}

bool StepPattern::Result(std::deque<StepRec>* steps, uint64_t* total, StepStats* stats) const {
  std::vector<uint64_t> bounds;
  const std::vector<uint64_t>* b = &boundaries_;
  if (!searched_) {
    const uint64_t p = FindPeriod(Signatures(window_));
    if (p == 0 || window_.size() < 2 * p + 1) return false;
    for (size_t i = 0; i < window_.size(); i += p) bounds.push_back(window_[i].t_ns);
    b = &bounds;
    *stats = StepStats{};
    for (size_t i = 1; i < bounds.size(); ++i) stats->Add(bounds[i] > bounds[i - 1] ? bounds[i] - bounds[i - 1] : 0);
    *total = bounds.size() - 1;
  } else {
    if (period_ == 0 || boundary_count_ < 2) return false;
    *stats = stats_;
    *total = boundary_count_ - 1;
  }
  for (size_t i = 0; i + 1 < b->size() && steps->size() < kMaxSteps; ++i) {
    StepRec s;
    s.start = (*b)[i];
    s.end = (*b)[i + 1];
    steps->push_back(s);
  }
  return true;
}

}  // namespace gpuwatch::collector::diag
