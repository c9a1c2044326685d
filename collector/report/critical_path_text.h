// What paces a step and what each fix buys, as summary.txt and the console say it: the
// critical path's parts, and each finding's what-if as a person would put it.
#pragma once
#include <string>

#include "analyze/critical_path.h"

namespace gpuwatch::collector {

// "fix data loading: 48.6 → 12.3 ms a step, 3.9× faster; then syncs pace the step";
// empty when the fix is not modelled.
std::string WhatIfSentence(const std::string& title, const WhatIf& w);
// The console's short form, for the end of a finding's line: "fixed: 12.3 ms a step (3.9× faster)".
std::string WhatIfShort(const WhatIf& w);
// "with every fix: 48.6 → 9.1 ms a step (5.3× faster)"; empty when not known.
std::string AllFixedSentence(const WhatIf& w);
// The block: the step's critical path in ms per step by part (largest first), GPU compute by
// stream, and with every fix. Nothing when not
// known. `who`: "" for a rank's block, "median rank" for the job's.
void CriticalPathText(const CriticalPathFigures& c, const WhatIf& all, const std::string& who, std::string& out);

}  // namespace gpuwatch::collector
