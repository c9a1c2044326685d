// See comm_overlap.h.
#include "analyze/comm_overlap.h"

#include <algorithm>
#include <iterator>

#include "common/thresholds.h"

namespace gpuwatch::collector {

void CommOverlap::OnHostCall(const HostCall& c) {
  if (!IsCollective(c.api) || c.captured) return;
  if (calls_.size() >= kMaxCommCallsHeld) calls_.pop_front();
  calls_.push_back({c.t_ns, c.comm_hash});
}

void CommOverlap::OnDeviceWork(const DeviceWork& w) {
  if (w.kind != wire::ACTIVITY_KERNEL) return;
  Settle(w.start_ns);  // nothing that starts from here on can meet kernels that ended before
  if (!w.comm) {
    if (!compute_.empty() && w.start_ns <= compute_.back().second)
      compute_.back().second = std::max(compute_.back().second, w.end_ns);
    else
      compute_.emplace_back(w.start_ns, w.end_ns);
    return;
  }
  uint64_t hash = 0;  // launch unknown
  if (w.api) {
    auto it = std::upper_bound(calls_.begin(), calls_.end(), w.api->start_ns,
                               [](uint64_t t, const Call& c) { return t < c.t_ns; });
    if (it != calls_.begin()) hash = std::prev(it)->hash;
  }
  pending_.push_back({w.start_ns, w.end_ns, hash});
}

void CommOverlap::Settle(uint64_t before) {
  uint64_t keep_from = before;
  std::vector<Pending> still;
  for (const Pending& k : pending_) {
    if (k.end > before) {
      still.push_back(k);
      keep_from = std::min(keep_from, k.start);
      continue;
    }
    uint64_t overlapped = 0;
    for (const auto& [cs, ce] : compute_) {
      if (cs >= k.end) break;
      const uint64_t lo = std::max(cs, k.start), hi = std::min(ce, k.end);
      if (hi > lo) overlapped += hi - lo;
    }
    Charge(k, overlapped);
  }
  pending_.swap(still);
  while (!compute_.empty() && compute_.front().second <= keep_from) compute_.pop_front();
}

void CommOverlap::Charge(const Pending& k, uint64_t overlapped) {
  const OverlapTally t{1, k.end - k.start, overlapped};
  f_.total.Add(t);
  f_.by_comm[k.hash].Add(t);
  ChargeStep(k.start, t);
}

// Into the step whose [start, next start) holds `start`; after the last known step's end
// it waits for the next step (or the end of the run: the last step's).
void CommOverlap::ChargeStep(uint64_t start, const OverlapTally& t) {
  if (!steps_.empty() && start < steps_.back().second) {
    auto it = std::upper_bound(steps_.begin(), steps_.end(), start,
                               [](uint64_t s, const auto& st) { return s < st.first; });
    if (it != steps_.begin()) f_.per_step[it - steps_.begin() - 1].Add(t);
    return;
  }
  if (steps_seen_ > kMaxSteps) return;  // past the kept steps
  if (held_.size() >= kMaxCommCallsHeld) {
    if (!f_.per_step.empty()) f_.per_step.back().Add(t);
    return;
  }
  held_.emplace_back(start, t);
}

void CommOverlap::OnStep(const StepMark& m) {
  ++steps_seen_;
  std::vector<std::pair<uint64_t, OverlapTally>> held;
  held.swap(held_);
  // What waited before this step's start was the previous step's.
  for (const auto& [start, t] : held)
    if (start < m.start_ns && !f_.per_step.empty()) f_.per_step.back().Add(t);
  if (steps_seen_ <= kMaxSteps) {
    steps_.emplace_back(m.start_ns, m.end_ns);
    f_.per_step.emplace_back();
  }
  for (const auto& [start, t] : held)
    if (start >= m.start_ns) ChargeStep(start, t);
}

void CommOverlap::OnStepsReset() {
  steps_.clear();
  f_.per_step.clear();
  held_.clear();
  steps_seen_ = 0;
}

OverlapFigures CommOverlap::Result() const {
  CommOverlap done = *this;
  done.Settle(UINT64_MAX);
  for (const auto& [start, t] : done.held_)
    if (!done.f_.per_step.empty()) done.f_.per_step.back().Add(t);
  return done.f_;
}

}  // namespace gpuwatch::collector
