// Launches summarized where they are made (libinject/record/launch_summary.h): the same
// scenario played with the default (launches outside CUPTI's windows summarized) and with
// GPUWATCH_LAUNCH_RECORDS=all (every launch a record) gives the same figures: counts
// exactly, device figures within the tolerance two runs of one scenario differ by, the same
// findings first; and the summarized run sends a fraction of the bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "scenario_run.h"

using namespace gpuwatch::e2e;

namespace {

// Bytes the collector journaled for the run: what the library sent.
uint64_t JournalBytes(const std::string& out) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(out + "/.gpuwatch"))
    if (e.path().filename().string().rfind("rank-", 0) == 0) n += std::filesystem::file_size(e.path());
  return n;
}

double Num(const json& j) { return j.is_number() ? j.get<double>() : 0.0; }

// `tolerance`: how far the two runs' device and step-time figures may be apart; 0: not
// compared (a short run of several ranks sharing the VM's 2 cores: its sampled estimates
// move more between two runs of either kind than any summary could move them).
void Compare(const std::string& name, const std::string& scenario, double tolerance) {
  const JobRun each = RunScenario(name + "-all", scenario, {.env = {{"GPUWATCH_LAUNCH_RECORDS", "all"}}});
  const JobRun summed = RunScenario(name + "-summary", scenario);
  REQUIRE(each.summary["ranks"].size() == summed.summary["ranks"].size());
  for (size_t i = 0; i < each.summary["ranks"].size(); ++i) {
    const json& a = each.summary["ranks"][i];
    const json& b = summed.summary["ranks"][i];
    INFO(name << " rank " << i);
    // Counts: exact.
    CHECK(b["kernels"]["launches"] == a["kernels"]["launches"]);
    CHECK(b["kernels"]["driver_launches"] == a["kernels"]["driver_launches"]);
    CHECK(b["kernels"]["top_launched"] == a["kernels"]["top_launched"]);
    REQUIRE(b["api_calls"].size() == a["api_calls"].size());
    for (const auto& [api, calls] : a["api_calls"].items()) {
      INFO(api);
      REQUIRE(b["api_calls"].contains(api));
      CHECK(b["api_calls"][api]["count"] == calls["count"]);
      CHECK(b["api_calls"][api]["failed"] == calls["failed"]);
    }
    CHECK(b["sync"]["count"] == a["sync"]["count"]);
    CHECK(b["memcpy"]["h2d"]["count"] == a["memcpy"]["h2d"]["count"]);
    CHECK(b["collectives"]["by_comm"].size() == a["collectives"]["by_comm"].size());
    CHECK(b["steps"]["count"] == a["steps"]["count"]);
    CHECK(b["steps"]["source"] == a["steps"]["source"]);
    if (tolerance <= 0) continue;
    // Device figures: as close as two runs of one scenario.
    const double busy_a = Num(a["gpu"]["busy_s"]), busy_b = Num(b["gpu"]["busy_s"]);
    CHECK(std::abs(busy_b - busy_a) <= tolerance * busy_a);
    // (Not the step's wall time: the simulator's launch calls busy-wait, and two runs on a
    // shared 2-core VM differ by a quarter in it.)
    const double compute_a = Num(a["steps"]["per_step_ms"]["gpu_compute"]);
    const double compute_b = Num(b["steps"]["per_step_ms"]["gpu_compute"]);
    CHECK(std::abs(compute_b - compute_a) <= tolerance * compute_a);
    // Estimated from the windows, scaled by the share of launches they hold.
    const double kernels_a = Num(a["gpu"]["kernels"]["count"]), kernels_b = Num(b["gpu"]["kernels"]["count"]);
    CHECK(std::abs(kernels_b - kernels_a) <= tolerance * kernels_a);
  }
  const json& fa = each.summary["job"]["findings"];
  const json& fb = summed.summary["job"]["findings"];
  REQUIRE(!fa.empty());
  REQUIRE(!fb.empty());
  CHECK(fb[0]["id"] == fa[0]["id"]);
  // What the library sent: where launches are most of the calls, the ones outside the
  // windows as runs and tallies. The launches inside the windows are records with their
  // CUPTI records in both runs (a fifth of them on 2 ranks sharing 2 cores, a tenth on
  // one), so the journal shrinks by the share outside: bounded here as twice the windows'
  // share of the every-launch journal plus a quarter for the rest (syncs, collectives,
  // tallies). Launches sent as records outside the windows read 1.0.
  const json& r0 = each.summary["ranks"][0];
  double share = 0;
  for (const json& r : summed.summary["ranks"]) share = std::max(share, Num(r["gpu"]["coverage"]["enqueue_share"]));
  const bool sampled = share < 0.35 && Num(r0["gpu"]["coverage"]["enqueue_share"]) < 0.35;
  if (sampled && Num(r0["kernels"]["launches"]) > 20 * (Num(r0["sync"]["count"]) + Num(r0["memcpy"]["h2d"]["count"]))) {
    const uint64_t bytes_each = JournalBytes(each.out), bytes_summed = JournalBytes(summed.out);
    INFO("journal: every launch " << bytes_each << " B, summarized " << bytes_summed << " B, windows' share " << share);
    CHECK(double(bytes_summed) < double(bytes_each) * (2 * share + 0.25));
  }
}

}  // namespace

TEST_CASE("launch summary: a launch-bound loop sampled in windows has the figures of every launch sent") {
  // 1.8 s at ~100k launches/s: the windows hold a few percent of it.
  Compare("ls-launch-bound", R"({"name": "ls_launch_bound", "ranks": 1, "steps": 150, "gpu": {"launch_us": 8},
    "step": [{"op": "host", "ms": 1}, {"op": "kernels", "count": 1000, "us": 4, "name": "small_op"},
             {"op": "kernels", "count": 200, "us": 4, "name": "other_op", "via": "library"}, {"op": "sync"}]})",
          0.05);
}

TEST_CASE("launch summary: steps inferred from a loop's launches alone are found from their runs") {
  // No NVTX, no sync, no collective: only the launches (and a copy) mark the steps.
  Compare("ls-inferred", R"({"name": "ls_inferred", "ranks": 1, "steps": 300, "nvtx": false,
    "gpu": {"h2d_pinned_gbps": 24, "launch_us": 6},
    "step": [{"op": "host", "ms": 3}, {"op": "h2d", "bytes": 1048576},
             {"op": "kernels", "count": 24, "us": 40}, {"op": "kernels", "count": 8, "us": 20}]})",
          0.05);
}

TEST_CASE("launch summary: a data-parallel loop with a sync inside each step keeps it inside") {
  // The .item() inside the step is followed by launches: it is a stall of the step, which
  // only the runs' places among the calls can tell.
  Compare("ls-ddp", R"({"name": "ls_ddp", "ranks": 2, "steps": 120, "gpu": {"launch_us": 6},
    "step": [{"op": "host", "ms": 1}, {"op": "kernels", "count": 400, "us": 5, "name": "fwd"},
             {"op": "item"}, {"op": "kernels", "count": 400, "us": 5, "name": "bwd"},
             {"op": "allreduce", "bytes": 4194304}, {"op": "sync"}]})",
          0);
}
