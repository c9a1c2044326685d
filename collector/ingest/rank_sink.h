// Where ingest hands what it accepted: a connection that said Hello is attached to a rank
// (RankSink) by the RankDirectory, and feeds it frame by frame. The job table
// (jobs/job_table.h) implements both; ingest knows nothing above this line.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpuwatch.pb.h"
#include "ingest/journal_store.h"

namespace gpuwatch::collector {

using Clock = std::chrono::steady_clock;

// Where a rank's data was kept and where `gpuwatch report` found it (summary "storage").
struct RankStorage {
  JournalStatus journal;                   // the live collector's journal of this rank
  std::vector<std::string> rebuilt_from;   // report: the files replayed, in order (max 16)
  bool spool_capped = false;               // a spool said its writer stopped at its cap
  uint64_t truncated_tail_bytes = 0;       // report: incomplete last frames ignored
};

class RankSink {
 public:
  virtual ~RankSink() = default;
  virtual const wire::Hello& hello() const = 0;
  virtual void OnBatch(const wire::Batch& batch) = 0;
  virtual void OnGoodbye(const wire::Goodbye& goodbye) = 0;
  // The collector's CPU time for this rank, measured live when its Goodbye arrived.
  virtual void NoteCollectorCpu(uint64_t /*ns*/) {}
  virtual void OnHeartbeat(const wire::Heartbeat& heartbeat, Clock::time_point now) = 0;
  // A host collector's figures of this rank (Hello.upstream_digests): they replace the
  // previous ones. False with `error` when they cannot be read (the connection is dropped).
  virtual bool OnDigest(const wire::RankDigest& digest, std::string* error) = 0;
  // The rank's journal while a connection of it is open (null when journaling is off or
  // could not start), and what happened to it.
  virtual JournalWriter* journal() const = 0;
  virtual void set_journal(std::unique_ptr<JournalWriter> j) = 0;
  virtual RankStorage& storage() = 0;
  // The rank's state for a journal checkpoint (analyze/rank_checkpoint.h); "" when it has
  // none of its own (a rank sent as figures).
  virtual std::string CheckpointState() const { return {}; }
  // Replaces the rank's state with a checkpoint's; false with a one-line `error`, the state
  // unchanged.
  virtual bool RestoreState(std::string_view state, std::string* error) {
    (void)state;
    *error = "this rank keeps no state of its own";
    return false;
  }
  // The highest Batch.seq received (a spool's copy of a batch has the same seq).
  virtual uint64_t max_batch_seq() const { return 0; }
};

class RankDirectory {
 public:
  virtual ~RankDirectory() = default;
  // A connection said Hello: the rank it feeds, or null with `error` set when it cannot be
  // taken (too many ranks).
  virtual RankSink* Attach(const wire::Hello& hello, std::string* error) = 0;
  // That connection closed (normally or not).
  virtual void Detach(const std::string& job_id, RankSink* rank, bool said_goodbye, Clock::time_point now) = 0;
  // Where the job's files go: the folder claimed for it, else `out_override`, else the
  // directory its first rank asked for (ChooseOutDir).
  virtual std::string OutDir(const std::string& job_id, const std::string& out_override) const = 0;
};

}  // namespace gpuwatch::collector
