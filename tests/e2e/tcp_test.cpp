// Ranks sending over TCP (GPUWATCH_COLLECTOR=tcp://HOST:PORT, the job token in
// GPUWATCH_TOKEN), as ranks on other hosts would: a whole simulated job end to end, and
// the library's fallbacks when TCP fails (docs/RELIABILITY.md).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "scenario_model.h"
#include "scenario_run.h"
#include "truth_check.h"

namespace fs = std::filesystem;
namespace e2e = gpuwatch::e2e;
using nlohmann::json;

namespace {

const std::string kToken = "e2e-job-token-5f1c9a";

std::map<std::string, std::string> TcpEnv(const std::string& work, const std::string& address) {
  // WORK/sock stays empty: a Unix fallback would find nothing there.
  return e2e::JobEnv(work, {{"LD_LIBRARY_PATH", GPUWATCH_SIM_DIR},
                            {"GPUWATCH_AUTOSTART", "1"},  // tcp:// must never start a collector anyway
                            {"GPUWATCH_COLLECTOR", "tcp://" + address},
                            {"GPUWATCH_TOKEN", kToken}});
}

// A loopback TCP socket bound to a free port; `listen_backlog` < 0: bound, not listening
// (connections are refused). Returns the fd; `port` gets the port.
int BoundSocket(int listen_backlog, int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  if (listen_backlog >= 0) REQUIRE(listen(fd, listen_backlog) == 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

bool AnySpool(const std::string& out) {
  if (!fs::exists(out + "/.gpuwatch")) return false;
  for (const auto& f : fs::directory_iterator(out + "/.gpuwatch"))
    if (f.path().filename().string().rfind("spool-", 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("tcp: a simulated job's ranks send over tcp:// with the token, the summary matches the truth") {
  const std::string work = e2e::FreshDir("tcp-scenario");
  const std::string file = std::string(GPUWATCH_SCENARIOS_DIR) + "/checkpoint_stall.json";
  const auto scenario = gpuwatch::scenario::load_scenario(file);
  const int collector = e2e::Spawn({GPUWATCH_BIN_DIR "/gpuwatch-collector", "--listen", work + "/collector.sock",
                                    "--listen-tcp", ":0", "--out", work + "/out"},
                                   {{"GPUWATCH_TOKEN", kToken}}, work + "/collector.log");
  const int port = e2e::LoggedTcpPort(work + "/collector.log");
  REQUIRE(port > 0);
  const int job = e2e::Spawn({GPUWATCH_BIN_DIR "/gpuwatch-scenario", "--sim", "--truth", work + "/truth", file},
                             TcpEnv(work, "127.0.0.1:" + std::to_string(port)), work + "/job.log");
  const int rc = e2e::Wait(job, 120);
  const std::string job_log = e2e::ReadFile(work + "/job.log");
  INFO(job_log);
  REQUIRE(rc == 0);
  CHECK(job_log.find("spooling to") == std::string::npos);  // everything went over TCP
  REQUIRE(e2e::WaitForFile(work + "/out/summary.json", 30));
  kill(collector, SIGTERM);
  e2e::Wait(collector, 30);
  const std::string log = e2e::ReadFile(work + "/collector.log");
  INFO(log);
  CHECK(log.find("[gpuwatch] warning:") == std::string::npos);  // nobody dropped, no rank lost
  CHECK(log.find("[gpuwatch] error:") == std::string::npos);
  CHECK_FALSE(AnySpool(work + "/out"));
  CHECK((!fs::exists(work + "/sock") || fs::is_empty(work + "/sock")));  // no collector was started
  const json summary = e2e::ReadSummary(work + "/out/summary.json");
  for (const json& r : summary["ranks"]) CHECK(r["ended"] == "normal");
  e2e::CheckSummaryAgainstTruth(scenario, summary, work + "/truth");
}

TEST_CASE("tcp: nobody listening, or no token: spool, job unaffected, no collector started") {
  int port = 0;
  const int refusing = BoundSocket(-1, &port);  // holds the port so nobody else takes it
  for (const bool with_token : {true, false}) {
    DYNAMIC_SECTION((with_token ? "refused" : "no token")) {
      const std::string work = e2e::FreshDir(with_token ? "tcp-refused" : "tcp-no-token");
      auto env = TcpEnv(work, "127.0.0.1:" + std::to_string(port));
      if (!with_token) env["GPUWATCH_TOKEN"] = "";  // removed
      auto res = e2e::Run({GPUWATCH_BIN_DIR "/gw_fault_app", "exit", "500"}, env, 60);
      INFO(res.err);
      CHECK(res.exit_code == 7);
      CHECK(res.out == "fault_app: 500 copies done\n");
      CHECK(res.err.find("spooling to") != std::string::npos);
      CHECK(res.err.find(with_token ? "Connection refused" : "needs GPUWATCH_TOKEN") != std::string::npos);
      CHECK((!fs::exists(work + "/sock") || fs::is_empty(work + "/sock")));  // nor its log
      CHECK(e2e::H2dCount(e2e::RebuildSummary(work + "/out")) == 500);
    }
  }
  close(refusing);
}

TEST_CASE("tcp: a collector that never answers the connect costs the job no more than the connect timeout") {
  // A listener whose accept queue is full: the kernel drops further SYNs, as a firewall
  // or a dead host would, so the library's connect can only time out.
  int port = 0;
  const int full = BoundSocket(0, &port);
  const int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(filler, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);

  const std::string work = e2e::FreshDir("tcp-blackhole");
  const auto t0 = std::chrono::steady_clock::now();
  auto res = e2e::Run({GPUWATCH_BIN_DIR "/gw_fault_app", "exit", "500"},
                      TcpEnv(work, "127.0.0.1:" + std::to_string(port)), 60);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(res.err << " took " << s << " s");
  CHECK(res.exit_code == 7);
  CHECK(res.out == "fault_app: 500 copies done\n");
  CHECK(res.err.find("Connection timed out") != std::string::npos);
  CHECK(res.err.find("spooling to") != std::string::npos);
  // The connect gives up after 2 s; process exit waits at most GPUWATCH_EXIT_TIMEOUT_MS
  // (3 s) + 0.5 s for the sender, whatever it is doing.
  CHECK(s < 6.0);
  CHECK(e2e::H2dCount(e2e::RebuildSummary(work + "/out")) == 500);
  close(filler);
  close(full);
}
