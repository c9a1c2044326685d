// Communicators end to end: scenarios with tensor- and data-parallel groups and overlapped
// collectives run on the simulated GPU under LD_PRELOAD; every communicator a rank used is
// matched to the simulator's device truth by its members (counts and bytes exactly, GPU time
// and the exposed / overlapped split within 5%), the job names each group's members and kind,
// and a slow rank inside one TP group is that group's straggler with its peer's wait.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

#include "scenario_run.h"

using namespace gpuwatch::e2e;

namespace {

// 5% of the truth, or 0.2 ms where the truth is near zero (a fully hidden collective).
void Near(const std::string& what, double got, double want) {
  INFO(what << ": got " << got << ", want " << want);
  CHECK(std::abs(got - want) <= std::max(0.05 * want, 2e-4));
}

std::string Label(const json& members) {
  std::string s;
  for (size_t i = 0; i < members.size(); ++i) s += (i ? "," : "") + std::to_string(members[i].get<int>());
  return s;
}

// The job's communicators by id; every one identified, with every member reported.
std::map<std::string, json> JobComms(const JobRun& r) {
  std::map<std::string, json> out;
  for (const json& c : r.summary["job"]["collectives"]["by_comm"]) {
    INFO("communicator " << c.dump());
    CHECK(c["identified"] == true);
    for (const json& m : c["members"]) CHECK(m.get<int>() >= 0);
    out[c["id"].get<std::string>()] = c;
  }
  return out;
}

// Each rank's communicators against the device truth's "comms" (keyed by members).
void CheckCommsAgainstTruth(const JobRun& r) {
  const auto comms = JobComms(r);
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json dev = r.Device(k);
    const json& truth = dev["comms"];
    size_t seen = 0;
    for (const json& c : rank["collectives"]["by_comm"]) {
      REQUIRE(comms.count(c["id"].get<std::string>()));
      const std::string label = Label(comms.at(c["id"].get<std::string>())["members"]);
      INFO("rank " << k << ", communicator [" << label << "]");
      REQUIRE(truth.contains(label));
      const json& t = truth[label];
      ++seen;
      CHECK(c["calls"] == t["count"]);
      CHECK(c["bytes"] == t["bytes"]);
      CHECK(c["kernels"] == t["count"]);
      Near("GPU time (CUDA events)", c["gpu_s"], t["device_s"]);
      Near("NCCL kernel time (CUPTI)", c["kernel_s"], t["device_s"]);
      Near("overlapped", c["overlapped_s"], t["overlapped_s"]);
      Near("exposed", c["exposed_s"], t["exposed_s"]);
    }
    CHECK(seen == truth.size());
    const json& ov = rank["comm_overlap"];
    Near("rank overlapped", ov["overlapped_s"], dev["comm_overlap"]["overlapped_s"]);
    Near("rank exposed", ov["exposed_s"], dev["comm_overlap"]["exposed_s"]);
    CHECK(ov["per_step"]["steps"] == r.scenario["steps"]);
  }
}

}  // namespace

TEST_CASE("comms: tp x dp, every group matches its truth, named by members and kind") {
  const JobRun r = RunScenario("comms-tp-dp", "tp_dp", {.truth = true});
  INFO("driver stderr:\n" << r.job.err);
  CheckCommsAgainstTruth(r);
  // tp 2 on 4 ranks: TP pairs of consecutive ranks, DP pairs two apart (the world, split
  // from, runs no collective of its own).
  std::map<std::string, std::string> kinds;
  for (const auto& [id, c] : JobComms(r)) kinds[Label(c["members"])] = c["kind"];
  CHECK(kinds == std::map<std::string, std::string>{{"0,1", "tp"}, {"2,3", "tp"}, {"0,2", "dp"}, {"1,3", "dp"}});
  // Every communicator says how it was made (split from the world) and that it was destroyed.
  for (const auto& [id, c] : JobComms(r)) {
    INFO(c.dump());
    CHECK(c["made"]["origin"] == "split");
    CHECK(c["ended"] == "destroyed");
    CHECK(c["ranks_reporting"] == c["nranks"]);
  }
  CHECK(r.SummaryText().find("communicators") != std::string::npos);
}

TEST_CASE("comms: an overlapped all-reduce is partly hidden, a waited one exposed, as the device truth says") {
  const JobRun r = RunScenario("comms-overlap", "overlap", {.truth = true});
  INFO("driver stderr:\n" << r.job.err);
  // The scenario is built so both parts are there: the check below can fail either way.
  for (int k = 0; k < 2; ++k) {
    const json ov = r.Device(k)["comm_overlap"];
    CHECK(ov["overlapped_s"].get<double>() > 0.2 * ov["nccl_s"].get<double>());
    CHECK(ov["exposed_s"].get<double>() > 0.05 * ov["nccl_s"].get<double>());
  }
  CheckCommsAgainstTruth(r);
  CHECK(r.summary["job"]["comm_overlap"]["overlapped_share"].get<double>() > 0.2);
}

TEST_CASE("comms: a slow rank inside one TP group is that group's straggler, with its peer's wait") {
  const JobRun r = RunScenario("comms-tp-straggler", "tp_straggler", {.truth = true});
  INFO("driver stderr:\n" << r.job.err);
  const json* straggler = nullptr;
  for (const json& f : r.summary["job"]["findings"])
    if (f["id"] == "straggler") straggler = &f;
  REQUIRE(straggler);
  const json& e = (*straggler)["evidence"];
  INFO(e.dump());
  CHECK((*straggler)["ranks"] == json::array({3}));
  CHECK(e["comm"]["members"] == json::array({2, 3}));
  CHECK(e["comm"]["kind"] == "tp");
  // Only its peer waited, as long as the simulator says rank 2 waited in its collectives.
  CHECK(e["wait_s_by_rank"].size() == 2);
  Near("rank 2's wait", e["wait_s_by_rank"]["2"], r.Device(2)["collective_wait_s"]);
  Near("peers' wait", e["peers_wait_s"], r.Device(2)["collective_wait_s"]);
  // The other TP pair has no straggler: nobody there waits for a slow rank.
  CHECK(e["by_comm"].size() == 1);
  CHECK(r.Device(0)["collective_wait_s"].get<double>() < 0.1 * r.Device(2)["collective_wait_s"].get<double>());
}

TEST_CASE("comms: outside CUPTI, a collective on an idle stream is timed from its launch, not from NCCL's host work") {
  // After a sync the communication stream is idle: the start event fires as it is recorded,
  // 500 us of NCCL's launch preparation before the kernel starts. The pair alone read that
  // as GPU time (+58% here; 12-35 us a call in the sampled 2-rank runs of budget_test.cpp,
  // which failed their 5% 1 run in 8). The return mark on gpuwatch's own idle stream cuts it
  // off; what it may cut too is the call's work after the launch (-0.2..-0.6% here).
  const char* kIdleStream = R"({
    "name": "comms_idle_stream", "description": "all-reduces after a sync, slow to launch",
    "ranks": 2, "steps": 60,
    "gpu": {"nccl_launch_us": 500},
    "step": [{"op": "kernels", "count": 4, "us": 20}, {"op": "item"}, {"op": "allreduce", "bytes": 67108864},
             {"op": "item"}]
  })";
  const JobRun r = RunScenario("comms-idle-stream", kIdleStream, {.truth = true, .env = {{"GPUWATCH_CUPTI", "off"}}});
  INFO("driver stderr:\n" << r.job.err);
  for (const json& rank : r.summary["ranks"]) {
    const json dev = r.Device(rank["rank"].get<int>());
    const json& calls = rank["collectives"]["allreduce"];
    const double truth = dev["kinds"]["allreduce"]["device_s"].get<double>();
    INFO("rank " << rank["rank"] << ": " << calls.dump() << "\ntruth " << dev["kinds"].dump());
    REQUIRE(rank["gpu"]["source"] != "cupti");
    CHECK(calls["count"] == 60);
    CHECK(calls["no_gpu_time_count"] == 0);
    // 60 x 500 us = 30 ms of preparation against ~52 ms of kernels.
    CHECK(std::abs(calls["total_s"].get<double>() - truth) <= 0.1 * truth);
  }
}
