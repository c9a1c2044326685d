// Our critical path against HTA's on the four traces HTA's own critical-path tests analyse
// (tests/data/kineto/critical_path/README.md): each imported through the real importer and
// interpret stage, its step graph built for the window HTA's test analyses, and the path
// weighed as HTA weighs it (analyze/hta_path.h). Its length equals HTA's within 1%, and its
// CPU-bound and GPU-bound shares (and HTA's launch and kernel-kernel overheads) HTA's within
// 2 points; HTA's figures are read from hta_critical_path.json (computed with HTA itself by
// hta_critical_path.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "analyze/hta_path.h"
#include "analyze/step_graph_builder.h"
#include "import_fixture.h"
#include "interpreted_rank.h"

using namespace gwtest;
using nlohmann::json;

namespace {

const std::string kDir = "critical_path/";

struct Ours {
  col::HtaPath path;
  size_t nodes = 0;
  uint64_t product_ns = 0;  // the product's own path over the window (ReplayGraph)
};

// The trace imported, and its graph over [start_ns, end_ns) weighed as HTA weighs it.
Ours HtaWeighedPath(const std::string& name, uint64_t start_ns, uint64_t end_ns) {
  InterpretedRank rank;
  col::RankImportOptions o;
  o.keep_host_spans = true;
  col::RankImportStats stats;
  std::string error;
  INFO(error);
  REQUIRE(col::ImportRankTrace(KinetoTrace(kDir + name), o, rank, &stats, &error));
  REQUIRE(!stats.host_spans.empty());

  col::GraphInput in;
  in.steps.push_back({start_ns, end_ns, true});
  in.calls = rank.calls;
  // The interpret stage hands syncs over by their end: the builder reads calls by start.
  std::stable_sort(in.calls.begin(), in.calls.end(),
                   [](const col::HostCall& a, const col::HostCall& b) { return a.t_ns < b.t_ns; });
  in.works = rank.graph_work;
  std::stable_sort(in.works.begin(), in.works.end(),
                   [](const col::GraphWork& a, const col::GraphWork& b) { return a.start_ns < b.start_ns; });
  const col::StepGraph g = col::BuildStepGraph(in);
  const col::HtaHostTime host(stats.host_spans, rank.calls);
  return {col::HtaComparablePath(g, host), g.nodes.size(), col::ReplayGraph(g).span_ns};
}

}  // namespace

TEST_CASE(
    "critical path: matches HTA's on HTA's four critical-path test traces (length within 1%, CPU/GPU-bound within 2 points)",
    "[critical_path][hta]") {
  std::ifstream f(KinetoTrace(kDir + "hta_critical_path.json"));
  REQUIRE(f.good());
  const json hta = json::parse(f).at("traces");
  REQUIRE(hta.size() == 4);
  for (const auto& [name, want] : hta.items()) {
    SECTION(name) {
      const uint64_t start = want.at("window_trace_ns").at("start").get<uint64_t>();
      const uint64_t end = want.at("window_trace_ns").at("end").get<uint64_t>();
      const Ours ours = HtaWeighedPath(name, start, end);
      REQUIRE(ours.nodes > 0);
      const col::HtaPath& p = ours.path;
      const double length = static_cast<double>(want.at("critical_path").at("length_ns").get<uint64_t>());
      INFO(name << ": ours " << p.length_ns / 1e6 << " ms (cpu " << p.CpuBoundPct() << "%, gpu " << p.GpuBoundPct()
                << "%, launch " << p.launch_ns / 1e3 << " us, kernel-kernel " << p.kernel_gap_ns / 1e3
                << " us), HTA's " << length / 1e6 << " ms (cpu " << want.at("cpu_bound_pct") << "%, gpu "
                << want.at("gpu_bound_pct") << "%); the product's path " << ours.product_ns / 1e6 << " ms");
      CHECK(static_cast<double>(p.length_ns) == Approx(length).epsilon(0.01));
      CHECK(p.CpuBoundPct() == Approx(want.at("cpu_bound_pct").get<double>()).margin(2.0));
      CHECK(p.GpuBoundPct() == Approx(want.at("gpu_bound_pct").get<double>()).margin(2.0));
      // HTA's other two categories, launch delays and kernel-kernel gaps, as well.
      CHECK(p.Pct(p.launch_ns) == Approx(want.at("launch_overhead_pct").get<double>()).margin(2.0));
      CHECK(p.Pct(p.kernel_gap_ns) == Approx(want.at("kernel_kernel_overhead_pct").get<double>()).margin(2.0));
      // The product's own path weighs the host time between operators, and syncs' returns:
      // never shorter than HTA's weighing of the same graph.
      CHECK(ours.product_ns >= p.length_ns);
    }
  }
}

TEST_CASE("critical path: HTA's weighting counts host time inside top-level operators only, and no blocking call's",
          "[critical_path][hta]") {
  constexpr uint64_t kUs = 1000;
  // Thread 1: an operator [0, 100) µs that launches a 50 µs kernel at 10 µs and syncs on it
  // from 20 µs; then 400 µs outside any operator; then an operator [500, 530).
  const std::vector<col::HostSpan> spans = col::TopLevelHostSpans(
      {{500 * kUs, 530 * kUs, 1}, {0, 100 * kUs, 1}, {10 * kUs, 15 * kUs, 1}, {20 * kUs, 90 * kUs, 1}});
  REQUIRE(spans.size() == 2);
  CHECK(spans[0].end_ns == 100 * kUs);
  auto call = [](wire::Api api, uint64_t t, uint64_t dur) {
    col::HostCall c{};
    c.api = api;
    c.t_ns = t;
    c.dur_ns = dur;
    c.stream = 1;
    c.tid = 1;
    c.sync_kind = col::SyncKindOf(api, 0, 0, wire::COPY_UNSPECIFIED);
    c.blocks_host = col::BlocksHost(api, 0);
    return c;
  };
  col::GraphInput in;
  in.steps.push_back({0, 530 * kUs, true});
  in.calls = {call(wire::CUDA_LAUNCH_KERNEL, 10 * kUs, 5 * kUs), call(wire::CUDA_STREAM_SYNCHRONIZE, 20 * kUs, 70 * kUs)};
  col::GraphWork w;
  w.start_ns = 30 * kUs;
  w.end_ns = 80 * kUs;
  w.api_start_ns = 11 * kUs;
  w.api_end_ns = 14 * kUs;
  w.stream = 7;
  in.works.push_back(w);
  const col::StepGraph g = col::BuildStepGraph(in);
  const col::HtaPath p = col::HtaComparablePath(g, col::HtaHostTime(spans, in.calls));
  // The path: the operator's 10 µs, the launch's 20 µs to its kernel, the kernel's 50 µs,
  // the sync (nothing), the operator's last 10 µs, nothing between the operators, 30 µs.
  CHECK(p.length_ns == 120 * kUs);
  CHECK(p.launch_ns == 20 * kUs);
  CHECK(p.gpu_ns == 50 * kUs);
  CHECK(p.cpu_ns == 50 * kUs);
  CHECK(p.kernel_gap_ns == 0);
  // The product's replay counts the 400 µs between the operators, and the sync's return.
  CHECK(col::ReplayGraph(g).span_ns == 530 * kUs);
}
