// Several hosts at scale (issue #21): host collectors interpret their own ranks and send
// the root only each rank's figures (RankDigest), heartbeats and Goodbyes. The root's
// summary must be the one raw forwarding gives (multihost_test.cpp shows raw forwarding's
// root equals the hosts; here the digests' root equals the hosts too: the same figures,
// absolute times moved by the clock estimate's error at most), the straggler found across
// hosts, a hang on a remote host reported by the root, and the tree's middle level
// relaying digests; `gpuwatch report --ranks` merging chosen ranks' traces from the hosts.
#include "multihost_run.h"
#include "rank_pids.h"
#include "test_trace_validator.h"

using namespace gpuwatch::e2e::multihost;

namespace {

// `gpuwatch report --ranks LIST DIR`.
e2e::RunResult ReportRanks(const std::string& list, const std::string& dir) {
  return e2e::Run({GPUWATCH_BIN_DIR "/gpuwatch", "report", "--ranks", list, dir}, {}, 60);
}

// The process of `rank` in a trace report, or null.
const gwtrace::RankCounts* Process(const gwtrace::TraceReport& rep, int rank) {
  for (const auto& [name, counts] : rep.processes)
    if (name.rfind("rank " + std::to_string(rank) + " · ", 0) == 0) return &counts;
  return nullptr;
}

// Ranks 1 (host a) and 2-3 (host b) merged from the hosts' traces into one: each rank there
// once, with all of its trace; each all-reduce ends at one time on every rank, as it did (the
// simulator ends a collective on all its ranks at once), though the hosts' own traces are
// on their clocks, 10 s apart.
void CheckMergedTraces(const std::string& work, const std::map<std::string, json>& clocks) {
  const auto res = ReportRanks("1-3", work + "/root-out");
  INFO(res.err);
  REQUIRE(res.exit_code == 0);
  CHECK(res.err.find("ranks 1,2,3 from 2 trace(s)") != std::string::npos);
  const std::string merged = work + "/root-out/trace-ranks-1-3.perfetto-trace";
  const auto rep = gwtrace::ValidateTrace(e2e::ReadFile(merged), false);
  INFO(rep.First());
  CHECK(rep.errors.empty());  // no sequence, track or flow of one host clashes with the other's
  CHECK(rep.processes.size() == 3);
  const auto a = gwtrace::ValidateTrace(e2e::ReadFile(work + "/a-out/trace.perfetto-trace"), false);
  const auto b = gwtrace::ValidateTrace(e2e::ReadFile(work + "/b-out/trace.perfetto-trace"), false);
  for (int r = 1; r <= 3; ++r) {
    INFO("rank " << r);
    const gwtrace::RankCounts* here = Process(rep, r);
    const gwtrace::RankCounts* there = Process(r < 2 ? a : b, r);
    REQUIRE(here);
    REQUIRE(there);
    CHECK(here->kernels == there->kernels);
    CHECK(here->launches == there->launches);
    CHECK(here->collectives == there->collectives);
    CHECK(here->counters == there->counters);
    CHECK(here->steps == there->steps);
    CHECK(here->comm_kernel_ends.size() == there->comm_kernel_ends.size());
  }
  CHECK_FALSE(Process(rep, 0));

  const int64_t tolerance = clocks.at("ha")["clock_uncertainty_ns"].get<int64_t>() +
                            clocks.at("hb")["clock_uncertainty_ns"].get<int64_t>() + 1000;
  auto sorted_ends = [](const gwtrace::RankCounts* c) {
    std::vector<uint64_t> v = c->comm_kernel_ends;
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto ends1 = sorted_ends(Process(rep, 1));
  REQUIRE(ends1.size() >= 10);
  int64_t worst = 0;
  for (int r = 2; r <= 3; ++r) {
    const auto ends = sorted_ends(Process(rep, r));
    REQUIRE(ends.size() == ends1.size());
    for (size_t i = 0; i < ends.size(); ++i)
      worst = std::max<int64_t>(worst, std::llabs(static_cast<int64_t>(ends[i] - ends1[i])));
  }
  INFO("worst misalignment " << worst << " ns, tolerance " << tolerance << " ns");
  CHECK(worst <= tolerance);
  // Unmerged, the same collective is kSkewA - kSkewB apart on the two hosts' traces.
  const int64_t apart = static_cast<int64_t>(sorted_ends(Process(a, 1))[0] - sorted_ends(Process(b, 2))[0]);
  CHECK(std::llabs(apart - (kSkewA - kSkewB)) <= tolerance);

  // A rank the job does not have, a trace not on this machine: one clear line each.
  const auto unknown = ReportRanks("9", work + "/root-out");
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("rank 9 is not in " + work + "/root-out/trace-index.json") != std::string::npos);
  fs::rename(work + "/b-out/trace.perfetto-trace", work + "/b-out/moved");
  const auto missing = ReportRanks("1-2", work + "/root-out");
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("the trace of rank 2 is not here: " + work + "/b-out/trace.perfetto-trace") !=
        std::string::npos);
}

}  // namespace

TEST_CASE("multihost aggregate: the root merges the hosts' figures into the summary raw frames give") {
  const TwoHostRun run = RunTwoHosts("multihost-aggregate", false);
  const std::string& work = run.work;
  const auto& scenario = run.scenario;
  const json &sa = run.sa, &sb = run.sb, &top = run.top;
  const std::string& logs = run.logs;
  INFO(logs);
  CHECK(logs.find("error:") == std::string::npos);
  CHECK(logs.find("not forwarded") == std::string::npos);
  CHECK(logs.find("forwarding every rank (their figures)") != std::string::npos);

  REQUIRE(top["ranks"].size() == 4);
  CHECK(top["job"]["hosts"] == 2);
  for (const json& r : top["ranks"]) {
    CHECK(r["ended"] == "normal");
    CHECK(r["collectives"]["allreduce"]["count"] == scenario.steps);
  }
  const auto clocks = Clocks(top);
  REQUIRE(clocks.size() == 2);
  for (const auto& [host, skew] : {std::pair{"ha", kSkewA}, std::pair{"hb", kSkewB}}) {
    const json& h = clocks.at(host);
    CHECK(std::llabs(h["clock_offset_ns"].get<int64_t>() + skew) <= h["clock_uncertainty_ns"].get<int64_t>() + 1000);
  }
  CheckRanksAsOnHosts(sa, sb, top, clocks);
  // Job-wide: the straggler needs every rank's collectives, compared at the root, and so
  // does each rank's own view of its wait: at the root, every rank that waited names it.
  CHECK(StragglerRank(top) == 3);
  for (const json& r : top["ranks"]) {
    if (r["rank"] == 3) continue;
    INFO("rank " << r["rank"] << " findings " << r["findings"].dump());
    bool names = false;
    for (const json& f : r["findings"]) names = names || (f["id"] == "straggler" && f["ranks"] == json::array({3}));
    CHECK(names);
  }
  CHECK(top["job"]["collectives"]["allreduce"]["count"] == 4 * scenario.steps);

  // The events stayed on the hosts: their traces have their ranks, the root has none.
  CHECK(fs::exists(work + "/a-out/trace.perfetto-trace"));
  CHECK(fs::exists(work + "/b-out/trace.perfetto-trace"));
  CHECK_FALSE(fs::exists(work + "/root-out/trace.perfetto-trace"));
  // The root's index says where each rank's trace is, with the offset onto its clock.
  const json index = json::parse(e2e::ReadFile(work + "/root-out/trace-index.json"));
  REQUIRE(index["ranks"].size() == 4);
  for (const json& r : index["ranks"]) {
    INFO(r.dump());
    const bool on_a = r["host"] == "ha";
    CHECK(r["trace"] == work + (on_a ? "/a-out" : "/b-out") + "/trace.perfetto-trace");
    CHECK(r["clock_offset_ns"] == clocks.at(on_a ? "ha" : "hb")["clock_offset_ns"]);
  }
  CheckMergedTraces(work, clocks);
}

TEST_CASE("multihost aggregate: a rank hung on a remote host is reported by the root") {
  const std::string work = e2e::FreshDir("multihost-aggregate-hang");
  const int root = StartRoot(work, {"--hang-s", "1"});
  const int port = e2e::LoggedTcpPort(work + "/root.log");
  REQUIRE(port > 0);
  const int a = StartHost(work, "a", port, kSkewA);
  const int b = StartHost(work, "b", port, kSkewB);
  REQUIRE(Forwarding(work + "/a.log"));
  REQUIRE(Forwarding(work + "/b.log"));
  const int job = e2e::Spawn(SplitArgv(work, std::string(GPUWATCH_SCENARIOS_DIR) + "/comm_bound.json", {"a", "b"}),
                             SplitEnv(work), work + "/job.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto ranks = e2e::RankPids(job);
  REQUIRE(ranks.count(1) == 1);
  kill(ranks.at(1), SIGSTOP);  // rank 1 (host b) stops: rank 0 (host a) waits for it
  const auto found =
      e2e::WaitForLog(work + "/root.log", std::regex("hang: job multihost-job: rank 0 \\(host ha.*"), 20);
  const std::string line = found.empty() ? "" : found[0];
  kill(ranks.at(1), SIGCONT);
  for (const auto& [r, pid] : ranks) kill(pid, SIGKILL);
  e2e::Wait(job, 30);
  INFO(e2e::ReadFile(work + "/root.log"));
  REQUIRE_FALSE(line.empty());
  // Waiting for the stopped rank: in its all-reduce or the sync after it (the simulated
  // all-reduce returns at once, its kernel waits for every rank).
  CHECK(std::regex_search(line, std::regex("inside (ncclAllReduce|cudaStreamSynchronize)")));
  CHECK(line.find("[rank 1:") != std::string::npos);  // where the remote rank was
  Stop(a);
  Stop(b);
  Stop(root);
}

TEST_CASE("multihost aggregate: a host collector stopped while its ranks run sends their final figures") {
  const std::string work = e2e::FreshDir("multihost-aggregate-stop");
  json s = json::parse(e2e::ReadFile(std::string(GPUWATCH_SCENARIOS_DIR) + "/comm_bound.json"));
  s["steps"] = 100000;  // still running when its host collector stops
  const std::string scenario_file = work + "/scenario.json";
  std::ofstream(scenario_file) << s.dump(2);
  const int root = StartRoot(work);
  const int port = e2e::LoggedTcpPort(work + "/root.log");
  REQUIRE(port > 0);
  // No periodic figures: what the root has of these ranks is what the stop sends.
  const int a = StartHost(work, "a", port, kSkewA, kToken, {"--upstream-digest-ms", "3600000"});
  REQUIRE(Forwarding(work + "/a.log"));
  const int job = e2e::Spawn(SplitArgv(work, scenario_file, {"a", "a"}), SplitEnv(work), work + "/job.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Stop(a);  // SIGTERM, both ranks connected
  for (const auto& [r, pid] : e2e::RankPids(job)) kill(pid, SIGKILL);
  e2e::Wait(job, 30);
  Stop(root);
  const json sa = Summary(work + "/a-out"), top = Summary(work + "/root-out");
  INFO(e2e::ReadFile(work + "/a.log") << e2e::ReadFile(work + "/root.log"));
  REQUIRE(top["ranks"].size() == 2);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const json* here = RankOf(sa, r);
    const json* there = RankOf(top, r);
    REQUIRE(here);
    REQUIRE(there);
    CHECK((*here)["collectives"]["allreduce"]["count"].get<int>() > 10);
    CHECK((*there)["collectives"] == (*here)["collectives"]);
    CHECK((*there)["gpu"]["kernels"] == (*here)["gpu"]["kernels"]);
  }
}

TEST_CASE("multihost aggregate: a tree of collectors, its middle lost and back, loses no rank") {
  const std::string work = e2e::FreshDir("multihost-tree");
  json s = json::parse(e2e::ReadFile(FourRankScenario(work)));
  s["steps"] = 120;  // about 3 s: time to lose the middle collector mid-run
  const std::string scenario_file = work + "/scenario.json";
  std::ofstream(scenario_file) << s.dump(2);
  // The root waits a while for ranks that lost their path to come back.
  const int root = StartRoot(work, {"--linger-ms", "3000"});
  const int root_port = e2e::LoggedTcpPort(work + "/root.log");
  REQUIRE(root_port > 0);
  // The middle: a collector that listens for host collectors and sends to the root, the
  // same protocol a level up (its own clock is the root's here: no skew).
  auto start_mid = [&](const std::string& listen) {
    return StartHost(work, "mid", root_port, 0, kToken, {"--listen-tcp", listen});
  };
  int mid = start_mid(":0");
  const int mid_port = e2e::LoggedTcpPort(work + "/mid.log");
  REQUIRE(mid_port > 0);
  REQUIRE(Forwarding(work + "/mid.log"));
  const int a = StartHost(work, "a", mid_port, kSkewA, kToken, {"--upstream-retry-ms", "200"});
  const int b = StartHost(work, "b", mid_port, kSkewB, kToken, {"--upstream-retry-ms", "200"});
  REQUIRE(Forwarding(work + "/a.log"));
  REQUIRE(Forwarding(work + "/b.log"));

  const int job = e2e::Spawn(SplitArgv(work, scenario_file, {"a", "a", "b", "b"}), SplitEnv(work), work + "/job.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  kill(mid, SIGKILL);  // the middle dies mid-run ...
  e2e::Wait(mid, 10);
  fs::rename(work + "/mid.log", work + "/mid-1.log");
  mid = start_mid("127.0.0.1:" + std::to_string(mid_port));  // ... and comes back
  REQUIRE(e2e::WaitForLog(work + "/mid.log", std::regex("listening on TCP"), 20).size() == 1);
  REQUIRE(e2e::Wait(job, 120) == 0);

  const json sa = Summary(work + "/a-out"), sb = Summary(work + "/b-out");
  // The root's summary, once every rank has come back and ended.
  json top;
  bool whole = false;
  for (int i = 0; i < 300 && !whole; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!fs::exists(work + "/root-out/summary.json")) continue;
    top = json::parse(e2e::ReadFile(work + "/root-out/summary.json"), nullptr, false);
    if (!top.is_object() || top["ranks"].size() != 4) continue;
    whole = true;
    for (const json& r : top["ranks"])
      whole = whole && r["ended"] == "normal" && r["collectives"]["allreduce"]["count"] == 120;
  }
  if (whole) e2e::ReadSummary(work + "/root-out/summary.json");  // for the schema check
  Stop(a);
  Stop(b);
  Stop(mid);
  Stop(root);
  const std::string hosts_log = e2e::ReadFile(work + "/a.log") + e2e::ReadFile(work + "/b.log");
  INFO(hosts_log << e2e::ReadFile(work + "/root.log") << top.dump(1).substr(0, 4000));
  CHECK(hosts_log.find("lost the root collector") != std::string::npos);
  REQUIRE(whole);
  // Offsets add up along the path (host -> middle -> root); the figures are the hosts'.
  const auto clocks = Clocks(top);
  REQUIRE(clocks.size() == 2);
  CHECK(std::llabs(clocks.at("ha")["clock_offset_ns"].get<int64_t>() + kSkewA) <
        clocks.at("ha")["clock_uncertainty_ns"].get<int64_t>() + 1000);
  CheckRanksAsOnHosts(sa, sb, top, clocks);
  CHECK(StragglerRank(top) == 3);
}
