// The collector's journal: every frame a rank's connections delivered and the collector
// accepted, appended as it arrives to OUT/.gpuwatch/rank-R-PID.frames (layout in
// proto/journal.h), so that `gpuwatch report OUT` can rebuild the summary after the
// collector itself died. Also the reader of journal and spool files.
//
// Bound: at an interval (and sooner when a part passes half its cap) the rank's state is
// checkpointed and the frames before it are dropped (WriteCheckpoint; layout in
// proto/journal.h), so the journal of a rank of any length stays under about its cap plus
// one checkpoint.
//
// Durability: frames are written with write(2), without user-space buffering, once per
// socket read (all whole frames that read completed, at most 64 KiB plus one frame). Once
// write() returns the bytes belong to the kernel, so a SIGKILL of the collector loses
// nothing it had read; nothing is fsync'ed, so a power loss can (the rank's own spool is
// the backstop there). One write per read rather than per frame: the same loss window
// (between read() and write()) at a fraction of the system calls.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "frame.h"

namespace gpuwatch::collector {

inline constexpr uint64_t kDefaultJournalMaxBytes = uint64_t{64} << 20;
inline constexpr double kDefaultJournalCheckpointS = 60;

struct JournalOptions {
  bool enabled = false;
  std::string out_override;  // --out; else the job's first rank's out_dir
  uint64_t max_bytes = kDefaultJournalMaxBytes;     // per part (file of frames)
  double checkpoint_s = kDefaultJournalCheckpointS;  // 0: no checkpoints (frames past the cap are lost)
};

// GPUWATCH_JOURNAL_MAX_BYTES and GPUWATCH_JOURNAL_CHECKPOINT_S into `o` (the defaults of
// gpuwatch-collector's options and what `gpuwatch run` uses). False with `error` for a value
// that is not a number (that one is left as it was).
bool JournalOptionsFromEnv(JournalOptions* o, std::string* error);

// What happened to one rank's journal; goes into summary.json ("storage").
struct JournalStatus {
  std::string file;      // relative to the output directory, "" when none was opened
  uint64_t bytes = 0;    // file size, header included
  bool capped = false;   // stopped at max_bytes: frames after that are only in the summary
  std::string error;     // why journaling stopped early (one line), "" if it did not
  uint64_t checkpoints = 0;        // written by this collector
  uint64_t checkpoint_bytes = 0;   // the latest one's size
  uint64_t checkpoint_ns = 0;      // the latest one's time to write (state given, file written)
  std::string checkpoint_error;    // why checkpoints stopped (one line), "" if they did not
};

class JournalWriter {
 public:
  // Opens OUT/.gpuwatch/rank-R-PID.frames (directory 0700, file 0600, created if needed).
  // An existing file with a valid header is continued, a truncated last frame cut off
  // first; one without is kept and a new name rank-R-PID.N.frames is used. Null with
  // `error` set on failure.
  // With a checkpoint of the same rank and pid already there (a collector before this one),
  // its last part is continued and this writer writes no checkpoint: the one there holds
  // what this collector never saw.
  static std::unique_ptr<JournalWriter> Open(const std::string& out_dir, int rank, int pid,
                                             uint64_t max_bytes, std::string* error);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Queues one whole frame; false (and nothing queued) once the cap is reached or a write
  // failed. Reaching the cap sets the capped flag in the file's header.
  bool Add(std::string_view raw_frame);
  // Writes what Add queued. False on a write error (status().error says which).
  bool Flush();
  // Checkpoints every `seconds` (0: none), unless Open found a checkpoint of another collector.
  // `checkpoints_before`: this collector's checkpoints of the rank before this writer (it
  // reconnected); the checkpoint there is then its own, and carried on.
  void set_checkpoint_interval(double seconds, uint64_t checkpoints_before, std::chrono::steady_clock::time_point now);
  // The Hello frame (as journaled) that opens each later part.
  void set_hello(std::string_view raw_hello_frame) { hello_.assign(raw_hello_frame); }
  // True when the rank's state should be checkpointed now: the interval passed since the
  // last one (or the journal opened), or the part is past half its cap, or capped.
  bool CheckpointDue(std::chrono::steady_clock::time_point now) const;
  // Writes `state` (the rank's state after every frame added so far; Flush first) as the
  // checkpoint, moves on to a new part and deletes the old ones. A failure is said once
  // (TakeNotice) and turns checkpoints off; journaling goes on as before. `state` empty:
  // nothing to checkpoint (a rank sent as figures), no checkpoint. `encode_started`: when
  // the state began to be encoded (the checkpoint's time counts from there).
  bool WriteCheckpoint(std::string_view state, uint64_t max_batch_seq, std::chrono::steady_clock::time_point now,
                       std::chrono::steady_clock::time_point encode_started);
  const JournalStatus& status() const { return status_; }
  // Logged once when the journal stops early; "" otherwise. Cleared by the call.
  std::string TakeNotice();

 private:
  JournalWriter() = default;
  void Stop(std::string why);
  void StopCheckpoints(std::string why);
  std::string PartPath(int part) const;

  int fd_ = -1;
  std::string path_;
  uint64_t max_bytes_ = 0;
  std::string dir_;  // OUT/.gpuwatch
  int rank_ = 0, pid_ = 0;
  int part_ = 0;     // the part being written
  int first_part_ = 0;  // the oldest part this writer has not deleted
  std::string hello_;
  std::chrono::steady_clock::duration checkpoint_every_{};  // zero: no checkpoints
  std::chrono::steady_clock::time_point next_checkpoint_{};
  bool inherited_checkpoint_ = false;  // Open found one: this writer writes none
  std::string pending_;
  JournalStatus status_;
  std::string notice_;
};

// A checkpoint file as read back (proto/journal.h).
struct JournalCheckpoint {
  int next_part = 0;           // frames after it are in parts >= this
  uint64_t max_batch_seq = 0;  // the highest Batch.seq it holds
  std::string state;           // the rank's state (analyze/rank_checkpoint.h)
};
// Reads `path`; false with a one-line `error` when it is missing, truncated or corrupt.
bool ReadCheckpointFile(const std::string& path, JournalCheckpoint* out, std::string* error);

// Reading a journal or spool file.
struct FrameFileInfo {
  uint32_t flags = 0;            // header flags (kJournalCapped)
  uint64_t bytes = 0;            // file size
  uint64_t frames = 0;           // whole frames read
  uint64_t valid_end = 0;        // offset just past the last whole frame
  uint64_t truncated_tail = 0;   // bytes of an incomplete last frame, ignored
  std::string error;             // not a frame file, unreadable, or a corrupt frame (the rest
                                 // of the file is then ignored)
};
// Calls `on_frame` for each whole frame, with the decoded frame and its raw bytes. Reads in
// chunks: memory does not grow with the file. False when the file could not be used at all
// (missing, no valid header) or stopped at a corrupt frame; info->error says why.
bool ScanFrameFile(const std::string& path,
                   const std::function<void(const wire::Frame&, std::string_view raw)>& on_frame,
                   FrameFileInfo* info);

}  // namespace gpuwatch::collector
