// Steps without NVTX: the repeating pattern of one kind of anchor (collectives, else host
// syncs; steps.cpp picks). The period is looked for in the first kAnchorWindow anchors;
// once it is found the anchors are not kept: every period-th one closes a step as it comes,
// so memory stays the same however long the run. A run with fewer anchors is searched
// whole at its end.
#pragma once
#include <cstdint>
#include <vector>

#include "interpret/events.h"
#include "interpret/step_stats.h"

namespace gpuwatch::collector {

// Smallest period p such that anchor i has the signature of anchor i - p for at least
// kPeriodMatch of the anchors; 0 when none.
uint64_t FindPeriod(const std::vector<uint64_t>& sig);

class StepPattern {
 public:
  void Add(uint64_t sig, uint64_t t_ns);
  // The steps (at most kMaxSteps records), how many there were and all their durations.
  // False when the anchors have no period.
  bool Result(std::vector<StepMark>* steps, uint64_t* total, StepStats* stats) const;

 private:
  struct Anchor {
    uint64_t sig, t_ns;
  };
  void Boundary(uint64_t t_ns);
  void Search();  // finds the period in the window, then drops the window

  std::vector<Anchor> window_;  // until the period is searched for
  bool searched_ = false;
  uint64_t period_ = 0, seen_ = 0;
  std::vector<uint64_t> boundaries_;  // the first kMaxSteps + 1 step boundaries
  uint64_t boundary_count_ = 0, last_boundary_ = 0;
  StepStats stats_;
};

}  // namespace gpuwatch::collector
