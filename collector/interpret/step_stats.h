// The durations of every step of a run in constant memory: count, sum, max and a
// log-linear histogram (64 buckets per power of two, so a percentile read from it is within
// 1/128 of the exact one). Per-step records stop at kMaxSteps; a run's
// median, p90 and total come from here once they have, so they cover all of its steps.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gpuwatch::collector {

struct DigestAccess;  // analyze/rank_digest.cpp: carries the state upstream

class StepStats {
 public:
  void Add(uint64_t ns) {
    const size_t b = Bucket(ns);
    if (b >= counts_.size()) counts_.resize(b + 1, 0);
    ++counts_[b];
    ++n_;
    sum_ += ns;
    max_ = std::max(max_, ns);
  }
  uint64_t count() const { return n_; }
  uint64_t sum_ns() const { return sum_; }
  uint64_t max_ns() const { return max_; }
  // Nearest rank, as diag::Percentile over the exact durations.
  uint64_t Percentile(double p) const {
    if (n_ == 0) return 0;
    const uint64_t rank = std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(p * n_)), 1, n_);
    uint64_t seen = 0;
    for (size_t b = 0; b < counts_.size(); ++b) {
      seen += counts_[b];
      if (seen >= rank) return std::min(Mid(b), max_);
    }
    return max_;
  }

 private:
  friend struct DigestAccess;
  static constexpr int kSubBits = 6;  // 64 buckets per power of two
  static constexpr uint64_t kSub = 1u << kSubBits;
  static size_t Bucket(uint64_t v) {
    if (v < kSub) return v;  // exact below 64 ns
    const int e = 63 - __builtin_clzll(v);
    const uint64_t mantissa = (v >> (e - kSubBits)) & (kSub - 1);
    return kSub + static_cast<size_t>(e - kSubBits) * kSub + mantissa;
  }
  static uint64_t Mid(size_t b) {
    if (b < kSub) return b;
    const int e = static_cast<int>((b - kSub) / kSub) + kSubBits;
    const uint64_t mantissa = (b - kSub) % kSub;
    const uint64_t width = 1ull << (e - kSubBits);
    return ((kSub + mantissa) << (e - kSubBits)) + width / 2;
  }

  std::vector<uint64_t> counts_;  // by bucket, up to the largest used (< 3800)
  uint64_t n_ = 0, sum_ = 0, max_ = 0;
};

}  // namespace gpuwatch::collector
