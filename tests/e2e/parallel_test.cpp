// Parallel strategies end to end: a job of many small all-reduces is diagnosed
// small_collectives first; a pipeline whose stage 0 has three times the work is diagnosed
// pipeline_bubble naming stage 0's ranks, its send/recv matched across ranks and counted
// exactly against the driver's truth; the healthy data-parallel job raises neither.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "scenario_run.h"

using namespace gpuwatch::e2e;

namespace {

JobRun Play(const std::string& name, const std::string& scenario_json = "") {
  JobRun r = RunScenario("parallel-" + name, scenario_json.empty() ? name : scenario_json, {.truth = true});
  INFO("driver stderr:\n" << r.job.err);
  REQUIRE(WaitForFile(r.out + "/summary.txt", 5));
  return r;
}

json Find(const json& findings, const std::string& id) {
  for (const json& f : findings)
    if (f["id"] == id) return f;
  return json();
}

void Near(const std::string& what, double got, double want, double rel) {
  INFO(what << ": got " << got << ", want " << want << " (±" << rel * 100 << "%)");
  CHECK(std::abs(got - want) <= rel * want);
}

}  // namespace

TEST_CASE("parallel: small_collectives ranks first for 48 all-reduces of 64 KiB per step") {
  const JobRun r = Play("small_collectives");
  const json& f = r.summary["job"]["findings"];
  INFO(f.dump(1));
  REQUIRE(!f.empty());
  CHECK(f[0]["id"] == "small_collectives");
  CHECK(f[0]["fix"].get<std::string>().find("bucket_cap_mb") != std::string::npos);
  CHECK(f[0]["fix"].get<std::string>().find("no_sync") != std::string::npos);
  CHECK(f[0]["fix"].get<std::string>().find("FSDP") != std::string::npos);
  CHECK(Find(f, "pipeline_bubble").is_null());
  const uint64_t calls = 48 * r.scenario["steps"].get<uint64_t>(), bytes = calls * 65536;
  const uint64_t needed = (bytes + 1048575) / 1048576;  // the same bytes in calls of 1 MiB
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    INFO("rank " << k);
    const json& sc = rank["small_collectives"];
    CHECK(sc["count"] == calls);
    CHECK(sc["bytes"] == bytes);
    CHECK(sc["large_count"] == 0);
    const json mine = Find(rank["findings"], "small_collectives");
    REQUIRE(mine.is_object());
    CHECK(mine["evidence"]["threshold_bytes"] == 1048576);
    CHECK(mine["evidence"]["calls_at_threshold"] == needed);
    // Every call waited for (exposed): each past `needed` costs what the simulated link
    // charges a call at the least, latency + S x 2(n-1)/n / busbw (n = 2: factor 1). Not the
    // device truth's all-reduce time, which adds the waits for the other rank.
    const double lat = r.scenario["gpu"]["coll_latency_us"].get<double>() * 1e-6;
    const double per_call = lat + 65536.0 / (r.scenario["gpu"]["busbw_gbps"].get<double>() * 1e9);
    Near("small_collectives time lost", mine["time_lost_s"], double(calls - needed) * per_call, 0.05);
    CHECK(r.Device(k)["kinds"]["allreduce"]["count"] == calls);
    // The communication finding keeps only what small_collectives does not explain (on a
    // loaded machine that includes waiting for the other rank, so no bound on what is left).
    const json comm = Find(rank["findings"], "communication");
    if (comm.is_object())
      Near("explained exposed communication", comm["evidence"]["explained_by_other_findings_s"],
           mine["time_lost_s"], 0.02);
  }
}

TEST_CASE("parallel: pipeline_bubble names the slow stage's ranks, send/recv matched and exact") {
  const JobRun r = Play("pipeline_bubble");
  const json& job = r.summary["job"];
  INFO(job["findings"].dump(1));
  const json f = Find(job["findings"], "pipeline_bubble");
  REQUIRE(f.is_object());
  CHECK(job["findings"][0]["id"] == "pipeline_bubble");
  CHECK(f["ranks"] == json::array({0, 1}));  // stage 0 (rank_scale triples its kernels)
  CHECK(f["evidence"]["slow_stage"] == 0);
  CHECK(f["fix"].get<std::string>().find("micro-batches") != std::string::npos);
  CHECK(Find(job["findings"], "small_collectives").is_null());
  const int steps = r.scenario["steps"];
  const uint64_t mib = 1048576;
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json t = r.Truth(k)["ops"];
    const json& p = rank["pipeline"];
    const bool first = k < 2;
    CHECK(p["stage"] == (first ? 0 : 1));
    CHECK(p["stages"] == 2);
    // Counts and bytes against the driver's stopwatch, exactly.
    const char* op = first ? "send" : "recv";
    CHECK(rank["collectives"][op]["count"] == t[op]["count"]);
    CHECK(rank["collectives"][op]["bytes"] == t[op]["bytes"]);
    REQUIRE(p["peers"].size() == 1);
    CHECK(p["peers"][0]["direction"] == op);
    CHECK(p["peers"][0]["peer"] == (first ? 1 : 0));
    CHECK(p["peers"][0]["count"] == steps);
    CHECK(p["peers"][0]["bytes"] == steps * mib);
    if (first) {
      CHECK(p["bubble_s"].get<double>() == 0.0);
    } else {
      // Stage 1's compute waits on every recv: its bubble is the recv kernels' device time.
      CHECK(p["recv_kernels"] == steps);
      Near("bubble vs recv device time", p["bubble_s"], r.Device(k)["kinds"]["recv"]["device_s"], 0.05);
      // Stage 0 computes 6 ms and hosts 0.5 ms a step, stage 1 2.5 ms: about 4 ms of wait a step.
      CHECK(p["bubble_s"].get<double>() > 0.5 * 4e-3 * steps);
    }
  }
  // Every send met its recv: rank 0 -> 2 and 1 -> 3 (PP groups [0,2] [1,3]).
  const json& links = job["pipeline"]["links"];
  REQUIRE(links.size() == 2);
  for (const json& l : links) {
    INFO(l.dump());
    CHECK(l["to"].get<int>() == l["from"].get<int>() + 2);
    CHECK(l["sends"] == steps);
    CHECK(l["recvs"] == steps);
    CHECK(l["bytes_sent"] == steps * mib);
    CHECK(l["bytes_received"] == steps * mib);
    CHECK(l["matched"] == steps);
    const double bubble = r.summary["ranks"][l["to"].get<int>()]["pipeline"]["bubble_s"];
    Near("matched recv wait vs the receiver's bubble", l["recv_wait_s"], bubble, 0.15);
  }
  CHECK(job["pipeline"]["by_stage"].size() == 2);
}

TEST_CASE("parallel: a slow middle stage is the bubble of the sends before it and the recvs after it") {
  const JobRun r = Play("pipeline_slow_stage");
  const json& job = r.summary["job"];
  INFO(job["findings"].dump(1));
  REQUIRE(!job["findings"].empty());
  const json& f = job["findings"][0];
  CHECK(f["id"] == "pipeline_bubble");
  CHECK(f["ranks"] == json::array({2}));  // rank_scale triples stage 2's kernels
  CHECK(f["evidence"]["slow_stage"] == 2);
  // Time lost: the ranks' mean wait in their sends and recvs, as the simulator measured it.
  double truth = 0;
  const double n = r.summary["ranks"].size();
  for (const json& rank : r.summary["ranks"]) truth += r.Device(rank["rank"])["collective_wait_s"].get<double>() / n;
  Near("pipeline_bubble time lost vs the simulator's send + recv waits", f["time_lost_s"], truth, 0.10);
  const json& sends = f["evidence"]["send_wait_s_by_rank"];
  const json& recvs = f["evidence"]["recv_wait_s_by_rank"];
  // Upstream stages wait in their sends, the downstream one in its recvs.
  CHECK(sends["0"].get<double>() > 0.5 * r.Device(0)["collective_wait_s"].get<double>());
  CHECK(sends["1"].get<double>() > 0.5 * r.Device(1)["collective_wait_s"].get<double>());
  CHECK(recvs["3"].get<double>() > 0.5 * r.Device(3)["collective_wait_s"].get<double>());
  for (const json& c : job["findings"])
    if (c["id"] == "communication") CHECK(c["severity"] == "low");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    INFO("rank " << k << " findings " << rank["findings"].dump(1));
    const json comm = Find(rank["findings"], "communication");
    if (comm.is_object()) CHECK(comm["severity"] == "low");
    if (k == 2) continue;
    REQUIRE(!rank["findings"].empty());
    CHECK(rank["findings"][0]["id"] == "pipeline_bubble");
    CHECK(rank["findings"][0]["ranks"] == json::array({2}));
  }
}

// A pipeline whose stages do the same work is not tested here: with 4 ranks on a loaded
// 2-core machine one stage's host falls behind and the other really does wait for it.
TEST_CASE("parallel: healthy raises neither small_collectives nor pipeline_bubble") {
  const JobRun r = Play("healthy");
  const json& f = r.summary["job"]["findings"];
  INFO(f.dump(1));
  CHECK(Find(f, "small_collectives").is_null());
  CHECK(Find(f, "pipeline_bubble").is_null());
  for (const json& rank : r.summary["ranks"]) {
    CHECK(rank["small_collectives"]["count"] == 0);  // one 16 MiB all-reduce a step
    CHECK(rank["small_collectives"]["large_count"] == r.scenario["steps"]);
    CHECK(rank["pipeline"]["stage"].is_null());
    CHECK(rank["pipeline"]["bubble_s"] == 0.0);
  }
}
