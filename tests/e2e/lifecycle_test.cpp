// How the library starts and stays out of the way: one collector per host however many
// ranks race to start it, and nothing at all in processes that never call CUDA.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "scenario_run.h"

namespace fs = std::filesystem;
using namespace gpuwatch::e2e;

namespace {

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("lifecycle: four ranks starting at once start exactly one collector") {
  const std::string four = R"({"name": "four", "ranks": 4, "steps": 5,
    "step": [{"op": "host", "ms": 2}, {"op": "kernels", "count": 4, "us": 200},
             {"op": "allreduce", "bytes": 1048576}, {"op": "sync"}]})";
  const JobRun run = RunScenario("lifecycle-4ranks", four, {.timeout_s = 60});
  INFO(run.job.err);
  const json& summary = run.summary;
  REQUIRE(summary["ranks"].size() == 4);
  std::set<int> ranks;
  for (const json& r : summary["ranks"]) ranks.insert(r["rank"].get<int>());
  CHECK(ranks == std::set<int>{0, 1, 2, 3});
  // One collector, the job's own: one log beside the sockets, where it announced itself
  // once; nothing of it on the job's stderr (it holds none of the job's files).
  std::vector<std::string> logs;
  for (const auto& e : fs::directory_iterator(run.work + "/sock"))
    if (e.path().extension() == ".log") logs.push_back(ReadFile(e.path()));
  REQUIRE(logs.size() == 1);
  CHECK(Count(logs[0], "listening on") == 1);
  CHECK(Count(run.job.err, "listening on") == 0);
}

TEST_CASE("lifecycle: a process that never calls CUDA neither connects nor starts a collector") {
  const std::string work = FreshDir("lifecycle-no-cuda");
  const std::string sock = work + "/sock";
  auto res = Run({"/bin/sh", "-c", "echo hello; exit 3"}, JobEnv(work), 20);
  CHECK(res.out == "hello\n");
  CHECK(res.err.empty());
  CHECK(res.exit_code == 3);
  // No socket directory, lock, collector or output: the library did nothing at all.
  CHECK_FALSE(fs::exists(sock));
  CHECK_FALSE(fs::exists(work + "/out"));
}

TEST_CASE("lifecycle: the scenario parent (linked to nothing CUDA) stays silent, its ranks report") {
  // gpuwatch-scenario's own process inherits LD_PRELOAD but never calls CUDA: only the
  // rank processes may appear in the summary.
  const std::string one = R"({"name": "one", "ranks": 1, "steps": 3,
    "step": [{"op": "kernels", "count": 2, "us": 100}, {"op": "sync"}]})";
  const JobRun run = RunScenario("lifecycle-parent", one, {.timeout_s = 60});
  const json& summary = run.summary;
  REQUIRE(summary["ranks"].size() == 1);
  CHECK(summary["ranks"][0]["kernels"]["launches"] == 6);
}

TEST_CASE("lifecycle: with CUPTI held by another profiler the run completes on events") {
  const JobRun run =
      RunScenario("lifecycle-cupti-taken", "comm_bound", {.env = {{"SIMGPU_CUPTI_TAKEN", "1"}}, .timeout_s = 60});
  INFO(run.job.err);
  const json& summary = run.summary;
  REQUIRE(summary["ranks"].size() == 2);
  for (const json& r : summary["ranks"]) {
    CHECK(r["gpu"]["source"] == "events");
    CHECK(r["gpu"]["source_detail"].get<std::string>().find("another profiler") != std::string::npos);
    CHECK(r["collectives"]["allreduce"]["count"].get<int>() > 0);  // the hooks and events still work
  }
}

TEST_CASE("lifecycle: GPUWATCH_DISABLE=1 leaves the job alone") {
  const JobRun run = RunScenario("lifecycle-disabled", "healthy",
                                 {.env = {{"GPUWATCH_DISABLE", "1"}}, .timeout_s = 60, .expect_summary = false});
  CHECK(run.job.exit_code == 0);
  CHECK_FALSE(fs::exists(run.work + "/sock"));
  CHECK_FALSE(fs::exists(run.out));
}

TEST_CASE("lifecycle: the collector the library starts runs at nice +10, one started by hand as given") {
  const std::string work = FreshDir("lifecycle-nice");
  errno = 0;
  const int mine = getpriority(PRIO_PROCESS, 0);
  REQUIRE(errno == 0);
  // The nice value (field 19 of /proc/PID/stat) of a collector, once it is listening.
  auto nice_of = [&](bool autostart) {
    std::vector<std::string> argv = {std::string(GPUWATCH_BIN_DIR) + "/gpuwatch-collector", "--listen",
                                     work + (autostart ? "/a.sock" : "/h.sock"), "--idle-exit-ms", "3000"};
    if (autostart) argv.push_back("--autostart");
    const int pid = Spawn(argv, {}, work + (autostart ? "/a.log" : "/h.log"));
    REQUIRE(pid > 0);
    int nice = INT32_MIN;
    for (int i = 0; i < 200 && !fs::exists(work + (autostart ? "/a.sock" : "/h.sock")); ++i) usleep(10000);
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');  // the command name may hold spaces
    if (close != std::string::npos) {
      std::istringstream rest(text.substr(close + 2));
      std::string field;
      for (int k = 3; k <= 19 && rest >> field; ++k)
        if (k == 19) nice = std::stoi(field);
    }
    kill(pid, SIGTERM);
    Wait(pid, 10);
    return nice;
  };
  CHECK(nice_of(true) == std::min(mine + 10, 19));
  CHECK(nice_of(false) == mine);
}
