// The streaming sweep over a rank's device work.
//
// CUPTI hands records over in buffer order: roughly, not strictly, by time, and an API
// record may come a batch before or after the work it launched. Busy time is a union of
// intervals, which is exact only when intervals are swept in start order. So:
//
//  1. Reorder window. Device records wait in a min-heap by start. `newest_ns_` is the
//     latest device end received (not API ends: the host may run far ahead); a record is
//     released once its start is older than newest - horizon (2 s; the library's lag is
//     about 1 s). Released records come out in start order. If the heap exceeds its cap,
//     the oldest are released early (counted in `overflow`).
//  2. Sweep. An open merged interval [open_start_, open_end_]: a released record that
//     starts at or before open_end_ extends it; one that starts after closes it (its length
//     goes to busy) and the space between is a gap, classified at once. A record released
//     after the sweep passed its start (start < open_start_) is `late`: what it adds past
//     open_end_ is still counted, what lies before the open interval is lost.
//  3. Gap classification needs the host's sync intervals (kept in a multimap by start,
//     pruned as the sweep passes them) and the API span of the record ending the gap
//     (correlation map, entries expire api_keep_ns behind the sweep or past a cap).
//  4. Per record: launch delay and short kernels from its API span, kernel stats per name
//     id (bounded), copies per direction.
//
// At the end everything held is swept (Result() does it on a copy, since a rank that was
// killed gets no final call and reports are written from const analyses).
#include "analyze/gpu_timeline.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

namespace gpuwatch::collector {

namespace {

constexpr size_t kMaxNames = 10000;  // job-level distinct kernel names
constexpr size_t kMaxDetail = 256;

bool IsCollective(wire::Api api) { return api >= wire::NCCL_ALL_REDUCE && api <= wire::NCCL_RECV; }

bool IsHostBlocked(const wire::Event& e) {
  switch (e.api()) {
    case wire::CUDA_STREAM_SYNCHRONIZE:
    case wire::CUDA_DEVICE_SYNCHRONIZE:
    case wire::CUDA_EVENT_SYNCHRONIZE:
      return true;
    case wire::CUDA_MEMCPY:
    case wire::CUDA_MEMCPY_ASYNC:
      return (e.flags() & wire::FLAG_BLOCKED_HOST) != 0;
    default:
      return false;
  }
}

void AddTo(GpuStats::KernelStat& a, const GpuStats::KernelStat& b) {
  a.count += b.count;
  a.ns += b.ns;
}

}  // namespace

void GpuStats::Merge(const GpuStats& o) {
  cupti_ranks += o.cupti_ranks;
  events_ranks += o.events_ranks;
  work += o.work;
  busy_ns += o.busy_ns;
  active_ns += o.active_ns;
  gap_count += o.gap_count;
  gap_ns += o.gap_ns;
  gaps.Merge(o.gaps);
  for (int i = 0; i < kIdleKinds; ++i) idle_ns[i] += o.idle_ns[i];
  launch_delay.Merge(o.launch_delay);
  kernel_count += o.kernel_count;
  kernel_ns += o.kernel_ns;
  kernel_with_api += o.kernel_with_api;
  kernel_short += o.kernel_short;
  kernel_dur.Merge(o.kernel_dur);
  for (const auto& [name, st] : o.by_name) {
    auto it = by_name.find(name);
    if (it != by_name.end()) {
      AddTo(it->second, st);
    } else if (by_name.size() < kMaxNames) {
      by_name.emplace(name, st);
    } else {
      AddTo(other_kernels, st);
    }
  }
  AddTo(other_kernels, o.other_kernels);
  AddTo(comm, o.comm);
  AddTo(coll_events, o.coll_events);
  for (int i = 0; i < 2; ++i) {
    copies[i].count += o.copies[i].count;
    copies[i].bytes += o.copies[i].bytes;
    copies[i].ns += o.copies[i].ns;
    copies[i].pageable += o.copies[i].pageable;
  }
  late += o.late;
  overflow += o.overflow;
  unmatched += o.unmatched;
}

void GpuTimeline::OnBatch(const wire::Batch& batch) {
  if (batch.gpu_source() != wire::GPU_SOURCE_UNSPECIFIED) source_ = batch.gpu_source();
  if (!batch.gpu_source_detail().empty())
    s_.source_detail = batch.gpu_source_detail().substr(0, kMaxDetail);
  for (const auto& k : batch.kernel_names()) {
    if (names_.size() >= lim_.max_kernel_ids && !names_.count(k.id())) continue;
    std::string n = k.name().substr(0, lim_.max_name_bytes);
    const bool comm = IsCommKernelName(n);
    names_[k.id()] = Name{std::move(n), comm};
  }
  for (const auto& e : batch.events()) {
    if (IsHostBlocked(e)) {
      // Only gaps use them; with no device timeline coming there are none to classify.
      if (source_ == wire::GPU_SOURCE_EVENTS && !open_ && pending_.empty()) continue;
      AddBlocked(e.t_ns(), e.t_ns() + e.dur_ns());
    } else if (IsCollective(e.api()) && e.gpu_ns() > 0 &&
               !(e.flags() & wire::FLAG_NO_GPU_TIME)) {
      ++s_.coll_events.count;
      s_.coll_events.ns += e.gpu_ns();
    }
  }
  // API spans first, so that work of the same batch finds them (it waits in the window
  // anyway; this only matters for a flush right after).
  for (const auto& a : batch.activities())
    if (a.kind() == wire::ACTIVITY_API) AddApi(a);
  for (const auto& a : batch.activities()) {
    switch (a.kind()) {
      case wire::ACTIVITY_KERNEL:
      case wire::ACTIVITY_MEMCPY:
      case wire::ACTIVITY_MEMSET:
        AddWork(a);
        break;
      default:  // ACTIVITY_SYNC: not device work; API: done above
        break;
    }
  }
  Advance();
}

void GpuTimeline::AddWork(const wire::Activity& a) {
  Work w;
  w.start = a.start_ns();
  w.end = std::max(a.end_ns(), a.start_ns());
  w.bytes = a.bytes();
  w.corr = a.correlation_id();
  w.name_id = a.name_id();
  w.kind = static_cast<uint8_t>(a.kind());
  w.copy_kind = static_cast<uint8_t>(a.copy_kind());
  w.pageable = (a.flags() & wire::FLAG_PAGEABLE) ? 1 : 0;
  first_start_ = std::min(first_start_, w.start);
  last_end_ = std::max(last_end_, w.end);
  newest_ns_ = std::max(newest_ns_, w.end);
  pending_.push(w);
}

void GpuTimeline::AddApi(const wire::Activity& a) {
  if (a.correlation_id() == 0) return;
  const uint64_t end = std::max(a.end_ns(), a.start_ns());
  auto [it, inserted] = apis_.try_emplace(a.correlation_id(), Span{a.start_ns(), end});
  if (!inserted) {  // runtime and driver record of one launch: keep the outer span
    it->second.start = std::min(it->second.start, a.start_ns());
    it->second.end = std::max(it->second.end, end);
  }
  api_fifo_.emplace_back(a.correlation_id(), end);
  // Not in newest_ns_: the host may run seconds ahead of the device (a deep launch
  // queue), and a watermark driven by host time would release work not yet reported.
}

void GpuTimeline::AddBlocked(uint64_t start, uint64_t end) {
  if (end <= start) return;
  syncs_.emplace(start, end);
  while (syncs_.size() > lim_.max_syncs) syncs_.erase(syncs_.begin());
}

void GpuTimeline::Advance() {
  while (pending_.size() > lim_.max_pending) {
    ++s_.overflow;
    const Work w = pending_.top();
    pending_.pop();
    Release(w);
  }
  if (newest_ns_ > lim_.horizon_ns) {
    const uint64_t watermark = newest_ns_ - lim_.horizon_ns;
    while (!pending_.empty() && pending_.top().start < watermark) {
      const Work w = pending_.top();
      pending_.pop();
      Release(w);
    }
  }
  ExpireApis();
  PruneSyncs();
}

void GpuTimeline::Flush() {
  while (!pending_.empty()) {
    const Work w = pending_.top();
    pending_.pop();
    Release(w);
  }
}

void GpuTimeline::Release(const Work& w) {
  ++s_.work;
  swept_ns_ = std::max(swept_ns_, w.start);
  if (!open_) {
    open_ = true;
    open_start_ = w.start;
    open_end_ = w.end;
  } else if (w.start < open_start_) {  // the sweep already passed it
    ++s_.late;
    open_end_ = std::max(open_end_, w.end);
  } else if (w.start <= open_end_) {  // overlaps or touches: extend
    open_end_ = std::max(open_end_, w.end);
  } else {  // idle from open_end_ to w.start
    s_.busy_ns += open_end_ - open_start_;
    s_.series.Add(open_start_, open_end_);
    CloseGap(open_end_, w);
    open_start_ = w.start;
    open_end_ = w.end;
  }

  const Span* api = w.corr ? FindApi(w.corr) : nullptr;
  if (w.corr && !api) ++s_.unmatched;
  if (api) s_.launch_delay.Add(w.start > api->end ? w.start - api->end : 0);
  const uint64_t dur = w.end - w.start;
  switch (w.kind) {
    case wire::ACTIVITY_KERNEL: {
      if (IsComm(w.name_id)) {
        ++s_.comm.count;
        s_.comm.ns += dur;
        break;
      }
      ++s_.kernel_count;
      s_.kernel_ns += dur;
      s_.kernel_dur.Add(dur);
      if (api) {
        ++s_.kernel_with_api;
        if (dur < api->end - api->start) ++s_.kernel_short;
      }
      auto it = by_id_.find(w.name_id);
      if (it == by_id_.end() && by_id_.size() < lim_.max_kernel_ids)
        it = by_id_.emplace(w.name_id, GpuStats::KernelStat{}).first;
      GpuStats::KernelStat& k = it != by_id_.end() ? it->second : s_.other_kernels;
      ++k.count;
      k.ns += dur;
      break;
    }
    case wire::ACTIVITY_MEMCPY: {
      const int d = w.copy_kind == wire::COPY_H2D ? 0 : w.copy_kind == wire::COPY_D2H ? 1 : -1;
      if (d < 0) break;
      auto& c = s_.copies[d];
      ++c.count;
      c.bytes += w.bytes;
      c.ns += dur;
      c.pageable += w.pageable;
      break;
    }
    default:
      break;
  }
}

void GpuTimeline::CloseGap(uint64_t gap_start, const Work& next) {
  const uint64_t gap = next.start - gap_start;
  ++s_.gap_count;
  s_.gap_ns += gap;
  s_.gaps.Add(gap);
  GpuStats::Idle kind;
  if (2 * BlockedNs(gap_start, next.start) > gap) {
    kind = GpuStats::kSyncWait;
  } else {
    const Span* api = next.corr ? FindApi(next.corr) : nullptr;
    if (api && api->start > gap_start) {
      kind = GpuStats::kHostWait;
    } else if (gap < kKernelWaitNs) {
      kind = GpuStats::kKernelWait;
    } else {
      kind = GpuStats::kOther;
    }
  }
  s_.idle_ns[kind] += gap;
}

// Host-blocked time inside [a, b]: union of the sync intervals clipped to it. Intervals that
// end at or before a cannot touch a later gap (gaps come in increasing order): dropped.
uint64_t GpuTimeline::BlockedNs(uint64_t a, uint64_t b) {
  uint64_t total = 0, cur_s = 0, cur_e = 0;
  bool have = false;
  for (auto it = syncs_.begin(); it != syncs_.end() && it->first < b;) {
    if (it->second <= a) {
      it = syncs_.erase(it);
      continue;
    }
    const uint64_t s = std::max(it->first, a), e = std::min(it->second, b);
    ++it;
    if (have && s <= cur_e) {
      cur_e = std::max(cur_e, e);
      continue;
    }
    if (have) total += cur_e - cur_s;
    have = true;
    cur_s = s;
    cur_e = e;
  }
  if (have) total += cur_e - cur_s;
  return total;
}

// Future gaps start at or after the open interval's end; before any interval, at or after
// the earliest record still to be swept.
void GpuTimeline::PruneSyncs() {
  uint64_t bound;
  if (open_) {
    bound = open_end_;
  } else {
    bound = newest_ns_ > lim_.horizon_ns ? newest_ns_ - lim_.horizon_ns : 0;
    if (!pending_.empty()) bound = std::min(bound, pending_.top().start);
  }
  for (auto it = syncs_.begin(); it != syncs_.end() && it->first < bound;) {
    if (it->second < bound) {
      it = syncs_.erase(it);
    } else {
      ++it;
    }
  }
}

void GpuTimeline::ExpireApis() {
  while (!api_fifo_.empty() && (api_fifo_.size() > lim_.max_apis ||
                                api_fifo_.front().second + lim_.api_keep_ns < swept_ns_)) {
    const auto [id, end] = api_fifo_.front();
    api_fifo_.pop_front();
    auto it = apis_.find(id);
    // A widened span is erased with the record that gave it its end.
    if (it != apis_.end() && it->second.end <= end) apis_.erase(it);
  }
}

const GpuTimeline::Span* GpuTimeline::FindApi(uint32_t corr) const {
  auto it = apis_.find(corr);
  return it == apis_.end() ? nullptr : &it->second;
}

bool GpuTimeline::IsComm(uint32_t name_id) const {
  auto it = names_.find(name_id);
  return it != names_.end() && it->second.comm;
}

GpuStats GpuTimeline::Result() const {
  GpuTimeline t = *this;
  t.Flush();
  GpuStats r = t.s_;
  if (t.open_) {
    r.busy_ns += t.open_end_ - t.open_start_;
    r.series.Add(t.open_start_, t.open_end_);
  }
  r.active_ns = t.last_end_ > t.first_start_ ? t.last_end_ - t.first_start_ : 0;
  const bool cupti = source_ == wire::GPU_SOURCE_CUPTI || r.work > 0;
  r.cupti_ranks = cupti ? 1 : 0;
  r.events_ranks = cupti ? 0 : 1;
  if (cupti) r.coll_events = {};  // CUPTI's communication kernels stand for them
  for (const auto& [id, st] : t.by_id_) {
    auto n = t.names_.find(id);
    AddTo(r.by_name[n != t.names_.end() ? n->second.mangled : "kernel#" + std::to_string(id)],
          st);
  }
  return r;
}

size_t GpuTimeline::StateSize() const {
  return pending_.size() + apis_.size() + api_fifo_.size() + syncs_.size() + names_.size() +
         by_id_.size();
}

}  // namespace gpuwatch::collector
