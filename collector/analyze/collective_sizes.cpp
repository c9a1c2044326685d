// See collective_sizes.h.
#include "analyze/collective_sizes.h"

#include <algorithm>

#include "common/bus_factor.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

uint64_t CollectiveSizeFigures::ExcessLatencyNs() const {
  if (!small_timed || !threshold_bytes) return 0;
  const uint64_t needed = (small_timed_bytes + threshold_bytes - 1) / threshold_bytes;
  if (small_timed <= needed) return 0;
  return std::min(small_ns, (small_timed - needed) * min_call_ns);
}

void CollectiveSizeFigures::Merge(const CollectiveSizeFigures& o) {
  threshold_bytes = std::max(threshold_bytes, o.threshold_bytes);
  small_calls += o.small_calls;
  small_bytes += o.small_bytes;
  small_timed += o.small_timed;
  small_timed_bytes += o.small_timed_bytes;
  small_ns += o.small_ns;
  large_calls += o.large_calls;
  large_timed += o.large_timed;
  large_ns += o.large_ns;
  large_bus_bytes += o.large_bus_bytes;
  if (o.min_call_ns && (!min_call_ns || o.min_call_ns < min_call_ns)) min_call_ns = o.min_call_ns;
}

CollectiveSizeCounter::CollectiveSizeCounter() { f_.threshold_bytes = kSmallCollectiveBytes; }

void CollectiveSizeCounter::OnHostCall(const HostCall& c) {
  // Send/recv move a pipeline's activations: their size is the model's, not a bucket's.
  if (!IsCollective(c.api) || c.api == wire::NCCL_SEND || c.api == wire::NCCL_RECV || c.captured) return;
  const bool timed = c.timed && c.gpu_ns > 0;
  if (timed && (!f_.min_call_ns || c.gpu_ns < f_.min_call_ns)) f_.min_call_ns = c.gpu_ns;
  if (c.coll_bytes >= f_.threshold_bytes) {
    ++f_.large_calls;
    if (timed) {
      ++f_.large_timed;
      f_.large_ns += c.gpu_ns;
      f_.large_bus_bytes += static_cast<double>(c.coll_bytes) * BusFactor(c.api, c.comm_nranks);
    }
    return;
  }
  ++f_.small_calls;
  f_.small_bytes += c.coll_bytes;
  if (timed) {
    ++f_.small_timed;
    f_.small_timed_bytes += c.coll_bytes;
    f_.small_ns += c.gpu_ns;
  }
}

}  // namespace gpuwatch::collector
