// Kernel launch geometry end to end (issue 17): CUPTI's grid and block reach the collector,
// which puts each kernel's grid against the device's SMs (`gpu.sm_fill`) and, with memory to
// spare, calls the idle SM capacity `small_batch`.
#include <catch2/catch.hpp>

#include <string>

#include "scenario_run.h"

using namespace gpuwatch::e2e;

namespace {

bool HasFinding(const json& findings, const std::string& id) {
  for (const json& f : findings)
    if (f["id"] == id) return true;
  return false;
}

}  // namespace

TEST_CASE("sm fill: grids of 16 blocks on 132 SMs with memory to spare are small_batch, lost as the truth's idle SMs") {
  JobRun r = RunScenario("sm-fill-small-batch", "small_batch", {.truth = true});
  INFO("driver stderr:\n" << r.job.err << "\nverdict: " << r.summary["job"]["verdict"]);
  const json& rank = r.summary["ranks"][0];
  const json dev = r.Device(0);
  const json& s = rank["gpu"]["sm_fill"];
  INFO("sm_fill " << s.dump() << "\ntruth " << dev["kernel_geometry"].dump());
  REQUIRE(s.is_object());
  // The simulator's CUPTI reported the scenario's grid for every kernel.
  CHECK(dev["kernel_geometry"]["blocks"]["16"] == 30 * 20);
  CHECK(r.Truth(0)["kernel_blocks"]["16"] == 30 * 20);
  CHECK(s["sm_count"] == 132);
  CHECK(s["kernels"] == 30 * 20);
  CHECK(s["small_grid_kernels"] == 30 * 20);
  CHECK(s["fill"].get<double>() == Approx(16.0 / 132).margin(1e-6));
  const double truth_idle = dev["kernel_geometry"]["sm_idle_s"];
  CHECK(truth_idle == Approx(30 * 20 * 500e-6 * (1 - 16.0 / 132)).epsilon(0.02));
  CHECK(s["idle_sm_s"].get<double>() == Approx(truth_idle).epsilon(0.01));
  REQUIRE(s["top_small_grids"].size() == 1);
  const json& k = s["top_small_grids"][0];
  CHECK(k["blocks"] == 16);
  CHECK(k["block_threads"] == 1);
  CHECK(k["registers_per_thread"] == dev["kernel_geometry"]["registers_per_thread"]);
  CHECK(k["name"].get<std::string>().find("gpuwatch_spin_kernel") != std::string::npos);
  // Blocks of one thread: the SM's 32 blocks resident, one warp each (half its 64 warps);
  // the grid, not the block, is what leaves the device idle.
  CHECK(k["occupancy"].get<double>() == Approx(0.5));

  const json& top = r.summary["job"]["findings"][0];
  CHECK(top["id"] == "small_batch");
  const json& f = rank["findings"][0];
  REQUIRE(f["id"] == "small_batch");
  CHECK(f["time_lost_s"].get<double>() == Approx(truth_idle).epsilon(0.01));
  CHECK(f["evidence"]["memory_headroom_share"].get<double>() > 0.99);
  CHECK(f["evidence"]["memory_total_bytes"] == dev["memory"]["total_bytes"]);
  CHECK(r.SummaryText().find("SM fill: 12% of 132 SMs, 600 of 600 kernels with fewer blocks than SMs") !=
        std::string::npos);
}

TEST_CASE("sm fill: kernels whose grids cover the SMs (healthy) leave none idle and raise no small_batch") {
  JobRun r = RunScenario("sm-fill-healthy", "healthy", {.truth = true});
  INFO("driver stderr:\n" << r.job.err);
  CHECK_FALSE(HasFinding(r.summary["job"]["findings"], "small_batch"));
  for (const json& rank : r.summary["ranks"]) {
    const json& s = rank["gpu"]["sm_fill"];
    INFO("sm_fill " << s.dump());
    REQUIRE(s.is_object());
    CHECK(s["fill"].get<double>() == Approx(1.0));
    CHECK(s["idle_sm_s"].get<double>() == 0);
    CHECK(s["small_grid_kernels"] == 0);
    CHECK(r.Device(rank["rank"])["kernel_geometry"]["sm_idle_s"].get<double>() == 0);
    CHECK_FALSE(HasFinding(rank["findings"], "small_batch"));
  }
}
