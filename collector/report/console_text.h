// The console's short form of a job's summary: what `gpuwatch run`, `gpuwatch report` and
// `gpuwatch import` print by default (with -v, summary.txt whole; with -q, only the files
// line). At most kConsoleLines lines (thresholds.h) whatever the rank count: the job's size
// and wall time, the verdict, the top findings with their time per step and fix (a finding
// that explains another inside it, figures_text.h), the ranks that stand out
// (standout_ranks.h) with one line for the others, and summary.txt's job line. The caller
// prints FilesLine last. docs/console.md shows one.
#pragma once
#include <string>

#include "report/job_view.h"

namespace gpuwatch::collector {

// Deterministic, 80 columns, ending in a newline; without the files line.
std::string BuildConsoleText(const JobView& job);

// The last line the commands print, also with -q: where summary.txt, report.html and the
// trace are. `written`: the summary files were saved in `dir`; `trace`: the trace's path,
// empty when none was written. Paths are not clipped (they are to be copied).
std::string FilesLine(const std::string& dir, bool written, const std::string& trace);

}  // namespace gpuwatch::collector
