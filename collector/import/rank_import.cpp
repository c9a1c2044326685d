// See rank_import.h. Two phases: read and map the whole file (records into the sorter, the
// join tables filled), then replay the sorted records as a rank's frames. Nothing reaches
// the RankDirectory before the file has been read to its end without an error.
#include "import/rank_import.h"

#include <algorithm>
#include <istream>
#include <map>
#include <unordered_map>

#include "common/wire_vocab.h"
#include "fnv1a.h"
#include "import/chrome_trace_reader.h"
#include "import/kineto_mapper.h"
#include "import/kineto_vocab.h"
#include "import/rank_tables.h"
#include "import/record_sorter.h"
#include "import/span_sampler.h"
#include "import/trace_source.h"

namespace gpuwatch::collector {
namespace {

constexpr int kBatchItems = 4096;  // events + activities per Batch, as a live rank sends

// "[0, 1, 5]" -> the position of `rank` in it (-1: not in it or not a list).
int PositionIn(const std::string& ranks, int rank) {
  int pos = 0;
  std::string num;
  for (char c : ranks + ",") {
    if (c >= '0' && c <= '9') {
      num += c;
    } else if (c == ',' || c == ']') {
      if (!num.empty()) {
        if (std::stoll(num.substr(0, 9)) == rank) return pos;
        ++pos;
        num.clear();
      }
    }
  }
  return -1;
}
int CountRanks(const std::string& ranks) {
  int n = 0;
  bool in_num = false;
  for (char c : ranks) {
    const bool d = c >= '0' && c <= '9';
    if (d && !in_num) ++n;
    in_num = d;
  }
  return n;
}

// Builds the Batches of one rank and hands each to the sink when full.
class RankStream {
 public:
  RankStream(RankSink& sink, const RankTables& tables) : sink_(sink), tables_(tables) {}

  wire::Batch& batch() { return batch_; }
  // Sends a kernel or range name before its first use.
  uint32_t UseName(uint32_t id) {
    if (id == 0 || id > tables_.names().size()) return 0;
    if (sent_names_.size() <= id) sent_names_.resize(id + 1, false);
    if (!sent_names_[id]) {
      sent_names_[id] = true;
      auto* k = batch_.add_kernel_names();
      k->set_id(id);
      k->set_name(tables_.names()[id - 1]);
    }
    return id;
  }
  void Count() { ++items_; }
  // Full: out with it. `settled_ns`: every call whose order key is before it has been added.
  void MaybeSend(uint64_t settled_ns) {
    if (items_ >= kBatchItems) Send(settled_ns);
  }
  void Send(uint64_t settled_ns) {
    batch_.set_seq(++seq_);
    batch_.set_settled_ns(settled_ns);
    sink_.OnBatch(batch_);
    batch_.Clear();
    items_ = 0;
  }

 private:
  RankSink& sink_;
  const RankTables& tables_;
  wire::Batch batch_;
  std::vector<bool> sent_names_;
  int items_ = 0;
  uint64_t seq_ = 0;
};

void AddHostCall(const ImportRecord& r, const RankTables& tables, RankStream& out, RankImportStats* stats,
                 std::vector<uint64_t>& comm_seq) {
  const auto dev_it = tables.device.find(r.correlation);
  const DeviceSide* dev = dev_it == tables.device.end() ? nullptr : &dev_it->second;
  auto api = static_cast<wire::Api>(r.api);
  // A record or a wait goes out only when the trace pairs them (the wait's sync record names
  // the record and both streams; an Event Sync record names the record and its stream): the
  // event's handle is then the record's correlation id.
  uint64_t event_key = 0;
  uint32_t event_stream = 0;
  if (api == wire::CUDA_EVENT_RECORD) {
    const auto on = tables.recorded_on.find(r.correlation);
    if (on == tables.recorded_on.end()) api = wire::API_UNSPECIFIED;
    else event_key = r.correlation, event_stream = on->second;
  } else if (api == wire::CUDA_STREAM_WAIT_EVENT) {
    if (!dev || dev->waits_for == 0) api = wire::API_UNSPECIFIED;
    else event_key = dev->waits_for, event_stream = dev->stream;
  } else if ((api == wire::CUDA_EVENT_SYNCHRONIZE || api == wire::CUDA_EVENT_QUERY) && dev && dev->waits_for) {
    // The host waited on (or asked about) that record's event: the record's stream, as
    // the library would know the event's.
    const auto on = tables.recorded_on.find(dev->waits_for);
    if (on != tables.recorded_on.end()) event_key = dev->waits_for, event_stream = on->second;
  }
  if (api != wire::API_UNSPECIFIED) {
    wire::Event* e = out.batch().add_events();
    e->set_api(api);
    e->set_t_ns(r.t_ns);
    e->set_dur_ns(r.dur_ns);
    e->set_tid(r.tid);
    if (event_key) {
      e->set_stream(event_stream);
      e->set_seq(event_key);
    } else if (dev) {
      e->set_stream(dev->stream);
      if (EnqueuesWork(api) && !IsCopy(api) && !IsMemset(api)) e->set_name_id(out.UseName(dev->name_id));
      if (IsCopy(api) || IsMemset(api)) e->set_bytes(dev->bytes);
      if (IsCopy(api)) {
        const auto kind = static_cast<wire::CopyKind>(dev->copy_kind);
        e->set_copy_kind(kind);
        uint32_t flags = dev->pageable ? wire::FLAG_PAGEABLE : 0;
        // As the library's hook decides it: cudaMemcpy returns when the copy is done; an
        // async copy from/to pageable memory is staged and blocks the host as well.
        if (CopyDirection(kind) >= 0 && (api == wire::CUDA_MEMCPY || dev->pageable)) flags |= wire::FLAG_BLOCKED_HOST;
        e->set_flags(flags);
      }
    }
    ++stats->calls;
    out.Count();
  }
  if (dev && dev->work) {
    wire::Activity* a = out.batch().add_activities();
    a->set_kind(wire::ACTIVITY_API);
    a->set_start_ns(r.t_ns);
    a->set_end_ns(r.t_ns + r.dur_ns);
    a->set_correlation_id(r.correlation);
    a->set_api_id(r.cbid);
    a->set_api_domain(r.driver ? 2 : 1);
    ++stats->api_records;
    out.Count();
  }
  // The NCCL kernel this call launched is a collective: the call stands for ncclX's.
  if (const auto c = tables.collective.find(r.correlation); c != tables.collective.end()) {
    const CollectiveSide& cs = c->second;
    wire::Event* e = out.batch().add_events();
    e->set_api(cs.api);
    e->set_t_ns(r.t_ns);
    e->set_dur_ns(r.dur_ns);
    e->set_tid(r.tid);
    e->set_stream(dev ? dev->stream : 0);
    e->set_bytes(cs.bytes);
    e->set_comm_id(cs.comm + 1);
    e->set_seq(comm_seq[cs.comm]++);
    e->set_gpu_ns(cs.gpu_ns);
    e->set_flags(wire::FLAG_KERNEL_TIMED);
    ++stats->collectives;
    out.Count();
  }
}

void AddDeviceWork(const ImportRecord& r, RankStream& out) {
  wire::Activity* a = out.batch().add_activities();
  a->set_start_ns(r.t_ns);
  a->set_end_ns(r.t_ns + r.dur_ns);
  a->set_correlation_id(r.correlation);
  a->set_stream(r.stream);
  a->set_device(r.device);
  switch (r.kind) {
    case RecordKind::kKernel:
      a->set_kind(wire::ACTIVITY_KERNEL);
      a->set_name_id(out.UseName(r.name_id));
      a->set_grid_x(r.grid[0]);
      a->set_grid_y(r.grid[1]);
      a->set_grid_z(r.grid[2]);
      a->set_block_x(r.block[0]);
      a->set_block_y(r.block[1]);
      a->set_block_z(r.block[2]);
      a->set_registers_per_thread(r.registers);
      // Kineto's "shared memory" is static and dynamic together.
      a->set_static_shared_bytes(r.shared_bytes);
      break;
    case RecordKind::kMemcpy:
      a->set_kind(wire::ACTIVITY_MEMCPY);
      a->set_bytes(r.bytes);
      a->set_copy_kind(static_cast<wire::CopyKind>(r.copy_kind));
      a->set_flags(r.pageable ? wire::FLAG_PAGEABLE : 0);
      break;
    case RecordKind::kMemset:
      a->set_kind(wire::ACTIVITY_MEMSET);
      a->set_bytes(r.bytes);
      break;
    default:  // kSync
      a->set_kind(wire::ACTIVITY_SYNC);
      a->set_flags(r.blocks_host ? wire::FLAG_BLOCKED_HOST : 0);
      break;
  }
  out.Count();
}

wire::Hello MakeHello(const TraceHeader& h, const RankImportOptions& o, const RankImportStats& stats,
                      uint64_t start_ns, int pid) {
  wire::Hello hello;
  hello.set_protocol_version(wire::PROTOCOL_VERSION);
  hello.set_job_id(o.job_id);
  hello.set_rank(stats.rank);
  hello.set_local_rank(stats.rank);
  hello.set_world_size(h.world_size > 0 ? h.world_size : o.fallback_world_size);
  hello.set_rank_source(h.rank >= 0 ? "trace:distributedInfo" : "trace:file order");
  hello.set_host(h.host.empty() ? "trace" : h.host);
  hello.set_pid(pid);
  hello.set_device(h.devices.empty() ? 0 : h.devices.front().id);
  hello.set_out_dir(o.out_dir);
  hello.set_library_version("torch.profiler trace");
  hello.set_start_ns(start_ns);
  if (stats.steps > 0) hello.set_step_range(kProfilerStepRange);
  return hello;
}

void FillFirstBatch(const TraceHeader& h, const RankTables& tables, int rank, int world, wire::Batch& b) {
  b.set_gpu_source(wire::GPU_SOURCE_CUPTI);
  b.set_gpu_source_detail("torch.profiler trace: Kineto's CUPTI records");
  b.set_device_sampler_detail("a torch.profiler trace has no NVML samples");
  b.mutable_overhead()->set_cupti_mode(wire::CUPTI_MODE_FULL);  // the trace covers its whole window
  if (!h.devices.empty()) {
    const TraceDevice& d = h.devices.front();
    wire::Environment* env = b.mutable_environment();
    env->set_device_name(d.name);
    env->set_device_memory_bytes(d.memory_bytes);
    env->set_device_sm_count(d.sms);
    if (d.compute_major > 0) env->set_device_compute_capability(10 * d.compute_major + d.compute_minor);
  }
  for (size_t i = 0; i < tables.comms().size(); ++i) {
    const TraceComm& c = tables.comms()[i];
    wire::Communicator* w = b.add_communicators();
    w->set_comm_id(i + 1);
    const int listed = CountRanks(c.ranks);
    w->set_nranks(c.size > 0 ? c.size : listed > 0 ? listed : world);
    const int pos = PositionIn(c.ranks, rank);
    w->set_rank(pos >= 0 ? pos : rank);
    // Equal on every rank's file: the group's name and members as torch.distributed wrote them.
    w->set_unique_hash(Fnv1a("pg:" + c.name + "|" + c.ranks));
    w->set_origin(wire::Communicator::ORIGIN_INIT_RANK);
  }
}

}  // namespace

bool ImportRankTrace(const std::string& path, const RankImportOptions& options, RankDirectory& jobs,
                     RankImportStats* stats, std::string* error) {
  TraceSource source;
  if (!source.Open(path, error)) return false;
  std::istream in(&source);
  RankTables tables;
  RecordSorter sorter(options.max_in_memory ? options.max_in_memory : RecordSorter::kDefaultMaxInMemory);
  std::vector<HostSpan> host_spans;
  KinetoMapper mapper(tables, sorter, *stats, options.keep_host_spans ? &host_spans : nullptr);
  TraceHeader header;
  std::string map_error;
  int pid = 0;
  auto on_event = [&](const TraceEvent& e) {
    if (pid == 0 && !e.pid_is_name && e.pid > 0 && e.cat != "kernel" && e.cat != "Kernel") pid = static_cast<int>(e.pid);
    if (map_error.empty()) mapper.Map(e, &map_error);
  };
  const bool parsed = ReadChromeTrace(in, on_event, &header, error);
  stats->gzip = source.gzip();
  if (!source.error().empty()) {
    *error = path + ": " + source.error();
    return false;
  }
  if (!parsed) {
    *error = path + ": " + *error;
    return false;
  }
  if (!map_error.empty()) {
    *error = path + ": " + map_error;
    return false;
  }
  if (stats->kernels + stats->memcpys + stats->memsets == 0) {
    *error = path + ": no GPU events (kernels, copies, memsets): was the profiler run with "
                    "ProfilerActivity.CUDA?";
    return false;
  }
  stats->host_spans = TopLevelHostSpans(std::move(host_spans));
  stats->rank = header.rank >= 0 ? header.rank : options.fallback_rank;
  const int world = header.world_size > 0 ? header.world_size : options.fallback_world_size;

  // The rank's stream, in time order.
  uint64_t first_ns = UINT64_MAX, last_ns = 0;
  wire::Hello hello;
  RankSink* sink = nullptr;
  std::unique_ptr<RankStream> out;
  std::vector<uint64_t> comm_seq(tables.comms().size(), 0);
  // Open ranges per thread (ends), for each range's nesting depth.
  std::unordered_map<uint32_t, std::vector<uint64_t>> open_ranges;
  // Host samples of the spans open on each thread, their stacks interned as a rank's are.
  SpanSampler sampler;
  std::map<std::vector<uint32_t>, uint32_t> stack_ids;
  auto sample = [&](uint64_t t_ns, uint32_t tid, const std::vector<uint32_t>& frames) {
    auto [it, added] = stack_ids.emplace(frames, static_cast<uint32_t>(stack_ids.size() + 1));
    if (added) {
      wire::PythonStack* st = out->batch().add_python_stacks();
      st->set_id(it->second);
      for (uint32_t f : frames)
        if (f > 0 && f <= tables.names().size()) st->add_frames(tables.names()[f - 1]);
    }
    wire::HostSample* h = out->batch().add_host_samples();
    h->set_t_ns(t_ns);
    h->set_tid(tid);
    h->set_stack_id(it->second);
    out->Count();
  };
  auto take = [&](const ImportRecord& r) {
    if (!sink) {
      first_ns = r.t_ns;
      hello = MakeHello(header, options, *stats, first_ns, pid);
      sink = jobs.Attach(hello, error);
      if (!sink) return;
      out = std::make_unique<RankStream>(*sink, tables);
      FillFirstBatch(header, tables, stats->rank, world, out->batch());
    }
    last_ns = std::max(last_ns, r.t_ns + r.dur_ns);
    sampler.Advance(r.t_ns, sample);
    switch (r.kind) {
      case RecordKind::kCall: AddHostCall(r, tables, *out, stats, comm_seq); break;
      case RecordKind::kRange: {
        auto& stack = open_ranges[r.tid];
        while (!stack.empty() && stack.back() <= r.t_ns) stack.pop_back();
        wire::Event* e = out->batch().add_events();
        e->set_api(wire::NVTX_RANGE);
        e->set_t_ns(r.t_ns);
        e->set_dur_ns(r.dur_ns);
        e->set_tid(r.tid);
        e->set_name_id(out->UseName(r.name_id));
        e->set_seq(stack.size());
        stack.push_back(r.t_ns + r.dur_ns);
        out->Count();
        sampler.Open(r.tid, r.t_ns, r.t_ns + r.dur_ns, r.name_id);
        break;
      }
      case RecordKind::kFrame: sampler.Open(r.tid, r.t_ns, r.t_ns + r.dur_ns, r.name_id); break;
      default: AddDeviceWork(r, *out); break;
    }
    // Records come by start: every call whose order key (start, or end) is before this
    // start has been added.
    out->MaybeSend(r.t_ns);
  };
  stats->sorted_runs = sorter.runs();
  std::string sort_error;
  const bool drained = sorter.Drain([&](const ImportRecord& r) { if (sink || error->empty()) take(r); }, &sort_error);
  if (!sink) {
    *error = path + ": " + (!drained ? sort_error : error->empty() ? "nothing to import" : *error);
    return false;
  }
  if (!drained) {  // the disk failed while the runs were read back: the rank ends unfinished
    jobs.Detach(hello.job_id(), sink, /*said_goodbye=*/false, Clock::now());
    *error = path + ": " + sort_error;
    return false;
  }
  stats->sorted_runs = std::max<uint64_t>(stats->sorted_runs, sorter.runs());
  sampler.Advance(last_ns + 1, sample);
  if (sampler.samples() > 0) {
    wire::HostSampling* hs = out->batch().mutable_host_sampling();
    hs->set_hz(1e9 / SpanSampler::kPeriodNs);
    hs->set_samples(sampler.samples());
  }
  out->Send(last_ns);
  wire::Goodbye bye;
  bye.set_end_ns(last_ns);
  bye.set_events_sent(stats->calls + stats->ranges + stats->collectives);
  sink->OnGoodbye(bye);
  jobs.Detach(hello.job_id(), sink, /*said_goodbye=*/true, Clock::now());
  // What a trace cannot say, said once per rank.
  stats->notes.push_back("not in a torch.profiler trace: NVML device samples, /proc samples of the process tree, "
                         "stacks outside recorded spans; allocation sizes");
  if (sampler.capped())
    stats->notes.push_back("host samples stopped at " + std::to_string(SpanSampler::kMaxSamples) +
                           ": later host-wait gaps have no host-frame evidence");
  if (stats->untimed) stats->notes.push_back(std::to_string(stats->untimed) + " complete event(s) without ts or dur dropped");
  for (const auto& [cat, n] : stats->unknown_categories)
    stats->notes.push_back(std::to_string(n) + " event(s) of unknown category \"" + cat.substr(0, 64) + "\" ignored");
  return true;
}

}  // namespace gpuwatch::collector
