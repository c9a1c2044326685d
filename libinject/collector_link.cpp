#include "collector_link.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "endpoint.h"

extern char** environ;

namespace gpuwatch::inject {
namespace {

void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

}  // namespace

bool CollectorLink::TryConnect(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    error_ = "socket path too long: " + path;
    return false;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error_ = "cannot connect to " + path + ": " + std::strerror(errno);
    close(fd);
    return false;
  }
  fd_ = fd;
  broken_ = false;
  return true;
}

bool CollectorLink::SpawnCollector(const std::string& bin, const std::string& path) {
  if (access(bin.c_str(), X_OK) != 0) {
    error_ = "no collector to start at " + bin + " (set GPUWATCH_COLLECTOR_BIN)";
    return false;
  }
  // The collector must not be instrumented itself, and must not keep the job's pipes open
  // beyond stdout/stderr (a parent reading the job's output waits for EOF).
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
  }
  env.push_back(nullptr);
  std::string b = bin, l = path;
  char arg_autostart[] = "--autostart", arg_listen[] = "--listen";
  char* argv[] = {b.data(), arg_autostart, arg_listen, l.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);  // the summary goes to the job's stderr
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);  // outlives the rank, own session
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, bin.c_str(), &fa, &attr, argv, env.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error_ = "cannot start " + bin + ": " + std::strerror(rc);
    return false;
  }
  return true;
}

bool CollectorLink::Connect(bool autostart, const std::string& collector_bin, int budget_ms) {
  Close();
  std::string err;
  const std::string path = wire::CollectorSocketPath(&err);
  if (path.empty()) {
    error_ = err;
    return false;
  }
  if (TryConnect(path)) return true;
  if (!autostart || std::getenv("GPUWATCH_COLLECTOR")) return false;  // an address was given: don't start one

  // Only one rank per host starts the collector: the others wait on the lock, then find it.
  const std::string dir = wire::SocketDir(&err);
  if (dir.empty()) {
    error_ = err;
    return false;
  }
  const int lock = open((dir + "/collector.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock < 0) {
    error_ = "cannot open " + dir + "/collector.lock";
    return false;
  }
  int waited = 0;
  while (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    if (waited >= budget_ms) {
      close(lock);
      error_ = "timed out waiting for another rank to start the collector";
      return false;
    }
    SleepMs(5);
    waited += 5;
  }
  bool ok = TryConnect(path);
  if (!ok && SpawnCollector(collector_bin, path)) {
    for (; waited < budget_ms && !(ok = TryConnect(path)); waited += 10) SleepMs(10);
    if (!ok) error_ = "started " + collector_bin + " but it did not answer on " + path;
  }
  flock(lock, LOCK_UN);
  close(lock);
  return ok;
}

size_t CollectorLink::Write(const char* data, size_t n, int wait_ms) {
  size_t done = 0;
  while (fd_ >= 0 && done < n) {
    const ssize_t w = send(fd_, data + done, n - done, MSG_NOSIGNAL);
    if (w > 0) {
      done += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (wait_ms <= 0 || poll(&p, 1, wait_ms) <= 0) break;
      continue;
    }
    broken_ = true;
    error_ = std::string("collector connection lost: ") + std::strerror(errno);
    Close();
    broken_ = true;
  }
  return done;
}

void CollectorLink::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace gpuwatch::inject
