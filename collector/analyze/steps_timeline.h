// The device timeline as the diagnosis needs it (issue 6): like analyze/gpu_timeline.h a
// streaming sweep over a rank's CUPTI records in start order (same reorder window), but
// every figure is also charged to the training step it falls in, and idle gaps are split
// by what the GPU waited for:
//   host    the call that launched the work ending the gap started after the gap began,
//           and the gap is long (>= kLaunchGapNs): host work such as data loading;
//   launch  the GPU went idle before that call had returned, gap short: launch overhead;
//   sync    the host was blocked in a sync call for more than half the gap;
//   other   the rest (dependencies, stream waits, unknown launches).
// Communication that compute does not hide = busy(all work) - busy(all but NCCL kernels).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuwatch.pb.h"

namespace gpuwatch::collector::diag {

class InputIo;

enum Idle { kIdleHost = 0, kIdleLaunch = 1, kIdleSync = 2, kIdleOther = 3, kIdleKinds = 4 };

// Device figures of one step (or of the whole run). ns.
struct DeviceSlice {
  uint64_t busy = 0, noncomm_busy = 0;   // unions
  uint64_t compute = 0, comm = 0, copy = 0;  // sums of durations
  uint64_t idle[kIdleKinds] = {};
  uint64_t IdleTotal() const { return idle[0] + idle[1] + idle[2] + idle[3]; }
  uint64_t ExposedComm() const { return busy > noncomm_busy ? busy - noncomm_busy : 0; }
  void Add(const DeviceSlice& o);
};

struct StepRec {
  uint64_t start = 0, end = 0;  // host CLOCK_MONOTONIC
  uint64_t sync_mid = 0;        // host blocked in syncs followed by more work in the step
  uint64_t sync_mid_count = 0;
  DeviceSlice dev;
};

class StepTimeline {
 public:
  // Steps are owned by the caller (sorted by start, appended as they close); device
  // figures are charged to the step whose [start, next start) holds them.
  explicit StepTimeline(std::deque<StepRec>* steps) : steps_(steps) {}

  void OnBatch(const wire::Batch& batch);
  void Flush();
  // A copy charges its own copy of the steps.
  void Rebind(std::deque<StepRec>* steps) { steps_ = steps; }
  // The steps were replaced (another range turned out to be the step): start over.
  void ResetCursor() {
    cursor_ = 0;
    stop_ = UINT64_MAX;
  }
  // No more steps are kept (kMaxSteps): device time after `end_ns` is charged to none.
  void StopAt(uint64_t end_ns) { stop_ = end_ns; }
  // Receives every host-wait gap, in time order, and how far the sweep has settled.
  void SetGapSink(InputIo* sink) { gap_sink_ = sink; }
  const DeviceSlice& total() const { return total_; }
  uint64_t first_ns() const { return first_; }
  uint64_t last_ns() const { return last_; }
  uint64_t kernels() const { return kernels_; }
  uint64_t kernels_with_api() const { return with_api_; }
  uint64_t kernels_short() const { return short_; }
  uint64_t work() const { return work_; }

 private:
  struct Work {
    uint64_t start, end;
    uint32_t corr;
    uint8_t kind;
    bool comm;
    bool operator>(const Work& o) const {
      return start != o.start ? start > o.start : end > o.end;
    }
  };
  struct Span {
    uint64_t start, end;
  };
  struct Open {
    bool on = false;
    uint64_t start = 0, end = 0;
  };

  void Advance();
  void Release(const Work& w);
  void Gap(uint64_t a, const Work& next);
  uint64_t BlockedNs(uint64_t a, uint64_t b);
  DeviceSlice* At(uint64_t t);
  template <typename Add>
  void Split(uint64_t a, uint64_t b, Add add);
  void Charge(uint64_t a, uint64_t b, uint64_t DeviceSlice::*field);
  void ChargeIdle(uint64_t a, uint64_t b, int kind);

  std::deque<StepRec>* steps_;
  InputIo* gap_sink_ = nullptr;
  size_t cursor_ = 0;  // steps before it end before the sweep
  uint64_t stop_ = UINT64_MAX;  // the last kept step ends here (StopAt)
  DeviceSlice total_;
  std::priority_queue<Work, std::vector<Work>, std::greater<Work>> pending_;
  uint64_t newest_ = 0, swept_ = 0, first_ = UINT64_MAX, last_ = 0;
  Open all_, noncomm_;
  std::unordered_map<uint32_t, Span> apis_;
  std::deque<std::pair<uint32_t, uint64_t>> api_fifo_;
  std::multimap<uint64_t, uint64_t> syncs_;
  int source_ = wire::GPU_SOURCE_UNSPECIFIED;  // the batches' gpu_source
  std::unordered_map<uint32_t, bool> comm_names_;  // name id -> is NCCL (bounded by the library's ids)
  uint64_t kernels_ = 0, with_api_ = 0, short_ = 0, work_ = 0;
};

}  // namespace gpuwatch::collector::diag
