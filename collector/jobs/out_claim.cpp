// See out_claim.h.
#include "jobs/out_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/out_dir.h"
#include "endpoint.h"

namespace gpuwatch::collector {
namespace {

// An flock on DIR's lock file, or -1: `*held` when another open file holds it, else the
// folder or its lock file could not be made.
int Lock(const std::string& dir, bool* held) {
  *held = false;
  std::string error;
  if (!MakeDirs(dir, &error)) return -1;
  const std::string path = dir + "/" + OutClaim::kLockFileName;
  const int fd = open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *held = errno == EWOULDBLOCK;
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

OutClaim& OutClaim::operator=(OutClaim&& o) noexcept {
  if (this != &o) {
    Release();
    dir_ = std::move(o.dir_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

OutClaim OutClaim::Take(const std::string& folder, const std::string& job_id) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(folder, ec);
  OutClaim c;
  c.dir_ = ec ? folder : abs.lexically_normal().string();
  if (c.dir_.size() > 1 && c.dir_.back() == '/') c.dir_.pop_back();
  bool held = false;
  c.fd_ = Lock(c.dir_, &held);
  // Held by another job: this job's own subfolder, named from its id's hash and safe
  // characters only. Not locked itself: only this job's id leads there.
  if (held) c.dir_ += "/" + wire::JobFileStem(job_id);
  return c;
}

void OutClaim::Release() {
  if (fd_ >= 0) close(fd_);  // closing the only open file of the lock releases it
  fd_ = -1;
}

}  // namespace gpuwatch::collector
