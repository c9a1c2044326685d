// gpu: the device timeline of a rank (CUPTI activity records, interpreted once by the
// device sweep): busy time, idle gaps and why the GPU was idle, launch delays, kernels by
// GPU time, communication kernels, copies as the device saw them. Without CUPTI (source
// "events") only collectives' CUDA-event times exist.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/busy_series.h"
#include "analyze/collectives.h"
#include "analyze/device_slice.h"
#include "common/log_histogram.h"
#include "common/tally.h"
#include "interpret/coverage.h"
#include "interpret/device_sweep.h"
#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

// Figures of one rank (or the sum over ranks). Times in ns.
struct GpuFigures {
  struct KernelStat {
    uint64_t count = 0, ns = 0;
    uint64_t in_graphs = 0;  // of `count`, run by CUDA graph launches
    void Add(const KernelStat& o) { count += o.count, ns += o.ns, in_graphs += o.in_graphs; }
  };
  struct CopyStat {
    Tally device;  // copies, bytes, device time
    uint64_t pageable = 0;
  };
  static constexpr size_t kMaxNames = 10000;  // kernels by name kept (rank and job)

  // Source: ranks whose timeline came from CUPTI / from events only.
  uint64_t cupti_ranks = 0, events_ranks = 0;
  std::string source_detail;

  uint64_t work = 0;                 // device records swept (kernels, copies, memsets)
  uint64_t first_ns = 0, last_ns = 0;  // the rank's first work start, last work end
  uint64_t active_ns = 0;            // last - first (summed over ranks for the job)
  DeviceSlice run;                   // busy, compute, comm, copies and idle over the run
  uint64_t gap_count = 0;
  LogHistogram gaps;                 // lengths of the idle gaps (their total: run.IdleTotal())
  LogHistogram launch_delay;         // work start - end of its launching call, clipped at 0
  uint64_t kernel_count = 0, kernel_with_api = 0, kernel_short = 0;  // computation kernels
  uint64_t graph_kernels = 0;  // of kernel_count, run by CUDA graph launches (not in kernel_with_api)
  LogHistogram kernel_dur;
  std::unordered_map<std::string, KernelStat> by_name;  // mangled name; bounded
  KernelStat other_kernels;  // beyond the name bound
  uint64_t comm_kernels = 0;  // NCCL kernels (CUPTI); their time is run.comm
  uint64_t comm_graph_ns = 0;  // of run.comm, NCCL kernels run by CUDA graph launches (no call of their own)
  KernelStat coll_events;     // collectives with a CUDA-event GPU time (events source only)
  CopyStat copies[kCopyDirections];
  uint64_t late = 0, overflow = 0, unmatched = 0;
  // How much of the active span CUPTI recorded (the overhead budget's windows). When
  // `sampled`, every timeline figure above is an estimate (histograms stay the windows' own
  // samples): device work (busy, kernels, copies) is what the windows measured times
  // enqueues / enqueues_in_windows, the calls that made it, which the hooks count whole;
  // idle is the rest of the active span, split as the windows saw it. A ratio of times
  // (active / covered) would undercount: CUPTI's cost slows a launch-bound job inside
  // windows, so they hold fewer launches per second than the rest of the run.
  struct Coverage {
    bool sampled = false;
    uint64_t windows = 0, covered_ns = 0;
    // Hooked calls that enqueue device work; of them, those made inside windows whose work
    // came back timed (less those whose records CUPTI returned without times, in proportion).
    uint64_t enqueues = 0, enqueues_in_windows = 0;
    // Where CUPTI stopped recording for good (an application's profiler took it): the
    // timeline's end, on the rank's clock; 0: it did not.
    uint64_t ended_ns = 0;
    double WorkShare() const {
      return enqueues ? std::min(1.0, static_cast<double>(enqueues_in_windows) / static_cast<double>(enqueues)) : 0;
    }
  } coverage;
  // Busy share over time, of all work and of useful work, for report.html and the utilization
  // shape. A rank's own clock: Merge leaves it out (ranks'
  // clocks and spans differ), so job totals have none.
  BusySeries series;

  bool cupti() const { return cupti_ranks > 0; }
  double coverage_share() const {
    return coverage.sampled && active_ns ? std::min(1.0, static_cast<double>(coverage.covered_ns) / active_ns) : 1.0;
  }
  // "cupti", "events", or "mixed" (a job whose ranks differ).
  const char* source_name() const {
    return cupti_ranks > 0 && events_ranks > 0 ? "mixed" : cupti_ranks > 0 ? "cupti" : "events";
  }
  // The `n` kernels with the most GPU time, most first, ties by name; names mangled.
  std::vector<std::pair<std::string, KernelStat>> TopByTime(size_t n) const;
  double utilization() const { return active_ns ? static_cast<double>(run.busy) / active_ns : 0.0; }
  // Useful busy (summary.json's gpu.compute_busy): the share of the active span in which work
  // other than NCCL kernels ran (kernels, copies, memsets). An NCCL kernel keeps the GPU
  // "busy" while it waits for its peers, so `utilization` reads high on a job that mostly waits.
  double compute_utilization() const {
    return active_ns ? static_cast<double>(std::min(run.noncomm_busy, active_ns)) / active_ns : 0.0;
  }
  double short_fraction() const {
    return kernel_with_api ? static_cast<double>(kernel_short) / kernel_with_api : 0.0;
  }
  void Merge(const GpuFigures& o);
};

// Idle is what the active span leaves of busy, split by kind as measured: a sampled
// timeline's, once its busy time is estimated (busy held within the span).
void SpreadIdle(GpuFigures& f);

class GpuCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  void OnDeviceWork(const DeviceWork& w) override;
  void OnBusy(const BusySpan& b) override;
  void OnIdle(const IdleGap& g) override;
  // The rank's windows, as the interpreter learns them (each batch's before its events). A
  // sampled timeline is estimated in two strata: the first window, which opens at the start
  // and records it whole, and the windows after it, which stand for the rest of the run. The
  // start is unlike the rest (ranks waiting for each other in their first collectives,
  // libraries warming up): scaled with the rest by one share of launches, it once doubled a
  // 2-rank run's communication time.
  void UseCoverage(const Coverage* coverage) { coverage_ = coverage; }
  // The figures of a flushed interpreter (facts: names and source; sweep: overflow). A
  // sampled timeline's active span is the host's [host_first, host_last]: the device could
  // have worked all of it, and the windows saw only part.
  GpuFigures Result(const RankFacts& facts, const DeviceSweep& sweep, const Coverage& coverage, uint64_t host_first,
                    uint64_t host_last) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  using KernelsById = std::unordered_map<uint32_t, GpuFigures::KernelStat>;
  // The first window's part of the figures a sampled timeline scales up, and of the calls.
  struct Start {
    GpuFigures f;
    KernelsById by_id;
    uint64_t enqueues = 0, enqueues_recorded = 0;
    CallsTime colls;
    // Where its work ended on the device (the latest end of work its calls enqueued): its
    // busy spans stop there.
    uint64_t device_end = 0;
  };
  bool InStart(uint64_t t) const {
    const uint64_t end = coverage_ ? coverage_->first_end() : 0;
    return end == 0 || t <= end;
  }
  // The share of the windows' device records that came back with times.
  static double TimedShare(const RankFacts& facts, uint64_t timed_records);
  // A sampled timeline's communication from its collectives' own GPU times, and busy with its
  // exposed part (analyze/sampled_estimate.h).
  void CommFromCalls(GpuFigures& r) const;

  GpuFigures f_;  // running figures (by_name unused: see by_id_)
  uint64_t first_ = UINT64_MAX;
  uint64_t enqueues_ = 0, enqueues_recorded_ = 0;  // hooked calls that enqueue device work
  CallsTime colls_;  // collectives, not captured
  KernelsById by_id_;
  const Coverage* coverage_ = nullptr;  // the interpreter's (RankModel)
  Start start_;  // the part of f_, by_id_ and the enqueues that falls in the first window
};

}  // namespace gpuwatch::collector
