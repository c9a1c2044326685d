// The ranks' step graphs joined at their collectives (issue 52, analyze/job_graph.h), on
// hand-built steps whose longest path is known: a 3-rank all-reduce whose last rank arrives
// 5 ms late, a send → recv between two ranks, and the straggler's fix replayed on the joined
// graph through the job's what-ifs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>

#include "analyze/job_graph.h"
#include "analyze/job_result.h"
#include "analyze/step_graph_builder.h"
#include "analyze/what_if.h"

namespace dg = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;
constexpr uint64_t kT0 = 1000 * kMs;

dg::HostCall Call(wire::Api api, uint64_t t, uint64_t dur) {
  dg::HostCall c{};
  c.api = api;
  c.t_ns = t;
  c.dur_ns = dur;
  c.stream = 1;
  c.tid = 1;
  c.sync_kind = dg::SyncKindOf(api, 0, 0, wire::COPY_UNSPECIFIED);
  c.blocks_host = dg::BlocksHost(api, 0);
  c.recorded = true;
  return c;
}

// An NCCL call on communicator 99 (seen created on every rank: its hash names it there).
dg::HostCall Nccl(wire::Api api, uint64_t t, int nranks, int comm_rank, uint64_t seq, int peer = -1, uint64_t comm = 99) {
  dg::HostCall c = Call(api, t, 20 * kUs);
  c.comm_nranks = nranks;
  c.comm_hash = comm;
  c.comm_rank = comm_rank;
  c.comm_identified = true;
  c.seq = seq;
  c.peer = peer;
  c.coll_bytes = 1 << 20;
  return c;
}

dg::GraphWork Work(const dg::HostCall& c, uint64_t start, uint64_t end, bool comm = false) {
  dg::GraphWork w;
  w.start_ns = start;
  w.end_ns = end;
  w.api_start_ns = c.t_ns + 100;
  w.api_end_ns = c.end_ns() - 100;
  w.stream = 7;
  w.comm = comm;
  return w;
}

double Ms(double ns) { return ns / 1e6; }

// Each rank's steps, as measured: `host_ms[r]` of host work, a 2 ms kernel, an all-reduce
// (1 ms of transfer once the last rank's kernel is done: every member's NCCL kernel ends
// then), a stream sync that returns 10 µs after it. The next step starts there.
constexpr uint64_t kAfterHostNs = 15 * kUs + 2 * kMs;  // host work's end → the rank's arrival
std::vector<dg::GraphInput> AllReduceSteps(const std::vector<double>& host_ms, int steps, uint64_t comm = 99) {
  const double slowest = *std::max_element(host_ms.begin(), host_ms.end());
  std::vector<dg::GraphInput> out(host_ms.size());
  uint64_t t = kT0;
  for (int s = 0; s < steps; ++s) {
    const uint64_t comm_end = t + static_cast<uint64_t>(slowest * kMs) + kAfterHostNs + 1 * kMs;
    const uint64_t step_end = comm_end + 10 * kUs;
    for (size_t r = 0; r < host_ms.size(); ++r) {
      dg::GraphInput& in = out[r];
      const uint64_t launch = t + static_cast<uint64_t>(host_ms[r] * kMs);
      in.calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, launch, 10 * kUs));
      in.works.push_back(Work(in.calls.back(), launch + 15 * kUs, launch + kAfterHostNs));
      in.calls.push_back(Nccl(wire::NCCL_ALL_REDUCE, launch + 20 * kUs, static_cast<int>(host_ms.size()),
                              static_cast<int>(r), static_cast<uint64_t>(s), -1, comm));
      in.works.push_back(Work(in.calls.back(), launch + kAfterHostNs, comm_end, true));
      in.calls.push_back(Call(wire::CUDA_STREAM_SYNCHRONIZE, launch + 50 * kUs, step_end - (launch + 50 * kUs)));
      in.steps.push_back({t, step_end, true});
    }
    t = step_end;
  }
  return out;
}

std::vector<dg::RankStepGraph> Built(const std::vector<dg::GraphInput>& inputs) {
  std::vector<dg::RankStepGraph> ranks;
  for (size_t r = 0; r < inputs.size(); ++r)
    ranks.push_back({static_cast<int>(r), "host", std::make_shared<const dg::StepGraph>(dg::BuildStepGraph(inputs[r]))});
  return ranks;
}

}  // namespace

TEST_CASE("step graph: a 3-rank all-reduce joins the ranks: the last arrival releases everyone", "[step_graph][job_graph]") {
  // Ranks 0 and 1: 10 ms of host work; rank 2: 15 ms, so it arrives 5 ms after them.
  const auto ranks = Built(AllReduceSteps({10, 10, 15}, 1));
  for (const auto& r : ranks) REQUIRE(r.graph->joins.size() == 1);  // the all-reduce, named across ranks
  const auto joined = dg::JobGraph::Join(ranks);
  REQUIRE(joined);
  CHECK(joined->joins() == 1);
  const dg::JobPathReplay r = joined->Replay({}, true);
  const double step_ms = 15 + Ms(kAfterHostNs) + 1 + 0.010;
  CHECK(Ms(r.span_ns) == Approx(step_ms).margin(0.0005));  // the replay holds the measured step
  CHECK(Ms(joined->MeasuredSpan()) == Approx(step_ms).margin(0.0005));
  REQUIRE(r.ranks.size() == 3);
  for (int k = 0; k < 3; ++k) {
    // Every rank released at the last arrival: its step ends with rank 2's.
    CHECK(Ms(r.ranks[k].span_ns) == Approx(step_ms).margin(0.0005));
    CHECK(Ms(r.ranks[k].part_ns[dg::kPathComm]) == Approx(1.0).margin(0.0005));
  }
  // The early ranks' own paths wait 5 ms for rank 2; rank 2 waits for no one.
  CHECK(Ms(r.ranks[0].part_ns[dg::kPathPeerWait]) == Approx(5.0).margin(0.0005));
  CHECK(Ms(r.ranks[1].part_ns[dg::kPathPeerWait]) == Approx(5.0).margin(0.0005));
  CHECK(r.ranks[2].part_ns[dg::kPathPeerWait] == 0);
  // The joined path crosses to rank 2 at the join: its 15 ms of host work, no wait.
  REQUIRE(!r.path_ranks.empty());
  CHECK(r.path_ranks[0].rank == 2);
  CHECK(Ms(r.part_ns[dg::kPathHostCompute]) == Approx(15.0).margin(0.0005));
  CHECK(r.part_ns[dg::kPathPeerWait] == 0);
  double sum = 0;
  for (double p : r.part_ns) sum += p;
  CHECK(sum == Approx(static_cast<double>(r.span_ns)));

  SECTION("rank 2's host work at 10 ms: no rank waits, every step 5 ms shorter") {
    std::vector<dg::ReplayFix> fixes(3);
    fixes[2].duration = [](const dg::StepGraph& g, uint32_t i) {
      const dg::GraphNode& n = g.nodes[i];
      return n.kind == dg::NodeKind::kHostGap ? n.dur() * 2 / 3 : n.dur();
    };
    const dg::JobPathReplay f = joined->Replay(fixes, true);
    CHECK(Ms(f.span_ns) == Approx(step_ms - 5).margin(0.0005));
    for (int k = 0; k < 3; ++k) CHECK(Ms(f.ranks[k].part_ns[dg::kPathPeerWait]) == Approx(0).margin(0.0005));
  }
  SECTION("a member's graph missing: no join") {
    CHECK(!dg::JobGraph::Join({ranks[0], ranks[1]}));
  }
  SECTION("two pairs that never meet, on one host: replayed side by side, the slower pair paces the job") {
    std::vector<dg::GraphInput> in = AllReduceSteps({10, 10}, 2);
    for (dg::GraphInput& other : AllReduceSteps({10, 13}, 2, 77)) in.push_back(other);
    std::vector<dg::RankGraphs> sampled;
    for (const dg::RankStepGraph& r : Built(in)) sampled.push_back({r.rank, r.host, {r.graph}});
    const std::vector<dg::JobGraph> groups = dg::JoinSampledGraphs(sampled);
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].ranks().size() == 4);
    const dg::JobPathReplay p = groups[0].Replay();
    CHECK(Ms(p.span_ns) == Approx(13 + Ms(kAfterHostNs) + 1 + 0.010).margin(0.0005));
    REQUIRE(!p.path_ranks.empty());
    CHECK(p.path_ranks[0].rank == 3);
    sampled[3].host = "another";  // no clock in common with the first pair
    CHECK(dg::JoinSampledGraphs(sampled).empty());
  }
}

TEST_CASE("step graph: a send → recv joins two ranks: the recv ends no earlier than the send's arrival + transfer", "[step_graph][job_graph]") {
  // Rank 0 (the sender) has 8 ms of host work before its ncclSend; rank 1 posts its recv
  // after 2 ms and waits for it, then runs a 1 ms kernel on what it received and syncs.
  std::vector<dg::GraphInput> in(2);
  const uint64_t send_at = kT0 + 8 * kMs, arrival = send_at + 25 * kUs;
  const uint64_t transfer = 500 * kUs, done = arrival + transfer;
  in[0].calls.push_back(Nccl(wire::NCCL_SEND, send_at, 2, 0, 0, 1));
  in[0].works.push_back(Work(in[0].calls.back(), arrival, done, true));
  in[0].calls.push_back(Call(wire::CUDA_STREAM_SYNCHRONIZE, send_at + 30 * kUs, done + 10 * kUs - (send_at + 30 * kUs)));
  const uint64_t recv_at = kT0 + 2 * kMs;
  in[1].calls.push_back(Nccl(wire::NCCL_RECV, recv_at, 2, 1, 0, 0));
  in[1].works.push_back(Work(in[1].calls.back(), recv_at + 25 * kUs, done, true));
  in[1].calls.push_back(Call(wire::CUDA_LAUNCH_KERNEL, recv_at + 30 * kUs, 10 * kUs));
  in[1].works.push_back(Work(in[1].calls.back(), done, done + 1 * kMs));
  const uint64_t end1 = done + 1 * kMs + 10 * kUs;
  in[1].calls.push_back(Call(wire::CUDA_STREAM_SYNCHRONIZE, recv_at + 50 * kUs, end1 - (recv_at + 50 * kUs)));
  in[0].steps.push_back({kT0, done + 10 * kUs, true});
  in[1].steps.push_back({kT0, end1, true});
  const auto ranks = Built(in);
  REQUIRE(ranks[0].graph->joins.size() == 1);
  CHECK(ranks[0].graph->joins[0].from == 0);
  CHECK(ranks[1].graph->joins[0].to == 1);
  const auto joined = dg::JobGraph::Join(ranks);
  REQUIRE(joined);
  const dg::JobPathReplay r = joined->Replay({}, true);
  // The recv completes at the send's arrival + the transfer; the send completes with it.
  CHECK(r.ranks[1].span_ns == end1 - kT0);
  CHECK(r.ranks[0].span_ns == done + 10 * kUs - kT0);
  CHECK(Ms(r.ranks[1].part_ns[dg::kPathPeerWait]) == Approx(Ms(arrival - (recv_at + 25 * kUs))).margin(0.0005));
  CHECK(Ms(r.ranks[1].part_ns[dg::kPathComm]) == Approx(0.5).margin(0.0005));
  CHECK(r.path_ranks[0].rank == 0);  // the path runs through the sender's host work
  CHECK(Ms(r.part_ns[dg::kPathHostCompute]) == Approx(8.0).margin(0.0005));

  SECTION("the sender 6 ms earlier: the recv 6 ms earlier, the receiver waits no longer") {
    std::vector<dg::ReplayFix> fixes(2);
    fixes[0].duration = [](const dg::StepGraph& g, uint32_t i) {
      const dg::GraphNode& n = g.nodes[i];
      return n.kind == dg::NodeKind::kHostGap ? n.dur() - 6 * kMs : n.dur();
    };
    const dg::JobPathReplay f = joined->Replay(fixes, true);
    CHECK(Ms(f.ranks[1].span_ns) == Approx(Ms(end1 - kT0) - 6).margin(0.0005));
    CHECK(Ms(f.ranks[1].part_ns[dg::kPathPeerWait]) == Approx(0).margin(0.0005));
  }
  SECTION("a recv from another sender (another n): no join") {
    dg::StepGraph other = *ranks[1].graph;
    other.joins[0].seq = 1;
    CHECK(!dg::JobGraph::Join({ranks[0], {1, "host", std::make_shared<const dg::StepGraph>(other)}}));
  }
}

TEST_CASE("step graph: the straggler's fix on the joined graph: the others no longer wait for it", "[step_graph][job_graph][what_if]") {
  // Four steps a graph; rank 2's host work 15 ms, the others' 10 ms: every step is 5 ms
  // longer than without the straggler. Fixed, rank 2 at the median rank's pace: 10 ms.
  const std::vector<dg::GraphInput> inputs = AllReduceSteps({10, 10, 15}, 4);
  std::vector<dg::RankResult> results(3);
  for (int r = 0; r < 3; ++r) {
    results[r].rank = r;
    results[r].host = "host";
    results[r].step_graphs = {std::make_shared<const dg::StepGraph>(dg::BuildStepGraph(inputs[r]))};
    dg::ModelRankFixes(results[r].step_graphs, results[r]);
    REQUIRE(results[r].critical_path.known());
  }
  const double measured_ms = 15 + Ms(kAfterHostNs) + 1 + 0.010;
  const double fixed_ms = measured_ms - 5;
  dg::JobResult j;
  j.ranks = dg::RankList(results);
  j.steps_median_s = measured_ms * 1e-3;
  dg::Finding straggler;
  straggler.id = "straggler";
  straggler.title = "straggler";
  straggler.evidence["rank"] = 2;
  j.findings.push_back(straggler);
  dg::ModelJobFixes(j);

  // The job's path: the joined one, through rank 2.
  REQUIRE(!j.critical_path_ranks.empty());
  CHECK(j.critical_path_ranks[0].first == 2);
  CHECK(j.critical_path.path_ms == Approx(measured_ms).epsilon(0.001));
  CHECK(j.critical_path.part_ms[dg::kPathHostCompute] == Approx(15.0).epsilon(0.002));
  const dg::WhatIf& w = j.findings[0].what_if;
  REQUIRE(w.known());
  CHECK(w.step_ms == Approx(fixed_ms).epsilon(0.002));
  CHECK(w.speedup == Approx(measured_ms / fixed_ms).epsilon(0.002));

  SECTION("without the graphs (ranks that came as digests), the ranks' paces by arithmetic") {
    for (dg::RankResult& r : results) r.step_graphs.clear();
    dg::JobResult k;
    k.ranks = dg::RankList(results);
    k.steps_median_s = j.steps_median_s;
    k.findings.push_back(straggler);
    dg::ModelJobFixes(k);
    CHECK(k.critical_path_ranks.empty());
    REQUIRE(k.findings[0].what_if.known());
  }
}
