// report.html's verdict and findings, in sentences: what each finding cost (with its
// numbers), what was measured, its evidence as a labelled table, the fix. A finding that
// explains another (common/explains.h) is shown inside that one, not as a loss.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gpuwatch::collector {

void FindingsSection(const nlohmann::json& summary, std::string& out);

// "rank 3", "ranks 0-7", "ranks 0, 2, 5-6": a rank list for a sentence.
std::string RanksText(const nlohmann::json& ranks);

}  // namespace gpuwatch::collector
