// See rank_trace.h.
#include "trace/rank_trace.h"

#include "interpret/native_frames.h"
#include "interpret/python_frames.h"

#include <algorithm>

#include "common/api_names.h"
#include "common/bus_factor.h"
#include "common/format.h"
#include "common/kernel_names.h"
#include "common/time_shift.h"

namespace gpuwatch::collector {
namespace {

using perfetto::protos::TrackEvent;
using perfetto::protos::TracePacket;

// Local track ids (uuid = base sequence id << kLocalBits | local): small uuids keep
// descriptors short.
constexpr int kLocalBits = 14;
constexpr uint32_t kProcessLocal = 0;
constexpr int kHostLanes = 8;
constexpr uint32_t kThreadBase = 1;         // + thread index * kHostLanes + lane (512 threads)
constexpr uint32_t kApiBase = 0x1001;       // + lane
constexpr uint32_t kBusyLocal = 0x1011, kH2dLocal = 0x1012;  // then the NVML and memory counters, up to 0x101c
constexpr uint32_t kStepsLocal = 0x1020;    // + lane
constexpr uint32_t kIdleLocal = 0x1030;     // + lane
constexpr uint32_t kPathLocal = 0x1040;     // + lane
constexpr uint32_t kStreamBase = 0x1100;    // + stream index * kMaxLanes + lane (512 streams)
constexpr uint32_t kSampledBase = 0x3100;   // + sampled thread index (kMaxSampledThreads)
// Each base has room for its lanes: no two tracks of a rank share a uuid.
static_assert(kThreadBase + 512 * 8 <= kApiBase && kApiBase + RankTrace::kMaxLanes <= kBusyLocal &&
              kBusyLocal + RankTrace::kCounterTracks <= kStepsLocal && kStepsLocal + RankTrace::kMaxLanes <= kIdleLocal &&
              kIdleLocal + RankTrace::kMaxLanes <= kPathLocal && kPathLocal + RankTrace::kMaxLanes <= kStreamBase &&
              kStreamBase + 512 * RankTrace::kMaxLanes <= kSampledBase &&
              kSampledBase + RankTrace::kMaxSampledThreads <= (1u << 14));
constexpr size_t kMaxNameChars = 200;

// Keys of RankTrace::iid_cache_: a kernel (or NVTX message) id, or a copy's
// (api, kind, pageable), tagged by what is named.
constexpr uint32_t kIdMask = (uint32_t{1} << 29) - 1;
constexpr uint32_t kDeviceKey = uint32_t{1} << 31, kCopyKey = uint32_t{1} << 30,
                   kNvtxKey = uint32_t{1} << 29;
constexpr uint32_t kStackKey = kCopyKey | kNvtxKey;  // a Python stack's id (host samples)
constexpr uint32_t kApiKey = kDeviceKey | kCopyKey | kNvtxKey;  // a host call named by its API

// In Key order (rank_trace.h). A step's figures are those of summary.json's per_step_ms.
const char* const kKeyNames[] = {"bytes",          "blocking",           "seq",
                                 "busbw_gbps",     "peer",               "step",
                                 "gpu_compute_ms", "comm_not_overlapped_ms", "idle_host_wait_ms",
                                 "idle_launch_wait_ms", "idle_sync_wait_ms", "idle_other_ms",
                                 "host_blocked_in_syncs_ms", "copies_ms",          "graph_id",
                                 "nccl_overlapped_ms", "nccl_exposed_ms", "launches",
                                 "launch_calls_ms", "ms_per_step",      "share"};

const char* CopyDir(int kind) {
  switch (kind) {
    case wire::COPY_H2D: return "H2D";
    case wire::COPY_D2H: return "D2H";
    case wire::COPY_D2D: return "D2D";
    case wire::COPY_H2H: return "H2H";
    default: return "?";
  }
}

// "cudaMemcpyAsync H2D · pageable": pinned or pageable is part of the (interned) name, which
// costs nothing per event, where an annotation would cost ~6 bytes.
// Counter values: busy ns in a window -> percent; H2D bytes in a 10 ms window -> MB/s.
int64_t BusyPct(double busy_ns) {
  return std::min<int64_t>(100, static_cast<int64_t>(busy_ns * 100 / CounterWindows::kWindowNs + 0.5));
}
int64_t H2dMBps(double bytes) { return static_cast<int64_t>((bytes + 5000) / 10000); }

std::string CopyName(const char* what, int kind, bool pageable) {
  if (kind != wire::COPY_H2D && kind != wire::COPY_D2H) return Printf("%s %s", what, CopyDir(kind));
  return Printf("%s %s · %s", what, CopyDir(kind), pageable ? "pageable" : "pinned");
}

}  // namespace

RankTrace::RankTrace(TraceFile* file, TraceIds* ids, int32_t trace_pid, const wire::Hello& hello,
                     Limits limits)
    : file_(file), ids_(ids), seq_(ids->next_sequence++), pid_(trace_pid), hello_(hello),
      lim_(limits), names_(limits.max_names), keys_(std::size(kKeyNames)) {
  lim_.max_threads = std::min<size_t>(lim_.max_threads, 512);
  if (const TraceOptions& o = file_->options(); o.has_window()) {
    detail_from_ = hello.start_ns() + static_cast<uint64_t>(o.window_from_s * 1e9);
    detail_to_ = hello.start_ns() + static_cast<uint64_t>(o.window_to_s * 1e9);
  }
  lim_.max_streams = std::min<size_t>(lim_.max_streams, 512);
  for (const char* k : kKeyNames) keys_.Iid(k);
  last_level_ = file_->level();
  DescribeProcess();
  Write();
}

uint64_t RankTrace::Uuid(uint32_t local) const {
  return (static_cast<uint64_t>(seq_) << kLocalBits) | local;
}

TracePacket& RankTrace::NewPacket(uint64_t ts) {
  if (!packet_ || ++arena_packets_ >= kArenaPackets) {
    packet_ = nullptr;
    arena_.Reset();
    packet_ = google::protobuf::Arena::CreateMessage<TracePacket>(&arena_);
    arena_packets_ = 0;
  } else {
    packet_->Clear();
  }
  TracePacket& p = *packet_;
  packet_ts_ = ts;
  p.set_timestamp(ShiftNs(ts, file_->options().test_clock_skew_ns));
  p.set_trusted_packet_sequence_id(seq_);
  if (first_packet_) {
    p.set_sequence_flags(TracePacket::SEQ_INCREMENTAL_STATE_CLEARED |
                         TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
    p.set_first_packet_on_sequence(true);
    first_packet_ = false;
  }
  return p;
}

void RankTrace::Write(size_t reserve_after, TracePart part) {
  file_->NoteTime(part, packet_ts_);
  file_->Append(*packet_, reserve_after, part);
}

void RankTrace::DescribeProcess() {
  TracePacket& p = NewPacket(hello_.start_ns());
  auto* d = p.mutable_track_descriptor();
  d->set_uuid(Uuid(kProcessLocal));
  d->set_child_ordering(perfetto::protos::TrackDescriptor::EXPLICIT);
  auto* proc = d->mutable_process();
  proc->set_pid(pid_);
  proc->set_process_name(Printf("rank %d · %s · pid %d", hello_.rank(),
                                Clip(hello_.host(), 64).c_str(), hello_.pid()));
  proc->add_process_labels(Printf("job %s", Clip(hello_.job_id(), 64).c_str()));
  proc->add_process_labels(Printf("device %d", hello_.device()));
  // Each detail segment repeats it: its tracks' parent, so a segment alone is a trace too.
  file_->AddDetailPreamble(p.SerializeAsString());
}

template <class TrackName>
bool RankTrace::Slice(uint32_t base_local, Lanes& lanes, int32_t order, TracePart part, uint64_t start,
                      uint64_t end, uint32_t name, const Ann* anns, int n_anns, uint64_t flow_out,
                      uint64_t flow_in, const TrackName& track_name) {
  end = std::max(end, start);
  const int cap = base_local < kApiBase ? kHostLanes : kMaxLanes;
  int lane = 0;
  const int used = static_cast<int>(lanes.seqs.size());
  while (lane < used && start < lanes.last_end[lane]) ++lane;
  if (lane == used) {
    if (lane >= cap) {
      ++dropped_slices_;
      return false;
    }
    const std::string track = track_name();
    const uint64_t uuid = Uuid(base_local + lane);
    lanes.seqs.emplace_back(ids_, uuid,
                            TrackDescriptorBytes(uuid, Uuid(kProcessLocal),
                                                 lane == 0 ? track : Printf("%s · overlap %d", track.c_str(), lane),
                                                 order + lane));
  }
  lanes.last_end[lane] = end;
  lanes.seqs[lane].WriteSlice(*file_, part, names_, keys_,
                              {start, end, name, anns, n_anns, flow_out, flow_in}, scratch_);
  return true;
}

template <class MakeName>
uint32_t RankTrace::CachedIid(uint32_t key, const MakeName& make) {
  auto it = iid_cache_.find(key);
  if (it != iid_cache_.end()) return it->second;
  const uint32_t iid = names_.Iid(make());
  if (iid_cache_.size() < 2 * lim_.max_names) iid_cache_.emplace(key, iid);
  return iid;
}

void RankTrace::Instant(uint64_t ts, const std::string& name) {
  if (file_->level() == TraceLevel::kOff) return;
  TracePacket& p = NewPacket(ts);
  auto* te = p.mutable_track_event();
  te->set_type(TrackEvent::TYPE_INSTANT);
  te->set_track_uuid(Uuid(kProcessLocal));
  te->set_name(name);
  Write();
}

void RankTrace::WriteSteps(const std::deque<StepRec>& steps, size_t from, uint64_t first_index, bool figures,
                           const std::vector<OverlapTally>& overlap) {
  if (file_->level() == TraceLevel::kOff) return;
  uint64_t index = first_index;
  const uint32_t name = names_.Iid("step");  // one name, the number as an argument
  for (size_t k = from; k < steps.size(); ++k) {
    const StepRec& s = steps[k];
    Ann anns[7 + kIdleKinds];  // step, compute, comm, idle by kind, syncs, copies, NCCL overlapped and exposed
    int n = 0;
    anns[n++] = {kKeyStep, Ann::kUint, index++, 0};
    if (figures && s.covered) {  // under the overhead budget, only the steps a window held whole have figures
      auto ms = [&](uint32_t key, uint64_t ns) { anns[n++] = {key, Ann::kDouble, 0, static_cast<double>(ns) * 1e-6}; };
      ms(kKeyCompute, s.dev.compute);
      ms(kKeyCommExposed, s.dev.ExposedComm());
      for (int i = 0; i < kIdleKinds; ++i) ms(kKeyIdle0 + i, s.dev.idle[i]);
      ms(kKeySyncMid, s.sync_mid);
      ms(kKeyCopies, s.dev.copy);
      if (k < overlap.size()) {  // HTA's comm-compute overlap (summary.json comm_overlap)
        ms(kKeyNcclOverlapped, overlap[k].overlapped_ns);
        ms(kKeyNcclExposed, overlap[k].ExposedNs());
      }
    }
    // Steps follow each other: an NVTX range's end and the next one's start come from two
    // stamps converted to ns apiece, and may overlap by a rounding nanosecond, which would
    // put every such step on a lane of its own.
    const uint64_t start = std::max(s.start, std::min(step_lanes_.last_end[0], s.end));
    Slice(kStepsLocal, step_lanes_, static_cast<int32_t>(kStepsLocal), TracePart::kSummary, start, s.end, name, anns, n, 0, 0,
          [] { return std::string("steps"); });
  }
  file_->Flush();
}

void RankTrace::WriteCriticalPath(const CriticalPathFigures& c, const StepRec& step,
                                  const std::vector<PathSegment>& segments) {
  if (file_->level() == TraceLevel::kOff || !c.known() || step.end <= step.start) return;
  const auto slice = [&](uint64_t start, uint64_t end, int part, double ms, double share) {
    const Ann anns[2] = {{kKeyPathMs, Ann::kDouble, 0, ms}, {kKeyPathShare, Ann::kDouble, 0, share}};
    const uint32_t name = names_.Iid(Printf("%s %.3g ms", PathPartWords(part), ms));
    Slice(kPathLocal, path_lanes_, static_cast<int32_t>(kPathLocal), TracePart::kSummary, start, end, name, anns, 2, 0, 0,
          [] { return std::string("critical path"); });
  };
  if (!segments.empty()) {
    const double span = static_cast<double>(step.end - step.start);
    for (const PathSegment& s : segments)
      slice(s.start_ns, s.end_ns, s.part, static_cast<double>(s.end_ns - s.start_ns) * 1e-6,
            static_cast<double>(s.end_ns - s.start_ns) / span);
    file_->Flush();
    return;
  }
  double total = 0;
  for (double ms : c.part_ms) total += ms;
  if (total <= 0) return;
  const std::vector<int> order = c.PartsLargestFirst();
  const double span = static_cast<double>(step.end - step.start);
  uint64_t at = step.start;
  double done = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const int p = order[k];
    done += c.part_ms[p];
    // The last part ends at the step's end exactly: no rounding gap.
    const uint64_t end = k + 1 == order.size() ? step.end : step.start + static_cast<uint64_t>(span * done / total);
    slice(at, end, p, c.part_ms[p], c.part_ms[p] / total);
    at = end;
  }
  file_->Flush();
}

bool RankTrace::Detail(uint64_t t) const {
  return file_->level() == TraceLevel::kFull && t >= detail_from_ && t < detail_to_;
}

void RankTrace::CheckLevel() {
  const TraceLevel now = file_->level();
  if (now == last_level_) return;
  last_level_ = now;
  if (now != TraceLevel::kSummary) return;
  // Full detail stopped at the size cap: say so where it happened.
  Instant(newest_device_ns_ ? newest_device_ns_ : hello_.start_ns(),
          "trace size cap reached: from here only syncs, copies, collectives, counters");
}

void RankTrace::AfterBatch() {
  CheckLevel();
  file_->Flush();
}

void RankTrace::OnHostCall(const HostCall& c) {
  if (file_->level() == TraceLevel::kOff) return;
  if (c.api >= wire::CUDA_MALLOC && c.api <= wire::CUDA_MALLOC_MANAGED) {
    memory_.OnHostCall(c);
    EmitCounter(kMemory, c.end_ns(), static_cast<int64_t>(memory_.reserved_bytes() >> 20));
  }
  const bool run = c.api == wire::CUDA_LAUNCH_RUN;  // launches the library summarized
  const bool launch = run || c.api == wire::CUDA_LAUNCH_KERNEL || c.api == wire::CUDA_DRIVER_LAUNCH_KERNEL;
  if (c.blocks_host && c.dur_ns >= kLongStallNs) LongStall(c);
  if (launch && !Detail(c.t_ns)) return;
  const size_t ti = ThreadIndex(c.tid);
  if (run || (launch && !c.recorded)) {
    AddToBurst(ti, c);
    return;
  }
  CloseBurst(ti);
  Ann anns[4];
  int n = 0;
  uint32_t name;
  if (IsCopy(c.api)) {
    const bool pageable = HasFlag(c.flags, wire::FLAG_PAGEABLE);
    name = CachedIid(kCopyKey | (c.api << 8) | (c.copy_kind << 1) | pageable,
                     [&] { return CopyName(ApiName(c.api), c.copy_kind, pageable); });
    anns[n++] = {kKeyBytes, Ann::kUint, c.bytes, 0};
    if (HasFlag(c.flags, wire::FLAG_BLOCKED_HOST)) anns[n++] = {kKeyBlocking, Ann::kBool, 1, 0};
  } else if (IsCollective(c.api)) {
    name = CachedIid(kApiKey | c.api, [&] { return std::string(ApiName(c.api)); });
    anns[n++] = {kKeyBytes, Ann::kUint, c.coll_bytes, 0};
    anns[n++] = {kKeySeq, Ann::kUint, c.seq, 0};
    if (c.timed)
      anns[n++] = {kKeyBusbw, Ann::kDouble, 0,
                   static_cast<double>(c.coll_bytes) * BusFactor(c.api, c.comm_nranks) / static_cast<double>(c.gpu_ns)};
    if (c.api >= wire::NCCL_BROADCAST) anns[n++] = {kKeyPeer, Ann::kUint, static_cast<uint64_t>(c.peer), 0};
  } else if (launch) {
    name = CachedIid(c.name_id & kIdMask, [&] { return "launch " + KernelName(c.name_id); });
  } else if (c.api == wire::NVTX_RANGE) {
    name = CachedIid(kNvtxKey | (c.name_id & kIdMask), [&] { return "NVTX " + KernelName(c.name_id); });
  } else {
    name = CachedIid(kApiKey | c.api, [&] { return std::string(ApiName(c.api)); });
  }
  const uint32_t base = kThreadBase + static_cast<uint32_t>(ti * kHostLanes);
  Slice(base, thread_lanes_[ti], static_cast<int32_t>(base), launch ? TracePart::kDetail : TracePart::kSummary,
        c.t_ns, c.end_ns(), name, anns, n, 0, 0,
        [&] { return ThreadTrackName(ti); });
}

void RankTrace::AddToBurst(size_t ti, const HostCall& c) {
  LaunchBurst& b = bursts_[ti];
  if (b.count > 0 && (c.t_ns > b.end + kBurstGapNs || c.end_ns() > b.start + kBurstMaxNs)) CloseBurst(ti);
  if (b.count == 0) b.start = c.t_ns;
  b.end = std::max(b.end, c.end_ns());
  const bool run = c.api == wire::CUDA_LAUNCH_RUN;
  b.calls_ns += run ? c.calls_ns : c.dur_ns;
  b.count += c.calls;
}

void RankTrace::CloseBurst(size_t ti) {
  LaunchBurst& b = bursts_[ti];
  if (b.count == 0) return;
  const Ann anns[2] = {{kKeyLaunches, Ann::kUint, b.count, 0},
                       {kKeyLaunchCallsMs, Ann::kDouble, 0, static_cast<double>(b.calls_ns) / 1e6}};
  const uint32_t base = kThreadBase + static_cast<uint32_t>(ti * kHostLanes);
  Slice(base, thread_lanes_[ti], static_cast<int32_t>(base), TracePart::kDetail, b.start, b.end,
        names_.Iid("kernel launches (outside CUPTI windows)"), anns, 2, 0, 0,
        [&] { return ThreadTrackName(ti); });
  b = LaunchBurst{};
}

void RankTrace::LongStall(const HostCall& c) {
  if (long_stalls_++ >= kMaxStallInstants) return;
  Instant(c.t_ns, Printf("long stall: %s blocked the host %s (thread %u)", ApiName(c.api),
                         FmtDuration(static_cast<double>(c.dur_ns) / 1e9).c_str(), c.tid));
}

void RankTrace::OnDeviceWork(const DeviceWork& w) {
  if (file_->level() == TraceLevel::kOff) return;
  newest_device_ns_ = std::max(newest_device_ns_, w.end_ns);
  if (w.kind == wire::ACTIVITY_MEMCPY && w.copy_kind == wire::COPY_H2D)
    windows_[kH2d].Add(w.start_ns, w.end_ns, static_cast<double>(w.bytes),
                       [this](uint64_t ts, double bytes) { EmitCounter(kH2d, ts, H2dMBps(bytes)); });
  if (!Detail(w.start_ns)) return;

  // The launching call, drawn with its first work, and a flow from it to the work.
  uint64_t flow = 0;
  if (w.api && w.first_of_api) {
    flow = ids_->next_flow++;
    EmitApi(*w.api, flow);
  }
  Ann anns[2];
  int n = 0;
  uint32_t name;
  // A graph's work: the flow above comes from its graph launch (one per launch, to the
  // first node), and every node says which graph it belongs to.
  if (w.graph_id) anns[n++] = {kKeyGraph, Ann::kUint, w.graph_id, 0};
  if (w.kind == wire::ACTIVITY_KERNEL) {
    name = CachedIid(kDeviceKey | (w.name_id & kIdMask), [&] { return KernelName(w.name_id); });
  } else if (w.kind == wire::ACTIVITY_MEMCPY) {
    name = CachedIid(kDeviceKey | kCopyKey | (w.copy_kind << 1) | w.pageable,
                     [&] { return CopyName("Memcpy", w.copy_kind, w.pageable); });
    anns[n++] = {kKeyBytes, Ann::kUint, w.bytes, 0};
  } else {
    name = names_.Iid("Memset");
    anns[n++] = {kKeyBytes, Ann::kUint, w.bytes, 0};
  }
  const size_t si = StreamIndex(w.device, w.stream);
  const uint32_t base = kStreamBase + static_cast<uint32_t>(si * kMaxLanes);
  if (!Slice(base, stream_lanes_[si], static_cast<int32_t>(base), TracePart::kDetail, w.start_ns, w.end_ns, name,
             anns, n, 0, flow,
             [&] {
               const auto [dev, stream] = stream_ids_[si];
               return dev == w.device && stream == w.stream ? Printf("GPU %d · stream %u", dev, stream)
                                                            : std::string("GPU · other streams");
             }) &&
      flow) {
    // The flow started on the API slice: end it there so no arrow dangles.
    TracePacket& p = NewPacket(w.start_ns);
    auto* te = p.mutable_track_event();
    te->set_type(TrackEvent::TYPE_INSTANT);
    te->set_track_uuid(Uuid(kProcessLocal));
    te->set_name("device work dropped from the trace (lanes full)");
    te->add_terminating_flow_ids_old(flow);
    Write(0, TracePart::kDetail);
  }
}

void RankTrace::OnBusy(const BusySpan& b) {
  if (b.noncomm || file_->level() == TraceLevel::kOff) return;
  windows_[kBusy].Add(b.start_ns, b.end_ns, static_cast<double>(b.end_ns - b.start_ns),
                      [this](uint64_t ts, double busy_ns) { EmitCounter(kBusy, ts, BusyPct(busy_ns)); });
}

void RankTrace::OnIdle(const IdleGap& g) {
  // Inside the device's active span only, as gpu.idle_breakdown_s counts them.
  if (g.trailing || !Detail(g.start_ns)) return;
  const uint32_t name =
      CachedIid(kDeviceKey | kNvtxKey | g.kind, [&] { return std::string("idle: ") + IdleKindKey(g.kind); });
  Slice(kIdleLocal, idle_lanes_, static_cast<int32_t>(kIdleLocal), TracePart::kDetail, g.start_ns, g.end_ns, name, nullptr, 0, 0, 0,
        [] { return std::string("GPU idle"); });
}

void RankTrace::EmitApi(const ApiSpan& span, uint64_t flow_out) {
  if (!Slice(kApiBase, api_lanes_, static_cast<int32_t>(kApiBase), TracePart::kDetail, span.start_ns, span.end_ns,
             names_.Iid("CUDA API"), nullptr, 0, flow_out, 0,
             [] { return std::string("CUDA API (CUPTI)"); }) &&
      flow_out) {
    TracePacket& p = NewPacket(span.start_ns);  // start the flow somewhere so it still ends
    auto* te = p.mutable_track_event();
    te->set_type(TrackEvent::TYPE_INSTANT);
    te->set_track_uuid(Uuid(kProcessLocal));
    te->set_name("CUDA API record dropped from the trace (lanes full)");
    te->add_flow_ids_old(flow_out);
    Write(0, TracePart::kDetail);
  }
}

void RankTrace::EmitCounter(int i, uint64_t ts, int64_t value) {
  if (file_->level() == TraceLevel::kOff) return;
  if (!counters_[i]) {  // described at its first value: a device without NVLink shows no NVLink track
    static const struct {
      const char* name;
      const char* unit;
    } kNames[kCounters] = {{"GPU busy % (10 ms)", "%"},       {"H2D MB/s (10 ms)", "MB/s"},
                           {"NVML GPU utilization %", "%"},  {"NVML SM clock MHz", "MHz"},
                           {"NVML power W", "W"},             {"NVML temperature C", "C"},
                           {"memory reserved MiB", "MiB"},   {"NVML memory used MiB", "MiB"},
                           {"NVML PCIe TX MB/s", "MB/s"},     {"NVML PCIe RX MB/s", "MB/s"},
                           {"NVML NVLink TX MB/s", "MB/s"},   {"NVML NVLink RX MB/s", "MB/s"}};
    const uint64_t uuid = Uuid(kBusyLocal + i);
    counters_[i].emplace(ids_, uuid,
                         TrackDescriptorBytes(uuid, Uuid(kProcessLocal), kNames[i].name,
                                              static_cast<int32_t>(kBusyLocal + i), kNames[i].unit));
  }
  if (value == last_value_[i]) return;  // a counter holds its value until the next sample
  last_value_[i] = value;
  counters_[i]->WriteCounter(*file_, value, ts, scratch_);
}

void RankTrace::OnHang(const Hang& h) {
  std::string name = Printf("hang: thread %u inside %s", h.tid, h.api.c_str());
  if (h.collective) name += Printf(" seq %llu", static_cast<unsigned long long>(h.seq));
  name += Printf(" (%.0f s when found)", h.inside_s);
  Instant(h.since_ns, name);
  file_->Flush();
}

void RankTrace::OnDeviceSample(const wire::DeviceSample& s) {
  EmitCounter(kDevUtil, s.t_ns(), s.gpu_util_pct());
  EmitCounter(kSmClock, s.t_ns(), s.sm_clock_mhz());
  EmitCounter(kPower, s.t_ns(), s.power_mw() / 1000);
  EmitCounter(kTemperature, s.t_ns(), s.temperature_c());
  EmitCounter(kDevMemory, s.t_ns(), static_cast<int64_t>(s.memory_used_bytes() >> 20));
  EmitCounter(kPcieTx, s.t_ns(), s.pcie_tx_kbps() / 1000);  // NVML's KB/s
  EmitCounter(kPcieRx, s.t_ns(), s.pcie_rx_kbps() / 1000);
  if (s.nvlink_rate_links()) {  // no counters: no values, rather than a flat 0
    EmitCounter(kNvlinkTx, s.t_ns(), static_cast<int64_t>(s.nvlink_tx_bytes_per_s() / 1000000));
    EmitCounter(kNvlinkRx, s.t_ns(), static_cast<int64_t>(s.nvlink_rx_bytes_per_s() / 1000000));
  }
}

// A sampled thread's track: a slice per run of samples with the same stack, named by its
// user frame (interpret/python_frames.h), from its first sample to the next different one
// (or one period past its last, after a pause in sampling).
void RankTrace::OnThreadSample(const ThreadSample& s) {
  if (file_->level() == TraceLevel::kOff) return;
  auto it = sampled_.find(s.tid);
  if (it == sampled_.end()) {
    if (sampled_threads_.size() >= kMaxSampledThreads) return;
    it = sampled_.emplace(s.tid, sampled_threads_.size()).first;
    sampled_threads_.emplace_back();
    sampled_threads_.back().tid = s.tid;
  }
  const size_t index = it->second;
  SampledThread& t = sampled_threads_[index];
  const uint64_t period = SamplePeriodNs();
  if (t.open && t.stack == s.stack_id && s.t_ns <= t.last + 3 * period) {
    t.last = s.t_ns;
    return;
  }
  if (t.open) CloseSampleSlice(index, s.t_ns <= t.last + 3 * period ? s.t_ns : t.last + period);
  t = SampledThread{std::move(t.lanes), s.tid, s.t_ns, s.t_ns, s.stack_id, true};
}

uint64_t RankTrace::SamplePeriodNs() const {
  const double hz = facts_ ? facts_->sampling().hz : 0;
  return hz > 0 ? static_cast<uint64_t>(1e9 / hz) : 10'000'000;
}

void RankTrace::CloseSampleSlice(size_t index, uint64_t end) {
  SampledThread& t = sampled_threads_[index];
  t.open = false;
  const uint32_t stack = t.stack;
  // Native stacks (a thread without Python) have ids from 2^30 up, Python ones below 2^28.
  const std::string* blocked_in = facts_ && stack ? facts_->NativeBlockedIn(stack) : nullptr;
  const uint32_t key = blocked_in ? (uint32_t{1} << 28) | (stack & ((uint32_t{1} << 28) - 1)) : stack & kIdMask;
  const uint32_t name = CachedIid(kStackKey | key, [&] {
    const std::vector<std::string>* frames = facts_ && stack ? facts_->Stack(stack) : nullptr;
    if (!frames || frames->empty()) return std::string(blocked_in ? kNoFrame : kNoPythonFrame);
    if (!blocked_in) return Clip(UserFrame(*frames), kMaxNameChars);
    const std::string where = UserNativeFrame(*frames);
    return Clip(blocked_in->empty() ? where : where + " [" + *blocked_in + "]", kMaxNameChars);
  });
  const uint32_t tid = t.tid;
  Slice(kSampledBase + static_cast<uint32_t>(index), t.lanes, static_cast<int32_t>(kSampledBase + index),
        TracePart::kSummary, t.start,
        end, name, nullptr, 0, 0, 0, [tid] { return Printf("python · thread %u (sampled)", tid); });
}

void RankTrace::Finish() {
  CheckLevel();  // the cap may have been reached after the last batch
  for (size_t i = 0; i < bursts_.size(); ++i) CloseBurst(i);
  for (size_t i = 0; i < sampled_threads_.size(); ++i)
    if (sampled_threads_[i].open) CloseSampleSlice(i, sampled_threads_[i].last + SamplePeriodNs());
  windows_[kBusy].Drain([this](uint64_t ts, double busy_ns) { EmitCounter(kBusy, ts, BusyPct(busy_ns)); });
  windows_[kH2d].Drain([this](uint64_t ts, double bytes) { EmitCounter(kH2d, ts, H2dMBps(bytes)); });
  file_->Flush();
}

std::string RankTrace::KernelName(uint32_t id) const {
  const std::string* n = facts_ ? facts_->Name(id) : nullptr;
  return n ? Clip(DemangleName(*n), kMaxNameChars) : Printf("kernel#%u", id);
}

std::string RankTrace::ThreadTrackName(size_t ti) const {
  return thread_tids_[ti] == UINT32_MAX ? std::string("other threads") : Printf("thread %u", thread_tids_[ti]);
}

size_t RankTrace::ThreadIndex(uint32_t tid) {
  if (tid == last_tid_) return last_ti_;  // most calls come from one thread
  auto it = threads_.find(tid);
  if (it != threads_.end()) {
    last_tid_ = tid;
    return last_ti_ = it->second;
  }
  if (thread_tids_.size() + 1 >= lim_.max_threads) {  // the last index is shared
    if (thread_tids_.size() + 1 == lim_.max_threads) {
      thread_tids_.push_back(UINT32_MAX);
      thread_lanes_.emplace_back();
      bursts_.emplace_back();
    }
    return lim_.max_threads - 1;
  }
  thread_tids_.push_back(tid);
  thread_lanes_.emplace_back();
  bursts_.emplace_back();
  return threads_[tid] = thread_tids_.size() - 1;
}

size_t RankTrace::StreamIndex(int32_t device, uint32_t stream) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(device)) << 32) | stream;
  auto it = streams_.find(key);
  if (it != streams_.end()) return it->second;
  if (stream_ids_.size() + 1 >= lim_.max_streams) {
    if (stream_ids_.size() + 1 == lim_.max_streams) {
      stream_ids_.emplace_back(-1, UINT32_MAX);
      stream_lanes_.emplace_back();
    }
    return lim_.max_streams - 1;
  }
  stream_ids_.emplace_back(device, stream);
  stream_lanes_.emplace_back();
  return streams_[key] = stream_ids_.size() - 1;
}

}  // namespace gpuwatch::collector
