// Putting a summary on disk: the output directory is created if needed, each file is
// written to a temporary name, flushed to disk and renamed, so a reader never sees half a
// summary and a full disk is noticed (write/fsync/close errors are all checked).
#pragma once
#include <string>

namespace gpuwatch::collector {

// Where a job's summary goes: `--out` if given, else the first rank's Hello.out_dir if it
// is absolute, else ./gpuwatch-out.
std::string ChooseOutDir(const std::string& override_dir, const std::string& first_out_dir);

// mkdir -p; what it creates gets `mode`. False with `error` set (one line) on failure.
bool MakeDirs(const std::string& dir, std::string* error, unsigned mode = 0755);

// Writes summary.json and summary.txt into `dir`. On failure returns false and sets
// `error` to one line naming the file and the reason.
bool WriteSummaryFiles(const std::string& dir, const std::string& json_text,
                       const std::string& text, std::string* error);

}  // namespace gpuwatch::collector
