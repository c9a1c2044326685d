// See memory.h.
#include "analyze/memory.h"

#include <algorithm>

namespace gpuwatch::collector {

void PeakSeries::Add(uint64_t t_ns, uint64_t level) {
  if (!started_) {
    started_ = true;
    origin_ = last_ = t_ns;
  }
  t_ns = std::max(t_ns, last_);  // calls arrive in order; a late one counts where we are
  while (t_ns - origin_ >= width_ * kMaxWindows) Coarsen();
  // Windows between the last call and this one held the level the last call left.
  for (size_t w = (last_ - origin_) / width_ + 1; w <= (t_ns - origin_) / width_; ++w) peak_[w] = level_;
  const size_t w = (t_ns - origin_) / width_;
  peak_[w] = std::max(peak_[w], level);
  level_ = level;
  last_ = t_ns;
}

void PeakSeries::Coarsen() {
  for (size_t i = 0; i < kMaxWindows / 2; ++i) peak_[i] = std::max(peak_[2 * i], peak_[2 * i + 1]);
  std::fill(peak_.begin() + kMaxWindows / 2, peak_.end(), 0);
  width_ *= 2;
}

void MemoryCounter::OnHostCall(const HostCall& c) {
  if (c.api == wire::CUDA_MEM_GET_INFO) {
    f_.mem_get_info_calls++;
    f_.total_bytes = std::max(f_.total_bytes, c.total_bytes);
    f_.min_free_bytes = f_.mem_get_info_calls == 1 ? c.bytes : std::min(f_.min_free_bytes, c.bytes);
    return;
  }
  if (AllocatesMemory(c.api)) {
    f_.allocations++;
    f_.allocated_bytes += c.bytes;
    f_.reserved_bytes += c.bytes;
    if (live_.size() < kMaxLive) live_[c.address] = c.bytes;
  } else if (FreesMemory(c.api)) {
    auto it = live_.find(c.address);
    if (it == live_.end()) {
      f_.untracked++;
      return;
    }
    f_.frees++;
    f_.reserved_bytes -= std::min(f_.reserved_bytes, it->second);
    live_.erase(it);
  } else {
    return;
  }
  if (f_.reserved_bytes > f_.peak_bytes) {
    f_.peak_bytes = f_.reserved_bytes;
    f_.peak_t_ns = c.end_ns();
  }
  f_.series.Add(c.end_ns(), f_.reserved_bytes);
}

MemoryFigures MemoryCounter::Result(const EnvFacts& env) const {
  MemoryFigures f = f_;
  if (f.total_bytes == 0) f.total_bytes = env.device_memory_bytes;
  return f;
}

}  // namespace gpuwatch::collector
