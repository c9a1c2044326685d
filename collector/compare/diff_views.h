// The views of a SummaryDiff: text (the first line is the headline), JSON (schema
// gpuwatch.diff.v1, docs/diff.md) and a self-contained HTML page in report.html's style.
// Text and HTML print the same tables (DiffSections); every string from a run is clipped
// for the terminal or escaped for the page.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/diff_gate.h"
#include "compare/summary_diff.h"

namespace gpuwatch::collector::compare {

inline constexpr const char* kDiffSchema = "gpuwatch.diff.v1";

// One table of the diff, as text cells: the same rows in the text and on the page.
struct DiffSection {
  std::string id, title, note;
  std::vector<std::string> columns;  // the first is the row's name, the second its trend
  std::vector<std::vector<std::string>> rows;
};
std::vector<DiffSection> DiffSections(const SummaryDiff& d);
// "host_compute -36.30 ms per step": the critical path's part that changed most, beyond
// noise; empty when none did or a run's path is not known.
std::string LargestPathChange(const SummaryDiff& d);

std::string DiffText(const SummaryDiff& d, const std::vector<RuleResult>& gate);
nlohmann::json DiffJson(const SummaryDiff& d, const std::vector<RuleResult>& gate);
std::string DiffHtml(const SummaryDiff& d, const std::vector<RuleResult>& gate);

}  // namespace gpuwatch::collector::compare
