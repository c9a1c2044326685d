// GPU-side duration of collectives from a pool of CUDA event pairs recorded on the
// caller's stream around the enqueue. The caller never waits: the sender thread polls
// the events with cudaEventQuery and releases the pair when both have completed.
// A third event, the return mark, is recorded on gpuwatch's own idle stream when the call
// returns: it reads the GPU's clock at that moment. Where the caller's stream was idle, the
// start event fires as it is recorded, before NCCL has prepared and launched its kernel (an
// ncclAllReduce call took 4.5-11.8 us on the H200); the kernel cannot start before NCCL's
// launch, just before the call returns, so the collective's time is the shorter of
// start-to-end and return-to-end.
// While CUPTI records (the overhead budget's windows), its NCCL kernel records time the
// collective and no pair is recorded: the hook then costs what any hook does.
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

  // CUPTI's kernel records time collectives now (the sender sets it around each window).
  void SetCuptiTimes(bool on) { cupti_times_.store(on, std::memory_order_release); }
  bool CuptiTimes() const { return cupti_times_.load(std::memory_order_relaxed); }
  // Hot path, instead of Begin while CuptiTimes(): a slot with no pair behind it, which
  // holds the collective (and its group) until CUPTI's kernels are known.
  uint32_t BeginCuptiTimed() { return kCuptiTimed | (cupti_next_.fetch_add(1, std::memory_order_relaxed) & (kCuptiTimed - 1)); }
  static bool IsCuptiTimed(uint32_t slot) { return (slot & kCuptiTimed) != 0; }
  static constexpr uint32_t kCuptiTimed = 0x8000'0000u;

  Poll Query(uint32_t slot, uint64_t* gpu_ns) override;
  void Release(uint32_t slot) override;

 private:
  bool EnsureEvents();
  cudaEvent_t start_[kSlots] = {};
  cudaEvent_t end_[kSlots] = {};
  cudaEvent_t returned_[kSlots] = {};
  std::atomic<bool> marked_[kSlots] = {};  // returned_ was recorded for the slot's call
  cudaStream_t marks_ = nullptr;           // nothing but return marks: always idle
  std::atomic<uint8_t> busy_[kSlots] = {};
  std::atomic<uint32_t> next_{0};
  std::atomic<int> events_state_{0};  // 0 not created, 1 created, 2 failed
  std::atomic<bool> cupti_times_{false};
  std::atomic<uint32_t> cupti_next_{0};
};

CollectiveTimer& Timer();

}  // namespace gpuwatch::inject
