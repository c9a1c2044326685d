// GPU utilization over time for report.html and the utilization shape: the busy intervals the
// device-timeline sweep (interpret/device_sweep.cpp) closes, summed into windows twice: all
// work, and useful work (all but NCCL kernels, which may only be waiting for their peers).
// Windows start 10 ms wide, like the trace's counter track (trace/windows.h); when the run
// outgrows kMaxWindows the width doubles and neighbouring windows are folded together, so
// memory stays fixed however long the run. The origin is the first work's start (Start);
// intervals arrive in start order from the sweep, and one that starts before the origin (a
// late record) is clipped to it.
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

  // The series starts at `origin_ns` (the first device work's start: no busy interval of
  // either kind starts before it, though a useful one may be closed before the interval of
  // all work that holds it). Ignored once started.
  void Start(uint64_t origin_ns) {
    if (started_) return;
    started_ = true;
    origin_ = end_ = origin_ns;
  }
  // Device busy during [a, b) (rank's CLOCK_MONOTONIC, ns): any work, or useful work
  // (`compute`: kernels other than NCCL's, copies, memsets).
  void Add(uint64_t a, uint64_t b, bool compute = false) {
    if (b <= a) return;
    Start(a);
    a = std::max(a, origin_);
    if (b <= a) return;
    while (b - origin_ > width_ * kMaxWindows) Coarsen();
    end_ = std::max(end_, b);
    auto& sums = compute ? compute_ : busy_;
    for (size_t w = (a - origin_) / width_; a < b; ++w) {
      const uint64_t w_end = origin_ + (w + 1) * width_;
      const uint64_t e = std::min(b, w_end);
      sums[w] += e - a;
      a = e;
    }
  }

  bool empty() const { return !started_; }
  uint64_t origin_ns() const { return origin_; }
  uint64_t window_ns() const { return width_; }
  // Windows from the origin to the end of the last busy interval.
  size_t size() const { return started_ ? (end_ - origin_ + width_ - 1) / width_ : 0; }
  // Busy share of window i (0..1), of any work or of useful work (`compute`); the last
  // window counts only its part before the end.
  double Fraction(size_t i, bool compute = false) const {
    const uint64_t w_start = origin_ + i * width_;
    const uint64_t len = std::min(width_, end_ - w_start);
    const uint64_t sum = (compute ? compute_ : busy_)[i];
    return len ? std::min(1.0, static_cast<double>(sum) / static_cast<double>(len)) : 0.0;
  }

 private:
  friend struct DigestAccess;
  void Coarsen() {
    for (auto* sums : {&busy_, &compute_}) {
      for (size_t i = 0; i < kMaxWindows / 2; ++i) (*sums)[i] = (*sums)[2 * i] + (*sums)[2 * i + 1];
      std::fill(sums->begin() + kMaxWindows / 2, sums->end(), 0);
    }
    width_ *= 2;
  }

  std::array<uint64_t, kMaxWindows> busy_{}, compute_{};
  uint64_t origin_ = 0, end_ = 0, width_ = kFirstWindowNs;
  bool started_ = false;
};

}  // namespace gpuwatch::collector
