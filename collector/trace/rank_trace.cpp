#include "trace/rank_trace.h"

#include <algorithm>
#include <numeric>

#include "analyze/api_names.h"
#include "analyze/bus_factor.h"
#include "analyze/gpu_timeline.h"  // DemangleName
#include "report/format.h"

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
constexpr uint32_t kBusyLocal = 0x1011, kH2dLocal = 0x1012, kStepsLocal = 0x1013;
constexpr uint32_t kStreamBase = 0x1100;    // + stream index * kMaxLanes + lane (512 streams)
constexpr size_t kMaxNameChars = 200;

// Keys of RankTrace::iid_cache_: a kernel (or NVTX message) id, or a copy's
// (api, kind, pageable), tagged by what is named.
constexpr uint32_t kIdMask = (uint32_t{1} << 29) - 1;
constexpr uint32_t kDeviceKey = uint32_t{1} << 31, kCopyKey = uint32_t{1} << 30,
                   kNvtxKey = uint32_t{1} << 29;

// In Key order (rank_trace.h).
const char* const kKeyNames[] = {"bytes", "blocking", "seq", "busbw_gbps", "peer", "step"};

bool IsCollectiveApi(wire::Api a) { return a >= wire::NCCL_ALL_REDUCE && a <= wire::NCCL_RECV; }

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
  p.set_timestamp(ts);
  p.set_trusted_packet_sequence_id(seq_);
  if (first_packet_) {
    p.set_sequence_flags(TracePacket::SEQ_INCREMENTAL_STATE_CLEARED |
                         TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
    p.set_first_packet_on_sequence(true);
    first_packet_ = false;
  }
  return p;
}

void RankTrace::Write(size_t reserve_after) { file_->Append(*packet_, reserve_after); }

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
}

void RankTrace::DescribeTrack(uint32_t local, const std::string& name, int32_t order) {
  TracePacket& p = NewPacket(hello_.start_ns());
  auto* d = p.mutable_track_descriptor();
  d->set_uuid(Uuid(local));
  d->set_parent_uuid(Uuid(kProcessLocal));
  d->set_name(name);
  d->set_sibling_order_rank(order);
  d->set_sibling_merge_behavior(perfetto::protos::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
  Write();
}

void RankTrace::DescribeCounter(uint32_t local, const std::string& name, const char* unit) {
  TracePacket& p = NewPacket(hello_.start_ns());
  auto* d = p.mutable_track_descriptor();
  d->set_uuid(Uuid(local));
  d->set_parent_uuid(Uuid(kProcessLocal));
  d->set_name(name);
  d->set_sibling_order_rank(static_cast<int32_t>(local));
  d->mutable_counter()->set_unit_name(unit);
  Write();
}

template <class TrackName>
bool RankTrace::Slice(uint32_t base_local, Lanes& lanes, int32_t order, uint64_t start,
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
    DescribeTrack(base_local + lane,
                  lane == 0 ? track : Printf("%s · overlap %d", track.c_str(), lane),
                  order + lane);
    lanes.seqs.emplace_back(ids_->next_sequence++, Uuid(base_local + lane));
  }
  lanes.last_end[lane] = end;
  lanes.seqs[lane].WriteSlice(*file_, names_, keys_,
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

void RankTrace::WriteSteps(const std::vector<std::pair<uint64_t, uint64_t>>& steps,
                           uint64_t first_index) {
  if (file_->level() == TraceLevel::kOff) return;
  uint64_t index = first_index;
  const uint32_t name = names_.Iid("step");  // one name, the number as an argument
  for (const auto& [start, end] : steps) {
    const Ann ann{kKeyStep, Ann::kUint, index++, 0};
    Slice(kStepsLocal, step_lanes_, static_cast<int32_t>(kStepsLocal), start, end, name, &ann,
          1, 0, 0, [] { return std::string("steps"); });
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

void RankTrace::OnBatch(const wire::Batch& batch) {
  CheckLevel();
  if (file_->level() == TraceLevel::kOff) return;
  for (const auto& c : batch.communicators())
    if (comm_nranks_.size() < lim_.max_comms || comm_nranks_.count(c.comm_id()))
      comm_nranks_[c.comm_id()] = c.nranks();
  for (const auto& k : batch.kernel_names()) {
    if (kernel_names_.size() >= lim_.max_names && !kernel_names_.count(k.id())) continue;
    kernel_names_[k.id()] = Clip(DemangleName(k.name().substr(0, 4096)), kMaxNameChars);
    // A name that arrives after its first use replaces the "kernel#N" stand-in from here on.
    const uint32_t id = k.id() & kIdMask;
    for (uint32_t key : {id, id | kDeviceKey, id | kNvtxKey}) iid_cache_.erase(key);
  }
  // In time order within the batch: fewer lanes.
  std::vector<int> order(batch.events_size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return batch.events(a).t_ns() < batch.events(b).t_ns();
  });
  for (int i : order) OnEvent(batch.events(i));

  for (const auto& a : batch.activities())
    if (a.kind() == wire::ACTIVITY_API && Detail(a.start_ns())) AddApi(a);
  order.resize(batch.activities_size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return batch.activities(a).start_ns() < batch.activities(b).start_ns();
  });
  for (int i : order) {
    const auto& a = batch.activities(i);
    if (a.kind() == wire::ACTIVITY_KERNEL || a.kind() == wire::ACTIVITY_MEMCPY ||
        a.kind() == wire::ACTIVITY_MEMSET)
      OnDeviceWork(a);
  }
  ExpireApis(false);
  file_->Flush();
}

void RankTrace::OnEvent(const wire::Event& e) {
  const bool collective = IsCollectiveApi(e.api());
  const bool copy = e.api() == wire::CUDA_MEMCPY || e.api() == wire::CUDA_MEMCPY_ASYNC;
  const bool launch = e.api() == wire::CUDA_LAUNCH_KERNEL;
  const bool blocks = (e.api() >= wire::CUDA_STREAM_SYNCHRONIZE && e.api() <= wire::CUDA_EVENT_SYNCHRONIZE) ||
                      (e.flags() & wire::FLAG_BLOCKED_HOST);
  if (blocks && e.dur_ns() >= kLongStallNs) LongStall(e);
  if (launch && !Detail(e.t_ns())) return;
  const size_t ti = ThreadIndex(e.tid());
  Ann anns[4];
  int n = 0;
  uint32_t name;
  if (copy) {
    const bool pageable = e.flags() & wire::FLAG_PAGEABLE;
    name = CachedIid(kCopyKey | (e.api() << 8) | (e.copy_kind() << 1) | pageable,
                     [&] { return CopyName(ApiName(e.api()), e.copy_kind(), pageable); });
    anns[n++] = {kKeyBytes, Ann::kUint, e.bytes(), 0};
    if (e.flags() & wire::FLAG_BLOCKED_HOST) anns[n++] = {kKeyBlocking, Ann::kBool, 1, 0};
  } else if (collective) {
    name = names_.Iid(ApiName(e.api()));
    auto it = comm_nranks_.find(e.comm_id());
    const int nranks = it != comm_nranks_.end() ? it->second : hello_.world_size();
    uint64_t s_bytes = e.bytes();
    if (e.api() == wire::NCCL_ALL_GATHER || e.api() == wire::NCCL_REDUCE_SCATTER)
      s_bytes *= static_cast<uint64_t>(std::max(nranks, 1));
    anns[n++] = {kKeyBytes, Ann::kUint, s_bytes, 0};
    anns[n++] = {kKeySeq, Ann::kUint, e.seq(), 0};
    if (e.gpu_ns() > 0 && !(e.flags() & wire::FLAG_NO_GPU_TIME))
      anns[n++] = {kKeyBusbw, Ann::kDouble, 0,
                   static_cast<double>(s_bytes) * BusFactor(e.api(), nranks) /
                       static_cast<double>(e.gpu_ns())};
    if (e.api() >= wire::NCCL_BROADCAST) anns[n++] = {kKeyPeer, Ann::kUint,
                                                      static_cast<uint64_t>(e.peer()), 0};
  } else if (launch) {
    name = CachedIid(e.name_id() & kIdMask, [&] { return "launch " + KernelName(e.name_id()); });
  } else if (e.api() == wire::NVTX_RANGE) {
    name = CachedIid(kNvtxKey | (e.name_id() & kIdMask),
                     [&] { return "NVTX " + KernelName(e.name_id()); });
  } else {
    name = names_.Iid(ApiName(e.api()));
  }
  const uint32_t base = kThreadBase + static_cast<uint32_t>(ti * kHostLanes);
  Slice(base, thread_lanes_[ti], static_cast<int32_t>(base), e.t_ns(), e.t_ns() + e.dur_ns(),
        name, anns, n, 0, 0, [&] {
          return ti + 1 == lim_.max_threads && thread_tids_[ti] != e.tid()
                     ? std::string("other threads")
                     : Printf("thread %u", e.tid());
        });
}

void RankTrace::LongStall(const wire::Event& e) {
  if (long_stalls_++ >= kMaxStallInstants || file_->level() == TraceLevel::kOff) return;
  Instant(e.t_ns(), Printf("long stall: %s blocked the host %s (thread %u)", ApiName(e.api()),
                           FmtDuration(static_cast<double>(e.dur_ns()) / 1e9).c_str(), e.tid()));
}

void RankTrace::OnDeviceWork(const wire::Activity& a) {
  const uint64_t start = a.start_ns(), end = std::max(a.end_ns(), a.start_ns());
  newest_device_ns_ = std::max(newest_device_ns_, end);
  const uint64_t h2d = a.kind() == wire::ACTIVITY_MEMCPY && a.copy_kind() == wire::COPY_H2D
                           ? a.bytes() : 0;
  windows_.Add(start, end, h2d, [this](uint64_t ts, uint64_t busy, uint64_t bytes) {
    EmitCounters(ts, busy, bytes);
  });
  if (!Detail(start)) return;

  uint64_t flow = 0;
  if (a.correlation_id() != 0) {
    auto it = pending_api_.find(a.correlation_id());
    if (it != pending_api_.end()) {
      flow = ids_->next_flow++;
      const ApiSpan span = it->second;
      pending_api_.erase(it);
      EmitApi(span, flow);
    }
  }
  Ann anns[1];
  int n = 0;
  uint32_t name;
  if (a.kind() == wire::ACTIVITY_KERNEL) {
    name = CachedIid(kDeviceKey | (a.name_id() & kIdMask), [&] { return KernelName(a.name_id()); });
  } else if (a.kind() == wire::ACTIVITY_MEMCPY) {
    const bool pageable = a.flags() & wire::FLAG_PAGEABLE;
    name = CachedIid(kDeviceKey | kCopyKey | (a.copy_kind() << 1) | pageable,
                     [&] { return CopyName("Memcpy", a.copy_kind(), pageable); });
    anns[n++] = {kKeyBytes, Ann::kUint, a.bytes(), 0};
  } else {
    name = names_.Iid("Memset");
    anns[n++] = {kKeyBytes, Ann::kUint, a.bytes(), 0};
  }
  const size_t si = StreamIndex(a.device(), a.stream());
  const uint32_t base = kStreamBase + static_cast<uint32_t>(si * kMaxLanes);
  if (!Slice(base, stream_lanes_[si], static_cast<int32_t>(base), start, end, name, anns, n, 0,
             flow, [&] {
               const auto [dev, stream] = stream_ids_[si];
               return dev == a.device() && stream == a.stream()
                          ? Printf("GPU %d · stream %u", dev, stream)
                          : std::string("GPU · other streams");
             }) &&
      flow) {
    // The flow started on the API slice: end it there so no arrow dangles.
    TracePacket& p = NewPacket(start);
    auto* te = p.mutable_track_event();
    te->set_type(TrackEvent::TYPE_INSTANT);
    te->set_track_uuid(Uuid(kProcessLocal));
    te->set_name("device work dropped from the trace (lanes full)");
    te->add_terminating_flow_ids_old(flow);
    Write();
  }
}

void RankTrace::AddApi(const wire::Activity& a) {
  if (a.correlation_id() == 0) return;
  const ApiSpan span{a.start_ns(), std::max(a.end_ns(), a.start_ns())};
  auto [it, inserted] = pending_api_.try_emplace(a.correlation_id(), span);
  if (!inserted) {  // runtime and driver record of one launch: keep the outer span
    it->second.start = std::min(it->second.start, span.start);
    it->second.end = std::max(it->second.end, span.end);
    return;
  }
  api_fifo_.emplace_back(a.correlation_id(), span.end);
  ExpireApis(false);
}

void RankTrace::ExpireApis(bool all) {
  while (!api_fifo_.empty()) {
    const auto [corr, end] = api_fifo_.front();
    auto it = pending_api_.find(corr);
    const bool gone = it == pending_api_.end();
    if (!gone && !all && pending_api_.size() <= lim_.max_pending_api &&
        end + lim_.api_keep_ns > newest_device_ns_)
      break;
    api_fifo_.pop_front();
    if (gone) continue;
    const ApiSpan span = it->second;
    pending_api_.erase(it);
    if (file_->level() == TraceLevel::kFull) EmitApi(span, 0);
  }
}

void RankTrace::EmitApi(const ApiSpan& span, uint64_t flow_out) {
  if (!Slice(kApiBase, api_lanes_, static_cast<int32_t>(kApiBase), span.start, span.end,
             names_.Iid("CUDA API"), nullptr, 0, flow_out, 0,
             [] { return std::string("CUDA API (CUPTI)"); }) &&
      flow_out) {
    TracePacket& p = NewPacket(span.start);  // start the flow somewhere so it still ends
    auto* te = p.mutable_track_event();
    te->set_type(TrackEvent::TYPE_INSTANT);
    te->set_track_uuid(Uuid(kProcessLocal));
    te->set_name("CUDA API record dropped from the trace (lanes full)");
    te->add_flow_ids_old(flow_out);
    Write();
  }
}

void RankTrace::EmitCounters(uint64_t ts, uint64_t busy_ns, uint64_t h2d_bytes) {
  if (file_->level() == TraceLevel::kOff) return;
  if (counters_.empty()) {
    DescribeCounter(kBusyLocal, "GPU busy % (10 ms)", "%");
    DescribeCounter(kH2dLocal, "H2D MB/s (10 ms)", "MB/s");
    counters_.emplace_back(ids_->next_sequence++, Uuid(kBusyLocal));
    counters_.emplace_back(ids_->next_sequence++, Uuid(kH2dLocal));
  }
  const int64_t pct = static_cast<int64_t>(
      std::min<uint64_t>(100, (busy_ns * 100 + CounterWindows::kWindowNs / 2) /
                                  CounterWindows::kWindowNs));
  // bytes per 10 ms window -> MB/s: bytes * 100 / 1e6.
  const int64_t mbps = static_cast<int64_t>((h2d_bytes + 5000) / 10000);
  const int64_t values[2] = {pct, mbps};
  int64_t* last[2] = {&last_busy_pct_, &last_h2d_mbps_};
  for (int i = 0; i < 2; ++i) {
    if (values[i] == *last[i]) continue;  // a counter holds its value until the next sample
    *last[i] = values[i];
    counters_[i].WriteCounter(*file_, values[i], ts, scratch_);
  }
}

void RankTrace::OnHang(const Hang& h) {
  std::string name = Printf("hang: thread %u inside %s", h.tid, h.api.c_str());
  if (h.collective) name += Printf(" seq %llu", static_cast<unsigned long long>(h.seq));
  name += Printf(" (%.0f s when found)", h.inside_s);
  Instant(h.since_ns, name);
  file_->Flush();
}

void RankTrace::Finish() {
  ExpireApis(true);
  windows_.Drain([this](uint64_t ts, uint64_t busy, uint64_t bytes) {
    EmitCounters(ts, busy, bytes);
  });
  file_->Flush();
}

const std::string& RankTrace::KernelName(uint32_t id) {
  auto it = kernel_names_.find(id);
  if (it != kernel_names_.end()) return it->second;
  static const std::string kUnknown = "kernel (name not sent)";
  if (kernel_names_.size() >= lim_.max_names) return kUnknown;
  return kernel_names_.emplace(id, Printf("kernel#%u", id)).first->second;
}

size_t RankTrace::ThreadIndex(uint32_t tid) {
  auto it = threads_.find(tid);
  if (it != threads_.end()) return it->second;
  if (thread_tids_.size() + 1 >= lim_.max_threads) {  // the last index is shared
    if (thread_tids_.size() + 1 == lim_.max_threads) {
      thread_tids_.push_back(UINT32_MAX);
      thread_lanes_.emplace_back();
    }
    return lim_.max_threads - 1;
  }
  thread_tids_.push_back(tid);
  thread_lanes_.emplace_back();
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
