// The whole pipeline on the simulated GPU: each bundled scenario runs under LD_PRELOAD
// with no collector running, the library starts one, and the summary it writes must match
// the scenario driver's own stopwatch (truth-rank-R.json) and the simulator's device truth
// (device-rank-R.json): counts and bytes exactly, times within 5% or 0.5 ms.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "scenario_model.h"
#include "subprocess.h"
#include "truth_check.h"

namespace fs = std::filesystem;
namespace sc = gpuwatch::scenario;
using gpuwatch::e2e::FreshDir;
using gpuwatch::e2e::ReadFile;
using gpuwatch::e2e::Run;
using gpuwatch::e2e::WaitForFile;
using gpuwatch::e2e::CheckSummaryAgainstTruth;
using nlohmann::json;

namespace {

void CheckScenario(const std::string& name) {
  const std::string file = std::string(GPUWATCH_SCENARIOS_DIR) + "/" + name + ".json";
  const sc::Scenario s = sc::load_scenario(file);
  const std::string work = FreshDir("pipeline-" + name);
  const std::string out = work + "/out", truth = work + "/truth";
  auto res = Run({GPUWATCH_BIN_DIR "/gpuwatch-scenario", "--sim", "--truth", truth, file},
                 {{"LD_PRELOAD", GPUWATCH_LIB}, {"GPUWATCH_SOCKET_DIR", work + "/sock"}, {"GPUWATCH_OUT", out}},
                 120);
  INFO("driver stderr:\n" << res.err);
  REQUIRE(res.exit_code == 0);
  REQUIRE(WaitForFile(out + "/summary.json", 30));
  CheckSummaryAgainstTruth(s, json::parse(ReadFile(out + "/summary.json")), truth);
  CHECK(WaitForFile(out + "/summary.txt", 5));  // written just after summary.json
}

}  // namespace

#define PIPELINE_SCENARIO(name) \
  TEST_CASE("pipeline: " #name " summary matches the truth") { CheckScenario(#name); }

PIPELINE_SCENARIO(dataloader_bound)
PIPELINE_SCENARIO(dataloader_io)
PIPELINE_SCENARIO(launch_bound)
PIPELINE_SCENARIO(sync_stall)
PIPELINE_SCENARIO(pageable_h2d)
PIPELINE_SCENARIO(comm_bound)
PIPELINE_SCENARIO(straggler)
PIPELINE_SCENARIO(checkpoint_stall)
PIPELINE_SCENARIO(healthy)
