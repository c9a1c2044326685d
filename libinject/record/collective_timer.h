// GPU-side duration of collectives from a pool of CUDA event pairs recorded on the
// caller's stream around the enqueue. The caller never waits: the sender thread polls
// the events with cudaEventQuery and releases the pair when both have completed.
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

namespace gpuwatch::inject {

class CollectiveTimer {
 public:
  static constexpr uint32_t kSlots = 512;

  // Hot path. Records the start event; returns slot + 1, or 0 when no timing is possible
  // (pool exhausted, stream being captured into a graph, CUDA error). `why` tells which.
  enum class NoTime { kNone, kPoolEmpty, kCapturing, kCudaError };
  uint32_t Begin(cudaStream_t stream, NoTime* why);
  void End(uint32_t slot, cudaStream_t stream);

  // Sender thread.
  enum class Poll { kPending, kDone, kFailed };
  Poll Query(uint32_t slot, uint64_t* gpu_ns);
  void Release(uint32_t slot);

 private:
  bool EnsureEvents();
  cudaEvent_t start_[kSlots] = {};
  cudaEvent_t end_[kSlots] = {};
  std::atomic<uint8_t> busy_[kSlots] = {};
  std::atomic<uint32_t> next_{0};
  std::atomic<int> events_state_{0};  // 0 not created, 1 created, 2 failed
};

CollectiveTimer& Timer();

}  // namespace gpuwatch::inject
