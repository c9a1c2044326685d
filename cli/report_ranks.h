// `gpuwatch report --ranks 3,5-7 DIR`: the chosen ranks' traces merged into one Perfetto file
// on one timeline (issue #21). DIR is the root collector's output: its trace-index.json says
// which host collector's trace holds each rank and that host's clock offset; a collector
// that traced every rank itself (one host, or --upstream-raw) has DIR/trace.perfetto-trace.
#pragma once
#include <set>
#include <string>

#include "report.h"

namespace gpuwatch::cli {

// "3,5-7" -> {3, 5, 6, 7}; "all" -> {} with *all set. False with `error` when malformed.
bool ParseRankList(const std::string& s, std::set<int>* ranks, bool* all, std::string* error);
// Exit code: 0 written, 1 bad input (a rank not in the index, a trace not readable).
int RunRankTraces(const ReportArgs& args);

}  // namespace gpuwatch::cli
