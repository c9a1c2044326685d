// The Perfetto trace of whole runs: bundled scenarios under LD_PRELOAD on the simulated GPU,
// with an autostarted collector; OUT/trace.perfetto-trace must pass the validator
// (tests/unit/collector/test_trace_validator.h) and hold as many kernels, copies and
// collectives per rank as summary.json counts.
#include <catch2/catch.hpp>

#include <iostream>

#include "scenario_run.h"
#include "test_trace_validator.h"

using namespace gpuwatch::e2e;

namespace {

uint64_t Count(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k) || (*p)[k].is_null()) return 0;
    p = &(*p)[k];
  }
  return p->is_number() ? p->get<uint64_t>() : 0;
}

json CheckTrace(const std::string& scenario) {
  const JobRun run = RunScenario("trace-" + scenario, scenario, {.env = {{"GPUWATCH_TRACE", "full"}}});
  INFO("driver stderr:\n" << run.job.err);
  const json& summary = run.summary;
  const std::string data = ReadFile(run.out + "/trace.perfetto-trace");
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(data, false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.processes.size() == summary["ranks"].size());
  for (const json& r : summary["ranks"]) {
    const std::string name = "rank " + std::to_string(r["rank"].get<int>()) + " · " +
                             r["host"].get<std::string>() + " · pid " +
                             std::to_string(r["pid"].get<int>());
    INFO(name);
    REQUIRE(rep.processes.count(name));
    const gwtrace::RankCounts& c = rep.processes.at(name);
    if (!r["gpu"]["kernels"].is_null())
      CHECK(c.kernels == Count(r, {"gpu", "kernels", "count"}) + Count(r, {"gpu", "comm_kernels", "count"}));
    CHECK(c.gpu_h2d == Count(r, {"gpu", "memcpy", "h2d", "count"}));
    CHECK(c.gpu_d2h == Count(r, {"gpu", "memcpy", "d2h", "count"}));
    CHECK(c.host_h2d == Count(r, {"memcpy", "h2d", "count"}));
    CHECK(c.host_d2h == Count(r, {"memcpy", "d2h", "count"}));
    for (const auto& [op, v] : r["collectives"].items()) {
      if (!v.is_object() || !v.contains("count")) continue;  // by_comm: the same calls per communicator
      INFO(op);
      CHECK(c.collectives.count(op));
      if (c.collectives.count(op)) CHECK(c.collectives.at(op) == v["count"].get<uint64_t>());
    }
    CHECK(c.counters > 0);
    // Step markers: every step the analysis kept, on the rank's "steps" track.
    CHECK(c.steps == std::min<uint64_t>(Count(r, {"steps", "count"}), 100000));
    // The critical path of one recorded step, at its nodes' own times: its slices cover
    // that step end to end (shares add up to 1), a step of about the median's length.
    if (r["critical_path"].is_object()) {
      CHECK(c.path_slices > 0);
      uint64_t path_ns = 0;
      for (const auto& [slice, ns] : c.path_ns) path_ns += ns;
      CHECK(c.path_args.at("share") == Approx(1).epsilon(0.01));
      const double median_ms = r["steps"]["median_ms"].get<double>();
      CHECK(static_cast<double>(path_ns) * 1e-6 >= 0.5 * median_ms);
      CHECK(static_cast<double>(path_ns) * 1e-6 <= 2.0 * median_ms);
    }
  }
  // Each job finding is an instant on the ranks it names.
  for (const json& f : summary["job"]["findings"]) {
    for (const json& rank : f["ranks"]) {
      bool found = false;
      for (const auto& [pname, counts] : rep.processes)
        if (pname.rfind("rank " + std::to_string(rank.get<int>()) + " ", 0) == 0)
          for (const auto& n : counts.instant_names)
            found |= n.rfind("finding: " + f["title"].get<std::string>(), 0) == 0;
      INFO("finding " << f["id"] << " on rank " << rank);
      CHECK(found);
    }
  }
  const uint64_t events = rep.slices + rep.counter_events + rep.instants;
  std::cout << "trace " << scenario << ": " << data.size() << " bytes, " << rep.slices
            << " slices, " << rep.counter_events << " counter samples, " << rep.flows
            << " flows, " << rep.track_events << " track events; "
            << static_cast<double>(data.size()) / events << " bytes per event, "
            << static_cast<double>(data.size()) / rep.track_events << " per track event\n";
  return summary;
}

}  // namespace

TEST_CASE("trace: healthy run validates, counts equal the summary's") { CheckTrace("healthy"); }
TEST_CASE("trace: launch_bound run validates, counts equal the summary's") { CheckTrace("launch_bound"); }
TEST_CASE("trace: comm_bound run validates, counts equal the summary's") { CheckTrace("comm_bound"); }
TEST_CASE("trace: straggler run marks steps and the straggler finding") {
  const json summary = CheckTrace("straggler");
  bool straggler = false;  // the instant check above is not vacuous
  for (const json& f : summary["job"]["findings"]) straggler |= f["id"] == "straggler";
  CHECK(straggler);
}
