// Checks a gpuwatch summary against the truth of a scenario run on the simulated GPU: the
// driver's own stopwatch (truth-rank-R.json) and the device model's account
// (device-rank-R.json). Counts and bytes exactly; host times within 5% or 0.5 ms (issue
// "libgpuwatch.so and gpuwatch-collector"); GPU timeline within 3% (issue "complete GPU
// timeline"). Reports through Catch2 CHECKs.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "scenario_model.h"

namespace gpuwatch::e2e {

void CheckRank(const gpuwatch::scenario::Scenario& s, const nlohmann::json& rank, const nlohmann::json& truth,
               const nlohmann::json& device);
void CheckSummaryAgainstTruth(const gpuwatch::scenario::Scenario& s, const nlohmann::json& summary,
                              const std::string& truth_dir);

}  // namespace gpuwatch::e2e
