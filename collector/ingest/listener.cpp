#include "ingest/listener.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuwatch::collector {
namespace {

bool MakeAddr(const std::string& path, sockaddr_un* addr, std::string* error) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr->sun_path) {
    *error = "socket path \"" + path + "\" is empty or longer than " +
             std::to_string(sizeof addr->sun_path - 1) + " bytes";
    return false;
  }
  std::memcpy(addr->sun_path, path.data(), path.size());
  return true;
}

// True when something accepts connections on `addr`: a live collector.
bool SomeoneAnswers(const sockaddr_un& addr) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

}  // namespace

int ListenUnix(const std::string& path, std::string* error) {
  sockaddr_un addr;
  if (!MakeAddr(path, &addr, error)) return -1;

  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      *error = path + " exists and is not a socket; not touching it";
      return -1;
    }
    if (SomeoneAnswers(addr)) {
      *error = "a collector is already listening on " + path;
      return -1;
    }
    // Stale: its collector died without removing it.
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      *error = "cannot remove stale socket " + path + ": " + std::strerror(errno);
      return -1;
    }
  }

  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  // The umask makes the socket 0600 from the moment it exists; chmod below is belt and braces.
  const mode_t old_mask = umask(0177);
  const int rc = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  umask(old_mask);
  if (rc != 0) {
    // Lost a race with a collector starting at the same moment.
    *error = bind_errno == EADDRINUSE ? "a collector is already listening on " + path
                                      : "cannot bind " + path + ": " + std::strerror(bind_errno);
    close(fd);
    return -1;
  }
  if (chmod(path.c_str(), 0600) != 0 || listen(fd, SOMAXCONN) != 0) {
    *error = "cannot listen on " + path + ": " + std::strerror(errno);
    close(fd);
    unlink(path.c_str());
    return -1;
  }
  return fd;
}

bool PeerOf(int fd, Peer* peer) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  peer->pid = cred.pid;
  peer->uid = cred.uid;
  return true;
}

}  // namespace gpuwatch::collector
