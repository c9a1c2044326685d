// The Perfetto trace of whole runs: bundled scenarios under LD_PRELOAD on the simulated GPU,
// with an autostarted collector; OUT/trace.perfetto-trace must pass the validator
// (tests/unit/collector/test_trace_validator.h) and hold as many kernels, copies and
// collectives per rank as summary.json counts. A run past a small cap keeps the detail
// --trace-keep asks for (checked against the same run's trace rebuilt whole from its journal).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
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
  // A run that fits under the cap keeps full detail everywhere, and says so.
  REQUIRE(rep.detail_spans.size() == 1);
  CHECK(rep.detail_spans[0].name == "full detail");
  CHECK(summary["trace"]["keep"] == "last");
  REQUIRE(summary["trace"]["detail_spans"].size() == 1);
  CHECK(summary["trace"]["detail_spans"][0]["detail"] == "full");
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

namespace {

// One rank, ~5 s of 40 short kernels a step with CUPTI on throughout: ~5 MB of full detail,
// past a 3 MiB cap.
constexpr const char* kLongRun = R"({
  "name": "trace_keep", "ranks": 1, "steps": 1500, "gpu": {"launch_us": 5},
  "step": [{"op": "host", "ms": 1}, {"op": "kernels", "count": 40, "us": 50, "name": "k"}, {"op": "sync"}]
})";

JobRun RunPastCap(const std::string& name, const std::string& keep) {
  JobRun run = RunScenario(name, kLongRun,
                           {.env = {{"GPUWATCH_TRACE", "full"}, {"GPUWATCH_CUPTI", "full"},
                                    {"GPUWATCH_TRACE_MAX_MIB", "3"}, {"GPUWATCH_TRACE_KEEP", keep}}});
  INFO("driver stderr:\n" << run.job.err);
  for (const auto& e : std::filesystem::directory_iterator(run.out))
    CHECK(e.path().filename().string().rfind("trace-parts-", 0) != 0);  // assembled, parts gone
  return run;
}

uint64_t KernelsFrom(const gwtrace::TraceReport& rep, uint64_t from) {
  uint64_t n = 0;
  for (const auto& [name, c] : rep.processes)
    n += static_cast<uint64_t>(std::count_if(c.kernel_starts.begin(), c.kernel_starts.end(),
                                             [&](uint64_t t) { return t >= from; }));
  return n;
}

}  // namespace

TEST_CASE("trace: keep last:N past the cap keeps the last N seconds whole") {
  const JobRun run = RunPastCap("trace-keep-last", "last:0.005");  // 0.3 s
  const std::string data = ReadFile(run.out + "/trace.perfetto-trace");
  CHECK(data.size() <= (3u << 20) + (3u << 17));
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(data, false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.detail_spans.size() >= 2);
  CHECK(rep.detail_spans.front().name == "summary only");
  CHECK(rep.detail_spans.back().name == "full detail");
  for (size_t i = 1; i < rep.detail_spans.size(); ++i) CHECK(rep.detail_spans[i].from_ns == rep.detail_spans[i - 1].to_ns);
  const uint64_t full_from = rep.detail_spans.back().from_ns;
  CHECK(rep.detail_spans.back().to_ns - full_from >= 300'000'000);
  // summary.json says the same.
  const json& t = run.summary["trace"];
  CHECK(t["keep"] == "last:0.005");
  REQUIRE(t["detail_spans"].size() == rep.detail_spans.size());
  CHECK(t["detail_spans"].back()["detail"] == "full");
  CHECK(t["bytes"].get<uint64_t>() == data.size());

  // The same run's journal rebuilt with every detail: the trace above has every kernel of
  // the span it calls full, and fewer in all.
  const std::string whole = run.work + "/whole";
  const auto res = Run({GPUWATCH_BIN_DIR "/gpuwatch", "report", run.out, "--out", whole},
                       {{"GPUWATCH_TRACE_KEEP", "first"}, {"GPUWATCH_TRACE_MAX_MIB", "4096"}}, 120);
  INFO(res.err);
  REQUIRE(res.exit_code == 0);
  const gwtrace::TraceReport all = gwtrace::ValidateTrace(ReadFile(whole + "/trace.perfetto-trace"), false);
  INFO(all.First());
  REQUIRE(all.errors.empty());
  REQUIRE(all.detail_spans.size() == 1);
  const uint64_t kept = KernelsFrom(rep, full_from);
  CHECK(kept > 1000);
  CHECK(kept == KernelsFrom(all, full_from));
  CHECK(KernelsFrom(rep, 0) < KernelsFrom(all, 0));
  // The summary level is whole in both.
  const auto& a = rep.processes.begin()->second;
  const auto& b = all.processes.begin()->second;
  CHECK(a.syncs == b.syncs);
  CHECK(a.steps == b.steps);
  std::cout << "trace keep last:0.005 past a 3 MiB cap: " << data.size() << " bytes ("
            << ReadFile(whole + "/trace.perfetto-trace").size() << " whole), " << rep.detail_spans.size()
            << " spans, full detail for the last " << (rep.detail_spans.back().to_ns - full_from) / 1e9 << " s\n";
}

TEST_CASE("trace: keep first past the cap keeps the start, then the summary level") {
  const JobRun run = RunPastCap("trace-keep-first", "first");
  const std::string data = ReadFile(run.out + "/trace.perfetto-trace");
  CHECK(data.size() <= (3u << 20) + (3u << 17));
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(data, false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.detail_spans.size() == 2);
  CHECK(rep.detail_spans[0].name == "full detail");
  CHECK(rep.detail_spans[1].name == "summary only");
  CHECK(KernelsFrom(rep, 0) > 1000);
  CHECK(KernelsFrom(rep, rep.detail_spans[1].from_ns + 1) == 0);
  const auto& names = rep.processes.begin()->second.instant_names;
  CHECK(std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.rfind("trace size cap reached", 0) == 0; }));
  CHECK(run.summary["trace"]["keep"] == "first");
}
