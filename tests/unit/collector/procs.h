// Helpers for tests that run the real binaries: a collector process, fake ranks over its
// socket, temp dirs, polling with deadlines. Shared by test_socket.cpp and
// test_reliability.cpp.
#pragma once
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "fixtures.h"

namespace gwtest {

namespace fs = std::filesystem;
using json = nlohmann::json;


inline bool PollUntil(const std::function<bool()>& done, int timeout_ms = 5000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/gwcol-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

// A collector process with its socket, stdout and stderr in a temp dir.
class Collector {
 public:
  Collector(const TempDir& dir, std::vector<std::string> extra, std::string listen = "")
      : dir_(dir.path) {
    sock = listen.empty() ? dir_ + "/collector.sock" : listen;
    std::vector<std::string> args = {GW_COLLECTOR_BIN, "--listen", sock};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      setenv("GPUWATCH_SOCKET_DIR", dir_.c_str(), 1);
      const int out = open((dir_ + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int err = open((dir_ + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(out, 1);
      dup2(err, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Collector() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // Waits for the process to exit; returns its exit code, or -1 on timeout.
  int WaitExit(int timeout_ms = 5000) {
    int status = 0;
    const bool done = PollUntil([&] {
      if (exited_) return true;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      return exited_;
    }, timeout_ms);
    return done ? code_ : -1;
  }
  pid_t pid() const { return pid_; }
  // SIGKILL: nothing of the collector's own shutdown code runs.
  int Kill() {
    kill(pid_, SIGKILL);
    return WaitExit();
  }
  int Stop() {
    kill(pid_, SIGTERM);
    return WaitExit();
  }
  std::string Stdout() const { return Slurp(dir_ + "/stdout"); }
  std::string Stderr() const { return Slurp(dir_ + "/stderr"); }

  std::string sock;

 private:
  std::string dir_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

// A fake rank: a socket to the collector.
class Client {
 public:
  explicit Client(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    // The collector may still be starting: retry until it accepts.
    REQUIRE(PollUntil([&] {
      fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return true;
      close(fd_);
      fd_ = -1;
      return false;
    }));
  }
  // Over TCP to 127.0.0.1:port (a collector run with --listen-tcp).
  struct Tcp {
    uint16_t port;
  };
  explicit Client(Tcp tcp) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(tcp.port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~Client() { Close(); }
  void SendRaw(const std::string& s) {
    size_t done = 0;
    while (done < s.size()) {
      const ssize_t n = send(fd_, s.data() + done, s.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;  // the collector dropped us; tests check for that separately
      done += static_cast<size_t>(n);
    }
  }
  void Send(const wire::Frame& f) { SendRaw(Bytes(f)); }
  void SendBatch(const wire::Batch& b) {
    wire::Frame f;
    *f.mutable_batch() = b;
    Send(f);
  }
  void Goodbye() {
    wire::Frame f;
    f.mutable_goodbye()->set_events_sent(1);
    Send(f);
  }
  // True once the collector has closed its end (read returns 0 or an error).
  bool WaitDropped(int timeout_ms = 5000) {
    return PollUntil([&] {
      char c;
      const ssize_t n = recv(fd_, &c, 1, MSG_DONTWAIT);
      return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    }, timeout_ms);
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

inline wire::Batch SomeWork(int syncs) {
  wire::Batch b;
  for (int i = 0; i < syncs; ++i) Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 1000 + i, 100);
  Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 4096, 5000, 100, wire::FLAG_BLOCKED_HOST);
  return b;
}

inline json ReadSummary(const std::string& dir, int timeout_ms = 5000) {
  const std::string path = dir + "/summary.json";
  REQUIRE(PollUntil([&] { return fs::exists(path); }, timeout_ms));
  return json::parse(Slurp(path));
}



struct CmdResult {
  int code = -1;
  std::string out, err;
};
// Runs a program to completion with stdout and stderr captured in `dir`.
inline CmdResult RunCmd(const std::vector<std::string>& args, const std::string& dir) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int out = open((dir + "/cmd.stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open((dir + "/cmd.stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CmdResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(dir + "/cmd.stdout");
  r.err = Slurp(dir + "/cmd.stderr");
  return r;
}

}  // namespace gwtest
