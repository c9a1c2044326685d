// How long a step takes the job: its pace, not the length of its host range. A loop that
// enqueues each step without waiting for it (no per-step sync, as many loops do between
// logging steps) closes its NVTX range long before the GPU has run the step, so the range
// says how fast the host enqueues, not how fast the job trains.
//
// A step is done when its host range has closed and the device work it launched has ended
// (device work belongs to the step whose [start, next start) holds the start of the call
// that launched it: a graph launch's for the work it runs). A step's time runs from the
// previous step's done to its own (the first one's from its start), so the steps' times add
// up to their span, and in a steady state a step's time is the larger of the host's period
// (start to start) and the device's (the end of one step's work to the end of the next's).
// Steps whose device work CUPTI did not record (outside the overhead budget's windows) are
// done when their range closes.
//
// Memory is bounded: the latest kOpenSteps steps stay open for device work that arrives
// late (the device stream trails the host stream), work launched after the newest step's
// start waits (at most kMaxAhead) until the next step's start says whose it is, and every
// closed step goes into three histograms.
#pragma once
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "interpret/events.h"
#include "interpret/step_stats.h"

namespace gpuwatch::collector {

struct PaceStats {
  StepStats step;           // each step's time (done to done), every step
  StepStats host_period;    // start of one step to the start of the next
  StepStats device_period;  // end of one step's device work to the end of the next's (both recorded)
};

class StepPace {
 public:
  void OnStep(const StepMark& m);  // in order
  // Device work launched at `launch_ns` (the launching call's start) ended at `end_ns`.
  void OnDeviceWork(uint64_t launch_ns, uint64_t end_ns);
  void Reset() { *this = StepPace{}; }
  // Every step so far, the open ones as they are now (the device work still to come is not
  // theirs); `done` gets the done time of each of the first kMaxSteps steps, in order.
  PaceStats Finish(std::vector<uint64_t>& done) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  static constexpr size_t kOpenSteps = 64;
  static constexpr size_t kMaxAhead = 4096;
  struct Open {
    uint64_t start, end, dev_end;
    bool covered;
  };
  void Close(const Open& s);

  std::deque<Open> open_;                            // in start order
  std::deque<std::pair<uint64_t, uint64_t>> ahead_;  // (launch, end) at or after open_.back().start
  PaceStats closed_;
  std::vector<uint64_t> done_;  // of the first kMaxSteps steps closed
  bool any_closed_ = false;
  uint64_t prev_start_ = 0, prev_done_ = 0, prev_dev_end_ = 0;
};

}  // namespace gpuwatch::collector
