// The step's dependency graph (issue 52) on hand-built steps whose longest path is known:
// host gaps and launches, a stream sync, an event edge between streams, a collective's wait
// for its peers, send → recv; then the replays a fix makes, and a loop through RankModel.
#include <catch2/catch.hpp>

#include "analyze/rank_model.h"
#include "analyze/path_segments.h"
#include "analyze/step_graph_builder.h"
#include "analyze/step_graphs.h"
#include "step_loop.h"

namespace dg = gpuwatch::collector;
namespace wire = gpuwatch::wire;
using dg::test_loop::kMs;
using dg::test_loop::kUs;

namespace {

constexpr uint64_t kT0 = 1000 * kMs;

dg::HostCall Call(wire::Api api, uint64_t t, uint64_t dur, uint64_t stream = 1, uint32_t tid = 1) {
  dg::HostCall c{};
  c.api = api;
  c.t_ns = t;
  c.dur_ns = dur;
  c.stream = stream;
  c.tid = tid;
  c.sync_kind = dg::SyncKindOf(api, 0, 0, wire::COPY_UNSPECIFIED);
  c.blocks_host = dg::BlocksHost(api, 0);
  c.recorded = true;
  return c;
}

// Device work launched by the call `c` (its CUPTI span a little inside the hooks').
dg::GraphWork Work(const dg::HostCall& c, uint64_t start, uint64_t dur, uint32_t stream, bool comm = false) {
  dg::GraphWork w;
  w.start_ns = start;
  w.end_ns = start + dur;
  w.api_start_ns = c.t_ns + 100;
  w.api_end_ns = c.end_ns() - 100;
  w.stream = stream;
  w.comm = comm;
  return w;
}

dg::StepMark Step(uint64_t start, uint64_t end) { return {start, end, true}; }

double Ms(double ns) { return ns / 1e6; }

}  // namespace

TEST_CASE("step graph: host work, a launch and a stream sync: the path is the host, then the kernel", "[step_graph]") {
  // 10 ms of host work, a 10 µs launch, a 5 ms kernel 5 µs after it, a sync that returns
  // 20 µs after the kernel ends.
  dg::GraphInput in;
  const uint64_t launch = kT0 + 10 * kMs;
  in.calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, launch, 10 * kUs));
  const uint64_t k0 = launch + 15 * kUs;
  in.works.push_back(Work(in.calls[0], k0, 5 * kMs, 7));
  const uint64_t sync = launch + 10 * kUs;
  in.calls.push_back(Call(wire::CUDA_STREAM_SYNCHRONIZE, sync, k0 + 5 * kMs + 20 * kUs - sync));
  const uint64_t end = in.calls[1].end_ns();
  in.steps.push_back(Step(kT0, end));

  const dg::StepGraph g = dg::BuildStepGraph(in);
  REQUIRE(g.steps == 1);
  const dg::PathReplay r = dg::ReplayGraph(g);
  CHECK(r.span_ns == end - kT0);  // the replay reproduces the measured step
  CHECK(Ms(r.part_ns[dg::kPathHostCompute]) == Approx(10.0));
  CHECK(Ms(r.part_ns[dg::kPathGpuCompute]) == Approx(5.0));
  CHECK(r.part_ns[dg::kPathLaunch] == Approx(15.0 * kUs));  // the call and its latency
  CHECK(r.part_ns[dg::kPathHostSync] == Approx(20.0 * kUs));
  REQUIRE(r.streams.size() == 1);
  CHECK(r.streams[0].stream == 7);
  double sum = 0;
  for (double p : r.part_ns) sum += p;
  CHECK(sum == Approx(static_cast<double>(r.span_ns)));

  SECTION("without the sync's edge the host returns at once; the kernel still ends the step") {
    dg::ReplayFix fix;
    fix.keeps = [](const dg::StepGraph&, uint32_t, const dg::GraphEdge& e) { return e.kind != dg::EdgeKind::kSync; };
    const dg::PathReplay f = dg::ReplayGraph(g, fix);
    CHECK(f.span_ns == k0 + 5 * kMs - kT0);
    CHECK(f.part_ns[dg::kPathHostSync] == 0);
  }
  SECTION("half the host work: the step shorter by 5 ms") {
    dg::ReplayFix fix;
    fix.duration = [](const dg::StepGraph& g, uint32_t i) {
      const dg::GraphNode& n = g.nodes[i];
      return n.kind == dg::NodeKind::kHostGap ? n.dur() / 2 : n.dur();
    };
    CHECK(Ms(dg::ReplayGraph(g, fix).span_ns) == Approx(Ms(end - kT0) - 5.0).margin(0.001));
  }
}

TEST_CASE("step graph: an event recorded on one stream holds the other stream's next kernel", "[step_graph]") {
  // Stream A (handle 1, CUPTI 7): a 6 ms kernel, then cudaEventRecord(e=42). Stream B
  // (handle 2, CUPTI 8): cudaStreamWaitEvent(e), then a 1 ms kernel launched at once that
  // starts when A's kernel ends; a device sync at the end.
  dg::GraphInput in;
  uint64_t t = kT0 + 1 * kMs;
  in.calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, t, 10 * kUs, 1));
  const uint64_t a0 = t + 15 * kUs;
  in.works.push_back(Work(in.calls.back(), a0, 6 * kMs, 7));
  t += 20 * kUs;
  dg::HostCall rec = Call(wire::CUDA_EVENT_RECORD, t, 2 * kUs, 1);
  rec.seq = 42;
  in.calls.push_back(rec);
  t += 5 * kUs;
  dg::HostCall wait = Call(wire::CUDA_STREAM_WAIT_EVENT, t, 2 * kUs, 2);
  wait.seq = 42;
  in.calls.push_back(wait);
  t += 5 * kUs;
  in.calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, t, 10 * kUs, 2));
  const uint64_t b0 = a0 + 6 * kMs;
  dg::GraphWork wb = Work(in.calls.back(), b0, 1 * kMs, 8);
  t += 20 * kUs;
  const uint64_t sync_end = b0 + 1 * kMs + 10 * kUs;
  in.calls.push_back(Call(wire::CUDA_DEVICE_SYNCHRONIZE, t, sync_end - t));
  in.works.push_back(wb);
  in.steps.push_back(Step(kT0, sync_end));

  const dg::StepGraph g = dg::BuildStepGraph(in);
  size_t events = 0;
  for (const dg::GraphEdge& e : g.edges) events += e.kind == dg::EdgeKind::kEvent;
  CHECK(events == 1);
  const dg::PathReplay r = dg::ReplayGraph(g);
  CHECK(r.span_ns == sync_end - kT0);
  // The path: 1 ms of host, the launch on A, A's kernel, B's kernel, the sync's return.
  REQUIRE(r.streams.size() == 2);
  CHECK(r.streams[0].stream == 7);
  CHECK(Ms(r.streams[0].ms) == Approx(6.0));
  CHECK(Ms(r.streams[1].ms) == Approx(1.0));
  CHECK(Ms(r.part_ns[dg::kPathHostCompute]) == Approx(1.0));

  SECTION("without the event edge B's kernel runs beside A's") {
    dg::ReplayFix fix;
    fix.keeps = [](const dg::StepGraph&, uint32_t, const dg::GraphEdge& e) { return e.kind != dg::EdgeKind::kEvent; };
    const dg::PathReplay f = dg::ReplayGraph(g, fix);
    CHECK(Ms(f.span_ns) == Approx(Ms(r.span_ns) - 1.0).margin(0.05));  // A's 6 ms now ends the step
  }
}

TEST_CASE("step graph: a cudaEventSynchronize that names its event waits for the work before that event's record", "[step_graph]") {
  // Kernel A (3 ms) on stream 1, then its event recorded; kernel B on stream 2 ends 5 µs
  // after A; the host synchronizes with the event and returns 10 µs after A ended.
  dg::GraphInput in;
  uint64_t t = kT0 + 100 * kUs;
  in.calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, t, 10 * kUs, 1));
  const uint64_t a0 = t + 15 * kUs;
  in.works.push_back(Work(in.calls.back(), a0, 3 * kMs, 7));
  t += 20 * kUs;
  dg::HostCall rec = Call(wire::CUDA_EVENT_RECORD, t, 2 * kUs, 1);
  rec.seq = 42;
  in.calls.push_back(rec);
  t += 5 * kUs;
  in.calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, t, 10 * kUs, 2));
  const uint64_t b0 = t + 15 * kUs, b1 = a0 + 3 * kMs + 5 * kUs;
  in.works.push_back(Work(in.calls.back(), b0, b1 - b0, 8));
  t += 20 * kUs;
  const uint64_t sync_end = a0 + 3 * kMs + 10 * kUs;
  dg::HostCall sync = Call(wire::CUDA_EVENT_SYNCHRONIZE, t, sync_end - t, 0);
  auto awaited_lane = [&](const dg::HostCall& s) {
    dg::GraphInput with = in;
    with.calls.push_back(s);
    with.steps.push_back(Step(kT0, sync_end));
    const dg::StepGraph g = dg::BuildStepGraph(with);
    for (const dg::GraphNode& n : g.nodes)
      if (n.kind == dg::NodeKind::kSyncWait)
        for (uint32_t k = n.first_in; k < n.first_in + n.n_in; ++k)
          if (g.edges[k].kind == dg::EdgeKind::kSync) return static_cast<int64_t>(g.nodes[g.edges[k].from].lane);
    return int64_t{-1};
  };
  SECTION("named (an imported trace's): A's kernel, before the record") {
    sync.seq = 42;
    CHECK(awaited_lane(sync) == 7);
  }
  SECTION("not named (the library's hook): the work that ended last before it returned") {
    CHECK(awaited_lane(sync) == 8);
  }
}

TEST_CASE("step graph: a collective that waited for its peers: the wait and the transfer on the path, none alone", "[step_graph]") {
  // Two steps, each a 2 ms kernel then an all-reduce on a 2-rank communicator, and a sync.
  // The first all-reduce kernel took 0.5 ms (this rank arrived last), the second 3.5 ms
  // (it waited 3 ms for the peer).
  dg::GraphInput in;
  uint64_t t = kT0;
  const uint64_t comm_ms[2] = {500 * kUs, 3500 * kUs};
  uint64_t second_start = 0;
  for (int s = 0; s < 2; ++s) {
    const uint64_t start = t;
    t += 100 * kUs;
    in.calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, t, 10 * kUs));
    const uint64_t k = t + 15 * kUs;
    in.works.push_back(Work(in.calls.back(), k, 2 * kMs, 7));
    t += 20 * kUs;
    dg::HostCall ar = Call(wire::NCCL_ALL_REDUCE, t, 20 * kUs);
    ar.comm_nranks = 2;
    ar.comm_hash = 99;
    ar.coll_bytes = 1 << 20;
    in.calls.push_back(ar);
    const uint64_t c0 = k + 2 * kMs;
    in.works.push_back(Work(ar, c0, comm_ms[s], 7, true));
    t += 30 * kUs;
    const uint64_t end = c0 + comm_ms[s] + 10 * kUs;
    in.calls.push_back(Call(wire::CUDA_STREAM_SYNCHRONIZE, t, end - t));
    in.steps.push_back(Step(start, end));
    t = end;
    if (s == 0) second_start = end;
  }
  std::sort(in.works.begin(), in.works.end(), [](const dg::GraphWork& a, const dg::GraphWork& b) { return a.start_ns < b.start_ns; });
  const dg::StepGraph g = dg::BuildStepGraph(in);
  REQUIRE(g.comm_min_ns.size() == 1);
  CHECK(g.comm_min_ns[0] == 500 * kUs);
  // Two steps: the replay counts from the first one's done to the second's (the step pace).
  const dg::PathReplay r = dg::ReplayGraph(g);
  CHECK(r.steps == 1);
  CHECK(r.span_ns == t - second_start);
  CHECK(Ms(r.part_ns[dg::kPathPeerWait]) == Approx(3.0));
  CHECK(Ms(r.part_ns[dg::kPathComm]) == Approx(0.5));
  const dg::PathReplay alone = dg::ReplayGraph(g, {}, true);  // the rank's own pace: no NCCL kernel time
  CHECK(Ms(alone.span_ns) == Approx(Ms(r.span_ns) - 3.5).margin(0.001));
  CHECK(alone.part_ns[dg::kPathPeerWait] == 0);
}

TEST_CASE("step graph: a recv that waited for its send, and a nested call's work is its outer call's", "[step_graph]") {
  // ncclRecv's kernel (comm) waits 4 ms for the peer stage's send, then the stage's kernel
  // (launched by a cudaLaunchKernel nested inside a library call) follows on the stream.
  dg::GraphInput in;
  uint64_t t = kT0 + 50 * kUs;
  dg::HostCall recv = Call(wire::NCCL_RECV, t, 20 * kUs);
  recv.comm_nranks = 2;
  recv.comm_hash = 5;
  recv.peer = 0;
  recv.coll_bytes = 1 << 20;
  in.calls.push_back(recv);
  const uint64_t r0 = t + 25 * kUs;
  in.works.push_back(Work(recv, r0, 4 * kMs + 200 * kUs, 7, true));
  t += 30 * kUs;
  dg::HostCall outer = Call(wire::CUDA_MEMSET_ASYNC, t, 40 * kUs);  // a library call that launches inside
  in.calls.push_back(outer);
  dg::HostCall inner = Call(wire::CUDA_LAUNCH_KERNEL, t + 10 * kUs, 10 * kUs);
  in.calls.push_back(inner);
  const uint64_t k0 = r0 + 4 * kMs + 200 * kUs;
  in.works.push_back(Work(inner, k0, 1 * kMs, 7));
  t += 50 * kUs;
  const uint64_t end = k0 + 1 * kMs + 10 * kUs;
  in.calls.push_back(Call(wire::CUDA_STREAM_SYNCHRONIZE, t, end - t));
  in.steps.push_back(Step(kT0, end));

  const dg::StepGraph g = dg::BuildStepGraph(in);
  size_t calls = 0;
  for (const dg::GraphNode& n : g.nodes) calls += n.kind == dg::NodeKind::kCall;
  CHECK(calls == 3);  // recv, the outer call (the nested launch is its time), the sync's enqueue
  const dg::PathReplay r = dg::ReplayGraph(g);
  CHECK(r.span_ns == end - kT0);
  CHECK(Ms(r.part_ns[dg::kPathComm] + r.part_ns[dg::kPathPeerWait]) == Approx(4.2));
  CHECK(Ms(r.part_ns[dg::kPathGpuCompute]) == Approx(1.0));
}

TEST_CASE("step graph: a rank's loop through RankModel gets its critical path and a data-loading what-if", "[step_graph]") {
  // 20 steps of 40 ms host work, then a 10 ms kernel and a sync: host-bound.
  dg::RankModel m(dg::DeviceSweep::Limits{});
  wire::Hello h;
  h.set_rank(0);
  m.OnHello(h);
  m.OnBatch(dg::test_loop::Loop(20, 40, 10));
  m.Flush();
  const dg::RankResult& r = m.Result();
  REQUIRE(r.critical_path.known());
  CHECK(r.critical_path.path_ms == Approx(r.critical_path.step_ms).epsilon(0.01));
  CHECK(r.critical_path.part_ms[dg::kPathHostCompute] == Approx(40.0).epsilon(0.01));
  CHECK(r.critical_path.part_ms[dg::kPathGpuCompute] == Approx(10.0).epsilon(0.01));
  CHECK(r.critical_path.Largest() == dg::kPathHostCompute);
  const dg::Finding* host = nullptr;
  for (const dg::Finding& f : r.findings)
    if (f.id == "data_loading" || f.id == "host_overhead") host = &f;
  REQUIRE(host);
  REQUIRE(host->what_if.known());
  // The host's 40 ms gone (the loop's short gaps are microseconds): the kernel paces the step.
  CHECK(host->what_if.step_ms == Approx(10.05).epsilon(0.02));
  CHECK(host->what_if.speedup == Approx(50.05 / 10.05).epsilon(0.03));
  CHECK(host->what_if.then_paced_by == dg::kPathGpuCompute);
  CHECK(!host->what_if.assumes.empty());
  REQUIRE(r.all_fixed.known());
  CHECK(r.all_fixed.step_ms <= host->what_if.step_ms * 1.001);
}

TEST_CASE("step graph: the median step's critical path as the trace draws it, at the nodes' own times", "[step_graph]") {
  // Three steps of 10 ms of host work, a 10 µs launch, a kernel 5 µs after it (the second
  // step's 7 ms, the others' 5 ms) and a stream sync returning 20 µs after it.
  dg::GraphInput in;
  uint64_t t = kT0;
  for (int s = 0; s < 3; ++s) {
    const uint64_t step_start = t, launch = t + 10 * kMs, kernel_ns = (s == 1 ? 7 : 5) * kMs;
    in.calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, launch, 10 * kUs));
    const uint64_t k0 = launch + 15 * kUs;
    in.works.push_back(Work(in.calls.back(), k0, kernel_ns, 7));
    const uint64_t sync = launch + 10 * kUs;
    in.calls.push_back(Call(wire::CUDA_STREAM_SYNCHRONIZE, sync, k0 + kernel_ns + 20 * kUs - sync));
    t = in.calls.back().end_ns();
    in.steps.push_back(Step(step_start, t));
  }
  const dg::StepGraph g = dg::BuildStepGraph(in);
  REQUIRE(g.steps == 3);
  const std::vector<dg::GraphStepSpan> spans = dg::MeasuredStepSpans(g);
  REQUIRE(spans.size() == 3);
  CHECK(spans[1].start_ns == in.steps[0].end_ns);
  CHECK(spans[1].end_ns == in.steps[1].end_ns);

  // Steps 2 and 3 are candidates (the first holds what was queued before it): 17.035 and
  // 15.035 ms; the median of two is the longer.
  const dg::ChosenStepPath chosen = dg::MedianStepPath({&g});
  CHECK(chosen.span.start_ns == in.steps[0].end_ns);
  REQUIRE(chosen.segments.size() == 4);
  const int parts[4] = {dg::kPathHostCompute, dg::kPathLaunch, dg::kPathGpuCompute, dg::kPathHostSync};
  const double ms[4] = {10.0, 0.015, 7.0, 0.020};
  uint64_t at = chosen.span.start_ns;
  for (int k = 0; k < 4; ++k) {
    INFO("segment " << k);
    CHECK(chosen.segments[k].part == parts[k]);
    CHECK(chosen.segments[k].start_ns == at);  // end to end, at the measured times
    CHECK(Ms(static_cast<double>(chosen.segments[k].end_ns - chosen.segments[k].start_ns)) == Approx(ms[k]));
    at = chosen.segments[k].end_ns;
  }
  CHECK(at == chosen.span.end_ns);
  // The kernel's segment is the kernel itself.
  CHECK(chosen.segments[2].start_ns == in.works[1].start_ns);
  CHECK(chosen.segments[2].end_ns == in.works[1].end_ns);
}

TEST_CASE("step graph: a stream sync waits for the work its stream waits on through an event", "[step_graph]") {
  // DDP's and Megatron's order: a 2 ms kernel on the compute stream (handle 1), an event the
  // comm stream (handle 2) waits on, an all-reduce there (5 ms on the GPU), an event the
  // compute stream waits on, and cudaStreamSynchronize(compute) with no kernel after the
  // wait: it returns 20 µs after the all-reduce ends, which is what it waited for.
  dg::GraphInput in;
  uint64_t t = kT0 + 1 * kMs;
  in.calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, t, 10 * kUs, 1));
  const uint64_t k0 = t + 15 * kUs;
  in.works.push_back(Work(in.calls.back(), k0, 2 * kMs, 7));
  const auto event_call = [&](wire::Api api, uint64_t stream, uint64_t event) {
    t += 5 * kUs;
    dg::HostCall c = Call(api, t, 2 * kUs, stream);
    c.seq = event;
    in.calls.push_back(c);
  };
  event_call(wire::CUDA_EVENT_RECORD, 1, 41);
  event_call(wire::CUDA_STREAM_WAIT_EVENT, 2, 41);
  t += 5 * kUs;
  in.calls.push_back(Call(wire::NCCL_ALL_REDUCE, t, 10 * kUs, 2));
  const uint64_t c0 = k0 + 2 * kMs;
  in.works.push_back(Work(in.calls.back(), c0, 5 * kMs, 8, true));
  event_call(wire::CUDA_EVENT_RECORD, 2, 42);
  event_call(wire::CUDA_STREAM_WAIT_EVENT, 1, 42);
  t += 5 * kUs;
  const uint64_t sync_end = c0 + 5 * kMs + 20 * kUs;
  in.calls.push_back(Call(wire::CUDA_STREAM_SYNCHRONIZE, t, sync_end - t, 1));
  in.steps.push_back(Step(kT0, sync_end));

  const dg::StepGraph g = dg::BuildStepGraph(in);
  const dg::PathReplay r = dg::ReplayGraph(g);
  CHECK(r.span_ns == sync_end - kT0);
  // On the path: the kernel, the all-reduce, and the sync's 20 µs return, not a 5 ms sync.
  CHECK(Ms(r.part_ns[dg::kPathComm] + r.part_ns[dg::kPathPeerWait]) == Approx(5.0));
  CHECK(Ms(r.part_ns[dg::kPathGpuCompute]) == Approx(2.0));
  CHECK(r.part_ns[dg::kPathHostSync] == Approx(20.0 * kUs));

  SECTION("without the all-reduce, the sync returns after the kernel") {
    dg::ReplayFix fix;
    fix.duration = [](const dg::StepGraph& gr, uint32_t i) {
      return gr.nodes[i].kind == dg::NodeKind::kComm ? uint64_t{0} : gr.nodes[i].dur();
    };
    const dg::PathReplay f = dg::ReplayGraph(g, fix);
    CHECK(Ms(f.span_ns) == Approx(Ms(r.span_ns) - 5.0).margin(0.05));
  }
}

TEST_CASE("step graphs: a chunk waiting for its device work takes its calls, the steps after it buffer nothing", "[step_graph]") {
  // Eight steps in a window (a launch and a sync each, the kernel's record), then the window
  // closes: its work never settles (no record comes after it to move the sweep), and the run
  // goes on for 5000 steps outside windows, a sync each. Before, every one of their syncs
  // waited in the buffer with the chunk (up to its 2^18 cap).
  dg::StepGraphs graphs;
  uint64_t t = kT0;
  for (int i = 0; i < 8; ++i) {
    const dg::HostCall launch = Call(wire::CUDA_LAUNCH_KERNEL, t + 100 * kUs, 10 * kUs);
    graphs.OnHostCall(launch);
    dg::DeviceWork w{};
    w.start_ns = launch.end_ns() + 5 * kUs;
    w.end_ns = w.start_ns + 800 * kUs;
    w.kind = wire::ACTIVITY_KERNEL;
    w.stream = 1;
    const dg::HostCall sync = Call(wire::CUDA_STREAM_SYNCHRONIZE, launch.end_ns(), w.end_ns + 10 * kUs - launch.end_ns());
    graphs.OnHostCall(sync);
    graphs.OnDeviceWork(w);
    graphs.OnStep(Step(t, sync.end_ns()));
    t = sync.end_ns();
  }
  // A sync ordered by its end: it began in the chunk's last step and arrives after it closed.
  for (int i = 0; i < 5000; ++i) {
    graphs.OnHostCall(Call(wire::CUDA_STREAM_SYNCHRONIZE, t + 100 * kUs, 20 * kUs));
    graphs.OnStep(dg::StepMark{t, t + 1 * kMs, false});
    t += 1 * kMs;
  }
  INFO("buffered " << graphs.StateSize());
  CHECK(graphs.StateSize() < 64);  // the chunk's 16 calls and 8 works, a step's calls
  // The chunk's graph, built at the end from what it took: every step's launch, sync and kernel.
  const dg::StepGraphList built = graphs.Graphs();
  REQUIRE(built.size() == 1);
  CHECK(built[0]->steps == 8);
  size_t launches = 0, kernels = 0;
  for (const dg::GraphNode& n : built[0]->nodes) {
    launches += n.kind == dg::NodeKind::kCall && n.launch;
    kernels += n.kind == dg::NodeKind::kKernel;
  }
  CHECK(launches == 8);
  CHECK(kernels == 8);
}
