// Diagnosis, part 2 (issue 6): findings computed from RankDiags (steps.h), ranked by the
// time they cost, each with its evidence and its fix; and a one-line verdict.
//
// Time lost is estimated per rank in seconds over the run. Per-step categories are summed
// over the steps that are not periodic stalls, scaled to all steps (a stall's excess goes
// to periodic_stall alone). Job level: a finding's time lost is the median over all ranks
// of each rank's (0 where it did not fire) -- ranks wait for each other in collectives, so
// the typical rank is what the job loses -- and the straggler's is the median wait of the
// ranks for the slowest one, which is then taken out of their communication time.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/steps.h"

namespace gpuwatch::collector::diag {

struct Finding {
  std::string id;        // data_loading, launch_bound, sync_stall, ...
  std::string title;     // "data loading"
  std::string severity;  // high, medium, low
  std::vector<int> ranks;
  double time_lost_s = 0;
  double share = 0;      // of the stepped (or active) time
  nlohmann::json evidence = nlohmann::json::object();
  std::string summary;   // one line: what was measured
  std::string fix;
};

// Findings of one rank, ranked (largest time lost first, ties by id); only those costing
// at least kReportShare of the rank's time.
std::vector<Finding> RankFindings(const RankDiag& d);
// Findings of the job (every rank's merged, plus straggler), ranked.
std::vector<Finding> JobFindings(const RankList& ranks);

// findings_host.cpp (issue 6). input_io: whether the host side of `data_loading` was
// CPU-bound or waiting on reads (same time lost: it explains that loss); none without
// enough process samples. environment: settings/versions that cost speed (time lost 0,
// ranked after every measured loss); none when there are none.
std::optional<Finding> InputIoFinding(const RankDiag& d, const Finding& data_loading);
std::optional<Finding> EnvironmentFinding(const RankDiag& d, const std::vector<Finding>& found);

// The `steps` object of summary.json for one rank.
nlohmann::json StepsJson(const RankDiag& d);
nlohmann::json FindingsJson(const std::vector<Finding>& f);
// "GPU busy 41% of the time. Biggest loss: data loading, 6.1 ms per step (47%) ..."
std::string Verdict(const RankList& ranks, const std::vector<Finding>& f);
// The verdict and the ranked findings with their fixes, 80 columns, for summary.txt.
std::string FindingsText(const RankList& ranks, const std::vector<Finding>& f);

}  // namespace gpuwatch::collector::diag
