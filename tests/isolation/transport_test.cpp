// The library's own descriptors and its ways out (libinject/transport, runtime/sender.cpp):
// a job that closes every descriptor and gets the numbers back for files and sockets of its
// own keeps exactly its bytes; whatever a process recorded reaches a summary or the spool
// when it ends at once, when Ctrl-C stops a Python job, and when the collector never reads.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>
#include <thread>

#include "same_behaviour.h"
#include "subprocess.h"

using namespace gpuwatch::isolation;
namespace e2e = gpuwatch::e2e;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::vector<std::string> Lines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Differences but for the library's own warning lines on stderr ("[gpuwatch] ...": what it
// could not do, said once, as these tests provoke), which are taken out of the watched run's
// stderr before comparing; the whole of it is returned in `said`.
std::vector<std::string> DifferencesButLog(BothRuns r, std::string* said) {
  *said = r.watched.err;
  std::string job_only;
  for (const std::string& line : Lines(r.watched.err))
    if (line.rfind("[gpuwatch] ", 0) != 0) job_only += line + "\n";
  r.watched.err = job_only;
  return Differences(r);
}

std::vector<fs::path> Spools(const std::string& out_dir) {
  std::vector<fs::path> found;
  const fs::path dir = fs::path(out_dir) / ".gpuwatch";
  if (!fs::exists(dir)) return found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("spool-", 0) == 0) found.push_back(e.path());
  return found;
}

// The summary `gpuwatch report` rebuilds from the collector's journal and the spools.
json Rebuilt(const std::string& out_dir) {
  const auto res = e2e::Run({std::string(GPUWATCH_BIN_DIR) + "/gpuwatch", "report", out_dir, "--quiet"}, {}, 60);
  INFO(res.err);
  REQUIRE(res.exit_code == 0);
  return json::parse(e2e::ReadFile(out_dir + "/summary.json"));
}

// The collector's summary when it wrote one (it ends after the job), else the rebuilt one.
json SummaryOf(const std::string& out_dir) {
  if (e2e::WaitForFile(out_dir + "/summary.json", 15)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // written whole
    return json::parse(e2e::ReadFile(out_dir + "/summary.json"));
  }
  return Rebuilt(out_dir);
}

uint64_t H2d(const json& rank) { return rank["memcpy"]["h2d"]["count"].get<uint64_t>(); }

const std::map<std::string, std::string> kSim = {{"LD_LIBRARY_PATH", kSimLibs}};

// A Unix socket that accepts every connection and never reads from any.
class DeafCollector {
 public:
  explicit DeafCollector(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(fd_, 16) == 0);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, 50) > 0) {
          const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
          if (c >= 0) held_.push_back(c);
        }
      }
    });
  }
  ~DeafCollector() {
    stop_ = true;
    thread_.join();
    for (int c : held_) close(c);
    close(fd_);
  }
  size_t accepted() const { return held_.size(); }

 private:
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::vector<int> held_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("transport: a job that closes every descriptor and reuses the numbers keeps exactly its own bytes") {
  struct Case {
    const char* name;
    const char* mode;    // which the job opens first, on the lowest numbers
    bool collector;      // else gpuwatch spools (autostart off) and the spool's number is reused
  };
  for (const Case c : {Case{"sockets-collector", "sockets", true}, Case{"files-collector", "files", true},
                       Case{"files-spool", "files", false}}) {
    DYNAMIC_SECTION(c.name) {
      const std::string note = e2e::FreshDir(std::string("transport-fd-note-") + c.name) + "/closed";
      std::map<std::string, std::string> env = kSim;
      env["RANK"] = "0";  // named at once: gpuwatch connects (or spools) in its first cycle
      env["WORLD_SIZE"] = "1";
      std::map<std::string, std::string> watched = {{"ISO_NOTE", note}};
      if (!c.collector) watched["GPUWATCH_AUTOSTART"] = "0";
      const BothRuns r = RunBoth(std::string("transport-fd-") + c.name, {Program("transport_fd_reuse"), c.mode}, env,
                                 watched, 30);
      std::string said;
      const auto diffs = DifferencesButLog(r, &said);
      INFO(Joined(diffs) << "watched stderr:\n" << said);
      // gpuwatch held a descriptor when the job closed them all (else this shows nothing).
      REQUIRE(std::stoi(e2e::ReadFile(note)) >= 1);
      CHECK(r.plain.out.find("0 failed writes") != std::string::npos);
      CHECK(r.plain.out.find("NOT its own") == std::string::npos);
      CHECK(diffs.empty());
      // What gpuwatch recorded still arrives: the collector's connection was lost (the job
      // closed it), the spool took over; the report rebuilds every copy.
      if (c.collector) SummaryOf(r.out_dir);  // the collector's own first: the report rewrites the file
      const json summary = Rebuilt(r.out_dir);
      REQUIRE(summary["ranks"].size() == 1);
      CHECK(H2d(summary["ranks"][0]) == 21);
    }
  }
}

TEST_CASE("transport: a process that ends right after its first CUDA call leaves its summary or spool") {
  const BothRuns r = RunBoth("transport-quick-exit", {Program("transport_copies"), "1"}, kSim);
  std::string said;
  const auto diffs = DifferencesButLog(r, &said);
  INFO(Joined(diffs) << "watched stderr:\n" << said);
  CHECK(diffs.empty());
  const bool summary_written = e2e::WaitForFile(r.out_dir + "/summary.json", 15);
  INFO("summary written by the collector: " << summary_written << ", spools: " << Spools(r.out_dir).size());
  REQUIRE((summary_written || !Spools(r.out_dir).empty()));
  const json summary = summary_written ? SummaryOf(r.out_dir) : Rebuilt(r.out_dir);
  REQUIRE(summary["ranks"].size() == 1);
  CHECK(H2d(summary["ranks"][0]) == 1);
  CHECK(summary["ranks"][0]["ended"] == "normal");
}

TEST_CASE("transport: a process that leaves by _exit() (Python's os._exit) keeps its records") {
  const BothRuns r = RunBoth("transport-underscore-exit", {Program("transport_copies"), "20", "_exit"}, kSim);
  INFO(Joined(Differences(r)));
  CHECK(r.plain.exit_code == 3);
  CHECK(Differences(r).empty());
  const json summary = SummaryOf(r.out_dir);
  REQUIRE(summary["ranks"].size() == 1);
  CHECK(H2d(summary["ranks"][0]) == 20);
  CHECK(summary["ranks"][0]["ended"] == "normal");
}

TEST_CASE("transport: Ctrl-C in Python (an uncaught KeyboardInterrupt) keeps the records, the rank ends normally") {
  const std::string script = std::string(GW_ISO_PROGS_DIR) + "/transport_keyboard_interrupt.py";
  const BothRuns r = RunBoth("transport-keyboard-interrupt", {"python3", script}, kSim);
  std::string said;
  const auto diffs = DifferencesButLog(r, &said);
  INFO(Joined(diffs) << "watched stderr:\n" << said);
  CHECK(r.plain.signal == SIGINT);  // CPython dies of SIGINT's default action
  CHECK(r.plain.out == "5 copies\n");
  CHECK(r.plain.err.find("KeyboardInterrupt") != std::string::npos);
  CHECK(diffs.empty());
  const json summary = SummaryOf(r.out_dir);
  REQUIRE(summary["ranks"].size() == 1);
  CHECK(H2d(summary["ranks"][0]) == 5);
  CHECK(summary["ranks"][0]["ended"] == "normal");  // docs/RELIABILITY.md: SIGINT keeps what was recorded
}

TEST_CASE("transport: a collector that never reads costs the exit well under GPUWATCH_EXIT_TIMEOUT_MS, the records spool") {
  const std::string root = e2e::FreshDir("transport-deaf-collector-sock");
  const std::string sock = root + "/deaf.sock";
  DeafCollector deaf(sock);
  constexpr int kCopies = 50000;  // more than the socket's buffer holds
  const BothRuns r = RunBoth("transport-deaf-collector", {Program("transport_copies"), std::to_string(kCopies)}, kSim,
                             {{"GPUWATCH_COLLECTOR", sock}});
  std::string said;
  const auto diffs = DifferencesButLog(r, &said);
  INFO(Joined(diffs) << "watched stderr:\n" << said << "plain " << r.plain.wall_s << " s, watched " << r.watched.wall_s
                     << " s");
  CHECK(diffs.empty());
  CHECK(deaf.accepted() >= 1);
  // The default GPUWATCH_EXIT_TIMEOUT_MS is 3 s; a collector that reads nothing is given up
  // on long before it (generous bound: a shared 2-core machine).
  CHECK(r.watched.wall_s < r.plain.wall_s + 1.5);
  const auto spools = Spools(r.out_dir);
  REQUIRE(spools.size() == 1);
  // One line says where the records went.
  CHECK(said.find("did not read") != std::string::npos);
  CHECK(said.find("spooling to") != std::string::npos);
  const json summary = Rebuilt(r.out_dir);
  REQUIRE(summary["ranks"].size() == 1);
  const json& rank = summary["ranks"][0];
  const json& dropped = rank["dropped"];
  INFO(dropped.dump());
  CHECK(H2d(rank) + dropped.value("ring_full", uint64_t{0}) == kCopies);
  CHECK(H2d(rank) > 0);
  CHECK(dropped.value("collector_unreachable", uint64_t{0}) == 0);
  CHECK(rank["ended"] == "normal");
}
