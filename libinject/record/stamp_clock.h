// Timestamps on the hot path: the CPU's time-stamp counter where it is invariant (ticks at
// a constant rate across cores and power states), else CLOCK_MONOTONIC. An rdtsc is about
// a third of a vDSO clock_gettime (12 ns vs 37 ns measured on the development VM), and a
// hook takes two. The sender turns stamps into CLOCK_MONOTONIC nanoseconds (StampClock),
// so nothing on the wire changes.
#pragma once
#include <cstdint>
#include <ctime>
#include <x86intrin.h>

namespace gpuwatch::inject {

extern bool g_stamp_is_tsc;  // decided once at load, never changed

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t Stamp() { return g_stamp_is_tsc ? __rdtsc() : MonotonicNs(); }

// Sender thread: stamps -> CLOCK_MONOTONIC ns, from (tsc, monotonic) pairs taken as it goes.
class StampClock {
 public:
  StampClock();  // cheap: one (tsc, monotonic) pair
  // Takes a fresh pair; call before converting, every cycle. The rate is measured over the
  // whole run so far.
  void Calibrate();
  uint64_t ToNs(uint64_t stamp) const;
  uint64_t DurationNs(uint64_t ticks) const;
  // Stamp ticks in `ns` nanoseconds (the inverse of DurationNs), once calibrated.
  uint64_t TicksIn(uint64_t ns) const {
    return g_stamp_is_tsc ? static_cast<uint64_t>(static_cast<double>(ns) / ns_per_tick_) : ns;
  }

 private:
  uint64_t first_tick_ = 0, first_ns_ = 0;
  uint64_t base_tick_ = 0, base_ns_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace gpuwatch::inject
