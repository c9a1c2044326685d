// Polling loops: a thread that calls cudaStreamQuery/cudaEventQuery until the GPU is done
// waits on the GPU as a cudaStreamSynchronize would, a few microseconds at a time. Per
// thread, queries on the same stream (events: on the same call) that answered "not ready"
// and follow each other within kPollGapNs, closed by the query that answered "ready", are
// one wait: that closing query is stretched back to the loop's first query and becomes a
// blocking call (sync kind kSyncPoll), so every analysis counts the spin as sync time and
// the idle classification sees the host blocked. The queries inside stay plain calls.
#pragma once
#include <cstdint>
#include <unordered_map>

#include "interpret/events.h"

namespace gpuwatch::collector {

class PollFolder {
 public:
  // `c` as interpreted from the wire (one thread's calls arrive in order); rewrites the
  // query that closes a loop that spun.
  void Fold(HostCall& c);

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Loop {
    uint64_t start = 0, last_end = 0, stream = 0;
    wire::Api api = wire::API_UNSPECIFIED;
    bool open = false;
  };
  static constexpr size_t kMaxThreads = 4096;  // threads followed (bounded memory)
  std::unordered_map<uint32_t, Loop> loops_;
};

}  // namespace gpuwatch::collector
