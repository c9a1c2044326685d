// report.html's "What paces a step" section, from summary.json: the critical path as a bar
// per part (ms per step: the job's, then each rank's), and what each finding's fix would
// buy, fastest predicted step first, each with the fix it assumes.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/svg_chart.h"

namespace gpuwatch::collector {

namespace html {
// The parts of critical_path.parts in drawing order: key (the summary.json name, with
// "_ms"), label (the words summary.txt uses), colour. The diff page draws them the same way.
const std::vector<StackPart>& PathParts();
}  // namespace html

// The PathPart of a then_paced_by key ("sync" → kPathHostSync), -1 when unknown.
int PathPartIndex(const std::string& key);
void CriticalPathSection(const nlohmann::json& summary, std::string& out);

}  // namespace gpuwatch::collector
