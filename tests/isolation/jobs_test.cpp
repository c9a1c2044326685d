// Jobs never hurt each other nor their callers: the autostarted collector holds none of the
// job's files (a caller reading the job's output to EOF is not kept waiting, and reads
// only what the job wrote), each job has its own collector, every process of one job tree
// is one job, and jobs that share an output folder keep each their own summary.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "endpoint.h"
#include "same_behaviour.h"
#include "subprocess.h"

using namespace gpuwatch::isolation;
namespace e2e = gpuwatch::e2e;
namespace fs = std::filesystem;

namespace {

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

nlohmann::json Summary(const std::string& dir) {
  return nlohmann::json::parse(e2e::ReadFile(dir + "/summary.json"), nullptr, false);
}

// The first Unix socket to appear in `dir`: a collector is listening there ("" if none
// appeared within `timeout_s`).
std::string WaitForSocket(const std::string& dir, double timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_socket()) return e.path().string();
    if (std::chrono::steady_clock::now() > until) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// What a watched process of one job gets outside RunBoth: the library, the simulator, the
// shared socket and output folders; a rank named by its variables, so that it connects at
// its first flush (an unnamed one waits up to 2 s for NCCL to name it).
std::map<std::string, std::string> WatchedEnv(const std::string& sock, const std::string& out,
                                              const std::string& job_id) {
  return {{"LD_PRELOAD", gpuwatch::e2e::TestPreload()},
          {"LD_LIBRARY_PATH", kSimLibs},
          {"GPUWATCH_SOCKET_DIR", sock},
          {"GPUWATCH_OUT", out},
          {"GPUWATCH_COLLECTOR", ""},
          {"GPUWATCH_COLLECTOR_BIN", std::string(GPUWATCH_BIN_DIR) + "/gpuwatch-collector"},
          {"GPUWATCH_JOB_ID", job_id},
          {"RANK", "0"},
          {"WORLD_SIZE", "1"}};
}

// `sh -c` reading the job's stdout and stderr to EOF, as $(job 2>&1) or Python's
// subprocess.run(capture_output=True) do, then printing what it read.
std::vector<std::string> Captured(const std::vector<std::string>& job) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "out=$(\"$@\" 2>&1); printf '%s\\n' \"$out\"", "sh"};
  argv.insert(argv.end(), job.begin(), job.end());
  return argv;
}

}  // namespace

TEST_CASE("jobs: a job whose output is captured prints only its own, the summary goes to the folder and the log") {
  const BothRuns r = RunBoth("jobs_captured", Captured({Program("jobs_cuda"), "work", "0"}),
                             {{"LD_LIBRARY_PATH", kSimLibs}}, {{"GPUWATCH_JOB_ID", "iso-captured"}});
  INFO(Joined(Differences(r)));
  CHECK(r.plain.out == "done\n");
  CHECK(Differences(r).empty());
  REQUIRE(e2e::WaitForFile(r.out_dir + "/summary.json", 20));
  const std::string log = gpuwatch::wire::JobLogPath(r.sock_dir, "iso-captured");
  CHECK_FALSE(e2e::WaitForLog(log, std::regex("gpuwatch summary: job iso-captured"), 20).empty());
}

TEST_CASE("jobs: two jobs at once never wait for each other, and one output folder keeps both summaries") {
  const std::string root = e2e::FreshDir("jobs_two");
  const std::string sock = root + "/sock", out = root + "/gpuwatch-out", got = root + "/short.out";
  // The short job starts first, so that it is the one that starts a collector; the long
  // one starts once a collector listens. The short one reads its own output to EOF.
  const auto t0 = std::chrono::steady_clock::now();
  const int shorter = e2e::Spawn({"/bin/sh", "-c", "out=$(\"$0\" work 1500 2>&1); printf '%s\\n' \"$out\" > \"$1\"",
                                  Program("jobs_cuda"), got},
                                 WatchedEnv(sock, out, "iso-short"), root + "/short.log");
  REQUIRE(!WaitForSocket(sock, 20).empty());
  const int longer = e2e::Spawn({Program("jobs_cuda"), "work", "8000"}, WatchedEnv(sock, out, "iso-long"),
                                root + "/long.log");
  CHECK(e2e::Wait(shorter, 30) == 0);
  const double short_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Returned while the long job still runs: it waited for nobody but itself.
  CHECK(waitpid(longer, nullptr, WNOHANG) == 0);
  CHECK(short_s < 6.0);
  CHECK(e2e::ReadFile(got) == "done\n");
  CHECK(e2e::Wait(longer, 30) == 0);

  // The folder is the first job's; the other, which ran meanwhile, wrote to its subfolder.
  REQUIRE(e2e::WaitForFile(out + "/summary.json", 20));
  const std::string first = Summary(out).value("job_id", "");
  REQUIRE((first == "iso-short" || first == "iso-long"));
  const std::string other = first == "iso-short" ? "iso-long" : "iso-short";
  const std::string sub = out + "/" + gpuwatch::wire::JobFileStem(other);
  REQUIRE(e2e::WaitForFile(sub + "/summary.json", 20));
  CHECK(Summary(sub).value("job_id", "") == other);
  CHECK(Summary(out).value("job_id", "") == first);  // not overwritten by the other
}

TEST_CASE("jobs: a parent and the children it spawns are one job, every process a rank of one summary") {
  const BothRuns r = RunBoth("jobs_spawn", {Program("jobs_cuda"), "parent", "3"}, {{"LD_LIBRARY_PATH", kSimLibs}});
  INFO(Joined(Differences(r)));
  CHECK(r.plain.out == "done\ndone\ndone\nparent: 3 children, 0 failed\n");
  CHECK(Differences(r).empty());
  REQUIRE(e2e::WaitForFile(r.out_dir + "/summary.json", 20));
  const nlohmann::json s = Summary(r.out_dir);
  REQUIRE(s.contains("ranks"));
  std::set<int> pids;
  for (const auto& rank : s["ranks"]) pids.insert(rank.value("pid", 0));
  CHECK(pids.size() == 4);  // the parent and its 3 children
  for (const auto& e : fs::directory_iterator(r.out_dir))
    CHECK_FALSE(e.path().filename().string().rfind("job-", 0) == 0);  // no second job
}

TEST_CASE("jobs: gpuwatch run leaves nothing in the temp folder") {
  const std::string root = e2e::FreshDir("jobs_run_tmp");
  const std::string tmp = root + "/tmp";
  fs::create_directories(tmp);
  const e2e::RunResult r =
      e2e::Run({std::string(GPUWATCH_BIN_DIR) + "/gpuwatch", "run", "-q", "-o", root + "/out", "--",
                Program("jobs_cuda"), "work", "0"},
               {{"TMPDIR", tmp}, {"LD_LIBRARY_PATH", kSimLibs}, {"GPUWATCH_JOB_ID", ""}}, 60);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(root + "/out/summary.json"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp)) left.push_back(e.path().filename().string());
  INFO("left in TMPDIR: " << Joined(left));
  CHECK(left.empty());
}

TEST_CASE("jobs: a job id names files by its safe characters and hash, never a path") {
  using gpuwatch::wire::JobFileStem;
  CHECK(JobFileStem("../../etc/passwd").find('/') == std::string::npos);
  CHECK(JobFileStem("a/b") != JobFileStem("a_b"));                      // replaced, still distinct
  CHECK(JobFileStem("host-123456789012345") != JobFileStem("host-123456789012399"));  // cut, distinct
  CHECK(JobFileStem("vm-4242").rfind("job-vm-4242-", 0) == 0);
  CHECK(gpuwatch::wire::JobSocketPath("/tmp/d", "x") == "/tmp/d/" + JobFileStem("x") + ".sock");
}
