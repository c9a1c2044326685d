// report.html: the summary for a browser, one self-contained file (inline CSS and SVG, no
// script, nothing fetched). It is drawn from the summary.json document alone, so the live
// collector and `gpuwatch report DIR` give the same page, and everything it shows is in
// the public schema (docs/summary-schema.md). Strings from ranks (hosts, kernel names,
// evidence) are escaped; a document missing keys renders what it has.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gpuwatch::collector {

// Ranks drawn in each per-rank chart; the rest are counted in a note under it.
inline constexpr size_t kHtmlMaxChartRanks = 64;

std::string BuildHtmlReport(const nlohmann::json& summary);

// "rank 0 · host", the label of a rank's row in every chart and table.
std::string RankLabel(const nlohmann::json& rank);

}  // namespace gpuwatch::collector
