#include "ingest/clock_estimate.h"

#include <time.h>

namespace gpuwatch::collector {

std::optional<ClockSample> SampleOf(uint64_t t_send, uint64_t t_root, uint64_t t_recv) {
  if (t_recv < t_send) return std::nullopt;
  const uint64_t rtt = t_recv - t_send;
  // t_send + rtt/2 rather than (t_send + t_recv)/2: no overflow near UINT64_MAX.
  const uint64_t mid = t_send + rtt / 2;
  ClockSample s;
  s.offset_ns = static_cast<int64_t>(t_root - mid);  // two's complement: negative when behind
  s.rtt_ns = rtt;
  return s;
}

void ClockEstimator::Add(uint64_t t_send, uint64_t t_root, uint64_t t_recv) {
  const auto s = SampleOf(t_send, t_root, t_recv);
  if (!s) return;
  ++burst_samples_;
  if (!burst_best_ || s->rtt_ns < burst_best_->rtt_ns) burst_best_ = s;
}

void ClockEstimator::FinishBurst() {
  if (burst_best_) estimate_ = burst_best_;
  burst_best_.reset();
  burst_samples_ = 0;
}

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace gpuwatch::collector
