// See trace_index.h.
#include "jobs/trace_index.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/json_read.h"
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

bool ReadTraceIndex(const std::string& path, std::vector<TraceIndexEntry>* entries,
                    std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json index = nlohmann::json::parse(text.str(), nullptr, false);
  if (!index.is_object() || !index["ranks"].is_array()) {
    *error = path + " is not a trace index (no \"ranks\" list)";
    return false;
  }
  for (const nlohmann::json& r : json_read::Arr(index, "ranks")) {
    TraceIndexEntry e;
    e.rank = json_read::Int(r, "rank");
    e.host = json_read::Str(r, "host");
    e.collector_host = json_read::Str(r, "collector_host");
    e.trace = json_read::Str(r, "trace");
    const nlohmann::json& off = json_read::Get(r, "clock_offset_ns");
    e.clock_offset_ns = off.is_number_integer() ? off.get<int64_t>() : 0;
    if (e.rank < 0 || e.trace.empty()) {
      *error = path + ": an entry without a rank or a trace: " + r.dump();
      return false;
    }
    entries->push_back(std::move(e));
  }
  return true;
}

}  // namespace gpuwatch::collector
