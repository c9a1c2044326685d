// Our critical path against HTA's on the four traces HTA's own critical-path tests analyse
// (tests/data/kineto/critical_path/README.md): each imported through the real importer and
// interpret stage, its step graph built for the window HTA's test analyses, and the path
// weighed as HTA weighs it (analyze/hta_path.h). Its length equals HTA's within 1% and its
// CPU-bound and GPU-bound shares HTA's within 2 points; HTA's figures are read from
// hta_critical_path.json (computed with HTA itself by hta_critical_path.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "analyze/hta_path.h"
#include "import_fixture.h"
#include "interpreted_rank.h"

using namespace gwtest;
using nlohmann::json;

namespace {

const std::string kDir = "critical_path/";

struct Ours {
  col::HtaPath path;
  size_t nodes = 0;
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
  return {col::HtaComparablePath(g, host), g.nodes.size()};
}

}  // namespace

TEST_CASE("critical path: matches HTA's on HTA's four critical-path test traces (length within 1%, CPU/GPU-bound within 2 points)",
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
                << want.at("gpu_bound_pct") << "%)");
      CHECK(static_cast<double>(p.length_ns) == Approx(length).epsilon(0.01));
      CHECK(p.CpuBoundPct() == Approx(want.at("cpu_bound_pct").get<double>()).margin(2.0));
      CHECK(p.GpuBoundPct() == Approx(want.at("gpu_bound_pct").get<double>()).margin(2.0));
    }
  }
}
