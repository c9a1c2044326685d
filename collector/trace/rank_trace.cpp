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

// Local track ids (uuid = sequence id << kLocalBits | local): small uuids keep packets short.
constexpr int kLocalBits = 14;
constexpr uint32_t kProcessLocal = 0;
constexpr int kHostLanes = 8;
constexpr uint32_t kThreadBase = 1;         // + thread index * kHostLanes + lane (512 threads)
constexpr uint32_t kApiBase = 0x1001;       // + lane
constexpr uint32_t kBusyLocal = 0x1011, kH2dLocal = 0x1012;
constexpr uint32_t kStreamBase = 0x1100;    // + stream index * kMaxLanes + lane (512 streams)
constexpr size_t kMaxNameChars = 200;

const char* const kCatNames[] = {"cuda", "copy", "nccl", "launch", "kernel", "memcpy", "memset",
                                 "cuda_api"};
const char* const kKeyNames[] = {"bytes", "pageable", "blocking", "seq", "busbw_gbps", "peer",
                                 "correlation"};

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

}  // namespace

RankTrace::RankTrace(TraceFile* file, uint32_t sequence_id, int32_t trace_pid,
                     const wire::Hello& hello, Limits limits)
    : file_(file), seq_(sequence_id), pid_(trace_pid), hello_(hello), lim_(limits) {
  lim_.max_threads = std::min<size_t>(lim_.max_threads, 512);
  lim_.max_streams = std::min<size_t>(lim_.max_streams, 512);
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

uint64_t RankTrace::NameIid(std::string_view name, TracePacket& p) {
  auto it = name_iids_.find(name);
  if (it != name_iids_.end()) return it->second;
  if (name_iids_.size() >= lim_.max_names) name = "(name table full)";
  it = name_iids_.find(name);
  if (it != name_iids_.end()) return it->second;
  const uint64_t iid = name_iids_.size() + 1;
  name_iids_.emplace(std::string(name), iid);
  auto* n = p.mutable_interned_data()->add_event_names();
  n->set_iid(iid);
  n->set_name(std::string(name));
  return iid;
}

uint64_t RankTrace::CatIid(Cat c, TracePacket& p) {
  if (!cat_interned_[c]) {
    cat_interned_[c] = true;
    auto* n = p.mutable_interned_data()->add_event_categories();
    n->set_iid(c + 1);
    n->set_name(kCatNames[c]);
  }
  return c + 1;
}

uint64_t RankTrace::KeyIid(Key k, TracePacket& p) {
  if (!key_interned_[k]) {
    key_interned_[k] = true;
    auto* n = p.mutable_interned_data()->add_debug_annotation_names();
    n->set_iid(k + 1);
    n->set_name(kKeyNames[k]);
  }
  return k + 1;
}

bool RankTrace::Slice(uint32_t base_local, Lanes& lanes, const std::string& track_name,
                      int32_t order, uint64_t start, uint64_t end, std::string_view name, Cat cat,
                      const Ann* anns, int n_anns, uint64_t flow_out, uint64_t flow_in) {
  end = std::max(end, start);
  const int cap = base_local < kApiBase ? kHostLanes : kMaxLanes;
  int lane = 0;
  while (lane < lanes.used && start < lanes.last_end[lane]) ++lane;
  if (lane == lanes.used) {
    if (lane >= cap) {
      ++dropped_slices_;
      return false;
    }
    ++lanes.used;
    DescribeTrack(base_local + lane,
                  lane == 0 ? track_name : Printf("%s · overlap %d", track_name.c_str(), lane),
                  order + lane);
  }
  lanes.last_end[lane] = end;
  const uint64_t uuid = Uuid(base_local + lane);

  TracePacket& b = NewPacket(start);
  auto* te = b.mutable_track_event();
  te->set_type(TrackEvent::TYPE_SLICE_BEGIN);
  te->set_track_uuid(uuid);
  te->set_name_iid(NameIid(name, b));
  te->add_category_iids(CatIid(cat, b));
  for (int i = 0; i < n_anns; ++i) {
    auto* a = te->add_debug_annotations();
    a->set_name_iid(KeyIid(anns[i].key, b));
    switch (anns[i].type) {
      case Ann::kUint: a->set_uint_value(anns[i].u); break;
      case Ann::kBool: a->set_bool_value(anns[i].u != 0); break;
      case Ann::kDouble: a->set_double_value(anns[i].d); break;
    }
  }
  if (flow_out) te->add_flow_ids(flow_out);
  if (flow_in) te->add_terminating_flow_ids(flow_in);
  b.set_sequence_flags(b.sequence_flags() | TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  Write(flow_out ? 512 : 64);  // room for this END (and the flow's device slice)

  TracePacket& e = NewPacket(end);
  e.mutable_track_event()->set_type(TrackEvent::TYPE_SLICE_END);
  e.mutable_track_event()->set_track_uuid(uuid);
  Write();
  return true;
}

void RankTrace::CheckLevel() {
  const TraceLevel now = file_->level();
  if (now == last_level_) return;
  last_level_ = now;
  if (now != TraceLevel::kSummary) return;
  // Full detail stopped at the size cap: say so where it happened.
  TracePacket& p = NewPacket(newest_device_ns_ ? newest_device_ns_ : hello_.start_ns());
  auto* te = p.mutable_track_event();
  te->set_type(TrackEvent::TYPE_INSTANT);
  te->set_track_uuid(Uuid(kProcessLocal));
  te->set_name("trace size cap reached: from here only syncs, copies, collectives, counters");
  Write();
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
  }
  // In time order within the batch: fewer lanes.
  std::vector<int> order(batch.events_size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return batch.events(a).t_ns() < batch.events(b).t_ns();
  });
  for (int i : order) OnEvent(batch.events(i));

  const bool detail = file_->level() == TraceLevel::kFull;
  if (detail)
    for (const auto& a : batch.activities())
      if (a.kind() == wire::ACTIVITY_API) AddApi(a);
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
  if (launch && file_->level() != TraceLevel::kFull) return;
  const size_t ti = ThreadIndex(e.tid());
  const std::string track = ti + 1 == lim_.max_threads && thread_tids_[ti] != e.tid()
                                ? std::string("other threads")
                                : Printf("thread %u", e.tid());
  Ann anns[4];
  int n = 0;
  std::string name;
  Cat cat = kCatCuda;
  if (copy) {
    cat = kCatCopy;
    name = Printf("%s %s", ApiName(e.api()), CopyDir(e.copy_kind()));
    anns[n++] = {kKeyBytes, Ann::kUint, e.bytes(), 0};
    anns[n++] = {kKeyPageable, Ann::kBool, (e.flags() & wire::FLAG_PAGEABLE) ? 1u : 0u, 0};
    if (e.flags() & wire::FLAG_BLOCKED_HOST) anns[n++] = {kKeyBlocking, Ann::kBool, 1, 0};
  } else if (collective) {
    cat = kCatNccl;
    name = ApiName(e.api());
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
    cat = kCatLaunch;
    name = "launch " + KernelName(e.name_id());
  } else {
    name = ApiName(e.api());
  }
  Slice(kThreadBase + static_cast<uint32_t>(ti * kHostLanes), thread_lanes_[ti], track,
        static_cast<int32_t>(kThreadBase + ti * kHostLanes), e.t_ns(), e.t_ns() + e.dur_ns(),
        name, cat, anns, n, 0, 0);
}

void RankTrace::OnDeviceWork(const wire::Activity& a) {
  const uint64_t start = a.start_ns(), end = std::max(a.end_ns(), a.start_ns());
  newest_device_ns_ = std::max(newest_device_ns_, end);
  const uint64_t h2d = a.kind() == wire::ACTIVITY_MEMCPY && a.copy_kind() == wire::COPY_H2D
                           ? a.bytes() : 0;
  windows_.Add(start, end, h2d, [this](uint64_t ts, uint64_t busy, uint64_t bytes) {
    EmitCounters(ts, busy, bytes);
  });
  if (file_->level() != TraceLevel::kFull) return;

  uint64_t flow = 0;
  if (a.correlation_id() != 0) {
    auto it = pending_api_.find(a.correlation_id());
    if (it != pending_api_.end()) {
      flow = (static_cast<uint64_t>(seq_) << 40) | ++next_flow_;
      const ApiSpan span = it->second;
      pending_api_.erase(it);
      EmitApi(a.correlation_id(), span, flow);
    }
  }
  Ann anns[2];
  int n = 0;
  std::string name;
  Cat cat = kCatKernel;
  if (a.kind() == wire::ACTIVITY_KERNEL) {
    name = KernelName(a.name_id());
  } else if (a.kind() == wire::ACTIVITY_MEMCPY) {
    cat = kCatMemcpy;
    name = Printf("Memcpy %s", CopyDir(a.copy_kind()));
    anns[n++] = {kKeyBytes, Ann::kUint, a.bytes(), 0};
    anns[n++] = {kKeyPageable, Ann::kBool, (a.flags() & wire::FLAG_PAGEABLE) ? 1u : 0u, 0};
  } else {
    cat = kCatMemset;
    name = "Memset";
    anns[n++] = {kKeyBytes, Ann::kUint, a.bytes(), 0};
  }
  const size_t si = StreamIndex(a.device(), a.stream());
  const auto [dev, stream] = stream_ids_[si];
  const std::string track = dev == a.device() && stream == a.stream()
                                ? Printf("GPU %d · stream %u", dev, stream)
                                : std::string("GPU · other streams");
  const uint32_t base = kStreamBase + static_cast<uint32_t>(si * kMaxLanes);
  if (!Slice(base, stream_lanes_[si], track, static_cast<int32_t>(base), start, end, name, cat,
             anns, n, 0, flow) &&
      flow) {
    // The flow started on the API slice: end it there so no arrow dangles.
    TracePacket& p = NewPacket(start);
    auto* te = p.mutable_track_event();
    te->set_type(TrackEvent::TYPE_INSTANT);
    te->set_track_uuid(Uuid(kProcessLocal));
    te->set_name("device work dropped from the trace (lanes full)");
    te->add_terminating_flow_ids(flow);
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
    if (file_->level() == TraceLevel::kFull) EmitApi(corr, span, 0);
  }
}

void RankTrace::EmitApi(uint32_t corr, const ApiSpan& span, uint64_t flow_out) {
  Ann ann{kKeyCorr, Ann::kUint, corr, 0};
  if (!Slice(kApiBase, api_lanes_, "CUDA API (CUPTI)", static_cast<int32_t>(kApiBase), span.start,
             span.end, "CUDA API", kCatApi, &ann, 1, flow_out, 0) &&
      flow_out) {
    TracePacket& p = NewPacket(span.start);  // start the flow somewhere so it still ends
    auto* te = p.mutable_track_event();
    te->set_type(TrackEvent::TYPE_INSTANT);
    te->set_track_uuid(Uuid(kProcessLocal));
    te->set_name("CUDA API record dropped from the trace (lanes full)");
    te->add_flow_ids(flow_out);
    Write();
  }
}

void RankTrace::EmitCounters(uint64_t ts, uint64_t busy_ns, uint64_t h2d_bytes) {
  if (file_->level() == TraceLevel::kOff) return;
  if (!counters_described_) {
    counters_described_ = true;
    DescribeCounter(kBusyLocal, "GPU busy % (10 ms)", "%");
    DescribeCounter(kH2dLocal, "H2D MB/s (10 ms)", "MB/s");
  }
  const int64_t pct = static_cast<int64_t>(
      std::min<uint64_t>(100, (busy_ns * 100 + CounterWindows::kWindowNs / 2) /
                                  CounterWindows::kWindowNs));
  // bytes per 10 ms window -> MB/s: bytes * 100 / 1e6.
  const int64_t mbps = static_cast<int64_t>((h2d_bytes + 5000) / 10000);
  for (auto [local, value, last] : {std::tuple{kBusyLocal, pct, &last_busy_pct_},
                                    std::tuple{kH2dLocal, mbps, &last_h2d_mbps_}}) {
    if (value == *last) continue;  // a counter holds its value until the next sample
    *last = value;
    TracePacket& p = NewPacket(ts);
    auto* te = p.mutable_track_event();
    te->set_type(TrackEvent::TYPE_COUNTER);
    te->set_track_uuid(Uuid(local));
    te->set_counter_value(value);
    Write();
  }
}

void RankTrace::OnHang(const Hang& h) {
  if (file_->level() == TraceLevel::kOff) return;
  TracePacket& p = NewPacket(h.since_ns);
  auto* te = p.mutable_track_event();
  te->set_type(TrackEvent::TYPE_INSTANT);
  te->set_track_uuid(Uuid(kProcessLocal));
  std::string name = Printf("hang: thread %u inside %s", h.tid, h.api.c_str());
  if (h.collective) name += Printf(" seq %llu", static_cast<unsigned long long>(h.seq));
  name += Printf(" (%.0f s when found)", h.inside_s);
  te->set_name(name);
  Write();
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
