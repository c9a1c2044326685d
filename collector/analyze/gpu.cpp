// See gpu.h.
#include "analyze/gpu.h"

#include <algorithm>
#include <cmath>

#include "analyze/launches.h"

namespace gpuwatch::collector {

void GpuFigures::Merge(const GpuFigures& o) {
  cupti_ranks += o.cupti_ranks;
  events_ranks += o.events_ranks;
  work += o.work;
  active_ns += o.active_ns;
  run.Add(o.run);
  gap_count += o.gap_count;
  gaps.Merge(o.gaps);
  launch_delay.Merge(o.launch_delay);
  kernel_count += o.kernel_count;
  kernel_with_api += o.kernel_with_api;
  kernel_short += o.kernel_short;
  graph_kernels += o.graph_kernels;
  kernel_dur.Merge(o.kernel_dur);
  for (const auto& [name, st] : o.by_name) {
    auto it = by_name.find(name);
    if (it != by_name.end())
      it->second.Add(st);
    else if (by_name.size() < kMaxNames)
      by_name.emplace(name, st);
    else
      other_kernels.Add(st);
  }
  other_kernels.Add(o.other_kernels);
  comm_kernels += o.comm_kernels;
  comm_graph_ns += o.comm_graph_ns;
  coll_events.Add(o.coll_events);
  for (int i = 0; i < kCopyDirections; ++i) {
    copies[i].device.Add(o.copies[i].device);
    copies[i].pageable += o.copies[i].pageable;
  }
  late += o.late;
  overflow += o.overflow;
  unmatched += o.unmatched;
  coverage.sampled = coverage.sampled || o.coverage.sampled;
  coverage.windows += o.coverage.windows;
  // A rank recorded whole covered its whole active span.
  coverage.covered_ns += o.coverage.sampled ? o.coverage.covered_ns : o.active_ns;
  coverage.enqueues += o.coverage.enqueues;
  coverage.enqueues_in_windows += o.coverage.sampled ? o.coverage.enqueues_in_windows : o.coverage.enqueues;
}

namespace {

uint64_t Scaled(uint64_t v, double k) { return static_cast<uint64_t>(static_cast<double>(v) * k + 0.5); }

// A sum measured over the windows (`v`), of which `s` in the first: each stratum times its own
// factor (GpuCounter::UseCoverage).
uint64_t Strata(uint64_t v, uint64_t s, double k_start, double k_rest) {
  return Scaled(std::min(s, v), k_start) + Scaled(v > s ? v - s : 0, k_rest);
}
void Strata(GpuFigures::KernelStat& v, const GpuFigures::KernelStat& s, double k_start, double k_rest) {
  v.count = Strata(v.count, s.count, k_start, k_rest), v.ns = Strata(v.ns, s.ns, k_start, k_rest);
  v.in_graphs = Strata(v.in_graphs, s.in_graphs, k_start, k_rest);
}

// One piece of device work into the sums a sampled timeline scales (the run's, or the first
// window's part of them).
void CountWork(GpuFigures& f, std::unordered_map<uint32_t, GpuFigures::KernelStat>& by_id, const DeviceWork& w,
               uint64_t dur) {
  ++f.work;
  f.run.AddWork(w, dur);
  if (w.kind == wire::ACTIVITY_KERNEL) {
    if (w.comm) {
      ++f.comm_kernels;
      if (w.graph_id) f.comm_graph_ns += dur;
      return;
    }
    ++f.kernel_count;
    f.graph_kernels += w.graph_id != 0;
    // Short against its launch call: only a kernel launched on its own has a call of its
    // own (a graph's kernels share one launch).
    if (w.api && !w.graph_id) {
      ++f.kernel_with_api;
      if (dur < w.api->end_ns - w.api->start_ns) ++f.kernel_short;
    }
    auto it = by_id.find(w.name_id);
    if (it == by_id.end() && by_id.size() < GpuFigures::kMaxNames)
      it = by_id.emplace(w.name_id, GpuFigures::KernelStat{}).first;
    GpuFigures::KernelStat& k = it != by_id.end() ? it->second : f.other_kernels;
    ++k.count;
    k.ns += dur;
    k.in_graphs += w.graph_id != 0;
  } else if (w.kind == wire::ACTIVITY_MEMCPY) {
    const int d = CopyDirection(w.copy_kind);
    if (d < 0) return;
    f.copies[d].device.Note(w.bytes, dur);
    f.copies[d].pageable += w.pageable;
  }
}

// Kernels counted by name id, under their names (ids of one name merged).
void NameKernels(const RankFacts& facts, const std::unordered_map<uint32_t, GpuFigures::KernelStat>& by_id,
                 GpuFigures& f) {
  for (const auto& [id, st] : by_id) f.by_name[KernelLabel(facts, id)].Add(st);
}

// The figures of a sampled timeline, from the windows to the active span (GpuFigures::
// Coverage): device work measured in the first window times k_start, the rest times k_rest
// (`start`: the first window's part); idle follows (SpreadIdle).
void ScaleUp(GpuFigures& r, const GpuFigures& start, double k_start, double k_rest) {
  const std::pair<uint64_t*, uint64_t> sums[] = {
      {&r.run.busy, start.run.busy},         {&r.run.noncomm_busy, start.run.noncomm_busy},
      {&r.run.compute, start.run.compute},   {&r.run.comm, start.run.comm},
      {&r.run.copy, start.run.copy},         {&r.gap_count, start.gap_count},
      {&r.kernel_count, start.kernel_count}, {&r.kernel_with_api, start.kernel_with_api},
      {&r.kernel_short, start.kernel_short}, {&r.graph_kernels, start.graph_kernels},
      {&r.comm_kernels, start.comm_kernels}, {&r.comm_graph_ns, start.comm_graph_ns}, {&r.work, start.work}};
  for (const auto& [v, s] : sums) *v = Strata(*v, s, k_start, k_rest);
  Strata(r.other_kernels, start.other_kernels, k_start, k_rest);
  for (auto& [name, st] : r.by_name) {
    const auto it = start.by_name.find(name);
    Strata(st, it != start.by_name.end() ? it->second : GpuFigures::KernelStat{}, k_start, k_rest);
  }
  for (int d = 0; d < kCopyDirections; ++d) {
    Tally& c = r.copies[d].device;
    const Tally& s = start.copies[d].device;
    c.count = Strata(c.count, s.count, k_start, k_rest), c.bytes = Strata(c.bytes, s.bytes, k_start, k_rest);
    c.ns = Strata(c.ns, s.ns, k_start, k_rest);
    r.copies[d].pageable = Strata(r.copies[d].pageable, start.copies[d].pageable, k_start, k_rest);
  }
}

}  // namespace

void SpreadIdle(GpuFigures& f) {
  DeviceSlice& run = f.run;
  // An estimate that overran the span: where the windows never saw the communication beside
  // compute (one stream, all of it exposed), its time is the calls' own, measured outside the
  // windows too, and it is compute's scaled estimate that yields (a launch-bound step with its
  // all-reduce, the device ~99% busy: compute scaled 2% high reached the span, and cutting the
  // communication first zeroed it). Otherwise the exposed share is the windows', where a peer
  // slowed by its own window makes the waits longer, and it is the part cut (the span bounds it).
  if (run.busy > f.active_ns) {
    const uint64_t exposed = run.ExposedComm();
    if (run.comm && exposed >= run.comm) run.noncomm_busy = f.active_ns - std::min(exposed, f.active_ns);
    run.busy = f.active_ns;
  }
  run.noncomm_busy = std::min(run.noncomm_busy, run.busy);
  const uint64_t idle = f.active_ns - run.busy;
  const uint64_t measured = run.IdleTotal();
  if (measured == 0) run.idle[kIdleOther] = idle;
  for (uint64_t& v : run.idle)
    if (measured) v = Scaled(v, static_cast<double>(idle) / static_cast<double>(measured));
}

std::vector<std::pair<std::string, GpuFigures::KernelStat>> GpuFigures::TopByTime(size_t n) const {
  std::vector<std::pair<std::string, KernelStat>> v(by_name.begin(), by_name.end());
  n = std::min(n, v.size());
  std::partial_sort(v.begin(), v.begin() + n, v.end(), [](const auto& a, const auto& b) {
    return a.second.ns != b.second.ns ? a.second.ns > b.second.ns : a.first < b.first;
  });
  v.resize(n);
  return v;
}

void GpuCounter::OnHostCall(const HostCall& c) {
  // A call made after CUPTI stopped for good is outside the device timeline's span, not a
  // gap in its sample: counted, it made a hand-over mid-run read as sampling, and the
  // figures until the hand-over were scaled up by the calls after it.
  if ((EnqueuesWork(c.api) || c.api == wire::CUDA_LAUNCH_RUN) && !c.captured && !c.past_timeline) {
    enqueues_ += c.calls;
    enqueues_recorded_ += c.recorded ? c.calls : 0;
    if (InStart(c.t_ns)) start_.enqueues += c.calls, start_.enqueues_recorded += c.recorded ? c.calls : 0;
  }
  if (IsCollective(c.api) && !c.captured) {
    colls_.Add(c);
    if (InStart(c.t_ns)) start_.colls.Add(c);
  }
  if (!IsCollective(c.api) || !c.timed) return;
  ++f_.coll_events.count;
  f_.coll_events.ns += c.gpu_ns;
}

void GpuCounter::OnDeviceWork(const DeviceWork& w) {
  first_ = std::min(first_, w.start_ns);
  f_.series.Start(w.start_ns);  // work comes before the busy spans it makes
  f_.last_ns = std::max(f_.last_ns, w.end_ns);
  f_.late += w.late;
  if (w.correlation_id && !w.api) ++f_.unmatched;
  if (w.api) f_.launch_delay.Add(w.start_ns > w.api->end_ns ? w.start_ns - w.api->end_ns : 0);
  const uint64_t dur = w.dur_ns();
  CountWork(f_, by_id_, w, dur);
  if (w.kind == wire::ACTIVITY_KERNEL && !w.comm) f_.kernel_dur.Add(dur);
  // The stratum of the call that enqueued it: a window's last work runs after its end.
  if (InStart(w.api ? w.api->start_ns : w.start_ns)) {
    CountWork(start_.f, start_.by_id, w, dur);
    start_.device_end = std::max(start_.device_end, w.end_ns);
  }
}

void GpuCounter::OnBusy(const BusySpan& b) {
  f_.run.AddBusy(b.noncomm, b.end_ns - b.start_ns);
  // The first window's part of a span: up to where its work ended. Work arrives in start
  // order and a span is emitted once work after it has come, so every call of the first
  // window whose work starts in it has been seen. Counted whole where they started, the
  // spans that ran on past the window's close (the GPU still running what was queued before
  // it) put a whole step's busy time in the first window but only the non-NCCL spans that
  // started before the close: its exposed communication read 11.6 ms for 8.8 ms of NCCL
  // kernels, the later windows' 31% for all of it exposed (2-rank e2e run, 1 in 3).
  if (b.start_ns < start_.device_end)
    start_.f.run.AddBusy(b.noncomm, std::min(b.end_ns, start_.device_end) - b.start_ns);
  f_.series.Add(b.start_ns, b.end_ns, b.noncomm);
}

void GpuCounter::OnIdle(const IdleGap& g) {
  if (g.trailing) return;  // outside the device's active span: a step's, not the timeline's
  const uint64_t len = g.end_ns - g.start_ns;
  ++f_.gap_count;
  f_.gaps.Add(len);
  f_.run.idle[g.kind] += len;
  if (InStart(g.start_ns)) ++start_.f.gap_count, start_.f.run.idle[g.kind] += len;
}

// The calls made inside windows whose work the timeline holds: those whose device records came
// back without times (the library's gpu_records_incomplete: a detach or the exit flushed them
// unfinished) measured nothing, so the work measured stands for fewer calls. In proportion to
// the records (a graph launch's work is many records).
double GpuCounter::TimedShare(const RankFacts& facts, uint64_t timed_records) {
  const auto it = facts.dropped().find("gpu_records_incomplete");
  const uint64_t untimed = it == facts.dropped().end() ? 0 : it->second;
  if (untimed == 0 || timed_records == 0) return 1.0;
  return static_cast<double>(timed_records) / static_cast<double>(timed_records + untimed);
}

GpuFigures GpuCounter::Result(const RankFacts& facts, const DeviceSweep& sweep, const Coverage& coverage,
                              uint64_t host_first, uint64_t host_last) const {
  GpuFigures r = f_;
  r.first_ns = f_.work ? first_ : 0;
  r.active_ns = r.last_ns > r.first_ns ? r.last_ns - r.first_ns : 0;
  r.overflow = sweep.overflow();
  r.source_detail = facts.gpu_source_detail();
  const bool cupti = facts.gpu_source() == wire::GPU_SOURCE_CUPTI || r.work > 0;
  r.cupti_ranks = cupti ? 1 : 0;
  r.events_ranks = cupti ? 0 : 1;
  if (cupti) r.coll_events = {};  // CUPTI's communication kernels stand for them
  NameKernels(facts, by_id_, r);
  // Sampled: some work was launched while CUPTI was off (a run recorded whole by its first
  // window is not). Without hooked launches to tell, a window that closed says so.
  r.coverage.sampled = coverage.sampled() && r.work > 0 &&
                       (enqueues_ ? enqueues_recorded_ < enqueues_ : coverage.closed_windows() > 0);
  r.coverage.windows = coverage.windows();
  r.coverage.ended_ns = coverage.ended();
  if (coverage.ended()) host_last = std::min(host_last, coverage.ended());  // the timeline's span
  if (r.coverage.sampled && host_last > host_first) {
    r.first_ns = std::min(r.first_ns, host_first);
    r.last_ns = std::max(r.last_ns, host_last);
    r.active_ns = r.last_ns - r.first_ns;
  }
  r.coverage.covered_ns = coverage.CoveredWithin(r.first_ns, r.last_ns);
  r.coverage.enqueues = enqueues_;
  const double timed = TimedShare(facts, r.work);
  r.coverage.enqueues_in_windows =
      r.coverage.sampled ? static_cast<uint64_t>(std::llround(static_cast<double>(enqueues_recorded_) * timed))
                         : enqueues_;
  if (!r.coverage.sampled) return r;
  // In two strata where windows after the first measured enough of the rest (UseCoverage):
  // a quarter of what the first measured. Fewer, and the rest's figure rests on a few steps
  // (4-rank runs of 4 s: 600-3300 calls against 13,000, errors to 38% where one share's were
  // 17%); until then the first window's share of the sample keeps its bias small.
  const uint64_t rest = enqueues_ - start_.enqueues;
  const double rest_recorded = static_cast<double>(enqueues_recorded_ - start_.enqueues_recorded) * timed;
  const double start_recorded = static_cast<double>(start_.enqueues_recorded) * timed;
  if (coverage.first_end() && start_.f.work > 0 && start_recorded > 0 && rest_recorded >= start_recorded / 4 &&
      rest > 0) {
    GpuFigures start = start_.f;
    NameKernels(facts, start_.by_id, start);
    ScaleUp(r, start, static_cast<double>(start_.enqueues) / start_recorded, static_cast<double>(rest) / rest_recorded);
  } else {
    // One stratum; an older library in budget mode (no counts): the share of time.
    const double share = r.coverage.enqueues_in_windows ? r.coverage.WorkShare() : r.coverage_share();
    if (share > 0 && share < 1) ScaleUp(r, GpuFigures{}, 1.0, 1 / share);
  }
  CommFromCalls(r);
  SpreadIdle(r);
  return r;
}

// Each stratum's exposed share (the first window's, the later windows') of its own calls' time:
// pooled, the first window's start-up waits, long and exposed, set the share for the whole run
// (a DDP-like all-reduce under backward, on the rank that seldom waits: 0.0035-0.0105 s of
// exposed time in four runs for 0.0003-0.0013 of truth; in strata two of them exact, one 0.0028
// for 0.0006, one as pooled).
void GpuCounter::CommFromCalls(GpuFigures& r) const {
  if (colls_.timed == 0) return;
  // Exposed over all communication kernel time, of a stratum; -1 where it saw none.
  const auto exposed_share = [](uint64_t exposed, uint64_t comm) {
    return comm ? std::min(1.0, static_cast<double>(exposed) / static_cast<double>(comm)) : -1.0;
  };
  const DeviceSlice& all = f_.run;
  const DeviceSlice& first = start_.f.run;
  // (No more than its NCCL kernels' time: what ran alone is part of it.)
  const uint64_t first_exposed = std::min({first.ExposedComm(), first.comm, all.ExposedComm()});
  double s_first = exposed_share(first_exposed, first.comm);
  double s_rest = exposed_share(all.ExposedComm() - first_exposed, all.comm - std::min(all.comm, first.comm));
  if (s_first < 0) s_first = s_rest;
  if (s_rest < 0) s_rest = s_first;
  // Each stratum's calls at their own mean time, or at the run's when none of them was timed.
  const uint64_t comm_first = start_.colls.AllNs(colls_.MeanNs());
  const uint64_t comm_rest = colls_.Minus(start_.colls).AllNs(colls_.MeanNs());
  // NCCL kernels a CUDA graph replays have no call: the windows' (scaled) stand for them.
  const uint64_t comm = comm_first + comm_rest + r.comm_graph_ns;
  double exposed = 0;
  if (s_first >= 0)
    exposed = s_first * static_cast<double>(comm_first) + s_rest * static_cast<double>(comm_rest + r.comm_graph_ns);
  // Within the active span: exposed communication is time nothing else ran, which the span
  // bounds where the windows' waits (a peer slowed by its own window) would make it more.
  r.run.busy = r.run.noncomm_busy + static_cast<uint64_t>(exposed + 0.5);
  r.run.comm = comm;
}

}  // namespace gpuwatch::collector
