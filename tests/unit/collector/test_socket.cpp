// The real gpuwatch-collector binary over its Unix socket, with fake ranks written with
// AppendFrame. Every wait polls for a file, a closed socket or an exit, with a deadline.
#include <fcntl.h>
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

using namespace gwtest;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

bool PollUntil(const std::function<bool()>& done, int timeout_ms = 5000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

std::string Slurp(const std::string& path) {
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

wire::Batch SomeWork(int syncs) {
  wire::Batch b;
  for (int i = 0; i < syncs; ++i) Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 1000 + i, 100);
  Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 4096, 5000, 100, wire::FLAG_BLOCKED_HOST);
  return b;
}

json ReadSummary(const std::string& dir) {
  const std::string path = dir + "/summary.json";
  REQUIRE(PollUntil([&] { return fs::exists(path); }));
  return json::parse(Slurp(path));
}

}  // namespace

TEST_CASE("collector: two ranks of one job give one summary with both ranks") {
  TempDir tmp;
  const std::string out = tmp.path + "/rank-out";
  Collector col(tmp, {"--linger-ms", "100"});
  Client a(col.sock), b(col.sock);
  auto h0 = Hello("job-two", 0, 2);
  h0.mutable_hello()->set_out_dir(out);  // no --out: the first rank's out_dir is used
  a.Send(h0);
  b.Send(Hello("job-two", 1, 2));
  a.SendBatch(SomeWork(3));
  b.SendBatch(SomeWork(5));
  a.Goodbye();
  b.Goodbye();
  a.Close();
  b.Close();

  const json s = ReadSummary(out);
  CHECK(s["job_id"] == "job-two");
  REQUIRE(s["ranks"].size() == 2);
  CHECK(s["ranks"][0]["rank"] == 0);
  CHECK(s["ranks"][0]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 3);
  CHECK(s["ranks"][1]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 5);
  CHECK(s["ranks"][1]["ended"] == "normal");
  CHECK(s["job"]["memcpy"]["h2d"]["bytes"] == 8192);
  CHECK(fs::exists(out + "/summary.txt"));
  CHECK(col.Stop() == 0);
  CHECK_THAT(col.Stdout(), Catch::Contains("gpuwatch summary: job job-two"));
}

TEST_CASE("collector: bad clients are dropped, a good client's data stays intact") {
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  Collector col(tmp, {"--linger-ms", "50", "--hello-timeout-ms", "300", "--out", out});
  Client good(col.sock);
  good.Send(Hello("job-good", 0, 1));
  good.SendBatch(SomeWork(2));

  Client garbage(col.sock);
  garbage.SendRaw(std::string("\x05\xff\xff\xff\xff\xff garbage follows", 23));
  Client oversized(col.sock);
  oversized.SendRaw(std::string("\x80\x80\x80\x80\x01", 5));  // 256 MiB
  Client old_version(col.sock);
  old_version.Send(Hello("job-good", 7, 1, /*version=*/2));
  Client silent(col.sock);

  CHECK(garbage.WaitDropped());
  CHECK(oversized.WaitDropped());
  CHECK(old_version.WaitDropped());
  CHECK(silent.WaitDropped());

  good.SendBatch(SomeWork(1));
  good.Goodbye();
  good.Close();

  const json s = ReadSummary(out);
  REQUIRE(s["ranks"].size() == 1);
  CHECK(s["ranks"][0]["rank"] == 0);
  CHECK(s["ranks"][0]["ended"] == "normal");
  CHECK(s["ranks"][0]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 3);
  CHECK(s["ranks"][0]["memcpy"]["h2d"]["count"] == 2);
  CHECK(col.Stop() == 0);

  const std::string log = col.Stderr();
  CHECK_THAT(log, Catch::Contains("does not decode"));
  CHECK_THAT(log, Catch::Contains("exceeds the limit"));
  CHECK_THAT(log, Catch::Contains("rank 7 (pid"));
  CHECK_THAT(log, Catch::Contains("speaks protocol 2, this collector speaks 1"));
  CHECK_THAT(log, Catch::Contains("no Hello within 300 ms"));
  CHECK_THAT(log, Catch::Contains("[gpuwatch]"));
}

TEST_CASE("collector: --autostart exits after the job, a killed rank is abnormal") {
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  Collector col(tmp, {"--autostart", "--linger-ms", "100", "--out", out});
  {
    Client a(col.sock), b(col.sock);
    a.Send(Hello("job-auto", 0, 2));
    b.Send(Hello("job-auto", 1, 2));
    a.SendBatch(SomeWork(1));
    b.SendBatch(SomeWork(1));
    a.Goodbye();
    // b closes without a Goodbye: a rank that was killed.
  }
  CHECK(col.WaitExit() == 0);
  const json s = ReadSummary(out);
  CHECK(s["ranks"][0]["ended"] == "normal");
  CHECK(s["ranks"][1]["ended"] == "abnormal");
  CHECK_THAT(col.Stdout(), Catch::Contains("job: 2 ranks (1 abnormal)"));
  CHECK_FALSE(fs::exists(col.sock));  // it cleans up its socket
}

TEST_CASE("collector: --autostart with nobody connecting exits") {
  TempDir tmp;
  Collector col(tmp, {"--autostart", "--idle-exit-ms", "200"});
  CHECK(col.WaitExit() == 0);
}

TEST_CASE("collector: a second collector on a live socket refuses to start") {
  TempDir tmp;
  Collector first(tmp, {});
  { Client probe(first.sock); }  // it is up
  TempDir other;
  Collector second(other, {}, first.sock);
  CHECK(second.WaitExit() == 1);
  CHECK_THAT(second.Stderr(), Catch::Contains("already listening on " + first.sock));
  CHECK(first.Stop() == 0);
}

TEST_CASE("collector: an unwritable output dir is one error, the summary is still printed") {
  TempDir tmp;
  std::ofstream(tmp.path + "/file") << "x";
  Collector col(tmp, {"--autostart", "--linger-ms", "50", "--out", tmp.path + "/file/out"});
  {
    Client a(col.sock);
    a.Send(Hello("job-nowrite", 0, 1));
    a.SendBatch(SomeWork(4));
    a.Goodbye();
  }
  CHECK(col.WaitExit() == 2);
  CHECK_THAT(col.Stderr(), Catch::Contains("summary not saved"));
  CHECK_THAT(col.Stdout(), Catch::Contains("gpuwatch summary: job job-nowrite"));
}

TEST_CASE("collector: SIGTERM writes the summary of a job still running") {
  TempDir tmp;
  const std::string out = tmp.path + "/out";
  Collector col(tmp, {"--out", out});
  Client a(col.sock);
  a.Send(Hello("job-term", 0, 1));
  a.SendBatch(SomeWork(6));
  // What was sent before the signal is in the collector's socket buffers (or backlog):
  // it takes that in before writing the summary.
  CHECK(col.Stop() == 0);
  const json s = ReadSummary(out);
  CHECK(s["ranks"][0]["ended"] == "abnormal");
  CHECK(s["ranks"][0]["sync"]["by_api"]["cudaStreamSynchronize"]["count"] == 6);
}
