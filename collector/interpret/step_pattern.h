// Steps without NVTX: the repeating pattern of one kind of anchor (collectives, host syncs,
// or launches; step_finder.h picks). The window of anchors is searched for a period each
// time it doubles; once a period repeated kMinRepeats times it is taken, the window is
// dropped and every period-th anchor closes a step as it comes, so steps are known while the
// run goes on and memory stays the same however long it is. A step starts at the anchor
// after the loop's longest pause within the period (the next batch), not wherever the window
// happened to begin. A run with fewer anchors is searched whole at its end.
//
// Anchors that end their step (host syncs: the step's results are waited for, then the
// next batch is loaded) put the boundary at the end of the anchor *before* the longest
// pause, and leave no open step at the run's end: what follows the last one is teardown.
// After the period is found, an anchor in the boundary's place only closes a step if it is
// the kind of anchor the boundary was (the teardown's cudaDeviceSynchronize in a loop of
// cudaStreamSynchronize is not a step's end).
#pragma once
#include <cstdint>
#include <vector>

#include "common/thresholds.h"
#include "interpret/events.h"
#include "interpret/step_stats.h"

namespace gpuwatch::collector {

// Smallest period p (at most max_period, at most half the anchors) such that anchor i has
// the signature of anchor i - p for at least kPeriodMatch of the anchors (weighted: each
// signature's anchors together weigh one) and no other
// period does better by more than kPeriodSlack; 0 when none, or when it has not repeated
// min_repeats times yet.
uint64_t FindPeriod(const std::vector<uint64_t>& sig, uint64_t max_period = kMaxPeriod, uint64_t min_repeats = 2);

class StepPattern {
 public:
  // boundary_mask: the bits of a signature that say which kind of anchor it is (the rest,
  // e.g. whether the host paused before a launch, may differ from step to step).
  explicit StepPattern(uint64_t window = kAnchorWindow, uint64_t max_period = kMaxPeriod,
                       uint64_t first_search = kFirstSearch, bool anchors_end_steps = false,
                       uint64_t boundary_mask = ~uint64_t{0})
      : window_limit_(window), max_period_(max_period), first_search_(first_search),
        anchors_end_steps_(anchors_end_steps), boundary_mask_(boundary_mask) {}

  void Add(uint64_t sig, uint64_t t_ns);
  // The period is known: boundaries come as anchors do.
  bool locked() const { return searched_ && period_ != 0; }
  // Every anchor of the step the last boundary opened has come (the run's last step, which
  // no later boundary closes, is whole). Never for anchors that end their step.
  bool open_step_complete() const {
    return locked() && !anchors_end_steps_ && boundary_count_ > 0 && seen_ - last_boundary_index_ >= period_;
  }
  // Step boundaries found since the last ClearFresh, oldest first (each closes the step the
  // one before it opened). Cleared in place: asked after every anchor, it keeps its memory.
  const std::vector<uint64_t>& fresh() const { return fresh_; }
  void ClearFresh() { fresh_.clear(); }
  // Every boundary kept so far (the first kMaxSteps + 1).
  const std::vector<uint64_t>& boundaries() const { return boundaries_; }
  // The steps (at most kMaxSteps records), how many there were and all their durations.
  // False when the anchors have no period.
  bool Result(std::vector<StepMark>* steps, uint64_t* total, StepStats* stats) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Anchor {
    uint64_t sig, t_ns;
  };
  void Boundary(uint64_t index, uint64_t t_ns);
  // Looks for the period in the window; on success (or when `final`) drops the window.
  void Search(uint64_t min_repeats, bool final);

  uint64_t window_limit_, max_period_, first_search_;
  bool anchors_end_steps_;
  uint64_t boundary_mask_;
  uint64_t boundary_sig_ = 0;  // the kind of anchor that closes a step (masked)
  std::vector<Anchor> window_;  // until the period is found
  bool searched_ = false;
  uint64_t period_ = 0, phase_ = 0, seen_ = 0;
  std::vector<uint64_t> boundaries_;  // the first kMaxSteps + 1 step boundaries
  std::vector<uint64_t> fresh_;       // boundaries not yet taken (bounded: taken per anchor)
  uint64_t boundary_count_ = 0, last_boundary_ = 0, last_boundary_index_ = 0;
  StepStats stats_;
};

}  // namespace gpuwatch::collector
