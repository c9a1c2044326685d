// Putting a summary on disk: the output directory is created if needed, each file is
// written to a temporary name, flushed to disk and renamed, so a reader never sees half a
// summary and a full disk is noticed (write/fsync/close errors are all checked).
#pragma once
#include <string>

#include "common/out_dir.h"

namespace gpuwatch::collector {

struct RenderedSummary;  // report/summary.h

// Writes summary.txt, report.html (unless `s.html` is empty) and, last, summary.json into
// `dir`: once summary.json is there, so are the others.
// On failure returns false and sets `error` to one line naming the file and the reason.
bool WriteSummaryFiles(const std::string& dir, const RenderedSummary& s, std::string* error);
// One file so (a temporary name, fsync, rename); the directory must exist.
bool WriteAtomically(const std::string& path, const std::string& data, std::string* error);

}  // namespace gpuwatch::collector
