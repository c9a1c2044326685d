// Which host addresses are pinned (page-locked) memory, so each copy is classified pinned
// or pageable without a CUDA call. Filled by the cudaMallocHost / cudaHostAlloc /
// cudaHostRegister hooks, emptied by their frees.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace gpuwatch::inject {

// Readers (every copy) are lock-free: a seqlock over a sorted fixed-size array. Writers
// (rare) serialise on a mutex. Past kMaxRanges the map stops growing and counts overflow:
// unknown addresses are then reported as pageable, and the summary says so via the count.
class PinnedRanges {
 public:
  static constexpr size_t kMaxRanges = 4096;

  void Add(const void* base, size_t bytes);
  void Remove(const void* base);
  bool Contains(const void* p) const;
  uint64_t overflow() const { return overflow_.load(std::memory_order_relaxed); }

 private:
  struct Range {
    std::atomic<uintptr_t> begin{0};
    std::atomic<uintptr_t> end{0};
  };
  Range ranges_[kMaxRanges];
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> seq_{0};  // odd while a writer is mid-update
  std::atomic<uint64_t> overflow_{0};
  std::mutex mu_;
};

PinnedRanges& Pinned();

}  // namespace gpuwatch::inject
