// See report_ranks.h.
#include "report_ranks.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/format.h"
#include "jobs/trace_index.h"
#include "trace/trace_file.h"
#include "trace/trace_merge.h"

namespace gpuwatch::cli {

using namespace gpuwatch::collector;

bool ParseRankList(const std::string& s, std::set<int>* ranks, bool* all, std::string* error) {
  *all = s == "all";
  if (*all) return true;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    char* end = nullptr;
    const long lo = std::strtol(item.c_str(), &end, 10);
    long hi = lo;
    if (end != item.c_str() && *end == '-' && std::isdigit(static_cast<unsigned char>(end[1])))
      hi = std::strtol(end + 1, &end, 10);
    if (item.empty() || end == item.c_str() || *end != '\0' || lo < 0 || hi < lo || hi - lo > 100000) {
      *error = "--ranks: '" + item + "' is not a rank or a range FROM-TO (e.g. 3,5-7)";
      return false;
    }
    for (long r = lo; r <= hi; ++r) ranks->insert(static_cast<int>(r));
    pos = comma + 1;
  }
  return true;
}

namespace {

// The inputs: from DIR/trace-index.json, else DIR's own trace (on this collector's clock).
bool Inputs(const std::string& dir, const std::set<int>& chosen, bool all,
            std::vector<MergeInput>* inputs, std::string* error) {
  const std::string index_path = dir + "/" + kTraceIndexFileName;
  std::vector<TraceIndexEntry> entries;
  if (!std::filesystem::exists(index_path)) {
    const std::string own = dir + "/" + kTraceFileName;
    if (!std::filesystem::exists(own)) {
      *error = "neither " + index_path + " nor " + own + " exists: is " + dir +
               " a collector's output directory?";
      return false;
    }
    MergeInput in{own, {}, all};
    for (int r : chosen) in.offset_ns[r] = 0;
    inputs->push_back(std::move(in));
    return true;
  }
  if (!ReadTraceIndex(index_path, &entries, error)) return false;
  std::set<int> indexed;
  std::map<std::string, size_t> by_path;
  for (const TraceIndexEntry& e : entries) {
    indexed.insert(e.rank);
    if (!all && !chosen.count(e.rank)) continue;
    auto [it, added] = by_path.try_emplace(e.trace, inputs->size());
    if (added) inputs->push_back(MergeInput{e.trace, {}, false});
    (*inputs)[it->second].offset_ns[e.rank] = e.clock_offset_ns;
  }
  for (int r : chosen)
    if (!indexed.count(r)) {
      *error = Printf("rank %d is not in %s (it has %zu rank(s), %d to %d)", r, index_path.c_str(),
                      indexed.size(), indexed.empty() ? -1 : *indexed.begin(),
                      indexed.empty() ? -1 : *indexed.rbegin());
      return false;
    }
  // Every file first, so a missing one costs nothing: they are on the hosts (copy them
  // here, same paths, or read them where the hosts' output directories are shared).
  for (const TraceIndexEntry& e : entries)
    if ((all || chosen.count(e.rank)) && !std::filesystem::exists(e.trace)) {
      *error = Printf("the trace of rank %d is not here: %s (written by the collector on %s; "
                      "copy it to that path or run where it is shared)",
                      e.rank, e.trace.c_str(), e.collector_host.c_str());
      return false;
    }
  return true;
}

}  // namespace

int RunRankTraces(const ReportArgs& args) {
  std::set<int> chosen;
  bool all = false;
  std::string error;
  if (!ParseRankList(args.ranks, &chosen, &all, &error)) {
    spdlog::error("{}", error);
    return 1;
  }
  std::vector<MergeInput> inputs;
  if (!Inputs(args.dir, chosen, all, &inputs, &error)) {
    spdlog::error("{}", error);
    return 1;
  }
  const std::string out = (args.out.empty() ? args.dir : args.out) + "/trace-ranks-" +
                          (all ? std::string("all") : args.ranks) + ".perfetto-trace";
  MergeStats stats;
  if (!MergeTraces(inputs, out, &stats, &error)) {
    spdlog::error("{}", error);
    return 1;
  }
  std::string found;
  for (const auto& [rank, packets] : stats.packets_by_rank) found += (found.empty() ? "" : ",") + std::to_string(rank);
  for (int r : chosen)
    if (!stats.packets_by_rank.count(r))
      spdlog::warn("rank {}: nothing of it in its trace (trace off, or the rank never started)", r);
  if (stats.truncated) spdlog::warn("a trace ended inside a packet (its collector was killed): merged up to there");
  spdlog::info("ranks {} from {} trace(s): {} ({} packets, {}); open it in ui.perfetto.dev",
               found.empty() ? "none" : found, inputs.size(), out, stats.packets_written,
               FmtBytes(stats.bytes_written));
  return 0;
}

}  // namespace gpuwatch::cli
