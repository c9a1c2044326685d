// The collector's journal: every frame a rank's connections delivered and the collector
// accepted, appended as it arrives to OUT/.gpuwatch/rank-R-PID.frames (layout in
// proto/journal.h), so that `gpuwatch report OUT` can rebuild the summary after the
// collector itself died. Also the reader of journal and spool files.
//
// Durability: frames are written with write(2), without user-space buffering, once per
// socket read (all whole frames that read completed, at most 64 KiB plus one frame). Once
// write() returns the bytes belong to the kernel, so a SIGKILL of the collector loses
// nothing it had read; nothing is fsync'ed, so a power loss can (the rank's own spool is
// the backstop there). One write per read rather than per frame: the same loss window
// (between read() and write()) at a fraction of the system calls.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "frame.h"

namespace gpuwatch::collector {

inline constexpr uint64_t kDefaultJournalMaxBytes = uint64_t{256} << 20;

struct JournalOptions {
  bool enabled = false;
  std::string out_override;  // --out; else the job's first rank's out_dir
  uint64_t max_bytes = kDefaultJournalMaxBytes;
};

// What happened to one rank's journal; goes into summary.json ("storage").
struct JournalStatus {
  std::string file;      // relative to the output directory, "" when none was opened
  uint64_t bytes = 0;    // file size, header included
  bool capped = false;   // stopped at max_bytes: frames after that are only in the summary
  std::string error;     // why journaling stopped early (one line), "" if it did not
};

class JournalWriter {
 public:
  // Opens OUT/.gpuwatch/rank-R-PID.frames (directory 0700, file 0600, created if needed).
  // An existing file with a valid header is continued, a truncated last frame cut off
  // first; one without is kept and a new name rank-R-PID.N.frames is used. Null with
  // `error` set on failure.
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
  const JournalStatus& status() const { return status_; }
  // Logged once when the journal stops early; "" otherwise. Cleared by the call.
  std::string TakeNotice();

 private:
  JournalWriter() = default;
  void Stop(std::string why);

  int fd_ = -1;
  std::string path_;
  uint64_t max_bytes_ = 0;
  std::string pending_;
  JournalStatus status_;
  std::string notice_;
};

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
