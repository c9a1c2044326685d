// Collectives held back until their GPU time is known, then released as wire events with it:
// CUPTI's NCCL kernels launched during the host call when CUPTI runs, else the CUDA event
// pair recorded around the enqueue (around the whole group for ncclGroupStart/End).
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <unordered_map>
#include <vector>

#include "enrich/comm_kernel_times.h"
#include "record/collective_timer.h"
#include "record/stamp_clock.h"
#include "transport/encode.h"

namespace gpuwatch::inject {

class HeldCollectives {
 public:
  HeldCollectives(const TimeBase& time, CollectiveTimes& pairs) : time_(time), pairs_(pairs) {}

  // A collective timed by event pair `slot` (or by CUPTI's kernels alone: a slot
  // CollectiveTimer::IsCuptiTimed). One outside a group closes the slot; a group's
  // operations share one, closed by CloseGroup.
  void Hold(const HostEvent& e, uint32_t slot, bool in_group);
  // ncclGroupEnd of the group timed by `slot`, whose host call ended at `end_ns`.
  void CloseGroup(uint32_t slot, uint64_t end_ns);

  // Hands every collective whose GPU time is now known to `emit` (gpu_ns set, or FLAG_NO_GPU_TIME).
  // When CUPTI is `cupti_live`, waits up to a second for its kernels after the events
  // completed. `final`: everything goes, timed or not.
  void Release(bool final, bool cupti_live, const CommKernelTimes& kernels,
               const std::function<void(const HostEvent&)>& emit);

  // The earliest start of a held collective; UINT64_MAX when none.
  uint64_t EarliestStartNs() const;
  bool empty() const { return open_.empty() && timed_.empty(); }

 private:
  struct Held {
    std::vector<HostEvent> events;
    bool closed = false;
    uint64_t host_end_ns = 0;     // end of the last host call of the collective (or group)
    uint64_t events_done_ns = 0;  // when its event pair was first seen complete
    uint64_t event_gpu_ns = 0;    // UINT64_MAX: the pair gave no time
  };
  void PollPairs(bool final);

  const TimeBase& time_;
  CollectiveTimes& pairs_;
  std::unordered_map<uint32_t, Held> open_;  // by event slot: the pair is not done yet
  std::list<Held> timed_;                     // the pair is done: waiting for CUPTI's view
};

}  // namespace gpuwatch::inject
