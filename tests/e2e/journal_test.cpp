// The collector's journal over a run longer than its checkpoint interval
// (docs/RELIABILITY.md, "The collector's journal"): checkpoints keep every file under its cap,
// and after a SIGKILL of the collector `gpuwatch report` rebuilds the whole run from the
// last checkpoint, the frames after it and the ranks' spools.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "scenario_model.h"
#include "scenario_run.h"
#include "test_trace_validator.h"
#include "truth_check.h"

namespace fs = std::filesystem;
namespace e2e = gpuwatch::e2e;
using nlohmann::json;

namespace {

constexpr uint64_t kCap = 1 << 20;

// healthy's loop for ~8 s (about 27 ms a step on the simulator).
std::string LongHealthy() {
  json s = json::parse(e2e::ReadFile(std::string(GPUWATCH_SCENARIOS_DIR) + "/healthy.json"));
  s["name"] = "healthy_long";
  s["steps"] = 300;
  return s.dump();
}

const std::map<std::string, std::string> kJournalEnv = {{"GPUWATCH_JOURNAL_CHECKPOINT_S", "1"},
                                                         {"GPUWATCH_JOURNAL_MAX_BYTES", std::to_string(kCap)}};

// The largest frame file in OUT/.gpuwatch (journal parts and spools), and whether a
// checkpoint is there.
uint64_t LargestJournalPart(const std::string& out, bool* checkpoint) {
  uint64_t largest = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(out + "/.gpuwatch", ec)) {
    const std::string name = e.path().filename();
    if (name.rfind("rank-", 0) != 0) continue;  // the collector's, not a spool
    if (e.path().extension() == ".checkpoint") *checkpoint = true;
    if (e.path().extension() == ".frames") largest = std::max<uint64_t>(largest, fs::file_size(e.path(), ec));
  }
  return largest;
}

// The counts in a figure (every "count", "bytes" and "launches" in it): what a crash must not
// change, while times differ from run to run.
json CountsIn(const json& j) {
  json kept = json::object();
  for (const auto& [k, v] : j.items()) {
    if (v.is_object()) {
      if (json inner = CountsIn(v); !inner.empty()) kept[k] = inner;
    } else if (v.is_number_integer() && (k == "count" || k == "bytes" || k == "launches" || k == "driver_launches")) {
      kept[k] = v;
    }
  }
  return kept;
}

json Counts(const json& summary) {
  json counts = json::array();
  for (const json& r : summary["ranks"]) {
    json collectives = r["collectives"];
    collectives.erase("by_comm");  // named by the communicators' ids, new in every run
    counts.push_back({{"rank", r["rank"]},
                      {"kernels", CountsIn(r["kernels"])},
                      {"sync", CountsIn(r["sync"])},
                      {"memcpy", CountsIn(r["memcpy"])},
                      {"collectives", CountsIn(collectives)},
                      {"steps", r["steps"]["count"]}});
  }
  return counts;
}

}  // namespace

TEST_CASE("journal: collector killed after checkpoints: the journal stayed under its cap, report rebuilds the run") {
  const std::string scenario = LongHealthy();
  // The same run undisturbed, for its figures.
  const e2e::JobRun calm = e2e::RunScenario("journal-calm", scenario, {.truth = true, .env = kJournalEnv});
  e2e::CheckSummaryAgainstTruth(gpuwatch::scenario::load_scenario(calm.file), calm.summary, calm.truth_dir);
  bool calm_checkpoint = false;
  CHECK(LargestJournalPart(calm.out, &calm_checkpoint) <= kCap);
  CHECK(calm_checkpoint);

  const std::string work = e2e::FreshDir("journal-killed");
  const std::string file = work + "/scenario.json";
  { std::ofstream(file) << scenario; }
  const std::string sock = work + "/collector.sock", out = work + "/out";
  const int collector = e2e::Spawn({GPUWATCH_BIN_DIR "/gpuwatch-collector", "--listen", sock, "--out", out,
                                    "--journal-checkpoint-s", "1", "--journal-max-bytes", std::to_string(kCap)},
                                   {}, work + "/collector.log");
  REQUIRE(e2e::WaitForFile(sock, 10));
  auto env = e2e::JobEnv(work, {{"LD_LIBRARY_PATH", GPUWATCH_SIM_DIR}, {"GPUWATCH_AUTOSTART", "0"}});
  env["GPUWATCH_COLLECTOR"] = sock;
  const int job = e2e::Spawn({GPUWATCH_BIN_DIR "/gpuwatch-scenario", "--sim", "--truth", work + "/truth", file}, env,
                             work + "/job.log");
  // The journal, watched while the collector lives: never past its cap.
  uint64_t largest = 0;
  bool checkpoint = false;
  const auto kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < kill_at) {
    largest = std::max(largest, LargestJournalPart(out, &checkpoint));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(collector, SIGKILL);
  e2e::Wait(collector, 10);
  largest = std::max(largest, LargestJournalPart(out, &checkpoint));
  const uint64_t trace_bytes = fs::exists(out + "/trace.perfetto-trace") ? fs::file_size(out + "/trace.perfetto-trace") : 0;
  const int rc = e2e::Wait(job, 120);
  INFO(e2e::ReadFile(work + "/job.log") << e2e::ReadFile(work + "/collector.log"));
  REQUIRE(rc == 0);  // the job did not notice
  CHECK(checkpoint);
  CHECK(largest <= kCap);
  CHECK(largest > 0);

  const auto report = e2e::Run({GPUWATCH_BIN_DIR "/gpuwatch", "report", out}, {}, 60);
  INFO(report.err);
  REQUIRE(report.exit_code == 0);
  CHECK(report.err.find("from checkpoints") != std::string::npos);
  const json rebuilt = e2e::ReadSummary(out + "/summary.json");
  e2e::CheckSummaryAgainstTruth(gpuwatch::scenario::load_scenario(file), rebuilt, work + "/truth");
  CHECK(Counts(rebuilt).dump(1) == Counts(calm.summary).dump(1));
  for (const json& r : rebuilt["ranks"]) {
    const json& from = r["storage"]["rebuilt_from"];
    REQUIRE(from.size() >= 2);
    CHECK(from[0].get<std::string>().find(".checkpoint") != std::string::npos);
  }
  // The live collector's trace covers the run until the collector died. With the default
  // `--trace-keep last` it is in parts until the job ends (trace/trace_file.h): none whole
  // while the job ran; report puts the dead collector's parts together rather than
  // rebuilding one from the frames after the last checkpoint.
  CHECK(trace_bytes == 0);
  REQUIRE(fs::exists(out + "/trace.perfetto-trace"));
  CHECK(report.err.find("assembled from the") != std::string::npos);
  CHECK(report.out.find(out + "/trace.perfetto-trace") != std::string::npos);
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(e2e::ReadFile(out + "/trace.perfetto-trace"), false);
  INFO(rep.First());
  CHECK(rep.errors.empty());
  CHECK(rep.slices > 0);
  // It reaches past the first checkpoint (1 s in): more than the frames after the last
  // checkpoint could rebuild would start with.
  CHECK(rep.last_slice_end_ns - rep.first_slice_ns > 3'000'000'000ull);
}
