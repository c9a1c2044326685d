// See trace_index.h.
#include "jobs/trace_index.h"

#include <nlohmann/json.hpp>

#include "trace/trace_file.h"

namespace gpuwatch::collector {

std::string TraceIndexJson(const Job& job) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& [key, rank] : job.ranks()) {
    const wire::Hello& h = rank->hello();
    if (!h.upstream_digests()) continue;
    // "HOST:DIR" of the host collector: the directory is on that host.
    const std::string& at = h.trace_at();
    const size_t colon = at.find(':');
    const std::string dir = colon == std::string::npos ? at : at.substr(colon + 1);
    ranks.push_back({{"rank", h.rank()},
                     {"host", h.host()},
                     {"pid", h.pid()},
                     {"collector_host", colon == std::string::npos ? "" : at.substr(0, colon)},
                     {"trace", dir + "/" + kTraceFileName},
                     {"clock_offset_ns", h.clock_offset_ns()}});
  }
  if (ranks.empty()) return "";
  return nlohmann::json{{"job", job.id()}, {"ranks", ranks}}.dump(2) + "\n";
}

}  // namespace gpuwatch::collector
