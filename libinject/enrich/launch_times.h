// Kernel launch calls' host times, as a histogram: what the overhead budget compares in and
// out of CUPTI windows (enrich/cupti_budget.h). Medians, not means: a launch that waited for
// a full launch queue, or for the scheduler, takes milliseconds, and a few of those would
// swamp the microseconds CUPTI adds to each call.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

namespace gpuwatch::inject {

class LaunchTimes {
 public:
  static constexpr uint64_t kBucketNs = 100;   // finer than CUPTI's cost (~2.5 us)
  static constexpr size_t kBuckets = 512;      // up to 51.2 us; longer ones in the last

  void Add(uint64_t ns) {
    ++counts_[ns / kBucketNs < kBuckets ? ns / kBucketNs : kBuckets - 1];
    ++total_;
  }
  void Merge(const LaunchTimes& o) {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
  }
  void Clear() { *this = LaunchTimes{}; }
  uint64_t count() const { return total_; }

  // The median in ns, interpolated within its bucket; 0 when empty.
  double Median() const {
    if (total_ == 0) return 0;
    const double half = static_cast<double>(total_) / 2;
    double below = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      const double c = static_cast<double>(counts_[i]);
      if (below + c >= half && c > 0) {
        return (static_cast<double>(i) + (half - below) / c) * static_cast<double>(kBucketNs);
      }
      below += c;
    }
    return static_cast<double>(kBuckets * kBucketNs);
  }

 private:
  std::array<uint32_t, kBuckets> counts_{};
  uint64_t total_ = 0;
};

}  // namespace gpuwatch::inject
