// Several hosts on one machine (issue #9), the hosts forwarding every raw frame
// (--upstream-raw; multihost_aggregate_test.cpp: the default, figures): a root collector listening on TCP with the job
// token, host collectors forwarding their ranks to it with --upstream, each pretending its
// clock is off by seconds (GPUWATCH_TEST_CLOCK_SKEW_NS), ranks of a simulated job split
// between them (GPUWATCH_HOST names the "host"). The root must undo the skews and see
// exactly what the hosts saw; the hosts must not depend on the root.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "multihost_run.h"
#include "test_trace_validator.h"
#include "truth_check.h"

using namespace gpuwatch::e2e::multihost;


TEST_CASE("multihost: the root undoes each host's clock offset and sees what the hosts saw") {
  const TwoHostRun run = RunTwoHosts("multihost", true);
  const std::string& work = run.work;
  const std::string& scenario_file = run.scenario_file;
  const auto& scenario = run.scenario;
  const json &sa = run.sa, &sb = run.sb, &top = run.top;
  const std::string& logs = run.logs;
  INFO(logs);
  CHECK(logs.find("error:") == std::string::npos);
  CHECK(logs.find("not forwarded") == std::string::npos);

  // Each host wrote its own ranks, the root all of them.
  CHECK(sa["ranks"].size() == 2);
  CHECK(sb["ranks"].size() == 2);
  REQUIRE(top["ranks"].size() == 4);
  CHECK(top["job"]["hosts"] == 2);
  for (const json& r : top["ranks"]) {
    CHECK(r["ended"] == "normal");
    CHECK(r["collectives"]["allreduce"]["count"] == scenario.steps);
    CHECK(r["memcpy"]["h2d"]["count"] == scenario.steps);
  }

  // The offsets: -skew, within the bound the estimate gives (exact on one machine: the
  // root read its clock between the probe's send and the answer's receipt).
  std::map<std::string, json> clocks;
  for (const json& h : top["job"]["host_clocks"]) clocks[h["host"]] = h;
  REQUIRE(clocks.size() == 2);
  for (const auto& [host, skew] : {std::pair{"ha", kSkewA}, std::pair{"hb", kSkewB}}) {
    const json& h = clocks[host];
    INFO(host << ": " << h.dump());
    CHECK(h["via_collector"].is_string());
    const int64_t err = h["clock_offset_ns"].get<int64_t>() + skew;
    const int64_t bound = h["clock_uncertainty_ns"].get<int64_t>();
    CHECK(std::llabs(err) <= bound + 1000);
    CHECK(bound < 50'000'000);
    CHECK(sa["job"]["host_clocks"][0]["via_collector"].is_null());  // the hosts' own: direct
  }
  const std::string text = e2e::ReadFile(work + "/root-out/summary.txt");
  CHECK(std::regex_search(text, std::regex(R"(host ha: clock -(6999|7000)\.\d{3} ms \+/- .* via collector on )")));
  CHECK(std::regex_search(text, std::regex(R"(host hb: clock \+2999\.\d{3} ms|host hb: clock \+3000\.\d{3} ms)")));

  // Rank by rank, the root's figures are the host's (same frames, times moved together;
  // the host's own figures are checked against the truth by the pipeline tests).
  CheckRanksAsOnHosts(sa, sb, top, clocks);

  // The root's journal keeps the frames as they came, with the offsets in their Hellos:
  // `gpuwatch report` rebuilds the same aligned summary from it.
  const auto rebuilt_run = e2e::Run({GPUWATCH_BIN_DIR "/gpuwatch", "report", work + "/root-out", "-o",
                                     work + "/rebuilt"},
                                    {}, 60);
  INFO(rebuilt_run.err);
  REQUIRE(rebuilt_run.exit_code == 0);
  const json rebuilt = Summary(work + "/rebuilt");
  CHECK(rebuilt["job"]["host_clocks"] == top["job"]["host_clocks"]);
  for (int r = 0; r < 4; ++r) {
    json x = *RankOf(top, r), y = *RankOf(rebuilt, r);
    x.erase("storage");
    y.erase("storage");
    INFO("rank " << r << ", live -> rebuilt: " << json::diff(x, y).dump());
    CHECK(x == y);
  }

  // One timeline: every rank's trace starts within the same second (the skews put 10 s
  // between the hosts), each at the time its host collector's trace has for it (on that
  // host's clock: moved by the host's offset).
  const auto rep = gwtrace::ValidateTrace(e2e::ReadFile(work + "/root-out/trace.perfetto-trace"), false);
  INFO(rep.First());
  CHECK(rep.errors.empty());
  REQUIRE(rep.processes.size() == 4);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& [name, counts] : rep.processes) {
    lo = std::min(lo, counts.first_ns);
    hi = std::max(hi, counts.first_ns);
    const bool on_a = name.find(" · ha · ") != std::string::npos;
    const auto local = gwtrace::ValidateTrace(
        e2e::ReadFile(work + (on_a ? "/a-out" : "/b-out") + "/trace.perfetto-trace"), false);
    REQUIRE(local.processes.count(name));
    const json& h = clocks[on_a ? "ha" : "hb"];
    INFO(name);
    CHECK(std::llabs(static_cast<long long>(counts.first_ns - local.processes.at(name).first_ns) -
                     h["clock_offset_ns"].get<int64_t>()) <= h["clock_uncertainty_ns"].get<int64_t>() + 1000);
  }
  CHECK(hi - lo < 1'000'000'000);

  // The job-wide figures are those one collector gets for the same job.
  const e2e::JobRun one = e2e::RunScenario("multihost-single", scenario_file, {.expect_summary = false});
  REQUIRE(one.job.exit_code == 0);
  const json ref = Summary(one.out);
  CHECK(StragglerRank(ref) == 3);
  CHECK(StragglerRank(top) == 3);
  CHECK(top["job"]["collectives"]["allreduce"]["count"] == ref["job"]["collectives"]["allreduce"]["count"]);
  CHECK(top["job"]["steps"]["count"] == ref["job"]["steps"]["count"]);
  const double med = top["job"]["steps"]["median_ms"], ref_med = ref["job"]["steps"]["median_ms"];
  CHECK(med == Approx(ref_med).epsilon(0.3));
}

TEST_CASE("multihost: a wrong token is refused once by the root, the host collector carries on") {
  const std::string work = e2e::FreshDir("multihost-token");
  const int root = StartRoot(work);
  const int port = e2e::LoggedTcpPort(work + "/root.log");
  REQUIRE(port > 0);
  const auto t0 = std::chrono::steady_clock::now();
  const int a = StartRawHost(work, "a", port, 0, "not-the-token");
  CHECK_FALSE(e2e::WaitForLog(work + "/a.log", std::regex("the root collector refused this collector"), 30).empty());
  auto res = e2e::Run({GPUWATCH_BIN_DIR "/gw_fault_app", "exit", "300"},
                      {{"LD_PRELOAD", GPUWATCH_LIB}, {"LD_LIBRARY_PATH", GPUWATCH_SIM_DIR},
                       {"GPUWATCH_COLLECTOR", work + "/a.sock"}, {"GPUWATCH_AUTOSTART", "0"},
                       {"GPUWATCH_OUT", work + "/job-out"}},
                      60);
  INFO(res.err);
  CHECK(res.exit_code == 7);
  const json local = Summary(work + "/a-out");
  CHECK(local["ranks"].size() == 1);
  CHECK(local["ranks"][0]["memcpy"]["h2d"]["count"] == 300);
  // Past the host's retry interval (5 s): a refused host does not knock again.
  std::this_thread::sleep_until(t0 + std::chrono::seconds(7));
  Stop(a);
  Stop(root);
  const std::string root_log = e2e::ReadFile(work + "/root.log");
  INFO(root_log << e2e::ReadFile(work + "/a.log"));
  CHECK(Count(root_log, std::regex("wrong job token")) == 1);
  CHECK(Count(root_log, std::regex("warning:")) == 1);
  CHECK_FALSE(fs::exists(work + "/root-out/summary.json"));
}

TEST_CASE("multihost: the root killed mid-run, the host collector says so once and writes its summary") {
  const std::string work = e2e::FreshDir("multihost-rootdies");
  const std::string file = std::string(GPUWATCH_SCENARIOS_DIR) + "/healthy.json";
  const auto scenario = gpuwatch::scenario::load_scenario(file);
  const int root = StartRoot(work);
  const int port = e2e::LoggedTcpPort(work + "/root.log");
  REQUIRE(port > 0);
  const int a = StartRawHost(work, "a", port, 0);
  REQUIRE(Forwarding(work + "/a.log"));
  const int job = e2e::Spawn({GPUWATCH_BIN_DIR "/gpuwatch-scenario", "--sim", "--truth", work + "/truth", file},
                             {{"LD_PRELOAD", GPUWATCH_LIB}, {"GPUWATCH_COLLECTOR", work + "/a.sock"},
                              {"GPUWATCH_AUTOSTART", "0"}, {"GPUWATCH_OUT", work + "/job-out"}},
                             work + "/job.log");
  // Once both ranks' streams reach the root, kill it.
  bool streaming = false;
  for (int i = 0; i < 1000 && !streaming; ++i) {
    int journals = 0;
    if (fs::exists(work + "/root-out/.gpuwatch"))
      for (const auto& f : fs::directory_iterator(work + "/root-out/.gpuwatch"))
        journals += f.path().filename().string().rfind("rank-", 0) == 0 && fs::file_size(f.path()) > 4096;
    streaming = journals == 2;
    if (!streaming) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(streaming);
  kill(root, SIGKILL);
  e2e::Wait(root, 10);
  const int rc = e2e::Wait(job, 120);
  INFO(e2e::ReadFile(work + "/job.log"));
  REQUIRE(rc == 0);
  const json local = Summary(work + "/a-out");
  Stop(a);
  const std::string log = e2e::ReadFile(work + "/a.log");
  INFO(log);
  CHECK(Count(log, std::regex("(lost|cannot reach) the root collector")) == 1);
  CHECK(log.find("error:") == std::string::npos);
  for (const json& r : local["ranks"]) CHECK(r["ended"] == "normal");
  e2e::CheckSummaryAgainstTruth(scenario, local, work + "/truth");
}
