// The device timeline of one rank, computed as a stream (see gpu_timeline.cpp for the sweep)
// and the figures it yields (GpuStats), which also sum over ranks for the job.
//
// Inputs, all on the rank's CLOCK_MONOTONIC: device work (kernels, copies, memsets from
// CUPTI), the API calls that launched it (joined by correlation id), and the intervals
// during which the host was blocked in a sync call. Memory is bounded: a reorder window of
// pending work (by time, with a hard cap), an API map that expires old ids, a sync list
// pruned behind the sweep, at most kMaxKernelIds kernel names/stats, fixed histograms.
#pragma once
#include "kernel_names.h"
#include <cstdint>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>
#include <deque>

#include "analyze/busy_series.h"
#include "analyze/gpu_hist.h"
#include "gpuwatch.pb.h"

namespace gpuwatch::collector {

// Figures of one rank (or the sum over ranks). Times in ns.
struct GpuStats {
  struct KernelStat {
    uint64_t count = 0, ns = 0;
  };
  struct CopyStat {
    uint64_t count = 0, bytes = 0, ns = 0, pageable = 0;
  };
  enum Idle { kSyncWait = 0, kHostWait = 1, kKernelWait = 2, kOther = 3, kIdleKinds = 4 };

  // Source: ranks whose timeline came from CUPTI / from events only.
  uint64_t cupti_ranks = 0, events_ranks = 0;
  std::string source_detail;

  uint64_t work = 0;  // device records swept (kernels, copies, memsets)
  uint64_t busy_ns = 0, active_ns = 0;
  uint64_t gap_count = 0, gap_ns = 0;
  LogHistogram gaps;
  uint64_t idle_ns[kIdleKinds] = {};
  LogHistogram launch_delay;
  uint64_t kernel_count = 0, kernel_ns = 0;
  uint64_t kernel_with_api = 0, kernel_short = 0;  // computation kernels with a known API call
  LogHistogram kernel_dur;
  std::unordered_map<std::string, KernelStat> by_name;  // mangled name; bounded
  KernelStat other_kernels;                             // beyond the name bound
  KernelStat comm;                                      // communication kernels (CUPTI)
  KernelStat coll_events;  // collectives with a CUDA-event GPU time (events source only)
  CopyStat copies[2];      // [0] h2d, [1] d2h
  uint64_t late = 0, overflow = 0, unmatched = 0;
  // Busy share over time, for report.html. A rank's own clock: Merge leaves it out (ranks'
  // clocks and spans differ), so job totals have none.
  BusySeries series;

  void Merge(const GpuStats& o);
  bool cupti() const { return cupti_ranks > 0; }
};

class GpuTimeline {
 public:
  struct Limits {
    uint64_t horizon_ns = 2'000'000'000;    // reorder window behind the newest record
    size_t max_pending = 1 << 18;           // device records held for reordering
    uint64_t api_keep_ns = 4'000'000'000;   // API spans kept behind the sweep
    size_t max_apis = 1 << 18;
    size_t max_syncs = 1 << 16;
    size_t max_kernel_ids = 10000;
    size_t max_name_bytes = 4096;
  };
  static constexpr uint64_t kKernelWaitNs = 30'000;  // a gap shorter than this: kernel_wait

  GpuTimeline() = default;
  explicit GpuTimeline(const Limits& l) : lim_(l) {}

  // One batch: names, host syncs, API spans and device work, then sweeps what the
  // reorder window releases.
  void OnBatch(const wire::Batch& batch);
  // Sweeps everything still held (the rank is done).
  void Flush();
  // The figures so far, as if the rank ended now (works on a flushed copy).
  GpuStats Result() const;
  // Entries held in every bounded container: constant on a long steady run.
  size_t StateSize() const;

 private:
  struct Work {
    uint64_t start, end;
    uint64_t bytes;
    uint32_t corr, name_id;
    uint8_t kind, copy_kind, pageable;
    bool operator>(const Work& o) const {
      if (start != o.start) return start > o.start;
      if (end != o.end) return end > o.end;
      return corr > o.corr;
    }
  };
  struct Span {
    uint64_t start, end;
  };
  struct Name {
    std::string mangled;
    bool comm;
  };

  void AddWork(const wire::Activity& a);
  void AddApi(const wire::Activity& a);
  void AddBlocked(uint64_t start, uint64_t end);
  void Advance();
  void Release(const Work& w);
  void CloseGap(uint64_t gap_start, const Work& next);
  uint64_t BlockedNs(uint64_t a, uint64_t b);
  void PruneSyncs();
  void ExpireApis();
  const Span* FindApi(uint32_t corr) const;
  bool IsComm(uint32_t name_id) const;

  Limits lim_;
  GpuStats s_;  // running figures (by_name unused: see by_id_)
  int source_ = wire::GPU_SOURCE_UNSPECIFIED;

  // Reorder window.
  std::priority_queue<Work, std::vector<Work>, std::greater<Work>> pending_;
  uint64_t newest_ns_ = 0;  // newest device end received

  // Sweep state: the open merged busy interval.
  bool open_ = false;
  uint64_t open_start_ = 0, open_end_ = 0;
  uint64_t first_start_ = UINT64_MAX, last_end_ = 0;
  uint64_t swept_ns_ = 0;  // start of the latest released record

  // correlation id -> API span (widened when runtime and driver both report it).
  std::unordered_map<uint32_t, Span> apis_;
  std::deque<std::pair<uint32_t, uint64_t>> api_fifo_;  // (id, end) in arrival order

  std::multimap<uint64_t, uint64_t> syncs_;  // host blocked: start -> end

  std::unordered_map<uint32_t, Name> names_;
  std::unordered_map<uint32_t, GpuStats::KernelStat> by_id_;
};

}  // namespace gpuwatch::collector
