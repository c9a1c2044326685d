// GPU time of collectives from CUPTI, when CUPTI runs: the NCCL kernels launched inside the
// collective's host call. Preferred to the event pair (record/collective_timer.h), which also
// counts the GPU's idle time while NCCL prepared the launch (microseconds: small collectives).
#pragma once
#include <cstdint>
#include <map>
#include <unordered_map>

#include "enrich/cupti_reader.h"

namespace gpuwatch::inject {

class CommKernelTimes {
 public:
  // Sender thread: every activity record parsed.
  void Observe(const ActivityRecord& a);
  // Device time of the communication kernels whose launch call started in [t0, t1].
  // False when none is known (yet).
  bool Lookup(uint64_t t0, uint64_t t1, uint64_t* gpu_ns) const;

 private:
  void Prune();
  std::multimap<uint64_t, uint32_t> api_start_;         // launch call start -> correlation id
  std::unordered_map<uint32_t, uint64_t> comm_kernel_;  // correlation id -> device ns
  uint64_t newest_ns_ = 0;
};

}  // namespace gpuwatch::inject
