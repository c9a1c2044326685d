// GPU-side duration of collectives from a pool of CUDA event pairs recorded on the
// caller's stream around the enqueue. The caller never waits: the sender thread polls
// the events with cudaEventQuery and releases the pair when both have completed.
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

namespace gpuwatch::inject {

// The sender thread's half: whether a slot's pair has completed, and its GPU time (the
// assembler reads it through this; tests give their own).
class CollectiveTimes {
 public:
  enum class Poll { kPending, kDone, kFailed };
  virtual Poll Query(uint32_t slot, uint64_t* gpu_ns) = 0;
  // The slot goes back to the pool.
  virtual void Release(uint32_t slot) = 0;

 protected:
  ~CollectiveTimes() = default;
};

class CollectiveTimer final : public CollectiveTimes {
 public:
  static constexpr uint32_t kSlots = 512;  // Record::event_slot holds 1 + a slot index

  // Hot path. Records the start event; returns slot + 1, or 0 when no timing is possible
  // (pool exhausted, stream being captured into a graph, CUDA error). `why` tells which.
  enum class NoTime { kNone, kPoolEmpty, kCapturing, kCudaError };
  uint32_t Begin(cudaStream_t stream, NoTime* why);
  void End(uint32_t slot, cudaStream_t stream);

  Poll Query(uint32_t slot, uint64_t* gpu_ns) override;
  void Release(uint32_t slot) override;

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
