// See own_fd.h.
#include "record/own_fd.h"

#include <sys/stat.h>
#include <unistd.h>

namespace gpuwatch::inject {

FileId FileIdOf(int fd) {
  struct stat st{};
  if (fd < 0 || fstat(fd, &st) != 0) return {};
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

bool StillRefersTo(int fd, const FileId& id) {
  if (fd < 0 || id == FileId{}) return false;
  return FileIdOf(fd) == id;
}

OwnFd::OwnFd(int fd) : fd_(fd), id_(FileIdOf(fd)) {
  if (fd_ >= 0 && id_ == FileId{}) {  // cannot be known again later: not worth keeping
    close(fd_);
    fd_ = -1;
  }
}

OwnFd& OwnFd::operator=(OwnFd&& o) noexcept {
  if (this != &o) {
    Close();
    fd_ = o.fd_;
    id_ = o.id_;
    o.fd_ = -1;
  }
  return *this;
}

void OwnFd::Close() {
  if (Ours()) close(fd_);
  fd_ = -1;
}

}  // namespace gpuwatch::inject
