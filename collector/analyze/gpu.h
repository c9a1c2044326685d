// gpu: the device timeline of a rank (CUPTI activity records, interpreted once by the
// device sweep): busy time, idle gaps and why the GPU was idle, launch delays, kernels by
// GPU time, communication kernels, copies as the device saw them. Without CUPTI (source
// "events") only collectives' CUDA-event times exist.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/busy_series.h"
#include "analyze/device_slice.h"
#include "common/log_histogram.h"
#include "common/tally.h"
#include "interpret/device_sweep.h"
#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

// Figures of one rank (or the sum over ranks). Times in ns.
struct GpuFigures {
  struct KernelStat {
    uint64_t count = 0, ns = 0;
    void Add(const KernelStat& o) { count += o.count, ns += o.ns; }
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
  LogHistogram kernel_dur;
  std::unordered_map<std::string, KernelStat> by_name;  // mangled name; bounded
  KernelStat other_kernels;  // beyond the name bound
  uint64_t comm_kernels = 0;  // NCCL kernels (CUPTI); their time is run.comm
  KernelStat coll_events;     // collectives with a CUDA-event GPU time (events source only)
  CopyStat copies[kCopyDirections];
  uint64_t late = 0, overflow = 0, unmatched = 0;
  // Busy share over time, for report.html. A rank's own clock: Merge leaves it out (ranks'
  // clocks and spans differ), so job totals have none.
  BusySeries series;

  bool cupti() const { return cupti_ranks > 0; }
  // "cupti", "events", or "mixed" (a job whose ranks differ).
  const char* source_name() const {
    return cupti_ranks > 0 && events_ranks > 0 ? "mixed" : cupti_ranks > 0 ? "cupti" : "events";
  }
  // The `n` kernels with the most GPU time, most first, ties by name; names mangled.
  std::vector<std::pair<std::string, KernelStat>> TopByTime(size_t n) const;
  double utilization() const { return active_ns ? static_cast<double>(run.busy) / active_ns : 0.0; }
  double short_fraction() const {
    return kernel_with_api ? static_cast<double>(kernel_short) / kernel_with_api : 0.0;
  }
  void Merge(const GpuFigures& o);
};

class GpuCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  void OnDeviceWork(const DeviceWork& w) override;
  void OnBusy(const BusySpan& b) override;
  void OnIdle(const IdleGap& g) override;
  // The figures of a flushed interpreter (facts: names and source; sweep: overflow).
  GpuFigures Result(const RankFacts& facts, const DeviceSweep& sweep) const;

 private:
  GpuFigures f_;  // running figures (by_name unused: see by_id_)
  uint64_t first_ = UINT64_MAX;
  std::unordered_map<uint32_t, GpuFigures::KernelStat> by_id_;
};

}  // namespace gpuwatch::collector
