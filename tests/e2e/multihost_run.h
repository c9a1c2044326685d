// Several hosts on one machine (issue #9, #21): a root collector on TCP, host collectors
// with --upstream, each pretending its clock is off (GPUWATCH_TEST_CLOCK_SKEW_NS), the
// ranks of a simulated job split between them (GPUWATCH_HOST names the "host").
#pragma once
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "scenario_model.h"
#include "scenario_run.h"

namespace fs = std::filesystem;
namespace e2e = gpuwatch::e2e;
using nlohmann::json;

namespace gpuwatch::e2e::multihost {

inline const std::string kToken = "multihost-token-8c2e71";
inline constexpr int64_t kSkewA = 7'000'000'000, kSkewB = -3'000'000'000;

// The straggler scenario on 4 ranks, rank 3 the slow one: a job-wide figure that needs
// every rank, and collectives across both hosts.
inline std::string FourRankScenario(const std::string& work) {
  json s = json::parse(e2e::ReadFile(std::string(GPUWATCH_SCENARIOS_DIR) + "/straggler.json"));
  s["ranks"] = 4;
  s["steps"] = 30;
  s["rank_scale"] = {{"3", {{"host", 2.0}}}};
  const std::string path = work + "/scenario.json";
  std::ofstream(path) << s.dump(2);
  return path;
}

inline int StartCollector(const std::string& work, const std::string& name,
                   std::vector<std::string> extra, std::map<std::string, std::string> env) {
  std::vector<std::string> argv = {GPUWATCH_BIN_DIR "/gpuwatch-collector", "--listen",
                                   work + "/" + name + ".sock", "--out", work + "/" + name + "-out"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return e2e::Spawn(argv, env, work + "/" + name + ".log");
}

// A host collector sending its ranks to the collector at `port` (their figures; with
// `extra` {"--upstream-raw"} every frame), its clock `skew_ns` ahead.
inline int StartHost(const std::string& work, const std::string& name, int port, int64_t skew_ns,
                     const std::string& token = kToken, std::vector<std::string> extra = {}) {
  // --wait-ranks-ms 0: a host sees only its own ranks of the job, never world_size.
  std::vector<std::string> args = {"--upstream", "tcp://127.0.0.1:" + std::to_string(port), "--wait-ranks-ms", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return StartCollector(work, name, args,
                        {{"GPUWATCH_TOKEN", token}, {"GPUWATCH_TEST_CLOCK_SKEW_NS", std::to_string(skew_ns)}});
}
inline int StartRawHost(const std::string& work, const std::string& name, int port, int64_t skew_ns,
                        const std::string& token = kToken) {
  return StartHost(work, name, port, skew_ns, token, {"--upstream-raw"});
}

inline int StartRoot(const std::string& work, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), {"--listen-tcp", ":0"});
  return StartCollector(work, "root", extra, {{"GPUWATCH_TOKEN", kToken}});
}

inline bool Forwarding(const std::string& log) {
  return !e2e::WaitForLog(log, std::regex("forwarding every rank \\(.*\\); root clock"), 30).empty();
}

// The scenario driver's command line with rank r on host `hosts[r]` ("a" or "b"): that
// collector's socket, GPUWATCH_HOST=h<host>, local ranks numbered per host.
inline std::vector<std::string> SplitArgv(const std::string& work, const std::string& scenario,
                                          const std::vector<std::string>& hosts) {
  std::vector<std::string> argv = {GPUWATCH_BIN_DIR "/gpuwatch-scenario", "--sim"};
  std::map<std::string, int> local;
  for (size_t r = 0; r < hosts.size(); ++r) {
    const std::string p = "--rank-env=" + std::to_string(r) + ":";
    argv.push_back(p + "GPUWATCH_COLLECTOR=" + work + "/" + hosts[r] + ".sock");
    argv.push_back(p + "GPUWATCH_HOST=h" + hosts[r]);
    argv.push_back(p + "LOCAL_RANK=" + std::to_string(local[hosts[r]]++));
  }
  argv.push_back(scenario);
  return argv;
}
inline std::map<std::string, std::string> SplitEnv(const std::string& work) {
  return {{"LD_PRELOAD", GPUWATCH_LIB}, {"GPUWATCH_SOCKET_DIR", work + "/sock"},
          {"GPUWATCH_AUTOSTART", "0"}, {"GPUWATCH_JOB_ID", "multihost-job"},
          {"GPUWATCH_OUT", work + "/job-out"}};
}
// Plays `scenario` so, to its end.
inline e2e::RunResult PlaySplit(const std::string& work, const std::string& scenario,
                                const std::vector<std::string>& hosts) {
  return e2e::Run(SplitArgv(work, scenario, hosts), SplitEnv(work), 120);
}

inline json Summary(const std::string& out) {
  INFO(out);
  REQUIRE(e2e::WaitForFile(out + "/summary.json", 60));
  REQUIRE(e2e::WaitForFile(out + "/summary.txt", 5));
  return e2e::ReadSummary(out + "/summary.json");
}

inline void Stop(int pid) {
  kill(pid, SIGTERM);
  CHECK(e2e::Wait(pid, 30) == 0);
}

inline int StragglerRank(const json& summary) {
  for (const json& f : summary["job"]["findings"])
    if (f["id"] == "straggler") return f["ranks"][0].get<int>();
  return -1;
}

inline const json* RankOf(const json& summary, int rank) {
  for (const json& r : summary["ranks"])
    if (r["rank"] == rank) return &r;
  return nullptr;
}

inline size_t Count(const std::string& text, const std::regex& re) {
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re),
                                           std::sregex_iterator()));
}


// The root's host_clocks by host name.
inline std::map<std::string, json> Clocks(const json& top) {
  std::map<std::string, json> clocks;
  for (const json& h : top["job"]["host_clocks"]) clocks[h["host"]] = h;
  return clocks;
}

// What the job's analysis adds to a rank's view: its collectives' waits for the last member
// (and the bandwidths after them) and its findings with those waits moved to their cause.
// They depend on the ranks a collector sees: a host's sees only its own.
inline void EraseJobDerived(json& rank) {
  auto erase_bandwidth = [](json& op) {
    for (const char* k : {"wait_s", "transfer_s", "algbw_gbps", "busbw_gbps"}) op.erase(k);
  };
  for (auto& [op, v] : rank["collectives"].items()) {
    if (op != "by_comm") erase_bandwidth(v);
  }
  for (json& c : rank["collectives"]["by_comm"]) {
    erase_bandwidth(c);
    for (auto& [op, v] : c["ops"].items()) erase_bandwidth(v);
  }
  rank.erase("findings");
}

// Rank by rank (ranks 0-1 on host a, 2-3 on b), the root's figures are the host
// collector's: equal, but for the absolute times in them (the series' starts, NVML
// samples' times), which moved by the clock estimate's error (at most its uncertainty), and
// what the job's analysis adds (EraseJobDerived), which on a host saw only its ranks.
inline void CheckRanksAsOnHosts(const json& sa, const json& sb, const json& top,
                                std::map<std::string, json> clocks) {
  for (int r = 0; r < 4; ++r) {
    const json* here = RankOf(r < 2 ? sa : sb, r);
    const json* there = RankOf(top, r);
    REQUIRE(here);
    REQUIRE(there);
    json x = *here, y = *there;
    x.erase("storage");
    y.erase("storage");
    EraseJobDerived(x);
    EraseJobDerived(y);
    // The collector's CPU is the host collector's, on the rank's host: carried in its digest,
    // not in raw frames (the root, elsewhere, does not count its own).
    if (y["overhead"]["collector_cpu_s"].is_null()) {
      CHECK(x["overhead"]["collector_cpu_s"].is_number());
      for (json* o : {&x["overhead"], &y["overhead"]})
        for (const char* k : {"collector_cpu_s", "beside_cpu_s", "contended"}) o->erase(k);
    }
    std::vector<json::json_pointer> times = {json::json_pointer("/gpu/utilization_series/start_ns"),
                                             json::json_pointer("/memory/reserved_series/start_ns")};
    for (size_t i = 0; i < x["device_state"]["series"]["rows"].size(); ++i)
      times.emplace_back("/device_state/series/rows/" + std::to_string(i) + "/0");
    for (const json::json_pointer& t : times) {
      INFO(t.to_string());
      REQUIRE(x.contains(t));
      const int64_t moved = y[t].get<int64_t>() - x[t].get<int64_t>();
      CHECK(std::llabs(moved) <= clocks[r < 2 ? "ha" : "hb"]["clock_uncertainty_ns"].get<int64_t>() + 1000);
      x[t] = y[t];
    }
    INFO("rank " << r << ", host's -> root's: " << json::diff(x, y).dump());
    CHECK(x == y);
  }
}

// Two hosts (a: ranks 0-1, b: ranks 2-3, their clocks skewed) forwarding to one root, the
// four-rank scenario played to its end, every collector stopped: the three summaries and the
// collectors' logs. `raw`: the hosts forward raw frames, else their ranks' figures.
struct TwoHostRun {
  std::string work, scenario_file;
  gpuwatch::scenario::Scenario scenario;
  json sa, sb, top;
  std::string logs;
};
inline TwoHostRun RunTwoHosts(const std::string& name, bool raw) {
  TwoHostRun r;
  r.work = e2e::FreshDir(name);
  r.scenario_file = FourRankScenario(r.work);
  const std::string& scenario_file = r.scenario_file;
  r.scenario = gpuwatch::scenario::load_scenario(scenario_file);
  const int root = StartRoot(r.work);
  const int port = e2e::LoggedTcpPort(r.work + "/root.log");
  REQUIRE(port > 0);
  const int a = raw ? StartRawHost(r.work, "a", port, kSkewA) : StartHost(r.work, "a", port, kSkewA);
  const int b = raw ? StartRawHost(r.work, "b", port, kSkewB) : StartHost(r.work, "b", port, kSkewB);
  REQUIRE(Forwarding(r.work + "/a.log"));
  REQUIRE(Forwarding(r.work + "/b.log"));
  const auto res = PlaySplit(r.work, scenario_file, {"a", "a", "b", "b"});
  INFO("driver stderr:\n" << res.err);
  REQUIRE(res.exit_code == 0);
  r.sa = Summary(r.work + "/a-out");
  r.sb = Summary(r.work + "/b-out");
  r.top = Summary(r.work + "/root-out");
  Stop(a);
  Stop(b);
  Stop(root);
  r.logs = e2e::ReadFile(r.work + "/root.log") + e2e::ReadFile(r.work + "/a.log") + e2e::ReadFile(r.work + "/b.log");
  return r;
}

}  // namespace gpuwatch::e2e::multihost
