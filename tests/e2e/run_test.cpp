// `gpuwatch run` as a user runs it: the output files, the exit code, signals, the
// environment the command sees, and the live status line (only on a terminal).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "schema_check.h"
#include "subprocess.h"

namespace fs = std::filesystem;
using namespace gpuwatch::e2e;
using nlohmann::json;

namespace {

const std::string kGpuwatch = GPUWATCH_BIN_DIR "/gpuwatch";
const std::string kScenario = GPUWATCH_BIN_DIR "/gpuwatch-scenario";

// A two-rank job of about `seconds` on the simulator, with copies and allreduces.
std::string LongScenario(const std::string& dir, double seconds) {
  const std::string path = dir + "/long.json";
  const int steps = static_cast<int>(seconds * 1000 / 12);
  std::ofstream(path) << R"({"name": "long", "ranks": 2, "steps": )" << steps << R"(,
    "step": [{"op": "host", "ms": 8}, {"op": "h2d", "bytes": 1048576},
             {"op": "kernels", "count": 4, "us": 500}, {"op": "allreduce", "bytes": 1048576},
             {"op": "sync"}]})";
  return path;
}

}  // namespace

TEST_CASE("run: gpuwatch run -o DIR leaves the summary and trace, prints it, keeps quiet stderr") {
  const std::string work = FreshDir("run-basic");
  const std::string out = work + "/out";
  auto res = Run({kGpuwatch, "run", "-o", out, "--", kScenario, "--sim",
                  GPUWATCH_SCENARIOS_DIR "/healthy.json"},
                 {{"GPUWATCH_SOCKET_DIR", work + "/unused-sock"}}, 120);
  INFO(res.err);
  REQUIRE(res.exit_code == 0);
  for (const char* f : {"summary.json", "summary.txt", "report.html", "trace.perfetto-trace"})
    CHECK(fs::exists(out + "/" + f));
  const json summary = ReadSummary(out + "/summary.json");
  CHECK(summary["ranks"].size() == 2);
  for (const json& r : summary["ranks"]) CHECK(r["ended"] == "normal");
  // stdout is the short form (console_test.cpp), then where the files are.
  CHECK(res.out.rfind("gpuwatch summary: job " + summary["job_id"].get<std::string>(), 0) == 0);
  const std::string files =
      "files: " + out + "/summary.txt (every rank), " + out + "/report.html, " + out + "/trace.perfetto-trace\n";
  CHECK(res.out.size() > files.size());
  CHECK(res.out.compare(res.out.size() - files.size(), files.size(), files) == 0);
  // stderr is not a terminal: not one status byte.
  CHECK(res.err.find('\r') == std::string::npos);
  CHECK(res.err.find("\x1b[") == std::string::npos);
  CHECK(res.err.find("ranks ") == std::string::npos);
  // The ranks talked to our private collector: no per-user collector was started.
  CHECK_FALSE(fs::exists(work + "/unused-sock"));
}

TEST_CASE("run: exit code is the command's, 128+N when killed, 127 when not found") {
  const std::string work = FreshDir("run-exit");
  CHECK(Run({kGpuwatch, "run", "-o", work, "--", "/bin/sh", "-c", "exit 7"}, {}, 30).exit_code == 7);
  CHECK(Run({kGpuwatch, "run", "-o", work, "/bin/sh", "-c", "kill -TERM $$"}, {}, 30).exit_code == 143);
  auto missing = Run({kGpuwatch, "run", "-o", work, "--", "/no/such/program"}, {}, 30);
  CHECK(missing.exit_code == 127);
  CHECK(missing.err.find("cannot run /no/such/program") != std::string::npos);  // more: console_test.cpp
  auto none = Run({kGpuwatch, "run", "-o", work}, {}, 30);
  CHECK(none.exit_code == 125);
  CHECK(none.err.find("no command to run") != std::string::npos);
}

TEST_CASE("run: the command sees the preload first, our socket, DIR, one job id") {
  const std::string work = FreshDir("run-env");
  auto res = Run({kGpuwatch, "run", "-o", work + "/o", "--", "/bin/sh", "-c",
                  "echo \"$LD_PRELOAD|$GPUWATCH_OUT|$GPUWATCH_AUTOSTART|$GPUWATCH_JOB_ID\"; "
                  "test -S \"$GPUWATCH_COLLECTOR\" && stat -c %a \"$(dirname $GPUWATCH_COLLECTOR)\""},
                 {{"LD_PRELOAD", "/lib/x86_64-linux-gnu/libm.so.6"}}, 30);
  INFO(res.err);
  REQUIRE(res.exit_code == 0);
  const std::string lib = fs::canonical(GPUWATCH_LIB).string();
  CHECK(res.out.rfind(lib + ":/lib/x86_64-linux-gnu/libm.so.6|" + work + "/o|0|", 0) == 0);
  CHECK(res.out.find("-run") != std::string::npos);
  CHECK(res.out.find("\n700\n") != std::string::npos);  // the socket's directory is private
  // It never used CUDA: said once, and no summary.
  CHECK(res.err.find("no process of the command reported") != std::string::npos);
}

TEST_CASE("run: --overhead and --cupti set the budget for every rank, a bad value runs nothing") {
  const std::string work = FreshDir("run-budget");
  auto res = Run({kGpuwatch, "run", "-q", "-o", work + "/o", "--overhead", "0.4%", "--cupti", "full", "--", kScenario,
                  "--sim", GPUWATCH_SCENARIOS_DIR "/healthy.json"},
                 {{"GPUWATCH_OVERHEAD", "5%"}}, 120);  // the option wins over the environment
  INFO(res.err);
  REQUIRE(res.exit_code == 0);
  const json summary = ReadSummary(work + "/o/summary.json");
  REQUIRE(summary["ranks"].size() == 2);
  for (const json& r : summary["ranks"]) {
    CHECK(r["overhead"]["budget"].get<double>() == Approx(0.004));
    CHECK(r["overhead"]["cupti_mode"] == "full");
  }
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--overhead", "5x"}, {"--overhead", "0"}, {"--cupti", "sometimes"}}) {
    std::vector<std::string> argv = {kGpuwatch, "run", "-o", work + "/bad"};
    argv.insert(argv.end(), bad.begin(), bad.end());
    argv.insert(argv.end(), {std::string("--"), "/bin/sh", "-c", "touch " + work + "/ran"});
    auto r = Run(argv, {}, 30);
    INFO(bad[0] << " " << bad[1] << ": " << r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find(bad[0]) != std::string::npos);
    CHECK_FALSE(fs::exists(work + "/ran"));
  }
}

TEST_CASE("run: SIGTERM to gpuwatch reaches the command, the summary is still written") {
  const std::string work = FreshDir("run-sigterm");
  const std::string out = work + "/out";
  const int pid = Spawn(
      {kGpuwatch, "run", "-o", out, "--", kScenario, "--sim", LongScenario(work, 30)}, {},
      work + "/log");
  REQUIRE(pid > 0);
  // Wait until the ranks are running (their journals appear), then stop the run.
  REQUIRE(WaitForFile(out + "/.gpuwatch", 60));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  kill(pid, SIGTERM);
  const auto t0 = std::chrono::steady_clock::now();
  const int code = Wait(pid, 60);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(ReadFile(work + "/log"));
  // gpuwatch-scenario ends its ranks on SIGTERM and exits 128+15 or its own code; either
  // way not 0, and well before the 30 s the job would have taken.
  CHECK(code != 0);
  CHECK(took < 20);
  REQUIRE(fs::exists(out + "/summary.json"));
  CHECK(ReadSummary(out + "/summary.json")["ranks"].size() >= 1);
}

TEST_CASE("run: on a terminal a status line is redrawn in place and cleared before the summary") {
  const std::string work = FreshDir("run-pty");
  const std::string out = work + "/out";
  const std::string scenario = LongScenario(work, 3);
  int master = -1, slave = -1;
  winsize ws{};
  ws.ws_col = 100;
  ws.ws_row = 30;
  REQUIRE(openpty(&master, &slave, nullptr, nullptr, &ws) == 0);
  const std::string stdout_path = work + "/stdout";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int in = open("/dev/null", O_RDONLY);
    const int o = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(o, 1);
    dup2(slave, 2);
    close(master);
    execl(kGpuwatch.c_str(), "gpuwatch", "run", "-o", out.c_str(), "--", kScenario.c_str(),
          "--sim", scenario.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(slave);
  std::string tty;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (std::chrono::steady_clock::now() > until) break;
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO: every writer of the terminal has gone
    tty.append(buf, static_cast<size_t>(n));
  }
  close(master);
  int status = 0;
  waitpid(pid, &status, 0);
  INFO(tty);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // Redrawn in place several times (a 3 s job, two draws a second), with the figures.
  size_t draws = 0;
  for (size_t at = tty.find("\rgpuwatch "); at != std::string::npos; at = tty.find("\rgpuwatch ", at + 1))
    ++draws;
  CHECK(draws >= 3);
  CHECK(tty.find("ranks 2") != std::string::npos);
  CHECK(tty.find("/s") != std::string::npos);
  CHECK(tty.find("dropped 0") != std::string::npos);
  // Cleared at the end: after the last draw comes the erase, and no draw follows it.
  const size_t last_draw = tty.rfind("\rgpuwatch ");
  const size_t clear = tty.rfind("\r\x1b[K");
  REQUIRE(clear != std::string::npos);
  CHECK(clear > last_draw);
  // Lines are clipped to the terminal's width (99 = 100 - 1 columns).
  const size_t line_end = tty.find("\x1b[K", last_draw);
  CHECK(line_end - last_draw - 1 <= 99);
  // The summary went to stdout (a file here), without any status bytes.
  const std::string printed = ReadFile(stdout_path);
  CHECK(printed.rfind("gpuwatch summary: job ", 0) == 0);
  CHECK(printed.find("\nfiles: " + out + "/summary.txt") != std::string::npos);
  CHECK(printed.find('\r') == std::string::npos);
}

TEST_CASE("run: --help reads like a profiler's, gpuwatch collector is gpuwatch-collector") {
  auto help = Run({kGpuwatch, "run", "--help"}, {}, 10);
  CHECK(help.exit_code == 0);
  for (const char* s : {"Usage: gpuwatch run [OPTIONS] [--] COMMAND", "Examples:",
                        "torchrun --nproc_per_node", "mpirun", "-x LD_PRELOAD", "srun",
                        "Exit status:", "--metrics", "--trace", "-o,--out", "--overhead", "--cupti",
                        "report.html", "-v,--verbose", "-q,--quiet"})
    CHECK(help.out.find(s) != std::string::npos);
  auto col = Run({kGpuwatch, "collector", "--help"}, {}, 10);
  CHECK(col.exit_code == 0);
  for (const char* s : {"--listen", "--metrics", "--out", "--trace", "--hang-s"})
    CHECK(col.out.find(s) != std::string::npos);
  const std::string work = FreshDir("run-collector-help");
  auto bad = Run({kGpuwatch, "collector", "--listen", work + "/sock", "--metrics", "nonsense:port"},
                 {}, 10);
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("bad address") != std::string::npos);
}
