// One batch from the rings: ticks to ns, collectives held back, the settled time, then the
// definitions, samples and drop counts, in the order the wire has always had them.
#include "assemble/assembler.h"

#include <algorithm>

#include "record/record.h"
#include "record/registry.h"
#include "transport/wire_fields.h"

namespace gpuwatch::inject {
namespace {

HostEvent ToHostEvent(const Record& r, uint32_t tid, const TimeBase& time, const KernelNames& names) {
  HostEvent e;
  e.api = r.api;
  e.copy_kind = r.copy_kind;
  e.flags = r.flags;
  e.name_id = r.name_id;
  e.site_id = r.site_id;
  e.tid = tid;
  e.t_ns = time.ToNs(r.t_ticks);
  e.dur_ns = time.DurationNs(r.dur_ticks);
  e.bytes = r.bytes;
  e.stream = r.stream;
  e.comm_id = r.comm_id;
  e.peer = r.peer;
  if (r.api == kApiMemGetInfo) {
    e.total_bytes = r.seq;
  } else if (IsMemoryApi(r.api)) {
    e.address = r.seq;
  } else if (LaunchesKernel(r.api)) {
    if (r.seq != 0) e.name_id = names.Find(reinterpret_cast<const void*>(r.seq));  // named here (record.h)
  } else {
    e.seq = r.seq;
  }
  return e;
}

// A call that returned only once the device had finished what was queued before it started:
// a stream or device sync, a copy to or from host memory that blocked the host.
bool WaitedForQueue(const Record& r) {
  return r.api == kApiStreamSynchronize || r.api == kApiDeviceSynchronize ||
         (r.api == kApiMemcpy && (r.flags & kFlagBlockedHost) != 0);
}

}  // namespace

Assembler::Assembler(const Sources& s)
    : time_(*s.time), names_(*s.definitions.names), held_(*s.time, *s.pairs), definitions_(s.definitions) {}

const Assembler::Batch& Assembler::AssembleBatch(std::span<Ring* const> rings, const Cycle& in) {
  batch_.body.clear();
  batch_.events = batch_.activities = batch_.tallied = 0;
  batch_.drained = {};
  AppendBatchSeq(batch_.body, ++seq_);
  const size_t seq_only = batch_.body.size();
  uint64_t settled = InFlightFloorNs(rings);  // before the drain: see InFlightFloorNs
  // A thread's open run of launches is taken once it went quiet; until then the settled
  // time stays before its start (its marker will come with the thread's next call).
  uint64_t open_run_ticks = UINT64_MAX;
  for (Ring* ring : rings) {
    const uint32_t tid = ring->tid.load(std::memory_order_relaxed);
    ring->Drain([&](const Record& r) { TakeRecord(r, *ring, tid, in); });
    TakeRun(ring->launches.TakeQuietRun(in.now_ticks, in.run_quiet_ticks, in.final, &open_run_ticks), tid, in);
  }
  if (open_run_ticks != UINT64_MAX) settled = std::min(settled, time_.ToNs(open_run_ticks));
  AppendTallies(rings);
  if (in.poll_activities) in.poll_activities(batch_.drained, [&](const ActivityRecord& a) { TakeActivity(a); });
  held_.Release(in.final, in.cupti_live, kernels_, [&](const HostEvent& e) { AppendEventNow(e); });
  settled = std::min(settled, held_.EarliestStartNs());
  if (batch_.events > 0) AppendBatchSettled(batch_.body, settled);
  const bool had_data = batch_.events + batch_.activities + batch_.tallied > 0;
  const uint64_t frames_lost = in.drops.collector_unreachable + in.drops.spool_full + in.drops.gpu_records_unsent;
  definitions_.AppendDue(batch_.body, in.gpu_source, in.gpu_source_detail, frames_lost);
  if (in.append_samples) in.append_samples(batch_.body, batch_.drained);
  const uint64_t drops = AppendDropCounts(batch_.body, field::batch::kDropped, CountDrops(rings, in.drops));
  const bool drops_changed = drops != drops_sent_;
  drops_sent_ = drops;
  batch_.worth_sending = had_data || drops_changed || batch_.body.size() > seq_only;
  if (!batch_.worth_sending) --seq_;  // nothing to send: the number is reused
  return batch_;
}

DropCounts Assembler::CountDrops(std::span<Ring* const> rings, DropCounts others) {
  others.ring_full = 0;
  for (const Ring* ring : rings) others.ring_full += ring->dropped();
  return others;
}

// Three kinds of event go out later with an earlier start: a call still inside its hook
// (syncs, collectives and copies mark themselves in their ring until after their record is
// in it), a collective held for its GPU time, and a call that does not mark itself and
// straddles the drain (kUntrackedCallNs). Read before the drain, so a call that returns
// during it is either in flight or already in its ring.
uint64_t Assembler::InFlightFloorNs(std::span<Ring* const> rings) const {
  const uint64_t now = time_.NowNs();
  uint64_t floor = now > kUntrackedCallNs ? now - kUntrackedCallNs : 0;
  for (const Ring* ring : rings) {
    const uint64_t since = ring->inflight.since_ticks.load(std::memory_order_acquire);
    if (since != 0) floor = std::min(floor, time_.ToNs(since));
  }
  return floor;
}

void Assembler::TakeRun(const LaunchSummary::Run& run, uint32_t tid, const Cycle& in) {
  if (run.count == 0) return;
  HostEvent e;
  e.api = kApiLaunchRun;
  e.tid = tid;
  e.t_ns = time_.ToNs(run.first_ticks);
  e.dur_ns = time_.DurationNs(run.end_ticks - run.first_ticks);
  e.calls = run.count;
  e.calls_ns = time_.DurationNs(run.ticks);
  // As TakeRecord counts launches one by one; outside the windows, none is recorded.
  CuptiBudget::Cycle& d = batch_.drained;
  const bool lingering = in.cupti_linger.Contains(e.t_ns);
  d.hook_calls += run.count;
  d.enqueues += run.count;
  if (lingering) d.linger_enqueues += run.count;
  (lingering ? d.linger_launches : d.launches)
      .AddMany(run.count, run.count - run.stalls, time_.DurationNs(run.timed_ticks));
  AppendEventNow(e);
}

void Assembler::AppendTallies(std::span<Ring* const> rings) {
  for (Ring* ring : rings)
    ring->launches.TakeTallies([&](uint8_t api, uintptr_t kernel, uint64_t launches, uint64_t ticks) {
      const uint32_t name_id = kernel > 1 ? names_.Find(reinterpret_cast<const void*>(kernel)) : 0;
      definitions_.UseName(name_id);
      AppendLaunchTally(batch_.body, api, name_id, launches, time_.DurationNs(ticks));
      batch_.tallied += launches;
    });
}

void Assembler::TakeRecord(const Record& r, Ring& ring, uint32_t tid, const Cycle& in) {
  if (r.api == kLaunchRun) {
    TakeRun(ring.launches.FromMarker(r), tid, in);
    return;
  }
  const HostEvent e = ToHostEvent(r, tid, time_, names_);
  CuptiBudget::Cycle& d = batch_.drained;
  if (r.api != kGroupEnd) ++d.hook_calls;
  // What the overhead budget counts: every call that ran device work (one recorded into a
  // graph ran none, and returns sooner than a launch does), and the times of kernel launches
  // and of graph launches (CUPTI's cost on each is measured apart: enrich/cupti_budget.h);
  // kernel launches made while CUPTI lingered after a window apart again, neither in nor out.
  if (EnqueuesDeviceWork(r.api) && (r.flags & kFlagInCapture) == 0) {
    ++d.enqueues;
    const bool lingering = in.cupti_linger.Contains(e.t_ns);
    if (in.cupti_recorded.Holds(e.t_ns, e.t_ns + e.dur_ns)) {
      d.recorded_enqueue_ns = std::max(d.recorded_enqueue_ns, e.t_ns);
      ++d.recorded_enqueues;
      d.recorded_graph_launches += r.api == kApiGraphLaunch;
    }
    d.linger_enqueues += lingering;
    if (LaunchesKernel(r.api)) (lingering ? d.linger_launches : d.launches).Add(e.dur_ns);
    if (r.api == kApiGraphLaunch) d.graph_launches.Add(e.dur_ns);
  }
  if (WaitedForQueue(r)) d.queue_drained_ns = std::max(d.queue_drained_ns, e.t_ns);
  if (r.api == kGroupEnd) {
    held_.CloseGroup(r.event_slot, e.t_ns + e.dur_ns);
    return;
  }
  if (r.event_slot != 0) {
    held_.Hold(e, r.event_slot, (r.flags & kFlagInGroup) != 0);
    return;
  }
  definitions_.UseSite(e.site_id, batch_.body);
  definitions_.UseName(e.name_id);
  AppendEventNow(e);
}

void Assembler::TakeActivity(const ActivityRecord& a) {
  const bool device_work = a.device_work();
  batch_.drained.device_records += device_work;
  batch_.drained.graph_records += device_work && a.graph_id != 0;
  kernels_.Observe(a);
  definitions_.UseName(a.name_id);
  AppendActivity(batch_.body, a);
  ++batch_.activities;
}

void Assembler::AppendEventNow(const HostEvent& e) {
  AppendEvent(batch_.body, e);
  ++batch_.events;
}

}  // namespace gpuwatch::inject
