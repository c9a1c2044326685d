// Sockets: Unix or TCP connects with a deadline, the job's collector spawned under a lock
// (its output to its own log), writes that never block long.
#include "transport/collector_link.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spawn.h>
#include <linux/sockios.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "endpoint.h"
#include "transport/identity.h"

extern char** environ;

namespace gpuwatch::inject {
namespace {

void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

// The library keeps the last 4 MiB it sent to spool them again if the collector dies
// (outbox.cpp); a small send buffer (the kernel doubles it) keeps what a dead collector
// can swallow below that, the collector caps its receive side the same way.
constexpr int kTcpSendBuffer = 512 * 1024;

// One non-blocking connect that gives up at `deadline_ms`. The fd, or -1 with `error`.
int ConnectOne(const addrinfo& ai, int64_t deadline_ms, std::string* error) {
  const int fd = socket(ai.ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  const int one = 1, buf = kTcpSendBuffer;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // heartbeats are small
  int err = 0;
  if (connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int rc = 0;
      do {
        rc = poll(&p, 1, static_cast<int>(std::max<int64_t>(0, deadline_ms - NowMs())));
      } while (rc < 0 && errno == EINTR);
      socklen_t len = sizeof err;
      if (rc <= 0) err = ETIMEDOUT;
      else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
  }
  if (err != 0) {
    *error = std::strerror(err);
    close(fd);
    return -1;
  }
  return fd;
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
  fd_ = OwnFd(fd);
  broken_ = false;
  return fd_.held();
}

bool CollectorLink::ConnectTcp(const std::string& address, int budget_ms) {
  const std::string where = "collector at tcp://" + address;
  const char* token = std::getenv("GPUWATCH_TOKEN");
  if (!token || !*token) {
    error_ = where + " needs GPUWATCH_TOKEN (the job token the collector was given)";
    return false;
  }
  wire::HostPort hp;
  std::string err;
  if (!wire::ParseHostPort(address, &hp, &err)) {
    error_ = "GPUWATCH_COLLECTOR: " + err;
    return false;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(hp.port);
  int rc = getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &res);
  if (rc == EAI_NONAME) {
    // A host name: resolving it may take a while, but this is the sender thread (the job's
    // threads never wait for it, and process exit waits at most GPUWATCH_EXIT_TIMEOUT_MS).
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &res);
  }
  if (rc != 0) {
    error_ = "cannot resolve " + where + ": " + gai_strerror(rc);
    return false;
  }
  const int64_t deadline = NowMs() + budget_ms;
  for (const addrinfo* ai = res; ai && !fd_.held() && NowMs() < deadline; ai = ai->ai_next)
    fd_ = OwnFd(ConnectOne(*ai, deadline, &err));
  freeaddrinfo(res);
  if (!fd_.held()) {
    error_ = "cannot connect to " + where + ": " + err;
    return false;
  }
  broken_ = false;
  token_ = token;
  return true;
}

bool CollectorLink::SpawnCollector(const std::string& bin, const std::string& path,
                                   const std::string& log) {
  if (access(bin.c_str(), X_OK) != 0) {
    error_ = "no collector to start at " + bin + " (set GPUWATCH_COLLECTOR_BIN)";
    return false;
  }
  // The collector must not be instrumented itself, and must hold none of the job's files:
  // a caller that reads the job's stdout or stderr waits for EOF, which would come only
  // when the collector exits, after the job (and a job whose collector wrote on the job's
  // stderr would print what it never printed). Its stdout (the summary) and stderr (its
  // log) go to `log`, truncated: the log of the latest collector of this job.
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
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);  // outlives the rank, own session
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, bin.c_str(), &fa, &attr, argv, env.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error_ = "cannot start " + bin + " (log " + log + "): " + std::strerror(rc);
    return false;
  }
  return true;
}

bool CollectorLink::Connect(bool autostart, const std::string& collector_bin, int budget_ms) {
  Close();
  token_.clear();
  if (const char* env = std::getenv("GPUWATCH_COLLECTOR");
      env && std::string_view(env).substr(0, wire::kTcpScheme.size()) == wire::kTcpScheme)
    return ConnectTcp(env + wire::kTcpScheme.size(), budget_ms);  // never autostarted
  std::string err;
  const std::string path = wire::CollectorSocketPath(&err);
  if (path.empty()) {
    error_ = err;
    return false;
  }
  // The address given, or the host's collector started by hand on the default socket.
  if (TryConnect(path)) return true;
  if (std::getenv("GPUWATCH_COLLECTOR")) return false;  // an address was given: don't start one

  // Else the job's own collector, started by the first process of the job that gets here.
  // The job id is read again from the environment (as the sender read it: same variables,
  // and this is the sender thread); only its hash and safe characters name the files.
  const std::string dir = wire::SocketDir(&err);
  if (dir.empty()) {
    error_ = err;
    return false;
  }
  const std::string job_id = IdentityFromEnvironment().job_id;
  const std::string job_path = wire::JobSocketPath(dir, job_id);
  if (TryConnect(job_path) || !autostart) return connected();

  // The processes of the job that race to start it wait on the lock (the log file),
  // then find it; other jobs take other locks and never wait here.
  const std::string log = wire::JobLogPath(dir, job_id);
  const int lock = open(log.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock < 0) {
    error_ = "cannot open " + log + ": " + std::strerror(errno);
    return false;
  }
  int waited = 0;
  while (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    if (waited >= budget_ms) {
      close(lock);
      error_ = "timed out waiting for another process of the job to start the collector";
      return false;
    }
    SleepMs(5);
    waited += 5;
  }
  bool ok = TryConnect(job_path);
  if (!ok && SpawnCollector(collector_bin, job_path, log)) {
    for (; waited < budget_ms && !(ok = TryConnect(job_path)); waited += 10) SleepMs(10);
    if (!ok) error_ = "started " + collector_bin + " but it did not answer on " + job_path;
  }
  flock(lock, LOCK_UN);
  close(lock);
  return ok;
}

size_t CollectorLink::Write(const char* data, size_t n, int wait_ms) {
  // Checked before every write: a job that closed its descriptors and opened a socket of its
  // own gets our number back, and send() would succeed, into the job's socket.
  if (fd_.held() && !fd_.Ours()) {
    fd_.Forget();  // the job's now: not ours to close either
    broken_ = true;
    error_ = "the job closed gpuwatch's collector connection (descriptor reused or gone)";
    return 0;
  }
  size_t done = 0;
  while (fd_.held() && done < n) {
    const ssize_t w = send(fd_.get(), data + done, n - done, MSG_NOSIGNAL);
    if (w > 0) {
      done += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_.get(), POLLOUT, 0};
      if (wait_ms <= 0 || poll(&p, 1, wait_ms) <= 0) break;
      continue;
    }
    error_ = std::string("collector connection lost: ") + std::strerror(errno);
    Close();  // closes only if still ours: ENOTSOCK/EBADF mean the job took the number
    broken_ = true;
  }
  return done;
}

void CollectorLink::Close() { fd_.Close(); }

size_t CollectorLink::Unread() const {
  int queued = 0;  // SIOCOUTQ: a Unix socket's bytes until the peer reads them, TCP's until acked
  if (!fd_.Ours() || ioctl(fd_.get(), SIOCOUTQ, &queued) != 0 || queued < 0) return 0;
  return static_cast<size_t>(queued);
}

}  // namespace gpuwatch::inject
