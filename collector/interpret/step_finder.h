// Finds a rank's training steps once. From NVTX ranges: the outermost range whose name is
// a step name (GPUWATCH_STEP_RANGE, else thresholds.h's defaults or any name containing
// "step"); each closes a step, emitted as it closes. Without them (a PyTorch loop as
// written: no code change), from the repeating pattern of collectives, else of host syncs,
// else of launches (step_pattern.h): emitted too, from when the pattern is found a few steps
// in, so inferred steps get per-step figures like NVTX ones. A pattern of a kind ranked
// higher found later replaces the steps emitted so far (OnStepsReset).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuwatch.pb.h"
#include "interpret/coverage.h"
#include "interpret/event_sink.h"
#include "interpret/step_pattern.h"
#include "interpret/step_stats.h"

namespace gpuwatch::collector {

// A rank's steps as found.
struct StepsFound {
  std::string source = "none";  // "nvtx:<name>", "inferred:collectives", "inferred:syncs", "none"
  uint64_t total = 0;           // every step of the run
  StepStats stats;              // every step's duration
  bool nvtx = false;            // steps come from NVTX ranges (known as they close)
  std::vector<StepMark> inferred;  // inferred steps: the first kMaxSteps (NVTX: empty)
};

class StepFinder {
 public:
  void OnHello(const wire::Hello& h) { step_range_ = h.step_range(); }
  // Names of the batch that could be step names.
  void NoteNames(const wire::Batch& b);
  // A released host call; steps go to `out` as they close. Device work that starts before
  // `device_swept` was released already: a step starting earlier has lost some of it.
  void OnHostCall(const HostCall& c, const Coverage& coverage, uint64_t device_swept, EventSink& out);
  // The run ended: the last inferred step, whole but closed by no boundary, goes out.
  void Flush(const Coverage& coverage, uint64_t device_swept, EventSink& out);
  // End of the last NVTX step (0: none).
  uint64_t last_step_end() const { return last_end_; }
  // The steps so far: NVTX ones, else inferred from the anchors seen so far.
  StepsFound Result() const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  bool IsStepName(const std::string& n) const;
  // Emits the steps the inferring patterns closed (of the best locked one).
  void EmitInferred(const Coverage& coverage, uint64_t device_swept, EventSink& out);

  std::string step_range_;                           // GPUWATCH_STEP_RANGE
  std::unordered_map<uint32_t, std::string> names_;  // step-like range names by id (bounded)
  uint32_t step_name_id_ = 0;
  uint64_t step_depth_ = UINT64_MAX;
  StepsFound nvtx_;
  uint64_t last_end_ = 0;
  // Steps without NVTX, best first.
  // A sync ends its step; a launch's signature has the pause bit apart from what it launched.
  StepPattern coll_pattern_;
  StepPattern sync_pattern_{kAnchorWindow, kMaxPeriod, kFirstSearch, /*anchors_end_steps=*/true};
  StepPattern launch_pattern_{kLaunchAnchorWindow, kLaunchMaxPeriod, kFirstLaunchSearch, false, ~uint64_t{1}};
  const StepPattern* emitting_ = nullptr;  // the pattern whose steps went out
  uint64_t emitted_from_ = 0;              // start of the next step it will emit
  uint64_t last_enqueue_end_ = 0;          // for the launch signature's pause bit
  uint64_t last_host_end_ = 0;             // end of the latest host call: the last step's end
  uint64_t last_len_ = 0;                  // duration of the latest inferred step emitted
  bool flushed_ = false;
  StepMark flushed_step_{};                // the last step, emitted by Flush
};

}  // namespace gpuwatch::collector
