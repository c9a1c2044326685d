// What a finding's evidence keys mean to a reader: one table from summary.json's key to a
// label and a unit, so a view never shows a raw key. A key missing from the table still
// reads: its unit from its suffix (`_s`, `_bytes`, `_gbps`, `_share`, ...) and its words
// from its name ("small_grid_kernels" -> "small grid kernels").
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gpuwatch::collector {

enum class EvidenceUnit {
  kNumber,   // 4 significant digits, integers whole
  kSeconds,  // FmtDuration
  kMillis,
  kMicros,
  kBytes,
  kGbps,
  kMbps,
  kShare,    // 0..1, shown as a percentage
  kMhz,
  kWatts,
  kCelsius,
  kCores,
  kRank,     // "rank 3"
  kText,     // a word of the analysis ("cpu_bound" -> "cpu bound")
  kName,     // a kernel, frame or setting name: shortened, never reworded
  kHidden,   // a note for readers of the JSON (it names JSON keys): not shown
};

struct EvidenceLabel {
  std::string label;  // "GPU idle waiting for the host"
  EvidenceUnit unit = EvidenceUnit::kNumber;
};

// The label and unit of an evidence key; a per-rank map's key ("wait_s_by_rank") gets its
// value's unit and ", by rank" in its label.
EvidenceLabel LabelOfEvidence(std::string_view key);

// "snake_case_words" -> "snake case words".
std::string ReadableKey(std::string_view key);

// A scalar in its unit: "1.234 s", "79%", "3.2 GB/s", "rank 3", "yes", "-" for null.
// Objects and arrays are the view's to lay out (the text is "…" for them here).
std::string EvidenceValueText(const nlohmann::json& v, EvidenceUnit unit);

}  // namespace gpuwatch::collector
