// What report.html and the diff page share: one style sheet, and the parts of a step
// (steps.per_step_ms) with their colours, so both pages draw a step the same way.
#pragma once
#include <string>
#include <vector>

#include "report/svg_chart.h"

namespace gpuwatch::collector::html {

// The pages' CSS (report.html, diff.html): no script, nothing fetched.
const char* PageCss();

// A table cell holding a number (right-aligned by the style sheet), its text escaped.
std::string NumCell(const std::string& v);

// A kernel or frame name on one line: shortened (common/kernel_names.h ShortName), the full
// name in its tooltip. `readable`: a form of the name to shorten instead (a frame's file cut
// to its last parts), when there is one.
std::string NameHtml(const std::string& full, const std::string& readable = {});

// The parts of steps.per_step_ms in drawing order: key (the summary.json name), label, colour.
const std::vector<StackPart>& StepParts();

}  // namespace gpuwatch::collector::html
