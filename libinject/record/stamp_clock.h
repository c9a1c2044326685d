// Time: Stamp() on the hot path (ticks), NowNs() (CLOCK_MONOTONIC ns), and StampClock, which
// turns ticks into ns on the sender thread.
#pragma once
#include <cstdint>
#include <ctime>
#include <x86intrin.h>

namespace gpuwatch::inject {

// The stamp is the CPU's time-stamp counter where it is invariant (ticks at a constant rate
// across cores and power states), else CLOCK_MONOTONIC. An rdtsc is about a third of a vDSO
// clock_gettime (12 ns vs 37 ns measured on the development VM), and a hook takes two.
extern bool g_stamp_is_tsc;  // decided once at load, never changed

// CLOCK_MONOTONIC in ns: the clock of everything on the wire.
inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t Stamp() { return g_stamp_is_tsc ? __rdtsc() : NowNs(); }

// How the sender thread reads time: now, and stamps converted to ns (tests give their own).
class TimeBase {
 public:
  virtual uint64_t NowNs() const = 0;
  virtual uint64_t ToNs(uint64_t stamp) const = 0;          // a Stamp() -> CLOCK_MONOTONIC ns
  virtual uint64_t DurationNs(uint64_t ticks) const = 0;    // a difference of stamps -> ns

 protected:
  ~TimeBase() = default;
};

// Sender thread: stamps -> CLOCK_MONOTONIC ns, from (tsc, monotonic) pairs taken as it goes.
class StampClock final : public TimeBase {
 public:
  StampClock();  // cheap: one (tsc, monotonic) pair
  // Takes a fresh pair; call before converting, every cycle. The rate is measured over the
  // whole run so far.
  void Calibrate();
  uint64_t NowNs() const override { return ::gpuwatch::inject::NowNs(); }
  uint64_t ToNs(uint64_t stamp) const override;
  uint64_t DurationNs(uint64_t ticks) const override;
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
