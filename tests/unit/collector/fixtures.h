// Builders for wire frames, and a fake rank that feeds them through the collector's own
// Connection (the same path the socket server uses), for aggregation tests.
#pragma once
#include <initializer_list>
#include <memory>
#include <string>

#include "frame.h"
#include "ingest/connection.h"
#include "jobs/job_end.h"
#include "jobs/job_table.h"
#include "report/summary.h"

namespace gwtest {

namespace wire = gpuwatch::wire;
namespace col = gpuwatch::collector;

inline wire::Frame Hello(const std::string& job, int rank, int world, int version = 1) {
  wire::Frame f;
  auto* h = f.mutable_hello();
  h->set_protocol_version(version);
  h->set_job_id(job);
  h->set_rank(rank);
  h->set_local_rank(rank);
  h->set_world_size(world);
  h->set_rank_source("RANK");
  h->set_host("node1");
  h->set_pid(1000 + rank);
  h->set_device(rank);
  h->set_library_version("0.1.0");
  return f;
}

inline wire::Event* Add(wire::Batch* b, wire::Api api, uint64_t t_ns, uint64_t dur_ns) {
  auto* e = b->add_events();
  e->set_api(api);
  e->set_t_ns(t_ns);
  e->set_dur_ns(dur_ns);
  return e;
}

inline wire::Event* Copy(wire::Batch* b, wire::Api api, wire::CopyKind kind, uint64_t bytes,
                         uint64_t t_ns, uint64_t dur_ns, uint32_t flags) {
  auto* e = Add(b, api, t_ns, dur_ns);
  e->set_copy_kind(kind);
  e->set_bytes(bytes);
  e->set_flags(flags);
  return e;
}

inline wire::Event* Coll(wire::Batch* b, wire::Api api, uint64_t comm, uint64_t bytes,
                         uint64_t gpu_ns, uint64_t t_ns = 1000, uint32_t flags = 0) {
  auto* e = Add(b, api, t_ns, 10);
  e->set_comm_id(comm);
  e->set_bytes(bytes);
  e->set_gpu_ns(gpu_ns);
  e->set_flags(flags);
  return e;
}

// A CUPTI record: device work, or the API call (ACTIVITY_API) that launched it.
inline wire::Activity* Work(wire::Batch* b, wire::ActivityKind kind, uint64_t start, uint64_t end,
                            uint32_t corr = 0, uint32_t stream = 1) {
  auto* a = b->add_activities();
  a->set_kind(kind);
  a->set_start_ns(start);
  a->set_end_ns(end);
  a->set_correlation_id(corr);
  a->set_stream(stream);
  return a;
}

inline void Comm(wire::Batch* b, uint64_t id, int nranks, int rank) {
  auto* c = b->add_communicators();
  c->set_comm_id(id);
  c->set_nranks(nranks);
  c->set_rank(rank);
}

// A run under the overhead budget with these windows ([start, end) ns), and CUPTI's records of
// the calls made inside them.
struct SampledBatch {
  static constexpr uint64_t kApiNs = 10'000, kLagNs = 50'000;  // a call's API record, its kernel's start after it
  wire::Batch b;
  uint32_t corr = 0;
  explicit SampledBatch(std::initializer_list<std::pair<uint64_t, uint64_t>> windows) {
    b.set_gpu_source(wire::GPU_SOURCE_CUPTI);
    b.mutable_overhead()->set_cupti_mode(wire::CUPTI_MODE_BUDGET);
    for (auto [start, end] : windows) {
      auto* w = b.add_cupti_windows();
      w->set_start_ns(start);
      w->set_end_ns(end);
    }
  }
  // The API record of a call at `t` and its kernel kLagNs later (kernel_ns 0: it came back
  // without times, so none): the kernel's record, or null.
  wire::Activity* Record(uint64_t t, uint64_t kernel_ns, uint32_t name_id = 1, uint32_t stream = 1) {
    Work(&b, wire::ACTIVITY_API, t, t + kApiNs, ++corr, 0)->set_api_domain(1);
    if (!kernel_ns) return nullptr;
    auto* k = Work(&b, wire::ACTIVITY_KERNEL, t + kLagNs, t + kLagNs + kernel_ns, corr, stream);
    k->set_name_id(name_id);
    return k;
  }
  // A hooked kernel launch at `t`, with its records when CUPTI was `recorded`.
  void Launch(uint64_t t, bool recorded, uint64_t kernel_ns, uint32_t name_id = 1) {
    Add(&b, wire::CUDA_LAUNCH_KERNEL, t, kApiNs);
    if (recorded) Record(t, kernel_ns, name_id);
  }
};

inline void Drop(wire::Batch* b, const std::string& reason, uint64_t n) {
  auto* d = b->add_dropped();
  d->set_reason(reason);
  d->set_count(n);
}

// A job's summary.json and summary.txt, as the collector writes them.
inline nlohmann::json SummaryJson(const col::Job& job, const std::string& generated_at = "t") {
  const col::JobResult r = col::MergeRanks(job.Results());
  return col::BuildSummaryJson(col::ViewOf(job, r), generated_at);
}
inline std::string SummaryText(const col::Job& job) {
  const col::JobResult r = col::MergeRanks(job.Results());
  return col::BuildSummaryText(col::ViewOf(job, r));
}

inline std::string Bytes(const wire::Frame& f) {
  std::string s;
  wire::AppendFrame(f, s);
  return s;
}

// A rank connected to a JobTable through a Connection.
struct FakeRank {
  FakeRank(col::JobTable& jobs, const wire::Frame& hello)
      : conn(std::make_unique<col::Connection>(hello.hello().pid(), jobs, col::Clock::now())) {
    Send(hello);
  }
  bool Send(const wire::Frame& f) { return SendBytes(Bytes(f)); }
  bool SendBytes(const std::string& s) { return conn->OnBytes(s, scratch, col::Clock::now()); }
  bool SendBatch(const wire::Batch& b) {
    wire::Frame f;
    *f.mutable_batch() = b;
    return Send(f);
  }
  void Goodbye(const wire::Goodbye& g = {}) {
    wire::Frame f;
    *f.mutable_goodbye() = g;
    Send(f);
  }
  void Close() { conn->Close(col::Clock::now()); }

  wire::FrameScratch scratch;
  std::unique_ptr<col::Connection> conn;
};

}  // namespace gwtest
