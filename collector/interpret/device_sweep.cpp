// The streaming sweep over a rank's device work.
//
// CUPTI hands records over in buffer order: roughly, not strictly, by time, and an API
// record may come a batch before or after the work it launched. Busy time is a union of
// intervals, which is exact only when intervals are swept in start order. So:
//
//  1. Reorder window. Device records wait in a min-heap by start. `newest_ns_` is the
//     latest device end received (not API ends: the host may run far ahead); a record is
//     released once its start is older than newest - horizon (2 s; the library's lag is
//     about 1 s) and the host stream has been released past it. If the heap exceeds its
//     cap, the oldest are released early (counted in `overflow`).
//  2. Sweep. An open merged interval [start, end]: a released record that starts at or
//     before its end extends it; one that starts after closes it (emitted as a BusySpan)
//     and the space between is a gap, classified at once. A record released after the
//     sweep passed its start is `late`: what it adds past the open end is still counted.
//  3. Gap classification needs the host's sync intervals (kept by start, pruned as the
//     sweep passes them) and the API span of the record ending the gap (correlation map,
//     entries expire api_keep_ns behind the sweep or past a cap).
#include "interpret/device_sweep.h"

#include <algorithm>

namespace gpuwatch::collector {

void DeviceSweep::AddApi(const wire::Activity& a) {
  if (a.correlation_id() == 0) return;
  const uint64_t end = std::max(a.end_ns(), a.start_ns());
  auto [it, inserted] = apis_.try_emplace(a.correlation_id(), ApiEntry{ApiSpan{a.start_ns(), end}, false});
  if (!inserted) {  // runtime and driver record of one launch: keep the outer span
    it->second.span.start_ns = std::min(it->second.span.start_ns, a.start_ns());
    it->second.span.end_ns = std::max(it->second.span.end_ns, end);
  }
  api_fifo_.emplace_back(a.correlation_id(), end);
  // Not in newest_ns_: the host may run seconds ahead of the device (a deep launch
  // queue), and a watermark driven by host time would release work not yet reported.
}

void DeviceSweep::AddWork(const wire::Activity& a) {
  Work w;
  w.start = a.start_ns();
  w.end = std::max(a.end_ns(), a.start_ns());
  w.bytes = a.bytes();
  w.corr = a.correlation_id();
  w.name_id = a.name_id();
  w.stream = a.stream();
  w.device = a.device();
  w.kind = static_cast<uint8_t>(a.kind());
  w.copy_kind = static_cast<uint8_t>(a.copy_kind());
  w.pageable = HasFlag(a.flags(), wire::FLAG_PAGEABLE);
  w.graph_id = a.graph_id();
  w.geometry = {};
  if (a.kind() == wire::ACTIVITY_KERNEL && a.grid_x()) {
    // Dimensions CUPTI leaves 0 count as 1 (a 1-D grid's y and z).
    auto dim = [](uint32_t v) -> uint64_t { return v ? v : 1; };
    w.geometry.blocks = dim(a.grid_x()) * dim(a.grid_y()) * dim(a.grid_z());
    w.geometry.block_threads = static_cast<uint32_t>(dim(a.block_x()) * dim(a.block_y()) * dim(a.block_z()));
    w.geometry.registers = a.registers_per_thread();
    w.geometry.shared_bytes = a.static_shared_bytes() + a.dynamic_shared_bytes();
  }
  newest_ns_ = std::max(newest_ns_, w.end);
  pending_.push(w);
}

void DeviceSweep::AddBlocked(uint64_t start, uint64_t end, int source) {
  if (end <= start) return;
  // Only gaps use them; with no device timeline coming there are none to classify.
  if (source == wire::GPU_SOURCE_EVENTS && !all_.on && pending_.empty()) return;
  syncs_.emplace(start, end);
  while (syncs_.size() > lim_.max_syncs) syncs_.erase(syncs_.begin());
}

void DeviceSweep::Advance(uint64_t host_until, const RankFacts& facts, Coverage& coverage, EventSink& out) {
  while (pending_.size() > lim_.max_pending) {
    ++overflow_;
    const Work w = pending_.top();
    pending_.pop();
    Release(w, facts, coverage, out);
  }
  if (newest_ns_ > lim_.horizon_ns) {
    const uint64_t watermark = std::min(newest_ns_ - lim_.horizon_ns, host_until);
    while (!pending_.empty() && pending_.top().start < watermark) {
      const Work w = pending_.top();
      pending_.pop();
      Release(w, facts, coverage, out);
    }
  }
  ExpireApis();
  PruneSyncs();
  coverage.Pass(swept_ns_ > lim_.horizon_ns ? swept_ns_ - lim_.horizon_ns : 0);
  if (all_.on) out.OnDeviceSettled(all_.end);  // later gaps start at the open span's end or after
}

void DeviceSweep::Flush(uint64_t steps_end, const RankFacts& facts, const Coverage& coverage, EventSink& out) {
  while (!pending_.empty()) {
    const Work w = pending_.top();
    pending_.pop();
    Release(w, facts, coverage, out);
  }
  // The GPU idle after its last work until the last step closed (e.g. host work at the
  // end of the run): no later work ends that gap, so it is classified here.
  if (all_.on && steps_end > all_.end) {
    Gap(all_.end, steps_end, nullptr, true, coverage, out);
    resume_all_ = steps_end;
  }
  for (Open* o : {&all_, &noncomm_}) {
    if (!o->on) continue;
    out.OnBusy(BusySpan{o->start, o->end, o == &noncomm_});
    uint64_t& resume = o == &all_ ? resume_all_ : resume_noncomm_;
    resume = std::max(resume, o->end);
    o->on = false;
  }
}

bool DeviceSweep::Reopen(Open& o, const Work& w, uint64_t resume) {
  if (w.end <= resume) return false;
  o = Open{true, std::max(w.start, resume), w.end};
  return true;
}

bool DeviceSweep::Extend(Open& o, const Work& w, bool noncomm, EventSink& out) {
  if (!o.on) {
    Reopen(o, w, noncomm ? resume_noncomm_ : resume_all_);
    return true;
  }
  if (w.start <= o.end) {  // overlaps or touches (or came late): extend
    o.end = std::max(o.end, w.end);
    return true;
  }
  out.OnBusy(BusySpan{o.start, o.end, noncomm});
  return false;
}

void DeviceSweep::Release(const Work& w, const RankFacts& facts, const Coverage& coverage, EventSink& out) {
  swept_ns_ = std::max(swept_ns_, w.start);
  // Before the open span, or before what a Flush already emitted: the sweep has passed it.
  const bool late = all_.on ? w.start < all_.start : w.start < resume_all_;
  late_ += late;
  ApiEntry* entry = w.corr ? FindApi(w.corr) : nullptr;
  const ApiSpan* api = entry ? &entry->span : nullptr;
  const bool first_of_api = entry && !entry->claimed;
  if (entry) entry->claimed = true;
  if (!all_.on && resume_all_ && w.start > resume_all_)  // after a Flush: the gap since
    Gap(resume_all_, w.start, api, false, coverage, out);
  if (!Extend(all_, w, false, out)) {  // idle from the open span's end to w.start
    Gap(all_.end, w.start, api, false, coverage, out);
    all_ = Open{true, w.start, w.end};
  }
  const bool comm = w.kind == wire::ACTIVITY_KERNEL && facts.IsCommKernel(w.name_id);
  if (!comm && !Extend(noncomm_, w, true, out)) noncomm_ = Open{true, w.start, w.end};
  out.OnDeviceWork(DeviceWork{w.start, w.end, w.bytes, w.corr, w.name_id, w.stream, w.device,
                              static_cast<wire::ActivityKind>(w.kind),
                              static_cast<wire::CopyKind>(w.copy_kind), w.pageable, comm, late, api,
                              first_of_api, w.graph_id, w.geometry});
}

void DeviceSweep::Gap(uint64_t a, uint64_t b, const ApiSpan* next_api, bool trailing, const Coverage& coverage,
                      EventSink& out) {
  if (!coverage.Covers(a, b)) return;  // CUPTI did not record in between: not a gap it saw
  // The gap after the last work has no next work: the host's syncs, else host work.
  const IdleKind kind = trailing ? (2 * BlockedNs(a, b) > b - a ? kIdleSync : kIdleHost) : Classify(a, b, next_api);
  out.OnIdle(IdleGap{a, b, kind, trailing, next_api ? next_api->start_ns : 0});
}

IdleKind DeviceSweep::Classify(uint64_t a, uint64_t b, const ApiSpan* api) {
  const uint64_t gap = b - a;
  if (2 * BlockedNs(a, b) > gap) return kIdleSync;
  if (api && api->start_ns > a && gap >= kLaunchGapNs) return kIdleHost;
  if (api && api->end_ns > a) return kIdleLaunch;
  return kIdleOther;
}

// Host-blocked time inside [a, b]: union of the sync intervals clipped to it. Intervals that
// end at or before a cannot touch a later gap (gaps come in increasing order): dropped.
uint64_t DeviceSweep::BlockedNs(uint64_t a, uint64_t b) {
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
void DeviceSweep::PruneSyncs() {
  uint64_t bound;
  if (all_.on) {
    bound = all_.end;
  } else {
    bound = newest_ns_ > lim_.horizon_ns ? newest_ns_ - lim_.horizon_ns : 0;
    if (!pending_.empty()) bound = std::min(bound, pending_.top().start);
  }
  for (auto it = syncs_.begin(); it != syncs_.end() && it->first < bound;)
    it = it->second < bound ? syncs_.erase(it) : std::next(it);
}

void DeviceSweep::ExpireApis() {
  while (!api_fifo_.empty() && (api_fifo_.size() > lim_.max_apis ||
                                api_fifo_.front().second + lim_.api_keep_ns < swept_ns_)) {
    const auto [id, end] = api_fifo_.front();
    api_fifo_.pop_front();
    auto it = apis_.find(id);
    // A widened span is erased with the record that gave it its end.
    if (it != apis_.end() && it->second.span.end_ns <= end) apis_.erase(it);
  }
}

DeviceSweep::ApiEntry* DeviceSweep::FindApi(uint32_t corr) {
  auto it = apis_.find(corr);
  return it == apis_.end() ? nullptr : &it->second;
}

}  // namespace gpuwatch::collector
