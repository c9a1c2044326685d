// The device model's clock and the host-side ways of waiting on it.
#pragma once

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <sched.h>

namespace simgpu {

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Sleeps until the monotonic clock reaches `t`. Never spins: many rank processes share
// few cores, and a spinning waiter would steal the CPU time other ranks are measured on.
inline void sleep_until(uint64_t t) {
  timespec ts{static_cast<time_t>(t / 1000000000ull), static_cast<long>(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// Host cost of an API call. Under 20 us a sleep would overshoot by its wake-up latency
// (tens of us), so short costs busy-spin, as the driver's own work on the calling thread
// does: a real launch never gives its core away. (A sched_yield spin did, to whatever else
// was runnable there: a profiler's own threads then looked like they slowed every launch,
// which on a GPU they do only where cores are short.) Longer costs sleep.
inline void spend_host_time(uint64_t ns) {
  if (ns == 0) return;
  uint64_t until = now_ns() + ns;
  if (ns >= 20000) return sleep_until(until);
  while (now_ns() < until) {
  }
}

}  // namespace simgpu
