// The spool file: header, whole frames appended, a flag in the header when it is capped.
#include "transport/spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "journal.h"

namespace gpuwatch::inject {
namespace {

bool MakeDirs(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at == path.size() || path[at] == '/') {
      const std::string part = path.substr(0, at);
      if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

bool Spool::Open(const std::string& out_dir, int rank, int pid, size_t max_bytes, std::string* error) {
  const std::string dir = out_dir + "/" + wire::kJournalDir;
  if (!MakeDirs(dir)) {
    *error = "cannot create " + dir + ": " + std::strerror(errno);
    return false;
  }
  path_ = dir + "/" + wire::SpoolFileName(rank, pid);
  fd_ = OwnFd(open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd_.held()) {
    *error = "cannot create " + path_ + ": " + std::strerror(errno);
    return false;
  }
  unsigned char header[wire::kJournalHeaderBytes];
  wire::EncodeJournalHeader(header, 0);
  if (!WriteAll(fd_.get(), reinterpret_cast<const char*>(header), sizeof header)) {
    *error = "cannot write " + path_ + ": " + std::strerror(errno);
    fd_.Close();
    return false;
  }
  max_bytes_ = max_bytes;
  return true;
}

bool Spool::StillOurs() {
  if (fd_.Ours()) return true;
  // The job closed it. The same file opened again (not O_APPEND: the capped flag is a
  // pwrite into the header), checked to be the one we created, continues where it was.
  const FileId was = fd_.id();
  fd_.Forget();
  OwnFd again(open(path_.c_str(), O_WRONLY | O_CLOEXEC));
  if (!again.held() || again.id() != was || lseek(again.get(), 0, SEEK_END) < 0) {
    error_ = "the job closed the spool's descriptor and " + path_ + " is no longer the file written";
    return false;
  }
  std::fprintf(stderr, "[gpuwatch] the job closed the spool's descriptor; %s opened again\n", path_.c_str());
  fd_ = std::move(again);
  return true;
}

bool Spool::Append(std::string_view frames) {
  if (!fd_.held() || capped_) return false;
  if (!StillOurs()) {
    capped_ = true;  // nothing more can be written: the frames from here are counted as dropped
    return false;
  }
  if (written_ + frames.size() > max_bytes_) {
    // Say in the header that frames are missing from here on; the report tells the user.
    capped_ = true;
    unsigned char flags[4];
    wire::PutU32(flags, wire::kJournalCapped);
    if (pwrite(fd_.get(), flags, sizeof flags, wire::kJournalFlagsOffset) != sizeof flags) {}
    error_ = path_ + " reached its size limit (GPUWATCH_SPOOL_BYTES)";
    return false;
  }
  if (!WriteAll(fd_.get(), frames.data(), frames.size())) {
    if (error_.empty()) error_ = "cannot write " + path_ + ": " + std::strerror(errno);
    capped_ = true;  // a failed write may have left part of a frame: write nothing after it
    return false;
  }
  written_ += frames.size();
  return true;
}

}  // namespace gpuwatch::inject
