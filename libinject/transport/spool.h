// The spool: where a rank's frames go when no collector takes them (none running and none
// may be started, or the collector died). Same layout as the collector's journal
// (proto/journal.h), so `gpuwatch report DIR` rebuilds the summary from both.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "record/own_fd.h"

namespace gpuwatch::inject {

class Spool {
 public:
  // Creates OUT/.gpuwatch/spool-rank-R-PID.frames and writes its header.
  bool Open(const std::string& out_dir, int rank, int pid, size_t max_bytes, std::string* error);
  // Appends whole frames with one write. Returns false (and drops them) past the size cap
  // or on a write error (a full disk); the first such failure sets error(). When the job
  // closed the file's descriptor (and may have the number for a file of its own), the file
  // is opened again by its path first, if it is still the same file.
  bool Append(std::string_view frames);
  bool is_open() const { return fd_.held(); }
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  bool StillOurs();  // the descriptor, or the file opened again; false: no spool any more
  OwnFd fd_;
  size_t written_ = 0;
  size_t max_bytes_ = 0;
  bool capped_ = false;
  std::string path_;
  std::string error_;
};

}  // namespace gpuwatch::inject
