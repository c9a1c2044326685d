// Estimating (root clock - local clock) from probes, as NTP does for one server: a probe
// sent at local t_send is answered with the root's t_root and read back at local t_recv.
// If the two legs took equally long, the root read it at local (t_send + t_recv) / 2, so
// offset = t_root - (t_send + t_recv) / 2, wrong by at most rtt / 2 whatever the legs
// took. Of a burst of probes the one with the smallest round trip is kept: it waited least
// in queues, so its two legs are the most alike and its bound the tightest.
#pragma once
#include <cstdint>
#include <optional>

namespace gpuwatch::collector {

struct ClockSample {
  int64_t offset_ns = 0;  // root - local
  uint64_t rtt_ns = 0;    // round trip; the offset is within rtt/2 of the truth
};

// nullopt when t_recv < t_send (not a round trip).
std::optional<ClockSample> SampleOf(uint64_t t_send, uint64_t t_root, uint64_t t_recv);

// Bursts of probes; the estimate is the best sample of the latest completed burst, so a
// long-lived collector follows drift instead of keeping one old sample forever.
class ClockEstimator {
 public:
  // One answered probe of the current burst (ignored if not a round trip).
  void Add(uint64_t t_send, uint64_t t_root, uint64_t t_recv);
  // The burst is over: its best sample becomes the estimate (if it had any).
  void FinishBurst();
  std::optional<ClockSample> estimate() const { return estimate_; }
  int burst_samples() const { return burst_samples_; }

 private:
  std::optional<ClockSample> estimate_;
  std::optional<ClockSample> burst_best_;
  int burst_samples_ = 0;
};

// CLOCK_MONOTONIC in ns: the clock every rank time is on.
uint64_t MonotonicNs();

}  // namespace gpuwatch::collector
