// Several hosts at scale (issue #21): host collectors interpret their own ranks and send
// the root only each rank's figures (RankDigest), heartbeats and Goodbyes. The root's
// summary must be the one raw forwarding gives (multihost_test.cpp shows raw forwarding's
// root equals the hosts; here the digests' root equals the hosts too: the same figures,
// absolute times moved by the clock estimate's error at most), the straggler found across
// hosts, a hang on a remote host reported by the root, and the tree's middle level
// relaying digests.
#include "multihost_run.h"
#include "rank_pids.h"

using namespace gpuwatch::e2e::multihost;

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
  // Job-wide: the straggler needs every rank's collectives, compared at the root.
  CHECK(StragglerRank(top) == 3);
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
