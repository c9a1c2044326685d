// Counter windows for the trace: a quantity (GPU busy ns, H2D bytes) summed over fixed
// 10 ms windows of the rank's clock. It arrives as intervals in start order (the device
// stream of the interpret stage), each spread evenly over its length, so a window is
// complete once an interval starts after it; windows ahead are held until then (at most
// kMaxAhead, past which the rest of a long interval lands in the last one). Fixed memory.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>

namespace gpuwatch::collector {

class CounterWindows {
 public:
  static constexpr uint64_t kWindowNs = 10'000'000;
  static constexpr size_t kMaxAhead = 4096;
  // Called with (window start ns, sum in the window), windows in order.
  using Emit = std::function<void(uint64_t, double)>;

  // `amount` spread over [start, end).
  void Add(uint64_t start, uint64_t end, double amount, const Emit& emit) {
    if (end <= start) end = start + 1;
    const uint64_t w0 = start / kWindowNs;
    if (!started_) {
      started_ = true;
      base_ = w0;
    }
    CloseBefore(w0, emit);
    start = std::max(start, base_ * kWindowNs);  // late: what lies before the open windows is left out
    if (end <= start) return;
    const double per_ns = amount / static_cast<double>(end - start);
    for (uint64_t w = start / kWindowNs; start < end; ++w) {
      const uint64_t e = std::min(end, (w + 1) * kWindowNs);
      const size_t i = std::min<uint64_t>(w - base_, kMaxAhead - 1);
      if (open_.size() <= i) open_.resize(i + 1, 0.0);
      open_[i] += per_ns * static_cast<double>(e - start);
      start = e;
    }
  }

  // Emits every window held (the rank has ended or disconnected) and starts over.
  void Drain(const Emit& emit) {
    for (double v : open_) emit(base_++ * kWindowNs, v);
    open_.clear();
    started_ = false;
  }

 private:
  // Windows before `w` are complete; a stretch with nothing in it is one 0 (a counter holds
  // its value until the next sample).
  void CloseBefore(uint64_t w, const Emit& emit) {
    while (base_ < w && !open_.empty()) {
      emit(base_++ * kWindowNs, open_.front());
      open_.pop_front();
    }
    if (base_ < w) {
      emit(base_ * kWindowNs, 0.0);
      base_ = w;
    }
  }

  std::deque<double> open_;  // windows base_, base_ + 1, ...
  uint64_t base_ = 0;
  bool started_ = false;
};

}  // namespace gpuwatch::collector
