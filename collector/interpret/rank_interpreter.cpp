// See rank_interpreter.h.
#include "interpret/rank_interpreter.h"

#include <algorithm>

namespace gpuwatch::collector {

RankInterpreter::RankInterpreter(const RankInterpreter& o)
    : facts_(o.facts_), host_(o.host_), polls_(o.polls_), steps_(o.steps_), sweep_(o.sweep_), coverage_(o.coverage_),
      host_seen_(o.host_seen_),
      host_calls_(o.host_calls_), host_first_(o.host_first_), host_last_(o.host_last_) {}

void RankInterpreter::OnHello(const wire::Hello& h) {
  facts_.OnHello(h);
  steps_.OnHello(h);
}

HostCall RankInterpreter::Interpret(const wire::Event& e) const {
  HostCall c;
  c.t_ns = e.t_ns();
  c.dur_ns = e.dur_ns();
  c.bytes = e.bytes();
  c.stream = e.stream();
  c.comm_id = e.comm_id();
  c.seq = e.seq();
  c.gpu_ns = e.gpu_ns();
  c.peer = e.peer();
  c.tid = e.tid();
  c.flags = e.flags();
  c.name_id = e.name_id();
  c.site_id = e.site_id();
  c.address = e.address();
  c.total_bytes = e.total_bytes();
  c.api = e.api();
  c.copy_kind = e.copy_kind();
  if (c.api == wire::CUDA_LAUNCH_RUN) {
    c.calls = e.calls();
    c.calls_ns = e.calls_ns();
  }
  c.captured = InCapture(c.flags);
  c.sync_kind = c.captured ? kNotSync : SyncKindOf(c.api, c.flags, c.bytes, c.copy_kind);
  c.blocks_host = !c.captured && BlocksHost(c.api, c.flags);
  c.comm_nranks = 0;
  c.comm_hash = 0;
  c.comm_rank = 0;
  c.comm_identified = false;
  c.coll_bytes = 0;
  c.timed = false;
  if (IsCollective(c.api)) {
    const CommFacts* comm = facts_.Comm(c.comm_id);
    c.comm_nranks = comm ? comm->nranks : facts_.world_size();
    c.comm_hash = comm ? comm->unique_hash : c.comm_id;
    c.comm_rank = comm ? comm->rank : 0;
    c.comm_identified = comm && comm->Identified();
    const bool gathered = c.api == wire::NCCL_ALL_GATHER || c.api == wire::NCCL_REDUCE_SCATTER;
    c.coll_bytes = gathered ? c.bytes * static_cast<uint64_t>(std::max(c.comm_nranks, 1)) : c.bytes;
    c.timed = c.gpu_ns > 0 && !HasFlag(c.flags, wire::FLAG_NO_GPU_TIME);
  }
  return c;
}

void RankInterpreter::OnBatch(const wire::Batch& b) {
  facts_.OnBatch(b);
  steps_.NoteNames(b);
  // The overhead budget's windows, before the host calls and device work they cover.
  for (const auto& w : b.cupti_windows()) coverage_.AddWindow(w.start_ns(), w.end_ns());
  if (b.has_overhead()) {
    coverage_.SetSampled(b.overhead().cupti_mode() == wire::CUPTI_MODE_BUDGET);
    cupti_off_ = b.overhead().cupti_mode() == wire::CUPTI_MODE_OFF;
    coverage_.SetOpenSince(b.cupti_window_open_since_ns());
  }
  if (b.cupti_ended_ns()) coverage_.SetEnded(b.cupti_ended_ns());
  for (const auto& s : b.proc_samples()) fanout_.OnProcSample(s);
  for (const auto& s : b.device_samples()) fanout_.OnDeviceSample(s);
  for (const auto& s : b.host_samples()) fanout_.OnThreadSample(ThreadSample{s.t_ns(), s.tid(), s.stack_id(), s.in_cuda()});
  for (const auto& t : b.launch_tallies()) fanout_.OnLaunchTally(t);
  for (const auto& e : b.events()) {
    HostCall c = Interpret(e);
    if (HasFlag(c.flags, wire::FLAG_FAILED)) {
      ++host_calls_;
      fanout_.OnFailedCall(c);
      continue;
    }
    polls_.Fold(c);
    // The batch's windows came first: they hold every call in it (the library decides a
    // window after draining the calls it sends with it). With CUPTI off no call has device
    // records to go with it (the trace draws its launches as bursts). Nor has a call made
    // after CUPTI stopped for good (it comes in the batch that drains the first such call).
    c.past_timeline = coverage_.PastEnd(c.t_ns);
    // A run of launches is made outside the windows by definition (the library records
    // every launch while one is open).
    c.recorded = !cupti_off_ && c.api != wire::CUDA_LAUNCH_RUN && coverage_.Covers(c.t_ns, c.t_ns);
    host_calls_ += c.calls;
    host_first_ = std::min(host_first_, c.t_ns);
    host_last_ = std::max(host_last_, c.end_ns());
    // The gap classification needs them before the device sweep reaches them.
    if (c.blocks_host && coverage_.Touches(c.t_ns, c.end_ns())) sweep_.AddBlocked(c.t_ns, c.end_ns(), facts_.gpu_source());
    host_.Hold(c);
  }
  host_seen_ = host_seen_ || b.events_size() > 0;
  host_.Settle(b.settled_ns());
  ReleaseHost(false);
  // API records first, so that work of the same batch finds them.
  for (const auto& a : b.activities())
    if (a.kind() == wire::ACTIVITY_API) sweep_.AddApi(a);
  for (const auto& a : b.activities())
    if (IsDeviceWork(a.kind())) sweep_.AddWork(a);
  sweep_.Advance(host_seen_ ? host_.released_until() : UINT64_MAX, facts_, coverage_, fanout_);
}

void RankInterpreter::OnGoodbye(const wire::Goodbye& g) {
  facts_.OnGoodbye(g);
  ReleaseHost(true);
}

void RankInterpreter::Flush() {
  ReleaseHost(true);
  steps_.Flush(coverage_, sweep_.swept_ns(), fanout_);
  sweep_.Flush(steps_.last_step_end(), facts_, coverage_, fanout_);
}

void RankInterpreter::ReleaseHost(bool all) {
  host_.Release(all, [this](const HostCall& c) {
    fanout_.OnHostCall(c);
    steps_.OnHostCall(c, coverage_, sweep_.swept_ns(), fanout_);
  });
}

void RankInterpreter::Fanout::OnHostCall(const HostCall& c) {
  for (EventSink* s : sinks) s->OnHostCall(c);
}
void RankInterpreter::Fanout::OnFailedCall(const HostCall& c) {
  for (EventSink* s : sinks) s->OnFailedCall(c);
}
void RankInterpreter::Fanout::OnDeviceWork(const DeviceWork& w) {
  for (EventSink* s : sinks) s->OnDeviceWork(w);
}
void RankInterpreter::Fanout::OnBusy(const BusySpan& b) {
  for (EventSink* s : sinks) s->OnBusy(b);
}
void RankInterpreter::Fanout::OnIdle(const IdleGap& g) {
  for (EventSink* s : sinks) s->OnIdle(g);
}
void RankInterpreter::Fanout::OnStep(const StepMark& m) {
  for (EventSink* s : sinks) s->OnStep(m);
}
void RankInterpreter::Fanout::OnStepsReset() {
  for (EventSink* s : sinks) s->OnStepsReset();
}
void RankInterpreter::Fanout::OnProcSample(const wire::ProcSample& p) {
  for (EventSink* s : sinks) s->OnProcSample(p);
}
void RankInterpreter::Fanout::OnDeviceSample(const wire::DeviceSample& d) {
  for (EventSink* s : sinks) s->OnDeviceSample(d);
}
void RankInterpreter::Fanout::OnThreadSample(const ThreadSample& t) {
  for (EventSink* s : sinks) s->OnThreadSample(t);
}
void RankInterpreter::Fanout::OnDeviceSettled(uint64_t ns) {
  for (EventSink* s : sinks) s->OnDeviceSettled(ns);
}
void RankInterpreter::Fanout::OnLaunchTally(const wire::LaunchTally& t) {
  for (EventSink* s : sinks) s->OnLaunchTally(t);
}

}  // namespace gpuwatch::collector
