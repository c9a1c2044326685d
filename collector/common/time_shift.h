// One time moved onto another clock: the rule every stage that moves times shares (the
// frames at ingest, ingest/clock_shift.h; a rank's digested figures, analyze/rank_digest.h;
// the trace's timestamps, trace/). Times are CLOCK_MONOTONIC nanoseconds where 0 means
// "not set" (proto3's default).
#pragma once
#include <cstdint>
#include <limits>

namespace gpuwatch::collector {

// t + delta, clamped to [1, UINT64_MAX]; 0 stays 0.
inline uint64_t ShiftNs(uint64_t t, int64_t delta) {
  if (t == 0) return 0;
  if (delta >= 0) {
    const uint64_t d = static_cast<uint64_t>(delta);
    return t > std::numeric_limits<uint64_t>::max() - d ? std::numeric_limits<uint64_t>::max() : t + d;
  }
  // -(delta + 1) + 1 avoids negating INT64_MIN.
  const uint64_t d = static_cast<uint64_t>(-(delta + 1)) + 1;
  return t > d ? t - d : 1;  // 1, not 0: the time was set, it just predates the new epoch
}

}  // namespace gpuwatch::collector
