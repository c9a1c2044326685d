// See step_pace.h.
#include "analyze/step_pace.h"

#include <algorithm>

#include "common/thresholds.h"

namespace gpuwatch::collector {

void StepPace::OnStep(const StepMark& m) {
  // Work waiting for this start: launched before it, so the previous step's (none before the
  // first step: set-up work is no step's).
  for (auto it = ahead_.begin(); it != ahead_.end();) {
    if (it->first >= m.start_ns) {
      ++it;
      continue;
    }
    if (!open_.empty()) open_.back().dev_end = std::max(open_.back().dev_end, it->second);
    it = ahead_.erase(it);
  }
  open_.push_back({m.start_ns, m.end_ns, 0, m.device_covered});
  while (open_.size() > kOpenSteps) {
    Close(open_.front());
    open_.pop_front();
  }
}

void StepPace::OnDeviceWork(uint64_t launch_ns, uint64_t end_ns) {
  if (open_.empty() || launch_ns >= open_.back().start) {
    ahead_.emplace_back(launch_ns, end_ns);
    // Bounded: the oldest goes to the newest step (a run that launches this much between two
    // step starts has its next step far away).
    if (ahead_.size() > kMaxAhead) {
      if (!open_.empty()) open_.back().dev_end = std::max(open_.back().dev_end, ahead_.front().second);
      ahead_.pop_front();
    }
    return;
  }
  if (launch_ns < open_.front().start) return;  // a closed step's: more than kOpenSteps late
  auto it = std::upper_bound(open_.begin(), open_.end(), launch_ns,
                             [](uint64_t t, const Open& s) { return t < s.start; });
  Open& s = *std::prev(it);
  s.dev_end = std::max(s.dev_end, end_ns);
}

void StepPace::Close(const Open& s) {
  const bool device = s.covered && s.dev_end > 0;
  // Done never goes back: a step with no device work of its own, closed while the previous
  // one's work still ran, is done with it.
  uint64_t done = std::max(s.end, device ? s.dev_end : 0);
  if (any_closed_) done = std::max(done, prev_done_);
  closed_.step.Add(done - (any_closed_ ? prev_done_ : s.start));
  if (any_closed_) {
    closed_.host_period.Add(s.start - prev_start_);
    if (device && prev_dev_end_) closed_.device_period.Add(s.dev_end > prev_dev_end_ ? s.dev_end - prev_dev_end_ : 0);
  }
  if (done_.size() < kMaxSteps) done_.push_back(done);
  any_closed_ = true;
  prev_start_ = s.start;
  prev_done_ = done;
  prev_dev_end_ = device ? s.dev_end : 0;
}

PaceStats StepPace::Finish(std::vector<uint64_t>& done) const {
  StepPace p = *this;
  // Work launched after the newest step's start is the newest step's: no step follows.
  for (const auto& [launch, end] : p.ahead_)
    if (!p.open_.empty()) p.open_.back().dev_end = std::max(p.open_.back().dev_end, end);
  p.ahead_.clear();
  for (const Open& s : p.open_) p.Close(s);
  done = std::move(p.done_);
  return p.closed_;
}

}  // namespace gpuwatch::collector
