// A finding's evidence in report.html: a small labelled table (evidence_labels.h gives each
// key its label and unit), objects and per-rank maps as one line, lists of objects as a
// table, names shortened (the full name in the tooltip); what nests deeper is left to
// summary.json. Never a raw key or a JSON object.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gpuwatch::collector {

// The evidence object's table; empty when there is nothing to show. `host_frames` and
// `call_site` are left to the finding's own sentences.
std::string EvidenceHtml(const nlohmann::json& evidence);

}  // namespace gpuwatch::collector
