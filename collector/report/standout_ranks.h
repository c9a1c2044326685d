// Which ranks of a job stand out, for the console's short form (console_text.h), which
// lists only them: at 8 ranks or 8 000, a reader sees the ranks worth opening summary.txt
// for. A rank stands out when
//   - it ended abnormally (no Goodbye: killed, crashed) or a hang names it;
//   - a medium or high finding of the job names it while naming at most half of the job's
//     ranks: the straggler, a slow pipeline stage, a loss that only some ranks have;
//   - its median step is kStandOutStepRatio (1.2x) or more slower or faster than the
//     median rank's, or its GPU busy share kStandOutBusyPoints (15 points) or more away from
//     the median rank's (thresholds.h says why).
// A job of one rank has no others to differ from: its rank stands out by the first rule only.
// They come most telling first: an abnormal end or a hang, then a finding, then the farthest
// from the median rank (its busy share's points or its step's ratio, whichever is larger).
// docs/console.md describes the short form.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "report/job_view.h"

namespace gpuwatch::collector {

struct StandOut {
  size_t index = 0;              // in JobView::ranks
  std::vector<std::string> why;  // "ended abnormally", "straggler", "step 14.1 ms", ...
  bool by_step = false, by_busy = false;  // its step or busy share is among the reasons
  int tier = 0;            // 2: ended abnormally or hung, 1: named by a finding, 0: its figures
  double distance = 0;     // from the median rank: busy points or step ratio - 1, the larger
};

// The job's median rank: the median over ranks of each rank's median step (ranks with steps)
// and of its GPU busy share (ranks with a device timeline); 0 and -1 when none has one.
struct MedianRank {
  double step_s = 0;
  double busy = -1;
};
MedianRank MedianRankOf(const JobView& job);

// Each rank's median step in seconds (0: no steps) and GPU busy share (-1: no device timeline).
double StepS(const RankResult& r);
double BusyShare(const RankResult& r);

// The ranks that stand out, most telling first (ties: in the order of job.ranks).
std::vector<StandOut> RanksThatStandOut(const JobView& job);

}  // namespace gpuwatch::collector
