// memory: the device memory a rank holds, from its allocation and free calls (cudaMalloc,
// cudaMallocAsync, cudaMallocManaged; cudaFree, cudaFreeAsync). The live set is kept here
// (address -> bytes), bounded: beyond kMaxLive live allocations, new ones still count in
// the reserved total but their frees cannot be matched (counted as `untracked`). PyTorch's
// caching allocator reserves through these calls, so this is its reserved memory, not the
// tensors' allocated bytes.
#pragma once
#include <array>
#include <cstdint>
#include <unordered_map>

#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

// Reserved bytes over time, for the report: the highest reserved level in each window.
// Windows start 10 ms wide and double when the run outgrows kMaxWindows (as BusySeries).
struct DigestAccess;  // analyze/rank_digest.cpp: carries the state upstream

class PeakSeries {
 public:
  static constexpr uint64_t kFirstWindowNs = 10'000'000;
  static constexpr size_t kMaxWindows = 256;
  void Add(uint64_t t_ns, uint64_t level);
  bool empty() const { return !started_; }
  uint64_t origin_ns() const { return origin_; }
  uint64_t window_ns() const { return width_; }
  size_t size() const { return started_ ? static_cast<size_t>((last_ - origin_) / width_) + 1 : 0; }
  // Highest level in window i; a window without a call keeps the level before it.
  uint64_t Peak(size_t i) const { return peak_[i]; }

 private:
  friend struct DigestAccess;
  void Coarsen();
  std::array<uint64_t, kMaxWindows> peak_{};
  uint64_t origin_ = 0, last_ = 0, width_ = kFirstWindowNs, level_ = 0;
  bool started_ = false;
};

struct MemoryFigures {
  uint64_t allocations = 0, frees = 0;
  uint64_t allocated_bytes = 0;      // summed over every allocation
  uint64_t reserved_bytes = 0;       // held at the end (or now)
  uint64_t peak_bytes = 0;           // the most held at once
  uint64_t peak_t_ns = 0;
  uint64_t untracked = 0;            // frees of addresses not in the live set
  uint64_t total_bytes = 0;          // the device's memory: cudaMemGetInfo, else the device's properties
  uint64_t min_free_bytes = 0;       // the least cudaMemGetInfo said free (0: never asked)
  uint64_t mem_get_info_calls = 0;
  PeakSeries series;

  bool known() const { return allocations > 0 || mem_get_info_calls > 0; }
  // Memory the rank left unused at its peak (0 when the total is unknown).
  uint64_t headroom_bytes() const { return total_bytes > peak_bytes ? total_bytes - peak_bytes : 0; }
  double peak_share() const { return total_bytes ? static_cast<double>(peak_bytes) / total_bytes : 0.0; }
};

class MemoryCounter final : public EventSink {
 public:
  static constexpr size_t kMaxLive = 1 << 18;

  void OnHostCall(const HostCall& c) override;
  // The figures, with the device total from the environment when the application never
  // asked cudaMemGetInfo.
  MemoryFigures Result(const EnvFacts& env) const;
  uint64_t reserved_bytes() const { return f_.reserved_bytes; }  // held now

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  MemoryFigures f_;
  std::unordered_map<uint64_t, uint64_t> live_;  // address -> bytes
};

}  // namespace gpuwatch::collector
