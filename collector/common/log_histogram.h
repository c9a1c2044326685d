// A fixed-size log-bucket histogram of nanosecond values for percentiles of unbounded
// streams (GPU gaps, launch delays, kernel durations). Buckets grow by 2% so a reported
// percentile (the bucket's geometric middle, clamped to the exact min and max) is within
// 1% of the true value of the same rank. 1 537 buckets cover 1 ns .. ~4.4 hours; larger
// values land in the last bucket (and max stays exact). Memory is constant: ~12 kB.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace gpuwatch::collector {

struct DigestAccess;  // analyze/rank_digest.cpp: carries the state upstream

class LogHistogram {
 public:
  static constexpr double kGrowth = 1.02;
  static constexpr size_t kBuckets = 1537;  // [0] holds 0; [i] holds [g^(i-1), g^i)

  void Add(uint64_t v) {
    ++buckets_[Index(v)];
    ++count_;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }

  void Merge(const LogHistogram& o) {
    for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
    count_ += o.count_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }

  uint64_t count() const { return count_; }
  uint64_t max() const { return count_ ? max_ : 0; }

  // Nearest rank: the value of the ceil(p * count)-th smallest sample, 0 when empty.
  double Quantile(double p) const {
    if (count_ == 0) return 0.0;
    uint64_t rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(count_)));
    rank = std::clamp<uint64_t>(rank, 1, count_);
    uint64_t seen = 0;
    size_t i = 0;
    for (; i < kBuckets; ++i) {
      seen += buckets_[i];
      if (seen >= rank) break;
    }
    double v = i == 0 ? 0.0 : std::pow(kGrowth, static_cast<double>(i) - 0.5);
    return std::clamp(v, static_cast<double>(min_), static_cast<double>(max_));
  }

 private:
  friend struct DigestAccess;
  static size_t Index(uint64_t v) {
    if (v == 0) return 0;
    static const double kInvLog = 1.0 / std::log(kGrowth);
    const double i = std::floor(std::log(static_cast<double>(v)) * kInvLog) + 1.0;
    return i >= static_cast<double>(kBuckets - 1) ? kBuckets - 1 : static_cast<size_t>(i);
  }

  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace gpuwatch::collector
