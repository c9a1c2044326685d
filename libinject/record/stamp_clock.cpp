// Where the stamp comes from (cpuid at load) and its conversion to CLOCK_MONOTONIC ns.
#include "record/stamp_clock.h"

#include <cpuid.h>

#include <cmath>

namespace gpuwatch::inject {
namespace {

bool InvariantTsc() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000, nullptr)) < 0x80000007u) return false;  // int in clang's cpuid.h
  __cpuid(0x80000007, a, b, c, d);
  return (d & (1u << 8)) != 0;  // CPUID.80000007H:EDX[8] "invariant TSC"
}

// (tsc, monotonic) read as close together as the machine allows: the tightest of a few.
void Pair(uint64_t* tick, uint64_t* ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; ++i) {
    const uint64_t t0 = __rdtsc();
    const uint64_t n = NowNs();
    const uint64_t t1 = __rdtsc();
    if (t1 - t0 < best) {
      best = t1 - t0;
      *tick = t0 + (t1 - t0) / 2;
      *ns = n;
    }
  }
}

}  // namespace

constinit bool g_stamp_is_tsc = false;

// One cpuid at load: cheap enough for every process that inherits LD_PRELOAD. A constructor
// of high priority, not a dynamic initializer: those run in link order, and the library's
// own constructor (runtime/load.cpp) comes first and starts a StampClock.
namespace {
__attribute__((constructor(101))) void DecideStamp() { g_stamp_is_tsc = InvariantTsc(); }
}  // namespace

StampClock::StampClock() {
  if (!g_stamp_is_tsc) return;
  Pair(&first_tick_, &first_ns_);
  base_tick_ = first_tick_;
  base_ns_ = first_ns_;
  // The rate comes with the first Calibrate(), which the sender runs before converting.
}

void StampClock::Calibrate() {
  if (!g_stamp_is_tsc) return;
  uint64_t t = 0, n = 0;  // Pair always sets them (GCC cannot tell)
  Pair(&t, &n);
  if (t <= first_tick_ || n <= first_ns_) return;
  ns_per_tick_ = static_cast<double>(n - first_ns_) / static_cast<double>(t - first_tick_);
  base_tick_ = t;
  base_ns_ = n;
}

uint64_t StampClock::ToNs(uint64_t stamp) const {
  if (!g_stamp_is_tsc) return stamp;
  const auto ticks = static_cast<int64_t>(stamp - base_tick_);  // small, signed: exact in a double
  return base_ns_ + static_cast<uint64_t>(std::llround(static_cast<double>(ticks) * ns_per_tick_));
}

uint64_t StampClock::DurationNs(uint64_t ticks) const {
  return g_stamp_is_tsc ? static_cast<uint64_t>(static_cast<double>(ticks) * ns_per_tick_ + 0.5) : ticks;
}

}  // namespace gpuwatch::inject
