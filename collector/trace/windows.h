// Counter windows for the trace: GPU busy time and H2D bytes summed over fixed windows
// (10 ms) of the rank's clock. Device records arrive out of order (CUPTI buffers lag), so a
// ring of windows is kept behind the newest record; a window is emitted when it leaves the
// ring (kRing windows later) or at Drain(). Records older than the ring are counted as late
// and left out. Fixed memory.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>

namespace gpuwatch::collector {

class CounterWindows {
 public:
  static constexpr uint64_t kWindowNs = 10'000'000;
  static constexpr uint64_t kRing = 256;  // 2.56 s of reordering
  // Called with (window start ns, busy ns in the window, H2D bytes in the window).
  using Emit = std::function<void(uint64_t, uint64_t, uint64_t)>;

  // Device work [start, end) (busy), with `h2d_bytes` spread over it.
  void Add(uint64_t start, uint64_t end, uint64_t h2d_bytes, const Emit& emit) {
    if (end <= start) end = start + 1;
    const uint64_t w0 = start / kWindowNs, w1 = (end - 1) / kWindowNs;
    if (!started_) {
      started_ = true;
      base_ = w0 > kRing / 2 ? w0 - kRing / 2 : 0;
    }
    if (w1 >= base_ + kRing) AdvanceTo(w1 - kRing + 1, emit);
    if (w0 < base_) ++late_;
    const double per_ns = static_cast<double>(h2d_bytes) / static_cast<double>(end - start);
    for (uint64_t w = std::max(w0, base_); w <= w1; ++w) {
      const uint64_t a = std::max(start, w * kWindowNs), b = std::min(end, (w + 1) * kWindowNs);
      Slot& s = ring_[w % kRing];
      if (!s.used) {
        s.used = true;
        ++used_;
      }
      s.busy += b - a;
      s.bytes += static_cast<uint64_t>(per_ns * static_cast<double>(b - a) + 0.5);
    }
  }

  // Emits every window held (the rank has ended or disconnected) and starts over.
  void Drain(const Emit& emit) {
    if (!started_) return;
    AdvanceTo(base_ + kRing, emit);
    started_ = false;
  }

  uint64_t late() const { return late_; }

 private:
  struct Slot {
    uint64_t busy = 0, bytes = 0;
    bool used = false;
  };

  void AdvanceTo(uint64_t to, const Emit& emit) {
    while (base_ < to) {
      if (used_ == 0) {  // nothing held: jump, however far
        if (base_ < to) emit(base_ * kWindowNs, 0, 0);
        base_ = to;
        break;
      }
      Slot& s = ring_[base_ % kRing];
      emit(base_ * kWindowNs, s.busy, s.bytes);
      if (s.used) --used_;
      s = Slot{};
      ++base_;
    }
  }

  std::array<Slot, kRing> ring_{};
  uint64_t base_ = 0;  // window number of the oldest slot
  uint64_t used_ = 0;
  uint64_t late_ = 0;
  bool started_ = false;
};

}  // namespace gpuwatch::collector
