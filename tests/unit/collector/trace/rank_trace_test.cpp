// The Perfetto trace writer (collector/trace/) on synthetic batches, fed through the
// collector's own Connection -> JobTable -> RankState path (the trace subscribes to the interpreted events), and checked with the
// independent validator (test_trace_validator.h).
#include <catch2/catch.hpp>

#include <memory>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "test_trace_validator.h"
#include "trace/trace_feed.h"

namespace fs = std::filesystem;
using namespace gwtest;

namespace {

// Sends `b` as the rank's last batch, ends it, and reads the trace back through the
// validator (which must find no error).
gwtrace::TraceReport SendLast(FakeRank& r, const wire::Batch& b, col::JobTable& jobs,
                              const std::string& path) {
  r.SendBatch(b);
  r.Goodbye();
  r.Close();
  jobs.Find("job")->trace()->Flush();
  gwtrace::TraceReport rep = gwtrace::ValidateTrace(Slurp(path), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  return rep;
}

}  // namespace

TEST_CASE("collector: trace of synthetic batches validates and counts match what was fed") {
  const std::string path = TempDir("basic") + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path);
  Fed fed[2];
  for (int rank = 0; rank < 2; ++rank) fed[rank] = FeedRank(jobs, rank, 10);
  jobs.Find("job")->trace()->Flush();

  const std::string data = Slurp(path);
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(data, false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.processes.size() == 2);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string name = "rank " + std::to_string(rank) + " · node1 · pid " + std::to_string(1000 + rank);
    REQUIRE(rep.processes.count(name));
    const gwtrace::RankCounts& c = rep.processes.at(name);
    CHECK(c.kernels == fed[rank].kernels);
    CHECK(c.gpu_h2d == fed[rank].gpu_h2d);
    CHECK(c.host_h2d == fed[rank].host_h2d);
    CHECK(c.syncs == fed[rank].syncs);
    CHECK(c.collectives.at("allreduce") == fed[rank].allreduce);
    CHECK(c.launches == 10);
    CHECK(c.memsets == 10);
    CHECK(c.api == 10);
    CHECK(c.counters > 0);
  }
  CHECK(rep.flows == 20);  // every kernel with an API record, both ranks
  // Cheap enough per event: recorded things (slices, counters, instants) over file size.
  const double per_event = static_cast<double>(rep.bytes) / (rep.slices + rep.counter_events);
  WARN("synthetic trace: " << rep.bytes << " bytes, " << rep.slices << " slices, "
                           << per_event << " bytes per event");
  CHECK(per_event < 80);
}

TEST_CASE("collector: a trace cut at any byte validates up to the cut") {
  const std::string path = TempDir("cut") + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path);
  FeedRank(jobs, 0, 6);
  jobs.Find("job")->trace()->Flush();
  const std::string data = Slurp(path);
  std::mt19937 rng(42);
  std::uniform_int_distribution<size_t> at(0, data.size());
  for (int i = 0; i < 200; ++i) {
    const size_t cut = i < 3 ? static_cast<size_t>(i) : at(rng);
    const auto rep = gwtrace::ValidateTrace(std::string_view(data).substr(0, cut), true);
    INFO("cut at " << cut << " of " << data.size() << ": " << rep.First());
    REQUIRE(rep.errors.empty());
  }
}

TEST_CASE("collector: trace levels and the size cap") {
  SECTION("summary: host syncs, copies and collectives, counters; no kernels or flows") {
    const std::string path = TempDir("summary") + "/trace.perfetto-trace";
    col::TraceOptions opt;
    opt.level = col::TraceLevel::kSummary;
    col::JobTable jobs = TracedJobs(path, opt);
    const Fed fed = FeedRank(jobs, 0, 8);
    jobs.Find("job")->trace()->Flush();
    const auto rep = gwtrace::ValidateTrace(Slurp(path), false);
    INFO(rep.First());
    REQUIRE(rep.errors.empty());
    const auto& c = rep.processes.begin()->second;
    CHECK(c.kernels == 0);
    CHECK(c.launches == 0);
    CHECK(rep.flows == 0);
    CHECK(c.syncs == fed.syncs);
    CHECK(c.host_h2d == fed.host_h2d);
    CHECK(c.collectives.at("allreduce") == fed.allreduce);
    CHECK(c.counters > 0);
  }
  SECTION("keep first: full detail stops at the cap, the rest is summary, the file stays bounded") {
    const std::string path = TempDir("cap") + "/trace.perfetto-trace";
    col::TraceOptions opt;
    opt.keep = col::TraceKeep::kFirst;
    opt.max_bytes = 4096;
    col::JobTable jobs = TracedJobs(path, opt);
    const Fed fed = FeedRank(jobs, 0, 200);
    jobs.Find("job")->trace()->Flush();
    const std::string data = Slurp(path);
    CHECK(data.size() <= 4096 + 4096 / 8);
    const auto rep = gwtrace::ValidateTrace(data, false);
    INFO(rep.First());
    REQUIRE(rep.errors.empty());
    const auto& c = rep.processes.begin()->second;
    CHECK(c.kernels < fed.kernels);
    CHECK(c.instants >= 1);  // "trace size cap reached"
  }
  SECTION("off") {
    std::string error;
    col::TraceOptions opt;
    opt.level = col::TraceLevel::kOff;
    CHECK_FALSE(col::JobTrace::Open(TempDir("off") + "/t", opt, &error));
  }
  SECTION("level names") {
    col::TraceLevel l;
    CHECK(col::ParseTraceLevel("summary", &l));
    CHECK(l == col::TraceLevel::kSummary);
    CHECK_FALSE(col::ParseTraceLevel("verbose", &l));
  }
}

TEST_CASE("collector: a hang becomes an instant on its rank's process track") {
  const std::string path = TempDir("hang") + "/trace.perfetto-trace";
  std::string error;
  auto trace = col::JobTrace::Open(path, {}, &error);
  REQUIRE(trace);
  wire::Hello h = Hello("job", 3, 4).hello();
  trace->ForRank(h);
  col::Hang hang;
  hang.rank = 3;
  hang.pid = h.pid();
  hang.host = h.host();
  hang.tid = 9;
  hang.since_ns = kT0;
  hang.api = "ncclAllReduce";
  hang.collective = true;
  hang.seq = 41;
  hang.inside_s = 301;
  trace->OnHang(hang);
  trace->Flush();
  const auto rep = gwtrace::ValidateTrace(Slurp(path), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  CHECK(rep.instants == 1);
}

TEST_CASE("collector: many overlapping kernels on one stream stay nested, lanes are bounded") {
  const std::string path = TempDir("lanes") + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path);
  FakeRank r(jobs, Hello("job", 0, 1));
  wire::Batch b;
  for (int i = 0; i < 40; ++i)  // 40 kernels all overlapping: 16 lanes, 24 dropped
    Act(&b, wire::ACTIVITY_KERNEL, kT0 + i, kT0 + 1000 * kMs, 0);
  const auto rep = SendLast(r, b, jobs, path);
  CHECK(rep.processes.begin()->second.kernels == col::RankTrace::kMaxLanes);
  CHECK(jobs.Find("job")->trace()->Describe().find("24 slices dropped") != std::string::npos);
}

TEST_CASE("collector: long stalls, steps and findings are marked on the rank's tracks") {
  const std::string path = TempDir("marks") + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path);
  FakeRank r(jobs, Hello("job", 0, 1));
  wire::Batch b;
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, kT0, 150 * kMs)->set_tid(5);       // long: marked
  Add(&b, wire::CUDA_DEVICE_SYNCHRONIZE, kT0 + 200 * kMs, 99 * kMs)->set_tid(5);  // not
  Copy(&b, wire::CUDA_MEMCPY, wire::COPY_D2H, 1 << 26, kT0 + 400 * kMs, 120 * kMs,
       wire::FLAG_BLOCKED_HOST)->set_tid(5);                                   // long: marked
  b.set_settled_ns(kT0 + 1000 * kMs);  // the library says they are all sent
  r.SendBatch(b);
  col::JobTrace* t = jobs.Find("job")->trace();
  const std::string host = Hello("job", 0, 1).hello().host();
  col::RankResult res;
  auto step = [&](int i) {
    col::StepRec s;
    s.start = kT0 + i * 100 * kMs;
    s.end = kT0 + (i + 1) * 100 * kMs;
    res.steps.steps.push_back(s);
  };
  for (int i = 0; i < 5; ++i) step(i);
  t->Steps(0, host, res);
  t->Instant(0, host, "sync_stall", kT0, "finding: host-device syncs");
  // The job ends again after more data: only the new steps and findings are added.
  step(5);
  t->Steps(0, host, res);
  t->Instant(0, host, "sync_stall", kT0, "finding: host-device syncs (again)");
  t->Steps(9, host, res);  // no such rank: nothing
  r.Goodbye();
  r.Close();
  t->Flush();
  const auto rep = gwtrace::ValidateTrace(Slurp(path), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.processes.size() == 1);
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  CHECK(c.steps == 6);
  REQUIRE(c.instant_names.size() == 3);
  CHECK(c.instant_names[0].rfind("long stall: cudaStreamSynchronize blocked the host 150", 0) == 0);
  CHECK(c.instant_names[1].rfind("long stall: cudaMemcpy blocked the host 120", 0) == 0);
  CHECK(c.instant_names[2] == "finding: host-device syncs");
}

TEST_CASE("collector: the critical path is drawn over the median recorded step, its parts end to end") {
  const std::string path = TempDir("path") + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path);
  FakeRank r(jobs, Hello("job", 0, 1));
  wire::Batch b;
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, kT0, 1 * kMs)->set_tid(5);
  b.set_settled_ns(kT0 + 10 * kMs);
  r.SendBatch(b);
  col::JobTrace* t = jobs.Find("job")->trace();
  const std::string host = Hello("job", 0, 1).hello().host();
  col::RankResult res;
  // Steps of 100, 300 and 200 ms that CUPTI recorded whole, then one of 1 s it did not: the
  // median recorded one is the 200 ms step.
  uint64_t at = kT0;
  for (const auto& [ms, covered] : std::vector<std::pair<uint64_t, bool>>{{100, true}, {300, true}, {200, true}, {1000, false}}) {
    col::StepRec s;
    s.start = at;
    s.end = at += ms * kMs;
    s.covered = covered;
    res.steps.steps.push_back(s);
  }
  t->Steps(0, host, res);  // not known yet: no track
  res.critical_path.steps = 3;
  res.critical_path.step_ms = res.critical_path.path_ms = 40;
  res.critical_path.part_ms[col::kPathGpuCompute] = 10;
  res.critical_path.part_ms[col::kPathHostCompute] = 30;
  t->Steps(0, host, res);
  t->Steps(0, host, res);  // the job ends again: written once
  r.Goodbye();
  r.Close();
  t->Flush();
  const auto rep = gwtrace::ValidateTrace(Slurp(path), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  CHECK(c.steps == 4);
  CHECK(c.path_slices == 2);
  // The shares of the 200 ms step, largest first, named with their ms per step.
  CHECK(c.path_ns.at("host work 30 ms") == 150 * kMs);
  CHECK(c.path_ns.at("the GPU's own work 10 ms") == 50 * kMs);
  CHECK(c.path_args.at("ms_per_step") == Approx(40));
  CHECK(c.path_args.at("share") == Approx(1));
}

TEST_CASE("collector: with the rank's step graphs, the critical path is the median step's own, at its nodes' times") {
  const std::string path = TempDir("path-graph") + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path);
  FakeRank r(jobs, Hello("job", 0, 1));
  wire::Batch b;
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, kT0, 1 * kMs)->set_tid(5);
  b.set_settled_ns(kT0 + 10 * kMs);
  r.SendBatch(b);
  col::JobTrace* t = jobs.Find("job")->trace();
  const std::string host = Hello("job", 0, 1).hello().host();
  // Two steps of host work then a kernel it waits for: 10 + 5 ms, then 10 + 7 ms. The
  // second is the one drawn (the first holds what was queued before the graph).
  col::StepGraph g;
  g.start_ns = kT0;
  g.steps = 2;
  const auto node = [&](col::NodeKind kind, uint64_t from_ms, uint64_t to_ms, uint32_t step, int input,
                        col::EdgeKind via) {
    col::GraphNode n;
    n.kind = kind;
    n.start_ns = n.release_ns = kT0 + from_ms * kMs;
    n.end_ns = kT0 + to_ms * kMs;
    n.step = step;
    n.first_in = static_cast<uint32_t>(g.edges.size());
    if (input >= 0) {
      g.edges.push_back({static_cast<uint32_t>(input), via, 0});
      n.n_in = 1;
      n.release_ns = kT0;
    }
    g.nodes.push_back(n);
  };
  node(col::NodeKind::kHostGap, 0, 10, 0, -1, col::EdgeKind::kThread);
  node(col::NodeKind::kKernel, 10, 15, 0, 0, col::EdgeKind::kLaunch);
  node(col::NodeKind::kHostGap, 15, 25, 1, 1, col::EdgeKind::kSync);
  node(col::NodeKind::kKernel, 25, 32, 1, 2, col::EdgeKind::kLaunch);
  col::RankResult res;
  col::StepRec s;
  s.start = kT0;
  s.end = kT0 + 32 * kMs;
  res.steps.steps.push_back(s);
  res.critical_path.steps = 1;
  res.critical_path.step_ms = res.critical_path.path_ms = 17;
  res.critical_path.part_ms[col::kPathGpuCompute] = 7;
  res.critical_path.part_ms[col::kPathHostCompute] = 10;
  res.step_graphs.push_back(std::make_shared<const col::StepGraph>(g));
  t->Steps(0, host, res);
  r.Goodbye();
  r.Close();
  t->Flush();
  const auto rep = gwtrace::ValidateTrace(Slurp(path), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  CHECK(c.path_slices == 2);
  CHECK(c.path_ns.at("host work 10 ms") == 10 * kMs);
  CHECK(c.path_ns.at("the GPU's own work 7 ms") == 7 * kMs);
  CHECK(c.path_args.at("share") == Approx(1));
}

TEST_CASE("collector: trace timestamps are deltas per track sequence, on the same time line") {
  // Slices at known absolute times: the validator sums each sequence's deltas
  // from its clock snapshot (as the trace processor does) and must get them back.
  const std::string path = TempDir("deltas") + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path);
  FakeRank r(jobs, Hello("job", 0, 1));
  wire::Batch b;
  for (int i = 0; i < 500; ++i)
    Act(&b, wire::ACTIVITY_KERNEL, kT0 + i * kMs, kT0 + i * kMs + 700'000, 0);
  const auto rep = SendLast(r, b, jobs, path);
  CHECK(rep.first_slice_ns == kT0);
  CHECK(rep.last_slice_end_ns == kT0 + 499 * kMs + 700'000);
  // Per recorded thing (slice, counter sample), descriptors included: two packets of a few
  // bytes per slice.
  CHECK(static_cast<double>(rep.bytes) / (rep.slices + rep.counter_events) < 30);
}

TEST_CASE("collector: a trace window keeps full detail only between FROM and TO") {
  col::TraceOptions opt;
  REQUIRE(col::ParseTraceWindow("2:4", &opt));
  for (const char* bad : {"4:2", "x:3", "1", ":3", "-1:2", "1:1"}) {
    col::TraceOptions o;
    INFO(bad);
    CHECK_FALSE(col::ParseTraceWindow(bad, &o));
  }
  const std::string path = TempDir("window") + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path, opt);
  wire::Frame hello = Hello("job", 0, 1);
  hello.mutable_hello()->set_start_ns(kT0);
  FakeRank r(jobs, hello);
  wire::Batch b;
  for (int s = 0; s < 6; ++s) {  // one launch, kernel and sync per second; 2 s and 3 s are in
    const uint64_t t = kT0 + static_cast<uint64_t>(s) * 1000 * kMs;
    Add(&b, wire::CUDA_LAUNCH_KERNEL, t, 5000)->set_tid(1);
    Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, t + kMs, kMs)->set_tid(1);
    Act(&b, wire::ACTIVITY_API, t, t + 5000, 10 + s);
    Act(&b, wire::ACTIVITY_KERNEL, t + 100'000, t + 900'000, 10 + s);
  }
  const auto rep = SendLast(r, b, jobs, path);
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  CHECK(c.syncs == 6);     // the summary level, all along
  CHECK(c.launches == 2);  // detail, in the window only
  CHECK(c.kernels == 2);
  CHECK(c.api == 2);
  CHECK(rep.flows == 2);
  CHECK(c.counters > 0);
}

// Issue 16: the host sampler's samples become a track per sampled thread, a slice per run of
// samples with one stack, named by its user frame.
TEST_CASE("collector: host samples become a Python track per sampled thread") {
  const std::string path = TempDir("python") + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path);
  FakeRank r(jobs, Hello("job", 0, 1));
  wire::Batch b;
  auto stack = [&](uint32_t id, std::vector<std::string> frames) {
    auto* s = b.add_python_stacks();
    s->set_id(id);
    for (auto& f : frames) s->add_frames(f);
  };
  stack(1, {"/venv/lib/python3.11/site-packages/torch/_tensor.py:1 in item", "/home/u/train.py:9 in log"});
  stack(2, {"/home/u/train.py:20 in main"});
  b.mutable_host_sampling()->set_hz(100);
  // Thread 5: 3 samples in log, 2 in main, a pause of a second, 1 in log. Thread 6: 1 in main.
  const std::pair<uint64_t, uint32_t> samples[] = {{0, 1}, {10, 1}, {20, 1}, {30, 2}, {40, 2}, {1040, 1}};
  for (auto [ms, id] : samples) {
    auto* s = b.add_host_samples();
    s->set_t_ns(kT0 + ms * kMs);
    s->set_tid(5);
    s->set_stack_id(id);
  }
  auto* other = b.add_host_samples();
  other->set_t_ns(kT0);
  other->set_tid(6);
  other->set_stack_id(2);
  const gwtrace::TraceReport rep = SendLast(r, b, jobs, path);
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  CHECK(c.python_slices == 4);
  // log: 0-30 ms, then 1040-1050 (one period past a lone sample); main: 30-50, and thread 6's 0-10.
  CHECK(c.python_ns.at("/home/u/train.py:9 in log") == 40 * kMs);
  CHECK(c.python_ns.at("/home/u/train.py:20 in main") == 30 * kMs);
}
