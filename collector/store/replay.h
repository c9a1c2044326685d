// Rebuilding jobs from disk: every journal (rank-R-PID.frames, written by the collector)
// and spool (spool-rank-R-PID.frames, written by the library) in DIR/.gpuwatch is fed,
// frame by frame, through the same Connection -> JobTable -> RankAggregate path the live
// collector uses, so a rebuilt summary is computed by exactly the same code.
//
// For one rank and pid the journal comes first, then the spool (the spool holds what the
// collector never got). Each Hello in a file starts a new connection of that process, so a
// rank that reconnected, or went from the collector to its spool, ends the way its last
// connection ended: normally if that one said Goodbye.
#pragma once
#include <string>
#include <vector>

#include "aggregate/job.h"

namespace gpuwatch::collector {

struct ReplayResult {
  int files = 0;                   // frame files replayed
  std::vector<std::string> notes;  // one line each: ignored tails, corrupt files, odd names
};

// Feeds `dir`/.gpuwatch into `jobs`; hangs are checked before the last connections close.
// False with `error` when the directory cannot be read at all.
bool ReplayDir(const std::string& dir, JobTable& jobs, ReplayResult* result, std::string* error);

// Parses "rank-R-PID.frames" / "spool-rank-R-PID.frames" (and "rank-R-PID.N.frames", a
// journal continued under a new name); false for anything else.
bool ParseFrameFileName(const std::string& name, bool* spool, int* rank, int* pid, int* part);

}  // namespace gpuwatch::collector
