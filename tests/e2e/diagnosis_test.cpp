// Diagnosis end to end (issue 6): every bundled scenario runs on the simulated GPU under
// LD_PRELOAD; the finding the scenario was designed to show must rank first in the job's
// findings, with evidence that matches the driver's and the simulator's truth files; the
// straggler scenario must name the rank its rank_scale slows down; healthy must have no
// high-severity finding. Steps must come from the driver's NVTX `train_step` ranges.
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "subprocess.h"

using gpuwatch::e2e::FreshDir;
using gpuwatch::e2e::ReadFile;
using gpuwatch::e2e::Run;
using gpuwatch::e2e::WaitForFile;
using nlohmann::json;

namespace {

struct Ran {
  json scenario, summary;
  std::string text, truth_dir;
  json Truth(int r) const {
    return json::parse(ReadFile(truth_dir + "/truth-rank-" + std::to_string(r) + ".json"));
  }
  json Device(int r) const {
    return json::parse(ReadFile(truth_dir + "/device-rank-" + std::to_string(r) + ".json"));
  }
};

Ran RunScenario(const std::string& name) {
  const std::string file = std::string(GPUWATCH_SCENARIOS_DIR) + "/" + name + ".json";
  const std::string work = FreshDir("diagnosis-" + name);
  Ran r;
  r.truth_dir = work + "/truth";
  const std::string out = work + "/out";
  auto res = Run({GPUWATCH_BIN_DIR "/gpuwatch-scenario", "--sim", "--truth", r.truth_dir, file},
                 {{"LD_PRELOAD", GPUWATCH_LIB}, {"GPUWATCH_SOCKET_DIR", work + "/sock"},
                  {"GPUWATCH_OUT", out}},
                 120);
  INFO("driver stderr:\n" << res.err);
  REQUIRE(res.exit_code == 0);
  REQUIRE(WaitForFile(out + "/summary.json", 30));
  REQUIRE(WaitForFile(out + "/summary.txt", 5));
  r.scenario = json::parse(ReadFile(file));
  r.summary = json::parse(ReadFile(out + "/summary.json"));
  r.text = ReadFile(out + "/summary.txt");
  return r;
}

const json& Top(const Ran& r) {
  const json& f = r.summary["job"]["findings"];
  REQUIRE(f.is_array());
  REQUIRE(!f.empty());
  return f[0];
}

// The rank's own finding with that id (rank-level evidence).
json RankFinding(const json& rank, const std::string& id) {
  for (const auto& f : rank["findings"])
    if (f["id"] == id) return f;
  return json();
}

void CommonChecks(const Ran& r) {
  const json& job = r.summary["job"];
  INFO("verdict: " << job.value("verdict", ""));
  // The text opens with the verdict, right after the title line.
  const auto nl = r.text.find('\n');
  REQUIRE(nl != std::string::npos);
  CHECK(r.text.compare(nl + 1, 8, "GPU busy") == 0);
  for (const json& rank : r.summary["ranks"]) {
    const json& st = rank["steps"];
    CHECK(st["source"] == "nvtx:train_step");
    CHECK(st["count"] == r.scenario["steps"]);
    CHECK(st["median_ms"].get<double>() > 0);
  }
}

void Near(const std::string& what, double got, double want, double rel) {
  INFO(what << ": got " << got << ", want " << want << " (±" << rel * 100 << "%)");
  CHECK(std::abs(got - want) <= rel * want);
}

}  // namespace

TEST_CASE("diagnosis: dataloader_bound -> data_loading") {
  const Ran r = RunScenario("dataloader_bound");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "data_loading");
  CHECK(t["severity"] == "high");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "data_loading");
    REQUIRE(f.is_object());
    // GPU idle waiting for the host vs the driver's host stopwatch: every step's host work
    // but the first (before any GPU work) leaves the GPU idle.
    const json tr = r.Truth(k);
    const double host = tr["ops"]["host"]["total_s"];
    const int steps = tr["steps"];
    Near("idle waiting for host", f["evidence"]["gpu_idle_waiting_for_host_s"], host * (steps - 1) / steps, 0.08);
  }
}

TEST_CASE("diagnosis: launch_bound -> launch_bound") {
  const Ran r = RunScenario("launch_bound");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "launch_bound");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "launch_bound");
    REQUIRE(f.is_object());
    CHECK(f["evidence"]["launches"] == r.Truth(k)["ops"]["kernels"]["count"]);
    CHECK(f["evidence"]["kernels"] == r.Device(k)["kinds"]["kernel"]["count"]);
    CHECK(f["evidence"]["short_kernel_fraction"].get<double>() >= 0.5);
    // The GPU waits at least launch cost - kernel time per launch (7 - 5 µs).
    CHECK(f["evidence"]["gpu_idle_waiting_for_launches_s"].get<double>() >=
          0.9 * 2e-6 * f["evidence"]["kernels"].get<double>());
  }
}

TEST_CASE("diagnosis: sync_stall -> sync_stall") {
  const Ran r = RunScenario("sync_stall");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "sync_stall");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "sync_stall");
    REQUIRE(f.is_object());
    // Both .item() calls of every step are inside the step; the device/event syncs at the
    // end of the step are not counted.
    Near("blocked in .item()", f["evidence"]["blocked_s"], r.Truth(k)["ops"]["item"]["total_s"], 0.10);
    CHECK(f["evidence"]["count"] == 2 * r.Truth(k)["ops"]["item"]["count"].get<int>());
  }
}

TEST_CASE("diagnosis: pageable_h2d -> pageable_copy") {
  const Ran r = RunScenario("pageable_h2d");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "pageable_copy");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "pageable_copy");
    REQUIRE(f.is_object());
    const json h2d = r.Truth(k)["ops"]["h2d"];
    CHECK(f["evidence"]["bytes"] == h2d["bytes"]);
    CHECK(f["evidence"]["count"] == h2d["count"]);
    Near("pageable host time", f["evidence"]["host_s"], h2d["total_s"], 0.05);
  }
}

TEST_CASE("diagnosis: comm_bound -> communication") {
  const Ran r = RunScenario("comm_bound");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "communication");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "communication");
    REQUIRE(f.is_object());
    Near("exposed comm", f["evidence"]["exposed_comm_s"], r.Device(k)["kinds"]["allreduce"]["device_s"], 0.05);
    Near("busbw", f["evidence"]["busbw_gbps"], r.scenario["gpu"]["busbw_gbps"], 0.10);
  }
}

TEST_CASE("diagnosis: straggler -> straggler, naming the slowed rank") {
  const Ran r = RunScenario("straggler");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "straggler");
  const json& scale = r.scenario["rank_scale"];
  REQUIRE(scale.size() == 1);
  const int slow = std::stoi(scale.begin().key());
  CHECK(t["ranks"] == json::array({slow}));
  CHECK(t["evidence"]["rank"] == slow);
  CHECK(t["evidence"]["last_share"].get<double>() >= 0.9);
  // The others' wait matches the simulator's collective wait.
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    if (k == slow) continue;
    Near("wait for the straggler", t["evidence"]["wait_s_by_rank"][std::to_string(k)],
         r.Device(k)["collective_wait_s"], 0.05);
  }
  CHECK(r.summary["job"]["verdict"].get<std::string>().find("rank " + std::to_string(slow)) != std::string::npos);
}

TEST_CASE("diagnosis: checkpoint_stall -> periodic_stall") {
  const Ran r = RunScenario("checkpoint_stall");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "periodic_stall");
  const json& every = r.scenario["every"][0];
  const int period = every["period"];
  double extra_host_s = 0;
  for (const auto& op : every["ops"])
    if (op["op"] == "host") extra_host_s += op["ms"].get<double>() * 1e-3;
  for (const json& rank : r.summary["ranks"]) {
    const json f = RankFinding(rank, "periodic_stall");
    REQUIRE(f.is_object());
    CHECK(f["evidence"]["period_steps"] == period);
    CHECK(f["evidence"]["stalls"] == r.scenario["steps"].get<int>() / period);
    CHECK(f["evidence"]["first_stall_step"] == period - 1);
    const double ex = f["evidence"]["median_excess_s"];
    CHECK(ex >= 0.95 * extra_host_s);
    CHECK(ex <= 1.25 * extra_host_s);
  }
}

TEST_CASE("diagnosis: healthy has no high-severity finding") {
  const Ran r = RunScenario("healthy");
  CommonChecks(r);
  for (const auto& f : r.summary["job"]["findings"]) {
    INFO(f.dump());
    CHECK(f["severity"] != "high");
  }
  for (const json& rank : r.summary["ranks"])
    for (const auto& f : rank["findings"]) {
      INFO(f.dump());
      CHECK(f["severity"] != "high");
    }
}
