// The job summary in its forms: summary.json (schema gpuwatch.summary.v1, a public
// interface documented in docs/summary-schema.md), summary.txt (80 columns, also printed
// to stdout) and report.html (drawn from the JSON). All come from the same JobView; none
// touches the disk.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "report/job_view.h"

namespace gpuwatch::collector {

inline constexpr const char* kSummarySchema = "gpuwatch.summary.v1";

// `generated_at`: an ISO 8601 UTC time; passed in so tests get a fixed document.
nlohmann::json BuildSummaryJson(const JobView& job, const std::string& generated_at);
// Deterministic: the same job always gives the same text.
std::string BuildSummaryText(const JobView& job);
// Lines of summary.txt the console's short form (report/console_text.h) shows too:
// "8 ranks of 8, 1 host, wall 3.2 s" (no newline), and the closing "job: ..." line of
// headlines, wrapped at 80 columns.
std::string RanksLine(const JobView& job);
std::string JobLine(const JobView& job);

// The documents as they go to disk (JSON generated now): summary.json, summary.txt and
// report.html (report/html_report.h, drawn from the same JSON document).
struct RenderedSummary {
  std::string json;
  std::string text;
  std::string html;
  // Not a file: what `gpuwatch run`, `report` and `import` print by default
  // (report/console_text.h); filled by SummarizeJob (jobs/job_end.h).
  std::string console;
};
RenderedSummary RenderSummary(const JobView& job);

// Now, as "2024-05-01T12:34:56Z".
std::string UtcNow();

}  // namespace gpuwatch::collector
