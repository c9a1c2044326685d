// The whole pipeline on the simulated GPU: each bundled scenario runs under LD_PRELOAD
// with no collector running, the library starts one, and the summary it writes must match
// the scenario driver's own stopwatch (truth-rank-R.json) and the simulator's device truth
// (device-rank-R.json): counts and bytes exactly, times within 5% or 0.5 ms; and under the
// default overhead budget each is recorded whole.
#include <catch2/catch.hpp>

#include "scenario_model.h"
#include "scenario_run.h"
#include "truth_check.h"

namespace sc = gpuwatch::scenario;
using namespace gpuwatch::e2e;

namespace {

void CheckScenario(const std::string& name) {
  const JobRun run = RunScenario("pipeline-" + name, name, {.truth = true});
  INFO("driver stderr:\n" << run.job.err);
  CheckSummaryAgainstTruth(sc::load_scenario(run.file), run.summary, run.truth_dir);
  // The default overhead budget records a bundled scenario whole: its 50 ms allowance
  // covers CUPTI's cost over a run this short.
  for (const auto& rank : run.summary["ranks"]) {
    if (rank["gpu"]["source"] != "cupti") continue;
    CHECK(rank["gpu"]["coverage"]["sampled"] == false);
    CHECK(rank["overhead"]["cupti_mode"] == "budget");
  }
  CHECK(WaitForFile(run.out + "/summary.txt", 5));  // written just after summary.json
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
PIPELINE_SCENARIO(graphs)
PIPELINE_SCENARIO(graphs_mixed)
PIPELINE_SCENARIO(small_collectives)
PIPELINE_SCENARIO(pipeline_bubble)
PIPELINE_SCENARIO(pipeline_slow_stage)
