// collective_sizes: collectives (not send/recv) split at the size below which a call is
// latency-bound (kSmallCollectiveBytes, thresholds.h), for the small_collectives finding:
// how many small calls, their bytes (S) and GPU time, the shortest call (the latency a call
// pays whatever its size) and the bus bandwidth the large calls reached.
#pragma once
#include <cstdint>

#include "interpret/event_sink.h"

namespace gpuwatch::collector {

struct CollectiveSizeFigures {
  uint64_t threshold_bytes = 0;  // kSmallCollectiveBytes
  uint64_t small_calls = 0, small_bytes = 0;      // every small call; S
  uint64_t small_timed = 0, small_timed_bytes = 0, small_ns = 0;  // those with GPU time
  uint64_t large_calls = 0, large_timed = 0, large_ns = 0;  // every large call; those with GPU time, their time
  double large_bus_bytes = 0;    // S x bus factor of the timed large calls
  uint64_t min_call_ns = 0;      // the shortest timed collective (0: none)

  double large_busbw_gbps() const { return large_ns ? large_bus_bytes / static_cast<double>(large_ns) : 0; }
  // GPU time the small calls would save as fewer calls of threshold size: each call past
  // the ones needed costs at least the latency (the shortest call measured).
  uint64_t ExcessLatencyNs() const;
  void Merge(const CollectiveSizeFigures& o);
};

class CollectiveSizeCounter final : public EventSink {
 public:
  CollectiveSizeCounter();
  void OnHostCall(const HostCall& c) override;
  const CollectiveSizeFigures& figures() const { return f_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  CollectiveSizeFigures f_;
};

}  // namespace gpuwatch::collector
