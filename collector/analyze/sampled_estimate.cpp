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
    calls += s.colls.calls;
    ns += s.colls.AllNs();
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
  const GpuFigures& g = r.gpu;
  const CallsTime calls = r.collectives.Total().Calls();
  if (!g.coverage.sampled || calls.timed == 0 || g.run.comm == 0) return;
  // The rank's exposed share as estimated; a communicator's as the windows measured it, scaled
  // so that together they hold the rank's (one figure in every view).
  const double share = static_cast<double>(g.run.ExposedComm()) / static_cast<double>(g.run.comm);
  const auto split = [](uint64_t ns, double exposed_share) {
    return ns - static_cast<uint64_t>(std::min(1.0, exposed_share) * static_cast<double>(ns) + 0.5);
  };
  if (OverlapTally& t = r.overlap.total; t.nccl_ns > 0) {
    t.nccl_ns = g.run.comm;
    t.overlapped_ns = split(t.nccl_ns, share);
    t.kernels = g.comm_kernels;
  }
  double exposed_w = 0, nccl_w = 0;
  for (const CommFigures& c : r.comms.comms) {
    exposed_w += static_cast<double>(c.ExposedNs());
    nccl_w += static_cast<double>(c.kernel_ns);
  }
  // Where the communicators' windows saw none exposed, each holds the rank's share.
  const double k = exposed_w > 0 ? share / (exposed_w / nccl_w) : 0.0;
  for (CommFigures& c : r.comms.comms) {
    if (c.kernel_ns == 0) continue;
    const CallsTime own = c.Total().Calls();
    const double measured = static_cast<double>(c.ExposedNs()) / static_cast<double>(c.kernel_ns);
    c.kernel_ns = own.AllNs();
    c.overlapped_ns = split(c.kernel_ns, exposed_w > 0 ? measured * k : share);
    c.kernels = static_cast<uint64_t>(std::llround(static_cast<double>(g.comm_kernels) * static_cast<double>(own.calls) /
                                                   static_cast<double>(calls.calls)));
  }
}

void TypicalCoveredSteps(const RankResult& r, size_t covered, uint64_t covered_ns, DeviceSlice& dev) {
  const double n = static_cast<double>(r.steps_total());
  if (!r.gpu.coverage.sampled || covered == 0 || n <= 0) return;
  // Communication first: what the covered steps' exposed share shrinks (or grows) by is part
  // of what they ran beyond the mean step.
  // Not where CUDA graphs replay NCCL kernels: the steps' calls do not hold those.
  double shrunk = 0;
  if (const uint64_t step_comm = r.gpu.comm_graph_ns ? 0 : StepCommNs(r)) {
    // Exposed as the run's estimate has it (the windows' steps hold the start's share).
    const uint64_t comm = step_comm * covered;
    const uint64_t busy = dev.noncomm_busy + SameShare(r.gpu.run.ExposedComm(), r.gpu.run.comm, comm);
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
