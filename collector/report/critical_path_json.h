// summary.json's `critical_path`, `what_if_all` and each finding's `what_if`
// (docs/summary-schema.md): what paces a step and what each fix would buy. Null when the
// analysis could not tell (no recorded step, a fix it does not model).
#pragma once
#include <nlohmann/json.hpp>

#include "analyze/critical_path.h"

namespace gpuwatch::collector {

// {"steps", "step_ms", "path_ms", "alone_ms", "parts": {"<PathPartKey>_ms"}, "gpu_streams"}.
nlohmann::json CriticalPathJson(const CriticalPathFigures& c);
// {"step_ms", "speedup", "assumes", "then_paced_by"}.
nlohmann::json WhatIfJson(const WhatIf& w);

}  // namespace gpuwatch::collector
