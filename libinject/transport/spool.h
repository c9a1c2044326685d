// The spool: where a rank's frames go when no collector takes them (none running and none
// may be started, or the collector died). Same layout as the collector's journal
// (proto/journal.h), so `gpuwatch report DIR` rebuilds the summary from both.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuwatch::inject {

class Spool {
 public:
  ~Spool();
  // Creates OUT/.gpuwatch/spool-rank-R-PID.frames and writes its header.
  bool Open(const std::string& out_dir, int rank, int pid, size_t max_bytes, std::string* error);
  // Appends whole frames with one write. Returns false (and drops them) past the size cap
  // or on a write error (a full disk); the first such failure sets error().
  bool Append(std::string_view frames);
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  int fd_ = -1;
  size_t written_ = 0;
  size_t max_bytes_ = 0;
  bool capped_ = false;
  std::string path_;
  std::string error_;
};

}  // namespace gpuwatch::inject
