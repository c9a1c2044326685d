// See critical_path_json.h. Keys are a public interface: docs/summary-schema.md.
#include "report/critical_path_json.h"

#include <string>

namespace gpuwatch::collector {

nlohmann::json CriticalPathJson(const CriticalPathFigures& c) {
  if (!c.known()) return nullptr;
  nlohmann::json parts = nlohmann::json::object();
  for (int p = 0; p < kPathParts; ++p) parts[std::string(PathPartKey(p)) + "_ms"] = c.part_ms[p];
  nlohmann::json streams = nlohmann::json::array();
  for (const PathStreamTime& s : c.gpu_streams) streams.push_back({{"stream", s.stream}, {"ms", s.ms}});
  return {{"steps", c.steps},       {"step_ms", c.step_ms}, {"path_ms", c.path_ms},
          {"alone_ms", c.alone_ms}, {"parts", parts},       {"gpu_streams", streams}};
}

nlohmann::json WhatIfJson(const WhatIf& w) {
  if (!w.known()) return nullptr;
  return {{"step_ms", w.step_ms},
          {"speedup", w.speedup},
          {"assumes", w.assumes},
          {"then_paced_by", w.then_paced_by >= 0 && w.then_paced_by < kPathParts
                                ? nlohmann::json(PathPartKey(w.then_paced_by))
                                : nlohmann::json(nullptr)}};
}

}  // namespace gpuwatch::collector
