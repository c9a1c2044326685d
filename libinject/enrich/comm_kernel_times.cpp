// Launch calls and NCCL kernels joined by correlation id, in a bounded window.
#include "enrich/comm_kernel_times.h"

namespace gpuwatch::inject {
namespace {
// Records older than this behind the newest are forgotten: a collective is finished long
// before (its events completed), and memory stays bounded.
constexpr uint64_t kWindowNs = 3'000'000'000ull;
constexpr size_t kMaxEntries = 1 << 18;
}  // namespace

void CommKernelTimes::Observe(const ActivityRecord& a) {
  if (a.kind == kActApi) {
    api_start_.emplace(a.start_ns, a.correlation_id);
    if (a.start_ns > newest_ns_) newest_ns_ = a.start_ns;
  } else if (a.kind == kActKernel && a.comm_kernel) {
    comm_kernel_[a.correlation_id] += a.end_ns - a.start_ns;
  } else {
    return;
  }
  Prune();
}

void CommKernelTimes::Prune() {
  while (!api_start_.empty() &&
         (api_start_.size() > kMaxEntries || api_start_.begin()->first + kWindowNs < newest_ns_)) {
    comm_kernel_.erase(api_start_.begin()->second);
    api_start_.erase(api_start_.begin());
  }
  if (comm_kernel_.size() > kMaxEntries) comm_kernel_.clear();  // pathological: fall back to events
}

bool CommKernelTimes::Lookup(uint64_t t0, uint64_t t1, uint64_t* gpu_ns) const {
  uint64_t sum = 0;
  bool found = false;
  for (auto it = api_start_.lower_bound(t0); it != api_start_.end() && it->first <= t1; ++it) {
    if (auto k = comm_kernel_.find(it->second); k != comm_kernel_.end()) {
      sum += k->second;
      found = true;
    }
  }
  if (found) *gpu_ns = sum;
  return found;
}

}  // namespace gpuwatch::inject
