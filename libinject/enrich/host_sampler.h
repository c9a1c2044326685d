// Where the job's CUDA-calling threads are (issue 16): a thread of its own (never the job's)
// reads each such thread's Python stack (record/python_stack.h, without the GIL, every read
// fault-safe) GPUWATCH_SAMPLE_HZ times a second. The collector joins the samples with the
// GPU's idle gaps (collector/analyze/host_frames.h): what the host was doing while the GPU
// waited for it.
//
// Bounded: samples wait for the sender in a buffer of kMaxBuffered (more are counted as
// dropped); the sampler skips a tick whenever its own CPU time is past half of the overhead
// budget's share of the wall time (plus kAllowanceNs), and its CPU time counts in the
// budget's spending (enrich/cupti_budget.h).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "record/python_stack.h"
#include "record/ring.h"

namespace gpuwatch::inject {

class HostSampler {
 public:
  static constexpr size_t kMaxBuffered = 16384;
  static constexpr uint64_t kAllowanceNs = 5'000'000;  // a short run is sampled whole
  static constexpr int kFramesPerSample = 16;

  struct Sample {
    uint64_t t_ns;      // CLOCK_MONOTONIC
    uint32_t tid;
    uint32_t stack_id;  // record/python_stacks.h id; 0: no Python frame
    bool in_cuda;       // inside a hooked call that can block (EnterCall)
  };
  struct Totals {
    double hz = 0;
    uint64_t samples = 0, cpu_ns = 0, dropped = 0;
  };

  // Starts the thread (signals blocked, its own calls unrecorded) at `hz`, its CPU time kept
  // within `max_cpu_share` of the wall time. False: not started (hz <= 0, no readable
  // Python, or no thread).
  bool Start(double hz, double max_cpu_share);
  // One pass: a sample of every ring's thread that is alive and has a Python thread state.
  // The thread's body; tests call it with their own rings.
  void SampleOnce(std::span<Ring* const> rings, uint64_t now_ns);
  // Sender thread: the samples taken since the last call, oldest first (`out` is reused).
  void Drain(std::vector<Sample>& out);
  Totals totals() const;

 private:
  void Run();
  static void* Main(void* self);

  double hz_ = 0, max_cpu_share_ = 0;
  mutable std::mutex mu_;  // buffer_ and the counts: the sampler and the sender
  std::vector<Sample> buffer_;
  uint64_t samples_ = 0, dropped_ = 0;
  std::atomic<uint64_t> cpu_ns_{0};
  std::vector<Ring*> rings_;  // the sampler's own copy of the ring list
  PyCodeCache cache_;         // the sampler's thread only
};

// The process's sampler (started by the sender when GPUWATCH_SAMPLE_HZ > 0).
HostSampler& Sampler();

}  // namespace gpuwatch::inject
