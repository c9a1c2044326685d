// Finds a rank's training steps once. From NVTX ranges: the outermost range whose name is
// a step name (GPUWATCH_STEP_RANGE, else thresholds.h's defaults or any name containing
// "step"); each closes a step, emitted as it closes. Without them, from the repeating
// pattern of collectives, else of host syncs (step_pattern.h), known when the run ends.
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
  // A released host call; NVTX steps go to `out` as they close.
  void OnHostCall(const HostCall& c, const Coverage& coverage, EventSink& out);
  // End of the last NVTX step (0: none).
  uint64_t last_step_end() const { return last_end_; }
  // The steps so far: NVTX ones, else inferred from the anchors seen so far.
  StepsFound Result() const;

 private:
  bool IsStepName(const std::string& n) const;

  std::string step_range_;                           // GPUWATCH_STEP_RANGE
  std::unordered_map<uint32_t, std::string> names_;  // step-like range names by id (bounded)
  uint32_t step_name_id_ = 0;
  uint64_t step_depth_ = UINT64_MAX;
  StepsFound nvtx_;
  uint64_t last_end_ = 0;
  StepPattern coll_pattern_, sync_pattern_;  // steps without NVTX
};

}  // namespace gpuwatch::collector
