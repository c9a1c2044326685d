// A descriptor gpuwatch opened and keeps (the collector socket, the spool, kept /proc files,
// the safe-read pipe), known by the file it refers to and not only by its number. The job
// may close every descriptor (daemons and sandboxes do, after start-up) and get the same
// numbers back for files and sockets of its own; nothing fails for gpuwatch then, so the
// identity (st_dev, st_ino: a socket's inode is its own) is checked before each use, one
// fstat. A descriptor that is no longer ours is forgotten: never written, read or closed.
// Limit: a file deleted while the job closes its descriptor frees the inode number, which
// the file system may give the job's next file; gpuwatch deletes none of the files it keeps,
// and socket and pipe inodes are numbered afresh.
//
// In record/ because every layer keeps one (record's pipe, enrich's /proc files,
// transport's socket and spool). Sender-side only: fstat is a syscall, never for a hook.
#pragma once
#include <cstdint>

namespace gpuwatch::inject {

// What a descriptor refers to. {0, 0} for none.
struct FileId {
  uint64_t dev = 0, ino = 0;
  bool operator==(const FileId&) const = default;
};

// The file `fd` refers to now; {0, 0} when it is not open.
FileId FileIdOf(int fd);

// `fd` is open and refers to `id` (async-signal-safe: fstat only, for fork handlers).
bool StillRefersTo(int fd, const FileId& id);

class OwnFd {
 public:
  OwnFd() = default;
  // Adopts `fd`, just opened with O_CLOEXEC (or -1), and notes what it refers to.
  explicit OwnFd(int fd);
  OwnFd(OwnFd&& o) noexcept : fd_(o.fd_), id_(o.id_) { o.fd_ = -1; }
  OwnFd& operator=(OwnFd&& o) noexcept;
  OwnFd(const OwnFd&) = delete;
  OwnFd& operator=(const OwnFd&) = delete;
  ~OwnFd() { Close(); }

  // Held, whether or not still ours (check Ours() before using get()).
  bool held() const { return fd_ >= 0; }
  // Held, open, and the file it was opened for: the job did not close it.
  bool Ours() const { return fd_ >= 0 && StillRefersTo(fd_, id_); }
  int get() const { return fd_; }
  const FileId& id() const { return id_; }
  // Closes it if it is still ours; forgets it either way.
  void Close();
  // Forgets it without closing: the number is the job's now.
  void Forget() { fd_ = -1; }

 private:
  int fd_ = -1;
  FileId id_;
};

}  // namespace gpuwatch::inject
