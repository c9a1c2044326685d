// See steps_timeline.h. The reorder window and gap rules follow analyze/gpu_timeline.cpp;
// what is new is charging each figure to a step and the host/launch split of idle gaps.
#include "analyze/steps_timeline.h"

#include <algorithm>

#include "analyze/gpu_timeline.h"
#include "analyze/input_io.h"
#include "analyze/thresholds.h"

namespace gpuwatch::collector::diag {

void DeviceSlice::Add(const DeviceSlice& o) {
  busy += o.busy;
  noncomm_busy += o.noncomm_busy;
  compute += o.compute;
  comm += o.comm;
  copy += o.copy;
  for (int i = 0; i < kIdleKinds; ++i) idle[i] += o.idle[i];
}

namespace {

bool HostBlocked(const wire::Event& e) {
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

}  // namespace

void StepTimeline::OnBatch(const wire::Batch& batch) {
  for (const auto& k : batch.kernel_names())
    if (comm_names_.size() < (1u << 20) || comm_names_.count(k.id()))
      comm_names_[k.id()] = IsCommKernelName(k.name());
  if (batch.gpu_source() != wire::GPU_SOURCE_UNSPECIFIED) source_ = batch.gpu_source();
  for (const auto& e : batch.events()) {
    if (!HostBlocked(e) || e.dur_ns() == 0) continue;
    // Only gaps use them; with no device timeline coming (as gpu_timeline.cpp) there are none.
    if (source_ == wire::GPU_SOURCE_EVENTS && !all_.on && pending_.empty()) continue;
    syncs_.emplace(e.t_ns(), e.t_ns() + e.dur_ns());
    while (syncs_.size() > kMaxSyncs) syncs_.erase(syncs_.begin());
  }
  for (const auto& a : batch.activities()) {
    if (a.kind() != wire::ACTIVITY_API || a.correlation_id() == 0) continue;
    const uint64_t end = std::max(a.end_ns(), a.start_ns());
    auto [it, fresh] = apis_.try_emplace(a.correlation_id(), Span{a.start_ns(), end});
    if (!fresh) {
      it->second.start = std::min(it->second.start, a.start_ns());
      it->second.end = std::max(it->second.end, end);
    }
    api_fifo_.emplace_back(a.correlation_id(), end);
  }
  for (const auto& a : batch.activities()) {
    const auto kind = a.kind();
    if (kind != wire::ACTIVITY_KERNEL && kind != wire::ACTIVITY_MEMCPY &&
        kind != wire::ACTIVITY_MEMSET)
      continue;
    Work w{a.start_ns(), std::max(a.end_ns(), a.start_ns()), a.correlation_id(),
           static_cast<uint8_t>(kind), false};
    if (kind == wire::ACTIVITY_KERNEL) {
      auto it = comm_names_.find(a.name_id());
      w.comm = it != comm_names_.end() && it->second;
    }
    first_ = std::min(first_, w.start);
    last_ = std::max(last_, w.end);
    newest_ = std::max(newest_, w.end);
    pending_.push(w);
  }
  Advance();
}

void StepTimeline::Advance() {
  while (pending_.size() > kMaxPending) {
    const Work w = pending_.top();
    pending_.pop();
    Release(w);
  }
  if (newest_ > kHorizonNs) {
    const uint64_t mark = newest_ - kHorizonNs;
    while (!pending_.empty() && pending_.top().start < mark) {
      const Work w = pending_.top();
      pending_.pop();
      Release(w);
    }
  }
  while (!api_fifo_.empty() &&
         (api_fifo_.size() > kMaxApis || api_fifo_.front().second + kApiKeepNs < swept_)) {
    auto it = apis_.find(api_fifo_.front().first);
    if (it != apis_.end() && it->second.end <= api_fifo_.front().second) apis_.erase(it);
    api_fifo_.pop_front();
  }
  const uint64_t bound = all_.on ? all_.end : 0;
  if (gap_sink_) gap_sink_->Settle(bound);  // gaps start at the end of the open busy span or later
  for (auto it = syncs_.begin(); it != syncs_.end() && it->first < bound;)
    it = it->second < bound ? syncs_.erase(it) : std::next(it);
}

void StepTimeline::Flush() {
  while (!pending_.empty()) {
    const Work w = pending_.top();
    pending_.pop();
    Release(w);
  }
  // The GPU idle after its last work until the last step closed (e.g. host work at the
  // end of the run): no later work ends that gap, so it is charged here.
  if (all_.on && steps_ && !steps_->empty() && steps_->back().end > all_.end) {
    const uint64_t a = all_.end, b = steps_->back().end;
    ChargeIdle(a, b, 2 * BlockedNs(a, b) > b - a ? kIdleSync : kIdleHost);
  }
  for (Open* o : {&all_, &noncomm_}) {
    if (!o->on) continue;
    Charge(o->start, o->end, o == &all_ ? &DeviceSlice::busy : &DeviceSlice::noncomm_busy);
    o->on = false;
  }
}

// The step holding time t: the last step that started at or before t. Steps before the
// sweep's cursor are not looked at again (the sweep moves forward in time).
DeviceSlice* StepTimeline::At(uint64_t t) {
  if (!steps_ || steps_->empty() || t < (*steps_)[0].start || t >= stop_) return nullptr;
  if (cursor_ >= steps_->size()) cursor_ = steps_->size() - 1;
  while (cursor_ > 0 && (*steps_)[cursor_].start > t) --cursor_;
  while (cursor_ + 1 < steps_->size() && (*steps_)[cursor_ + 1].start <= t) ++cursor_;
  return &(*steps_)[cursor_].dev;
}

void StepTimeline::Release(const Work& w) {
  ++work_;
  swept_ = std::max(swept_, w.start);
  auto extend = [&](Open& o, bool is_all) {
    if (!o.on) {
      o = Open{true, w.start, w.end};
      return;
    }
    if (w.start <= o.end) {
      o.end = std::max(o.end, w.end);
      return;
    }
    Charge(o.start, o.end, is_all ? &DeviceSlice::busy : &DeviceSlice::noncomm_busy);
    if (is_all) Gap(o.end, w);
    o = Open{true, w.start, w.end};
  };
  extend(all_, true);
  if (!w.comm) extend(noncomm_, false);

  DeviceSlice* s = At(w.start);
  const uint64_t dur = w.end - w.start;
  uint64_t DeviceSlice::*field = w.kind == wire::ACTIVITY_KERNEL
                                     ? (w.comm ? &DeviceSlice::comm : &DeviceSlice::compute)
                                     : &DeviceSlice::copy;
  total_.*field += dur;
  if (s) s->*field += dur;
  if (w.kind == wire::ACTIVITY_KERNEL && !w.comm) {
    ++kernels_;
    auto it = w.corr ? apis_.find(w.corr) : apis_.end();
    if (it != apis_.end()) {
      ++with_api_;
      if (dur < it->second.end - it->second.start) ++short_;
    }
  }
}

void StepTimeline::Gap(uint64_t a, const Work& next) {
  const uint64_t gap = next.start - a;
  Idle kind = kIdleOther;
  auto it = next.corr ? apis_.find(next.corr) : apis_.end();
  if (2 * BlockedNs(a, next.start) > gap) {
    kind = kIdleSync;
  } else if (it != apis_.end() && it->second.end > a) {
    kind = (it->second.start > a && gap >= kLaunchGapNs) ? kIdleHost : kIdleLaunch;
  }
  (void)gap;
  ChargeIdle(a, next.start, kind);
}

// [a, b) split over the steps it overlaps (step k spans [start_k, start_k+1)); the run
// total gets all of it.
template <typename Add>
void StepTimeline::Split(uint64_t a, uint64_t b, Add add) {
  if (b <= a) return;
  if (!steps_ || steps_->empty()) return;
  At(a);  // moves the cursor
  size_t k = cursor_;
  if (a < (*steps_)[0].start) k = 0;
  for (; k < steps_->size(); ++k) {
    const uint64_t s0 = (*steps_)[k].start;
    const uint64_t s1 = k + 1 < steps_->size() ? (*steps_)[k + 1].start : stop_;
    const uint64_t lo = std::max(a, s0), hi = std::min(b, s1);
    if (hi > lo) add((*steps_)[k].dev, hi - lo);
    if (s1 >= b) break;
  }
}

void StepTimeline::Charge(uint64_t a, uint64_t b, uint64_t DeviceSlice::*field) {
  if (b <= a) return;
  total_.*field += b - a;
  Split(a, b, [field](DeviceSlice& d, uint64_t n) { d.*field += n; });
}

void StepTimeline::ChargeIdle(uint64_t a, uint64_t b, int kind) {
  if (b <= a) return;
  if (kind == kIdleHost && gap_sink_) gap_sink_->OnGap(a, b);
  total_.idle[kind] += b - a;
  Split(a, b, [kind](DeviceSlice& d, uint64_t n) { d.idle[kind] += n; });
}

uint64_t StepTimeline::BlockedNs(uint64_t a, uint64_t b) {
  uint64_t total = 0, cs = 0, ce = 0;
  bool have = false;
  for (auto it = syncs_.begin(); it != syncs_.end() && it->first < b; ++it) {
    if (it->second <= a) continue;
    const uint64_t s = std::max(it->first, a), e = std::min(it->second, b);
    if (have && s <= ce) {
      ce = std::max(ce, e);
      continue;
    }
    if (have) total += ce - cs;
    have = true;
    cs = s;
    ce = e;
  }
  if (have) total += ce - cs;
  return total;
}

}  // namespace gpuwatch::collector::diag
