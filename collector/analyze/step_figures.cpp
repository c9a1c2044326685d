// See step_figures.h.
#include "analyze/step_figures.h"

#include <algorithm>
#include <numeric>

#include "common/thresholds.h"

namespace gpuwatch::collector {

namespace {
// The latest graph launches kept for the steps that will hold them (bounded).
constexpr size_t kMaxPendingLaunches = 1 << 16;
// Collectives waiting for their step's mark (bounded: a run with no steps keeps the latest).
constexpr size_t kMaxPendingColls = 1024;
// Syncs kept for the steps still to be marked: the latest (a pattern locks within a few
// dozen steps), and at most this many pending between two calls that put work on the GPU.
constexpr size_t kMaxMidSyncs = 4096, kMaxPendingSyncs = 4096;
}  // namespace

uint64_t StepFigures::SyncMidNs() const { return std::accumulate(sync_mid_ns.begin(), sync_mid_ns.end(), uint64_t{0}); }
uint64_t StepFigures::SyncMidCount() const {
  return std::accumulate(sync_mid_count.begin(), sync_mid_count.end(), uint64_t{0});
}

void StepCharger::OnHostCall(const HostCall& c) {
  if (c.api == wire::NVTX_RANGE) return;
  if (c.api == wire::CUDA_GRAPH_LAUNCH && !c.captured) {
    graph_launches_.push_back(c.t_ns);
    if (graph_launches_.size() > kMaxPendingLaunches) graph_launches_.pop_front();
  }
  if (IsCollective(c.api) && !c.captured) {
    colls_.push_back({c.t_ns, c.gpu_ns, c.timed});
    if (colls_.size() > kMaxPendingColls) {
      colls_taken_until_ = std::max(colls_taken_until_, colls_.front().t_ns);
      colls_.pop_front();
    }
  }
  if (c.sync_kind != kNotSync) {
    if (pending_.size() >= kMaxPendingSyncs) pending_.erase(pending_.begin());
    pending_.push_back({c.end_ns(), c.dur_ns, c.sync_kind, UINT64_MAX});
    return;
  }
  // Work follows (a call that puts work on the device, or a collective; not stream
  // ordering, queries, allocations and frees — a teardown frees after its final synchronize —
  // or calls recorded into a graph): the syncs before it were inside the step.
  if (c.captured || !(EnqueuesWork(c.api) || IsCollective(c.api) || c.api == wire::CUDA_LAUNCH_RUN)) return;
  for (Sync& s : pending_) {
    f_.sync_mid_ns[s.kind] += s.ns;
    ++f_.sync_mid_count[s.kind];
    s.work_ns = c.t_ns;
    if (mids_.size() >= kMaxMidSyncs) mids_.pop_front();
    mids_.push_back(s);
  }
  pending_.clear();
}

StepFigures StepCharger::figures() const {
  StepFigures f = f_;
  std::vector<uint64_t> done;
  f.pace = pace_.Finish(done);
  for (size_t k = 0; k < f.steps.size() && k < done.size(); ++k) f.steps[k].done = done[k];
  return f;
}

void StepCharger::OnStep(const StepMark& m) {
  pace_.OnStep(m);
  // Syncs still pending that ended in the step were its trailing syncs (not a stall).
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [&](const Sync& s) { return s.end_ns <= m.end_ns; }),
                 pending_.end());
  ++seen_;
  // Graph launches by their time: every call that starts before the step's end has come
  // (host calls arrive in start order, steps at their end). Kept, not taken: steps found
  // again after a reset (interpret/step_finder.h) count them again.
  const auto& gl = graph_launches_;
  const uint64_t launches = static_cast<uint64_t>(std::upper_bound(gl.begin(), gl.end(), m.end_ns) -
                                                  std::lower_bound(gl.begin(), gl.end(), m.start_ns));
  if (f_.steps.size() < kMaxSteps) {
    StepRec s;
    s.start = m.start_ns;
    s.end = m.end_ns;
    // The syncs that ended in the step and that work of the step followed (mids_ is in
    // order of end).
    auto it = std::lower_bound(mids_.begin(), mids_.end(), m.start_ns,
                               [](const Sync& x, uint64_t t) { return x.end_ns < t; });
    for (; it != mids_.end() && it->end_ns <= m.end_ns; ++it)
      if (it->work_ns <= m.end_ns) s.sync_mid += it->ns, ++s.sync_mid_count;
    s.graph_launches = launches;
    s.covered = m.device_covered;
    f_.steps.push_back(s);
  } else if (seen_ == kMaxSteps + 1) {
    stop_ = f_.steps.back().end;  // the per-step records end here
  }
  TakeCollectives(m);
}

// The collectives called before the step's end: those before its start to the step before
// (which holds the time until this one starts), the rest to it. Only kept steps record them.
void StepCharger::TakeCollectives(const StepMark& m) {
  const bool kept = seen_ <= kMaxSteps;
  StepRec* prev = kept && f_.steps.size() >= 2 ? &f_.steps[f_.steps.size() - 2] : nullptr;
  StepRec* cur = kept ? &f_.steps.back() : nullptr;
  if (cur) cur->coll_known = m.start_ns >= colls_taken_until_;
  while (!colls_.empty() && colls_.front().t_ns <= m.end_ns) {
    const Coll& k = colls_.front();
    StepRec* to = k.t_ns >= m.start_ns ? cur : prev;
    if (to && to->coll_known) to->colls.Add(k.gpu_ns, k.timed);
    colls_taken_until_ = std::max(colls_taken_until_, k.t_ns);
    colls_.pop_front();
  }
}

void StepCharger::OnStepsReset() {
  pace_.Reset();
  f_.steps.clear();
  f_.charged_until = 0;
  seen_ = 0;
  cursor_ = 0;
  stop_ = UINT64_MAX;
}

// The step holding time t: the last step that started at or before t. Steps before the
// cursor are not looked at again (the device stream moves forward in time).
DeviceSlice* StepCharger::At(uint64_t t) {
  auto& steps = f_.steps;
  if (steps.empty() || t < steps[0].start || t >= stop_) return nullptr;
  if (cursor_ >= steps.size()) cursor_ = steps.size() - 1;
  while (cursor_ > 0 && steps[cursor_].start > t) --cursor_;
  while (cursor_ + 1 < steps.size() && steps[cursor_ + 1].start <= t) ++cursor_;
  return &steps[cursor_].dev;
}

// [a, b) split over the steps it overlaps (step k spans [start_k, start_k+1)).
template <typename Add>
void StepCharger::Split(uint64_t a, uint64_t b, Add add) {
  auto& steps = f_.steps;
  if (b <= a || steps.empty()) return;
  At(a);  // moves the cursor
  size_t k = a < steps[0].start ? 0 : cursor_;
  for (; k < steps.size(); ++k) {
    const uint64_t s0 = steps[k].start;
    const uint64_t s1 = k + 1 < steps.size() ? steps[k + 1].start : stop_;
    const uint64_t lo = std::max(a, s0), hi = std::min(b, s1);
    if (hi > lo) {
      add(steps[k].dev, hi - lo);
      f_.charged_until = std::max(f_.charged_until, hi);
    }
    if (s1 >= b) break;
  }
}

void StepCharger::OnDeviceWork(const DeviceWork& w) {
  pace_.OnDeviceWork(w.api ? w.api->start_ns : w.start_ns, w.end_ns);
  if (DeviceSlice* s = At(w.start_ns)) {
    s->AddWork(w, w.dur_ns());
    f_.charged_until = std::max(f_.charged_until, w.end_ns);
  }
}

void StepCharger::OnBusy(const BusySpan& b) {
  Split(b.start_ns, b.end_ns, [&](DeviceSlice& d, uint64_t n) { d.AddBusy(b.noncomm, n); });
}

void StepCharger::OnIdle(const IdleGap& g) {
  Split(g.start_ns, g.end_ns, [&](DeviceSlice& d, uint64_t n) { d.idle[g.kind] += n; });
}

}  // namespace gpuwatch::collector
