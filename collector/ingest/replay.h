// Rebuilding jobs from disk: every journal (rank-R-PID.frames, written by the collector)
// and spool (spool-rank-R-PID.frames, written by the library) in DIR/.gpuwatch is fed,
// frame by frame, through the same Connection -> RankDirectory path the live collector
// uses, so a rebuilt summary is computed by exactly the same code.
//
// A rank with a checkpoint (rank-R-PID.checkpoint, proto/journal.h) starts from it: its
// state replaces the rank's at the first Hello of the parts after it, and the batches it
// holds are not replayed again from the spool. A checkpoint that cannot be read is one
// note, and the rank is rebuilt from the frames there are.
//
// For one rank and pid the journal comes first, then the spool (the spool holds what the
// collector never got). The spool's opening Hello continues the journal's last connection
// (the library wrote it when that connection broke), so the two are read as one stream.
// Any other Hello in a file starts a new connection of that process, so a rank that
// reconnected ends the way its last connection ended: normally if that one said Goodbye.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ingest/rank_sink.h"

namespace gpuwatch::collector {

struct ReplayResult {
  int files = 0;                   // frame files replayed
  int checkpoints = 0;             // ranks restored from a checkpoint (their frames before it are gone)
  std::vector<std::string> notes;  // one line each: ignored tails, corrupt files, odd names
};

// Feeds `dir`/.gpuwatch into `jobs`. `before_close` runs before the last connection of
// each rank closes (hangs are checked then, as the live collector would have); its lines
// go to the notes. False with `error` when the directory cannot be read at all.
bool ReplayDir(const std::string& dir, RankDirectory& jobs, ReplayResult* result, std::string* error,
               const std::function<std::vector<std::string>()>& before_close = {});

// Parses "rank-R-PID.frames" / "spool-rank-R-PID.frames" (and "rank-R-PID.N.frames", a
// journal continued under a new name); false for anything else.
bool ParseFrameFileName(const std::string& name, bool* spool, int* rank, int* pid, int* part);
// Parses "rank-R-PID.checkpoint"; false for anything else.
bool ParseCheckpointFileName(const std::string& name, int* rank, int* pid);
// True when `dir`/.gpuwatch holds a checkpoint: a rebuilt trace would then start at it.
bool HasCheckpoints(const std::string& dir);

}  // namespace gpuwatch::collector
