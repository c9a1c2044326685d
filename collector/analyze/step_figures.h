// Per-step figures (the steps the interpret stage found): each NVTX step's device time,
// idle time by kind, communication not hidden, and host time blocked in syncs that were
// followed by more work in the step (a stall, not the step's trailing sync). Device
// figures are charged to the step whose [start, next start) holds them; the first
// kMaxSteps steps keep a record, later ones only count (interpret/step_finder.h).
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "analyze/collectives.h"
#include "analyze/device_slice.h"
#include "analyze/step_pace.h"
#include "interpret/event_sink.h"

namespace gpuwatch::collector {

struct StepRec {
  uint64_t start = 0, end = 0;  // host CLOCK_MONOTONIC
  uint64_t done = 0;            // its range closed and its device work ended (step_pace.h); 0: not known
  uint64_t sync_mid = 0;        // host blocked in syncs followed by more work in the step
  uint64_t sync_mid_count = 0;
  uint64_t graph_launches = 0;  // hooked graph launch calls made inside [start, end] (not captured)
  bool covered = true;  // CUPTI recorded the whole step: its device figures are whole
  DeviceSlice dev;
  // Collectives called in [start, next start) (a sampled timeline's typical step,
  // analyze/sampled_estimate.h). Not known for a step found again after a reset, whose calls
  // went to the steps before it.
  CallsTime colls;
  bool coll_known = true;
};

struct StepFigures {
  std::deque<StepRec> steps;      // the first kMaxSteps NVTX steps, in time order
  // The latest time charged to a kept step (the last step holds device time after its
  // end until the next step starts): with the first step's start, the span the per-step
  // figures cover.
  uint64_t charged_until = 0;
  // Syncs followed by more work in their step, over the run, by SyncKind.
  std::array<uint64_t, kSyncKinds> sync_mid_ns{}, sync_mid_count{};
  // Every step's time as the job paced it, and the host's and device's periods (step_pace.h).
  PaceStats pace;
  uint64_t SyncMidNs() const;
  uint64_t SyncMidCount() const;
};

class StepCharger final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  void OnStep(const StepMark& m) override;
  void OnStepsReset() override;
  void OnDeviceWork(const DeviceWork& w) override;
  void OnBusy(const BusySpan& b) override;
  void OnIdle(const IdleGap& g) override;
  // The figures so far, each kept step's `done` and the pace filled in.
  StepFigures figures() const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  DeviceSlice* At(uint64_t t);
  template <typename Add>
  void Split(uint64_t a, uint64_t b, Add add);

  StepFigures f_;
  StepPace pace_;
  uint64_t seen_ = 0;           // steps since the last reset, kept or not
  size_t cursor_ = 0;           // steps before it end before the device stream
  uint64_t stop_ = UINT64_MAX;  // no more steps are kept: device time after this is no step's
  // Syncs since the last work (a sync at a step's end waits for that step's mark), and the
  // latest syncs that work followed, by end (bounded). A step takes the ones that ended in
  // it and that work followed before its end, whenever its mark comes: an inferred step is
  // known only once its pattern is, often after later steps' calls.
  struct Sync {
    uint64_t end_ns, ns;
    int kind;
    uint64_t work_ns;  // when work followed; UINT64_MAX while pending
  };
  std::vector<Sync> pending_;
  std::deque<Sync> mids_;
  std::deque<uint64_t> graph_launches_;  // times of the latest graph launches, in order (bounded)
  // Collectives not yet given to a step (their calls come before the step's mark), and the
  // latest time given or dropped: a step starting before it lost its calls.
  struct Coll {
    uint64_t t_ns, gpu_ns;
    bool timed;
  };
  void TakeCollectives(const StepMark& m);
  std::deque<Coll> colls_;
  uint64_t colls_taken_until_ = 0;
};

}  // namespace gpuwatch::collector
