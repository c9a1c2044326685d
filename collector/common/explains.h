// Findings that explain another: the same time lost, said as its cause, not a loss of its
// own. `input_io` says whether `data_loading`'s time was CPU-bound or waiting on reads
// (analyze/findings_host.cpp). Every view puts it inside the finding it explains (the
// verdict, summary.txt, the console), and the diff never names it as the biggest change.
// Here, not in analyze/, because compare/ reads findings from summary.json by id.
#pragma once
#include <string_view>

namespace gpuwatch::collector {

// The id of the finding that `id` explains, or "" when it is a loss of its own.
constexpr std::string_view ExplainedFinding(std::string_view id) {
  return id == "input_io" ? std::string_view("data_loading") : std::string_view();
}

}  // namespace gpuwatch::collector
