// See sampled_estimate.h.
#include "analyze/sampled_estimate.h"

#include <algorithm>
#include <cmath>

#include "analyze/rank_result.h"

namespace gpuwatch::collector {

namespace {

// The collectives' GPU time of a typical step: the mean over the kept steps whose calls are
// known (step_figures.h). 0 when none called a collective.
uint64_t StepCommNs(const RankResult& r) {
  uint64_t ns = 0, calls = 0, steps = 0;
  for (const StepRec& s : r.steps.steps) {
    if (!s.coll_known) continue;
    ++steps;
    calls += s.coll_calls;
    ns += AllCallsNs(s.coll_calls, s.coll_timed, s.coll_ns);
  }
  return calls && steps ? ns / steps : 0;
}

}  // namespace

uint64_t SameShare(uint64_t part, uint64_t total, uint64_t to) {
  if (total == 0) return 0;
  return static_cast<uint64_t>(static_cast<double>(std::min(part, total)) * static_cast<double>(to) /
                                   static_cast<double>(total) + 0.5);
}

void EstimateSampledComm(RankResult& r) {
  GpuFigures& g = r.gpu;
  const CollectiveFigures::Op calls = r.collectives.Total();
  if (!g.coverage.sampled || calls.timed.count == 0) return;
  const uint64_t comm = calls.AllCallsNs();
  DeviceSlice& run = g.run;
  run.busy = run.noncomm_busy + SameShare(run.ExposedComm(), run.comm, comm);
  run.comm = comm;
  SpreadIdle(g);
  // The overlap figures where the windows saw NCCL kernels: the same share hidden, and the
  // kernels the windows' count per call stands for.
  const auto kernels = [&](uint64_t n) {
    return calls.count ? static_cast<uint64_t>(std::llround(static_cast<double>(g.comm_kernels) *
                                                            static_cast<double>(n) / static_cast<double>(calls.count)))
                       : 0;
  };
  if (OverlapTally& t = r.overlap.total; t.nccl_ns > 0) {
    t.overlapped_ns = SameShare(t.overlapped_ns, t.nccl_ns, comm);
    t.nccl_ns = comm;
    t.kernels = g.comm_kernels;
  }
  for (CommFigures& c : r.comms.comms) {
    if (c.kernel_ns == 0) continue;
    const CollectiveFigures::Op op = c.Total();
    const uint64_t ns = op.AllCallsNs();
    c.overlapped_ns = SameShare(c.overlapped_ns, c.kernel_ns, ns);
    c.kernel_ns = ns;
    c.kernels = kernels(op.count);
  }
}

void TypicalCoveredSteps(const RankResult& r, size_t covered, uint64_t covered_ns, DeviceSlice& dev) {
  const double n = static_cast<double>(r.steps_total());
  if (!r.gpu.coverage.sampled || covered == 0 || n <= 0) return;
  // Communication first: what the covered steps' exposed share shrinks (or grows) by is part
  // of what they ran beyond the mean step.
  double shrunk = 0;
  if (const uint64_t step_comm = StepCommNs(r)) {
    const uint64_t comm = step_comm * covered;
    const uint64_t busy = dev.noncomm_busy + SameShare(dev.ExposedComm(), dev.comm, comm);
    shrunk = static_cast<double>(dev.busy) - static_cast<double>(busy);
    dev.busy = busy;
    dev.comm = comm;
  }
  const double excess =
      static_cast<double>(covered_ns) - r.StepsTotalS() * 1e9 / n * static_cast<double>(covered) - shrunk;
  const double idle = static_cast<double>(dev.IdleTotal());
  if (excess > 0 && idle > 0)
    for (uint64_t& v : dev.idle) v = static_cast<uint64_t>(static_cast<double>(v) * std::max(0.0, idle - excess) / idle);
}

}  // namespace gpuwatch::collector
