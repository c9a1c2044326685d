// The reliability promises on the rank side (docs/RELIABILITY.md): whatever goes wrong
// around gpuwatch, the job behaves as without it, and what was recorded is not lost — it
// reaches the collector or the spool, and `gpuwatch report` rebuilds the summary.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "rank_pids.h"
#include "scenario_model.h"
#include "scenario_run.h"
#include "truth_check.h"

namespace fs = std::filesystem;
namespace e2e = gpuwatch::e2e;
using nlohmann::json;

namespace {

const std::string kApp = GPUWATCH_BIN_DIR "/gw_fault_app";

// The test programs are not linked to the simulator: they find it on LD_LIBRARY_PATH.
std::map<std::string, std::string> Env(const std::string& work, bool autostart) {
  return e2e::JobEnv(work, {{"LD_LIBRARY_PATH", GPUWATCH_SIM_DIR}, {"GPUWATCH_AUTOSTART", autostart ? "1" : "0"}});
}

}  // namespace

TEST_CASE("faults: no collector and autostart disabled: spool, job unaffected") {
  const std::string work = e2e::FreshDir("faults-no-collector");
  auto res = e2e::Run({kApp, "exit", "500"}, Env(work, false), 60);
  CHECK(res.exit_code == 7);  // the program's own exit status
  CHECK(res.out == "fault_app: 500 copies done\n");
  CHECK(res.err.find("spooling to") != std::string::npos);
  CHECK((!fs::exists(work + "/sock") || fs::is_empty(work + "/sock")));  // no collector, no log
  const json summary = e2e::RebuildSummary(work + "/out");
  CHECK(e2e::H2dCount(summary) == 500);
  CHECK(summary["ranks"][0]["ended"] == "normal");
}

TEST_CASE("faults: every way of ending keeps what was recorded") {
  struct Case {
    const char* mode;
    int exit_code;  // -1: killed by the signal
  };
  for (const Case c : {Case{"return", 0}, Case{"exit", 7}, Case{"throw", -1}, Case{"sigterm", -1}, Case{"sigint", -1},
                       Case{"fork", 0}}) {
    DYNAMIC_SECTION(c.mode) {
      const std::string work = e2e::FreshDir(std::string("faults-end-") + c.mode);
      auto res = e2e::Run({kApp, c.mode, "300"}, Env(work, false), 60);
      INFO(res.err);
      CHECK(res.exit_code == c.exit_code);
      if (c.exit_code < 0) CHECK(res.signal != 0);
      const json summary = e2e::RebuildSummary(work + "/out");
      REQUIRE(summary["ranks"].size() == 1);  // the forked child stayed silent
      CHECK(e2e::H2dCount(summary) == 300);
      CHECK(summary["ranks"][0]["kernels"]["launches"] == 300 + 37);  // the last ones too
    }
  }
}

TEST_CASE("faults: launches the library summarized are all counted however the job ends") {
  // CUPTI off: every launch is summarized on its thread, the last 37 after the last record
  // of the thread, so only the final batch's flush of the summaries counts them. A forked
  // child starts with recording off and sends nothing of its parent's summaries.
  for (const char* mode : {"return", "exit", "throw", "sigterm", "fork"}) {
    DYNAMIC_SECTION(mode) {
      const std::string work = e2e::FreshDir(std::string("faults-summary-") + mode);
      auto env = Env(work, false);
      env["GPUWATCH_CUPTI"] = "off";
      auto res = e2e::Run({kApp, mode, "300"}, env, 60);
      INFO(res.err);
      const json summary = e2e::RebuildSummary(work + "/out");
      REQUIRE(summary["ranks"].size() == 1);
      const json& rank = summary["ranks"][0];
      CHECK(rank["kernels"]["launches"] == 300 + 37);
      CHECK(rank["api_calls"]["cudaLaunchKernel"]["count"] == 300 + 37);
      CHECK(e2e::H2dCount(summary) == 300);
    }
  }
}

TEST_CASE("faults: a burst of millions of calls drops and counts, never blocks") {
  const std::string work = e2e::FreshDir("faults-burst");
  auto env = Env(work, false);
  env["GPUWATCH_RING_RECORDS"] = "1024";
  env["GPUWATCH_FLUSH_MS"] = "200";
  const auto t0 = std::chrono::steady_clock::now();
  auto res = e2e::Run({kApp, "burst", "2000000"}, env, 120);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(res.err << " took " << s << " s");
  CHECK(res.exit_code == 0);
  const json summary = e2e::RebuildSummary(work + "/out");
  const json& rank = summary["ranks"][0];
  const json& dropped = rank["dropped"];
  const uint64_t ring_full = dropped.value("ring_full", uint64_t{0});
  CHECK(ring_full > 0);
  // Every call (2,000,000 copies and the final stream sync) is recorded or counted as
  // dropped, whatever the reason (a full ring, or a full buffer while nothing takes data).
  const uint64_t syncs = rank["sync"]["by_api"].contains("cudaStreamSynchronize")
                             ? rank["sync"]["by_api"]["cudaStreamSynchronize"]["count"].get<uint64_t>()
                             : 0;
  CHECK(e2e::H2dCount(summary) + syncs + ring_full + dropped.value("collector_unreachable", uint64_t{0}) +
            dropped.value("spool_full", uint64_t{0}) ==
        2000001);
}

TEST_CASE("faults: collector killed with SIGKILL mid-run: ranks spool, the report matches the truth") {
  const std::string work = e2e::FreshDir("faults-collector-killed");
  const std::string file = std::string(GPUWATCH_SCENARIOS_DIR) + "/checkpoint_stall.json";
  const auto scenario = gpuwatch::scenario::load_scenario(file);
  const std::string sock = work + "/collector.sock";
  const int collector =
      e2e::Spawn({GPUWATCH_BIN_DIR "/gpuwatch-collector", "--listen", sock, "--out", work + "/out"}, {},
                 work + "/collector.log");
  REQUIRE(e2e::WaitForFile(sock, 10));
  auto env = Env(work, false);
  env["GPUWATCH_COLLECTOR"] = sock;
  const int job = e2e::Spawn({GPUWATCH_BIN_DIR "/gpuwatch-scenario", "--sim", "--truth", work + "/truth", file}, env,
                             work + "/job.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the ranks are mid-run
  kill(collector, SIGKILL);
  e2e::Wait(collector, 10);
  const int rc = e2e::Wait(job, 120);
  INFO(e2e::ReadFile(work + "/job.log"));
  REQUIRE(rc == 0);  // the job did not notice
  CHECK(e2e::ReadFile(work + "/job.log").find("spooling to") != std::string::npos);
  const json summary = e2e::RebuildSummary(work + "/out");
  e2e::CheckSummaryAgainstTruth(scenario, summary, work + "/truth");
}


TEST_CASE("faults: a rank stuck in a collective is reported at once, naming where each rank is") {
  const std::string work = e2e::FreshDir("faults-hang");
  const std::string sock = work + "/collector.sock";
  const int collector = e2e::Spawn(
      {GPUWATCH_BIN_DIR "/gpuwatch-collector", "--listen", sock, "--out", work + "/out", "--hang-s", "1"}, {},
      work + "/collector.log");
  REQUIRE(e2e::WaitForFile(sock, 10));
  auto env = Env(work, false);
  env["GPUWATCH_COLLECTOR"] = sock;
  const int job = e2e::Spawn({GPUWATCH_BIN_DIR "/gpuwatch-scenario", "--sim", "--timeout", "60",
                              std::string(GPUWATCH_SCENARIOS_DIR) + "/comm_bound.json"},
                             env, work + "/job.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto ranks = e2e::RankPids(job);
  REQUIRE(ranks.count(1) == 1);
  kill(ranks.at(1), SIGSTOP);  // rank 1 stops arriving: rank 0 waits in its collective
  bool reported = false;
  for (int i = 0; i < 100 && !reported; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    reported = e2e::ReadFile(work + "/collector.log").find("hang: job") != std::string::npos;
  }
  const std::string log = e2e::ReadFile(work + "/collector.log");
  INFO(log);
  CHECK(reported);
  CHECK(log.find("rank 0") != std::string::npos);
  kill(ranks.at(1), SIGCONT);
  for (auto& [r, pid] : ranks) kill(pid, SIGKILL);
  e2e::Wait(job, 30);
  kill(collector, SIGTERM);
  e2e::Wait(collector, 30);
  // The summary written when it is stopped keeps the hang (and gives the schema check a hangs[]).
  REQUIRE(e2e::WaitForFile(work + "/out/summary.json", 10));
  const json hangs = e2e::ReadSummary(work + "/out/summary.json")["hangs"];
  REQUIRE(hangs.size() >= 1);
  CHECK(hangs[0]["ranks"].size() == 2);  // where every rank of the job was
}

// torch.profiler's two orders (profiler_app.cpp): each would fail without the hand-over
// (the late one with exit 5, the early one with exit 6: gpuwatch kept the records).
TEST_CASE("faults: a profiler that takes CUPTI mid-run gets only its own buffers, gpuwatch keeps what it had") {
  for (const char* order : {"late", "early"}) {
    DYNAMIC_SECTION(order) {
      const e2e::JobRun run = e2e::RunJob(std::string("faults-profiler-takes-cupti-") + order,
                                          {GPUWATCH_BIN_DIR "/gw_profiler_app", order, "300", "200"},
                                          {.env = {{"GPUWATCH_AUTOSTART", "1"}}, .timeout_s = 60});
      INFO(run.job.out << run.job.err);
      CHECK(run.job.out == "profiler_app: 0 unknown buffers, 200 copy records of 200\n");
      const json rank = run.summary["ranks"][0];
      CHECK(rank["memcpy"]["h2d"]["count"] == 501);  // the hooks saw every copy (one warm-up)
      const json& gpu = rank["gpu"];
      CHECK(gpu["source"] == "cupti");
      CHECK(gpu["source_detail"].get<std::string>().find("profiler took CUPTI") != std::string::npos);
      // CUPTI starts in the first recorded call, before its copy (the warm-up), and stops at
      // the hand-over.
      CHECK(gpu["memcpy"]["h2d"]["count"] == 301);
    }
  }
}

TEST_CASE("faults: a profiler that takes CUPTI after gpuwatch detached it between windows gets its records") {
  // 20000 copies, charged 4 us each until CUPTI's cost is measured, spend the 50 ms allowance
  // in the first ~12500: the window closes, and CUPTI is detached at the exit of a later copy.
  // The profiler then attaches it again with its own callbacks (none of gpuwatch's left).
  const e2e::JobRun run = e2e::RunJob("faults-profiler-after-detach", {GPUWATCH_BIN_DIR "/gw_profiler_app", "detached", "20000", "200"},
                                      {.env = {{"GPUWATCH_AUTOSTART", "1"}, {"GPUWATCH_OVERHEAD", "0.001%"}, {"GPUWATCH_SAMPLE_HZ", "0"}},
                                       .timeout_s = 60});
  INFO(run.job.out << run.job.err);
  CHECK(run.job.out == "profiler_app: 0 unknown buffers, 200 copy records of 200\n");
  const json rank = run.summary["ranks"][0];
  CHECK(rank["memcpy"]["h2d"]["count"] == 20202);  // the hooks saw every copy
  CHECK(rank["overhead"]["cupti_detaches"] == 1);
  CHECK(rank["overhead"]["windows"] == 1);
  const json& gpu = rank["gpu"];
  CHECK(gpu["source_detail"].get<std::string>().find("profiler took CUPTI") != std::string::npos);
  CHECK(gpu["coverage"]["windows"] == 1);  // the device timeline was sampled: a window, then none
  CHECK(gpu["coverage"]["enqueue_share"].get<double>() > 0.05);
  CHECK(gpu["coverage"]["enqueue_share"].get<double>() < 0.99);
}
