// Kernel launch calls' host times: what the overhead budget compares in and out of CUPTI
// windows (enrich/cupti_budget.h), as the mean of the calls shorter than kStallNs. A launch
// that waited for a full launch queue, or for the scheduler, takes milliseconds, and a few
// of those would swamp the microseconds CUPTI adds to each call; but CUPTI's cost is not the
// same on every call (the simulator's on the 2-core VM: ~2.2 us on most, tens of us on a
// few, 4-5 us on average), and the median, used before, saw only the common case (2.6 us).
#pragma once
#include <cstdint>

namespace gpuwatch::inject {

class LaunchTimes {
 public:
  static constexpr uint64_t kStallNs = 1'000'000;  // a launch this long waited, CUPTI or not
  // A graph launch's own work grows with its nodes, and CUPTI's with them (thousands of
  // nodes at ~1 us each are milliseconds): only a much longer one counts as a wait.
  static constexpr uint64_t kGraphStallNs = 50'000'000;

  // Not explicit by default: an aggregate holding one is reset with `= {}`.
  LaunchTimes() = default;
  explicit LaunchTimes(uint64_t stall_ns) : stall_ns_(stall_ns) {}

  void Add(uint64_t ns) {
    ++total_;
    if (ns >= stall_ns_) return;
    sum_ns_ += ns;
    ++timed_;
  }
  // `total` calls of which `timed` were under the stall threshold, taking `timed_ns` in all
  // (launches summarized where they were made: record/launch_summary.h).
  void AddMany(uint64_t total, uint64_t timed, uint64_t timed_ns) {
    total_ += total;
    timed_ += timed;
    sum_ns_ += timed_ns;
  }
  // One sender cycle's calls: counted as one more cycle when it held any.
  void Merge(const LaunchTimes& o) {
    cycles_ += o.total_ > 0;
    total_ += o.total_;
    timed_ += o.timed_;
    sum_ns_ += o.sum_ns_;
  }
  uint64_t count() const { return total_; }  // stalls included
  uint64_t timed() const { return timed_; }  // stalls left out
  uint64_t cycles() const { return cycles_; }  // merged sets that held calls

  // The mean in ns of the calls under the stall threshold; 0 when there are none.
  double TrimmedMean() const {
    return timed_ ? static_cast<double>(sum_ns_) / static_cast<double>(timed_) : 0;
  }

 private:
  uint64_t stall_ns_ = kStallNs;
  uint64_t total_ = 0, timed_ = 0, sum_ns_ = 0, cycles_ = 0;
};

}  // namespace gpuwatch::inject
