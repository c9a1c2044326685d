// GPU utilization over time for report.html: the busy intervals the device-timeline sweep
// (interpret/device_sweep.cpp) closes, summed into windows. Windows start 10 ms wide, like the
// trace's counter track (trace/windows.h); when the run outgrows kMaxWindows the width
// doubles and neighbouring windows are folded together, so memory stays fixed however long
// the run. Intervals arrive in start order from the sweep; one that starts before the
// origin (a late record) is clipped to it.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace gpuwatch::collector {

struct DigestAccess;  // analyze/rank_digest.cpp: carries the state upstream

class BusySeries {
 public:
  static constexpr uint64_t kFirstWindowNs = 10'000'000;
  static constexpr size_t kMaxWindows = 512;

  // Device busy during [a, b) (rank's CLOCK_MONOTONIC, ns).
  void Add(uint64_t a, uint64_t b) {
    if (b <= a) return;
    if (!started_) {
      started_ = true;
      origin_ = a;
    }
    a = std::max(a, origin_);
    if (b <= a) return;
    while (b - origin_ > width_ * kMaxWindows) Coarsen();
    end_ = std::max(end_, b);
    for (size_t w = (a - origin_) / width_; a < b; ++w) {
      const uint64_t w_end = origin_ + (w + 1) * width_;
      const uint64_t e = std::min(b, w_end);
      busy_[w] += e - a;
      a = e;
    }
  }

  bool empty() const { return !started_; }
  uint64_t origin_ns() const { return origin_; }
  uint64_t window_ns() const { return width_; }
  // Windows from the origin to the end of the last busy interval.
  size_t size() const { return started_ ? (end_ - origin_ + width_ - 1) / width_ : 0; }
  // Busy share of window i (0..1); the last window counts only its part before the end.
  double Fraction(size_t i) const {
    const uint64_t w_start = origin_ + i * width_;
    const uint64_t len = std::min(width_, end_ - w_start);
    return len ? std::min(1.0, static_cast<double>(busy_[i]) / static_cast<double>(len)) : 0.0;
  }

 private:
  friend struct DigestAccess;
  void Coarsen() {
    for (size_t i = 0; i < kMaxWindows / 2; ++i) busy_[i] = busy_[2 * i] + busy_[2 * i + 1];
    std::fill(busy_.begin() + kMaxWindows / 2, busy_.end(), 0);
    width_ *= 2;
  }

  std::array<uint64_t, kMaxWindows> busy_{};
  uint64_t origin_ = 0, end_ = 0, width_ = kFirstWindowNs;
  bool started_ = false;
};

}  // namespace gpuwatch::collector
