// See critical_path_text.h.
#include "report/critical_path_text.h"

#include <algorithm>
#include <vector>

#include "common/format.h"

namespace gpuwatch::collector {
namespace {

// The measured step a what-if starts from: speedup is measured / predicted, so the views
// need no other figure to say "from → to" (summary.json and the page read the same two).
double MeasuredMs(const WhatIf& w) { return w.step_ms * w.speedup; }

}  // namespace

std::string WhatIfSentence(const std::string& title, const WhatIf& w) {
  if (!w.known()) return {};
  std::string s = Printf("fix %s: %s \xe2\x86\x92 %s ms a step, %s faster", title.c_str(), FmtStepMs(MeasuredMs(w)).c_str(),
                         FmtStepMs(w.step_ms).c_str(), FmtSpeedup(w.speedup).c_str());
  if (const std::string then = ThenPacedText(w.then_paced_by); !then.empty()) s += "; " + then;
  return s;
}

std::string WhatIfShort(const WhatIf& w) {
  if (!w.known()) return {};
  return Printf("fixed: %s ms a step (%s faster)", FmtStepMs(w.step_ms).c_str(), FmtSpeedup(w.speedup).c_str());
}

std::string AllFixedSentence(const WhatIf& w) {
  if (!w.known()) return {};
  return Printf("with every fix: %s \xe2\x86\x92 %s ms a step (%s faster)", FmtStepMs(MeasuredMs(w)).c_str(),
                FmtStepMs(w.step_ms).c_str(), FmtSpeedup(w.speedup).c_str());
}

void CriticalPathText(const CriticalPathFigures& c, const WhatIf& all, const std::string& who, std::string& out) {
  if (!c.known()) return;
  out += Clip(Printf("  critical path of a step%s: %s ms (replayed %s ms, %zu step%s)",
                     who.empty() ? "" : (", " + who).c_str(), FmtStepMs(c.step_ms).c_str(),
                     FmtStepMs(c.path_ms).c_str(), c.steps, c.steps == 1 ? "" : "s"),
              kTextWidth) +
         "\n";
  const std::vector<int> order = c.PartsLargestFirst();
  for (int p : order) {
    out += Printf("    %-26s %9s ms %5.1f%%\n", PathPartWords(p), FmtStepMs(c.part_ms[p]).c_str(),
                  c.path_ms > 0 ? 100 * c.part_ms[p] / c.path_ms : 0.0);
    if (p == kPathGpuCompute)
      for (const PathStreamTime& s : c.gpu_streams)
        out += Printf("      %-24s %9s ms\n", Printf("stream %u", s.stream).c_str(), FmtStepMs(s.ms).c_str());
  }
  if (!all.known()) return;
  out += "    " + AllFixedSentence(all) + "\n";
  if (const std::string then = ThenPacedText(all.then_paced_by); !then.empty()) out += "      " + then + "\n";
}

}  // namespace gpuwatch::collector
