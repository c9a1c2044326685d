// Prometheus: a scrape taken while a job runs passes `promtool check metrics`, and a real
// Prometheus server (Debian's package) scrapes a collector fed by a simulated job and
// answers a query through its HTTP API. Both tools are required: setup.sh installs them,
// and a missing one fails the test rather than skipping it.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "subprocess.h"

namespace fs = std::filesystem;
using namespace gpuwatch::e2e;
using nlohmann::json;

namespace {

const std::string kBin = GPUWATCH_BIN_DIR;

// A loopback port nobody listens on now (the kernel's choice of an ephemeral port).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string Curl(const std::string& url) {
  return Run({"curl", "-s", "--max-time", "5", url}, {}, 10).out;
}

// Kills a spawned process when the test leaves, whatever happens.
struct Proc {
  int pid;
  ~Proc() {
    if (pid > 0 && kill(pid, SIGTERM) == 0) Wait(pid, 20);
  }
};

double SampleValue(const std::string& text, const std::string& prefix) {
  const size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return -1;
  const size_t sp = text.find("} ", at);
  return sp == std::string::npos ? -1 : std::stod(text.substr(sp + 2));
}

std::string Scenario(const std::string& dir, int steps) {
  const std::string path = dir + "/job.json";
  std::ofstream(path) << R"({"name": "prom", "ranks": 2, "steps": )" << steps << R"(,
    "step": [{"op": "host", "ms": 8}, {"op": "h2d", "bytes": 1048576, "pinned": false},
             {"op": "kernels", "count": 4, "us": 500}, {"op": "allreduce", "bytes": 4194304},
             {"op": "sync"}]})";
  return path;
}

}  // namespace

TEST_CASE("prometheus: a scrape taken mid-run passes promtool check metrics, and moves") {
  REQUIRE(fs::exists("/usr/bin/promtool"));  // Debian's prometheus package: scripts/setup.sh
  const std::string work = FreshDir("prom-promtool");
  const int port = FreePort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  Proc run{Spawn({kBin + "/gpuwatch", "run", "-o", work + "/out", "--metrics",
                  "127.0.0.1:" + std::to_string(port), "--",
                  kBin + "/gpuwatch-scenario", "--sim", Scenario(work, 1000)},
                 {}, work + "/log")};
  REQUIRE(run.pid > 0);
  // The first scrape with both ranks' events in it.
  std::string first;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const std::string events = "gpuwatch_events_received_total{";
  while (std::chrono::steady_clock::now() < until) {
    first = Curl(url);
    if (first.find(R"(rank="1"})") != std::string::npos && SampleValue(first, events) > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  INFO(ReadFile(work + "/log"));
  INFO(first);
  REQUIRE(SampleValue(first, events) > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const std::string second = Curl(url);
  // Mid-run: the job has not ended, and the figures grew between two scrapes.
  CHECK_FALSE(fs::exists(work + "/out/summary.json"));
  CHECK(SampleValue(second, events) > SampleValue(first, events));
  CHECK(SampleValue(second, "gpuwatch_h2d_pageable_bytes_total{") > 0);
  CHECK(SampleValue(second, "gpuwatch_collective_seconds_total{") > 0);

  std::ofstream(work + "/scrape.txt") << second;
  auto check = Run({"/bin/sh", "-c", "promtool check metrics < " + work + "/scrape.txt"}, {}, 30);
  INFO(check.out + check.err);
  CHECK(check.exit_code == 0);
  // Other paths: 404.
  auto other = Run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                    "http://127.0.0.1:" + std::to_string(port) + "/"}, {}, 10);
  CHECK(other.out == "404");
}

TEST_CASE("prometheus: a Prometheus server scrapes a collector and answers a query") {
  REQUIRE(fs::exists("/usr/bin/prometheus"));  // Debian's prometheus package: scripts/setup.sh
  const std::string work = FreshDir("prom-server");
  const int metrics_port = FreePort(), prom_port = FreePort();
  const std::string sock = work + "/collector.sock";
  Proc collector{Spawn(
      {kBin + "/gpuwatch-collector", "--listen", sock, "--out", work + "/out", "--metrics",
       "127.0.0.1:" + std::to_string(metrics_port)},
      {}, work + "/collector.log")};
  REQUIRE(collector.pid > 0);
  std::ofstream(work + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
         "scrape_configs:\n  - job_name: gpuwatch\n    static_configs:\n"
         "      - targets: ['127.0.0.1:" << metrics_port << "']\n";
  Proc prom{Spawn(
      {"/usr/bin/prometheus", "--config.file=" + work + "/prometheus.yml",
       "--storage.tsdb.path=" + work + "/tsdb",
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
      {}, work + "/prometheus.log")};
  REQUIRE(prom.pid > 0);
  REQUIRE(WaitForFile(sock, 30));
  // The job, on the simulator, reporting to that collector.
  auto job = Run({kBin + "/gpuwatch-scenario", "--sim", Scenario(work, 200)},
                 {{"LD_PRELOAD", GPUWATCH_LIB}, {"GPUWATCH_COLLECTOR", sock},
                  {"GPUWATCH_AUTOSTART", "0"}, {"GPUWATCH_OUT", work + "/out"}},
                 120);
  INFO(job.err);
  REQUIRE(job.exit_code == 0);

  // Ask Prometheus until its scrapes have the job's series (it starts in a few seconds).
  const std::string api = "http://127.0.0.1:" + std::to_string(prom_port) + "/api/v1/query?query=";
  json events, busbw;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    const std::string body = Curl(api + "gpuwatch_events_received_total");
    events = json::parse(body.empty() ? "{}" : body, nullptr, false);
    if (events.is_object() && events.value("status", "") == "success" &&
        events["data"]["result"].size() == 2)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  INFO(ReadFile(work + "/prometheus.log").substr(0, 4000));
  INFO(events.dump());
  REQUIRE(events.is_object());
  REQUIRE(events["data"]["result"].size() == 2);
  std::set<std::string> ranks;
  for (const json& r : events["data"]["result"]) {
    CHECK(r["metric"]["job"] == "gpuwatch");  // the scrape job's label stays Prometheus'
    CHECK_FALSE(r["metric"]["job_id"].get<std::string>().empty());
    CHECK_FALSE(r["metric"]["host"].get<std::string>().empty());
    ranks.insert(r["metric"]["rank"].get<std::string>());
    CHECK(std::stod(r["value"][1].get<std::string>()) > 200);  // 200 steps, 5 events each
  }
  CHECK(ranks == std::set<std::string>{"0", "1"});
  // A per-op series: allreduce bus bandwidth in bytes/s, above nothing and below the
  // simulated bus (80 GB/s). Ranks that wait for a slower peer inside the collective see
  // less (the GPU time includes the wait): here about 1 and 17 GB/s.
  busbw = json::parse(Curl(api + "gpuwatch_collective_busbw_bytes_per_second%7Bop%3D%22allreduce%22%7D"));
  INFO(busbw.dump());
  REQUIRE(busbw["data"]["result"].size() == 2);
  for (const json& r : busbw["data"]["result"]) {
    const double v = std::stod(r["value"][1].get<std::string>());
    CHECK(v > 1e7);
    CHECK(v <= 80e9);
  }
}
