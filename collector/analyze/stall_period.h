// Which of a rank's long steps are periodic stalls (a checkpoint, an evaluation every N
// steps) and which are noise: the long steps that fall on one regular lattice of steps
// (every `period` steps from the first of them) that they mostly fill are the stalls; the
// others (a preempted step, a garbage collection) are left to the normal steps. Without
// this, two noise steps among four checkpoints made the stalls' spacings too irregular to
// name a period, and the whole periodic stall went unnamed (charged as host work).
#pragma once
#include <cstddef>
#include <vector>

namespace gpuwatch::collector {

struct StallPeriod {
  size_t period = 0;           // 0: no periodic stall
  std::vector<size_t> stalls;  // the long steps on the lattice, in order
};

// `long_steps`: indices of the steps far longer than their median, ascending. A lattice
// counts when kStallPeriodFill (thresholds.h) of its steps between its first and last stall are long, with a
// period of 2 steps or more; the one with the most stalls wins (the fuller on a tie, then
// the shorter period). It needs 3 stalls where some long steps fall off it, else kMinStalls
// (two long steps alone are a lattice of their own).
StallPeriod FindStallPeriod(const std::vector<size_t>& long_steps);

}  // namespace gpuwatch::collector
