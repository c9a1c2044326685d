// The device timeline of one rank, swept once in start order (device_sweep.cpp says how):
// CUPTI's work records reordered, joined with the API calls that launched them, merged
// into busy spans (all work, and all work but NCCL kernels), the gaps between them
// classified (IdleKind), each emitted to an EventSink as the sweep passes it.
//
// Memory is bounded: a reorder window of pending work (by time, with a hard cap), an API
// map that expires old ids, a list of host-blocked intervals pruned behind the sweep.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/thresholds.h"
#include "gpuwatch.pb.h"
#include "interpret/coverage.h"
#include "interpret/events.h"
#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

class DeviceSweep {
 public:
  struct Limits {
    uint64_t horizon_ns = kHorizonNs;  // reorder window behind the newest record
    size_t max_pending = kMaxPending;  // device records held for reordering
    uint64_t api_keep_ns = kApiKeepNs;  // API spans kept behind the sweep
    size_t max_apis = kMaxApis;
    size_t max_syncs = kMaxSyncs;
  };

  DeviceSweep() = default;
  explicit DeviceSweep(const Limits& l) : lim_(l) {}

  // A runtime or driver API record (ACTIVITY_API).
  void AddApi(const wire::Activity& a);
  // A kernel, copy or memset.
  void AddWork(const wire::Activity& a);
  // The host was blocked in a sync call during [start, end) (`source`: wire::GpuSource).
  void AddBlocked(uint64_t start, uint64_t end, int source);
  // Releases what the reorder window lets go, never past `host_until` (the device stream
  // trails the host stream; UINT64_MAX: no bound).
  void Advance(uint64_t host_until, const RankFacts& facts, Coverage& coverage, EventSink& out);
  // Releases everything, then the gap from the last work to `steps_end` (0: none) and the
  // open busy spans: the rank is done (or a copy is being finished for a result). Work
  // that still comes (a rank that reconnects) continues the timeline where it ended.
  void Flush(uint64_t steps_end, const RankFacts& facts, const Coverage& coverage, EventSink& out);

  uint64_t swept_ns() const { return swept_ns_; }  // device work starting before it was released
  uint64_t late() const { return late_; }          // released after the sweep passed them
  uint64_t overflow() const { return overflow_; }  // released early: the window was full
  // Entries held in every bounded container: constant on a long steady run.
  size_t StateSize() const { return pending_.size() + apis_.size() + api_fifo_.size() + syncs_.size(); }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Work {
    uint64_t start, end, bytes;
    uint32_t corr, name_id, stream;
    int32_t device;
    uint32_t graph_id;
    uint8_t kind, copy_kind;
    bool pageable;
    LaunchGeometry geometry;
    bool operator>(const Work& o) const {
      if (start != o.start) return start > o.start;
      if (end != o.end) return end > o.end;
      return corr > o.corr;
    }
  };
  struct Open {
    bool on = false;
    uint64_t start = 0, end = 0;
  };

  void Release(const Work& w, const RankFacts& facts, const Coverage& coverage, EventSink& out);
  // The gap [a, b) when CUPTI saw both of its ends (the overhead budget's windows).
  void Gap(uint64_t a, uint64_t b, const ApiSpan* next_api, bool trailing, const Coverage& coverage, EventSink& out);
  // Extends `o` with `w`; false when `w` starts a new span (the old one is emitted).
  bool Extend(Open& o, const Work& w, bool noncomm, EventSink& out);
  // Opens `o` at `w`, clipped to what a Flush already emitted (false: nothing left of it).
  static bool Reopen(Open& o, const Work& w, uint64_t resume);
  IdleKind Classify(uint64_t gap_start, uint64_t gap_end, const ApiSpan* next_api);
  uint64_t BlockedNs(uint64_t a, uint64_t b);
  void PruneSyncs();
  void ExpireApis();
  struct ApiEntry {
    ApiSpan span;
    bool claimed;  // some work of it was released
  };
  ApiEntry* FindApi(uint32_t corr);

  Limits lim_;
  std::priority_queue<Work, std::vector<Work>, std::greater<Work>> pending_;
  uint64_t newest_ns_ = 0;  // newest device end received
  uint64_t swept_ns_ = 0;   // start of the latest released record
  Open all_, noncomm_;
  // After a Flush: where the emitted timeline ends (busy spans, or the gap after them), so
  // later work neither counts time twice nor leaves a gap out.
  uint64_t resume_all_ = 0, resume_noncomm_ = 0;
  uint64_t late_ = 0, overflow_ = 0;
  // correlation id -> API span (widened when runtime and driver both report it).
  std::unordered_map<uint32_t, ApiEntry> apis_;
  std::deque<std::pair<uint32_t, uint64_t>> api_fifo_;  // (id, end) in arrival order
  std::multimap<uint64_t, uint64_t> syncs_;  // host blocked: start -> end
};

}  // namespace gpuwatch::collector
