// See coverage.h.
#include "interpret/coverage.h"

#include <algorithm>

namespace gpuwatch::collector {

void Coverage::AddWindow(uint64_t start, uint64_t end) {
  if (end <= start) return;
  if (windows_ == 0) {
    first_start_ = start;
    first_end_ = end;
  }
  ++windows_;
  closed_ns_ += end - start;
  last_end_ = std::max(last_end_, end);
  kept_.emplace_back(start, end);
  if (kept_.size() > kMaxKept) kept_.pop_front();
  if (open_since_ && open_since_ <= start) open_since_ = 0;  // that window is this one
}

bool Coverage::CoversSampled(uint64_t a, uint64_t b) const {
  if (open_since_ && open_since_ <= a) return true;
  for (const auto& [s, e] : kept_)
    if (s <= a && b <= e) return true;
  return false;
}

bool Coverage::Touches(uint64_t a, uint64_t b) const {
  if (!sampled_ || (open_since_ && b >= open_since_)) return true;
  for (auto it = kept_.rbegin(); it != kept_.rend() && it->second >= a; ++it)
    if (it->first <= b) return true;
  return false;
}

void Coverage::Pass(uint64_t t) {
  while (!kept_.empty() && kept_.front().second < t) kept_.pop_front();
}

uint64_t Coverage::CoveredWithin(uint64_t first, uint64_t last) const {
  if (!sampled_ || last <= first) return last > first ? last - first : 0;
  uint64_t covered = closed_ns_;
  // The first window may have opened before the device's first work (it opens at start).
  if (windows_ > 0 && first > first_start_) covered -= std::min(first, first_end_) - first_start_;
  if (open_since_ && last > open_since_) covered += last - std::max(open_since_, first);
  return std::min(covered, last - first);
}

}  // namespace gpuwatch::collector
