// One finding: a cause of lost GPU time, how much it cost, the evidence and the fix
// (analyze/findings.h makes them).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/critical_path.h"
#include "common/explains.h"

namespace gpuwatch::collector {

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
  WhatIf what_if;  // the step with this fix applied (analyze/what_if.h)
};

// The finding of `found` that explains `f` (common/explains.h: the same time, its cause), or null.
inline const Finding* ExplanationOf(const std::vector<Finding>& found, const Finding& f) {
  for (const Finding& x : found)
    if (ExplainedFinding(x.id) == f.id) return &x;
  return nullptr;
}

}  // namespace gpuwatch::collector
