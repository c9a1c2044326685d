// See critical_path.h.
#include "analyze/critical_path.h"

#include <algorithm>

#include "common/format.h"

namespace gpuwatch::collector {
namespace {

// Syncs and copies are plural ("syncs pace"), the other parts singular ("host work paces").
const char* PaceVerb(int part) { return part == kPathHostSync || part == kPathCopies ? "pace" : "paces"; }

}  // namespace

std::string FmtStepMs(double ms) {
  if (ms >= 100) return Printf("%.0f", ms);
  if (ms >= 10) return Printf("%.1f", ms);
  return Printf("%.2f", ms);
}

std::string FmtSpeedup(double speedup) {
  return Printf(speedup >= 2 ? "%.1f\xc3\x97" : "%.2f\xc3\x97", speedup);
}

std::vector<int> CriticalPathFigures::PartsLargestFirst() const {
  std::vector<int> order;
  for (int p = 0; p < kPathParts; ++p)
    if (part_ms[p] > 0) order.push_back(p);
  std::stable_sort(order.begin(), order.end(), [this](int a, int b) { return part_ms[a] > part_ms[b]; });
  return order;
}

std::vector<PathStreamTime> StreamsLargestFirst(const std::map<uint32_t, double>& ns_by_stream, double scale) {
  std::vector<PathStreamTime> out;
  for (const auto& [stream, ns] : ns_by_stream) out.push_back({stream, ns * scale});
  std::sort(out.begin(), out.end(), [](const PathStreamTime& a, const PathStreamTime& b) { return a.ms > b.ms; });
  return out;
}

std::string ThenPacedText(int then_paced_by) {
  if (then_paced_by < 0 || then_paced_by >= kPathParts) return {};
  return Printf("then %s %s the step", PathPartWords(then_paced_by), PaceVerb(then_paced_by));
}

}  // namespace gpuwatch::collector
