// Live views: the snapshot the server thread takes, its Prometheus text, the /metrics HTTP
// server (its limits included), and `gpuwatch run`'s status line and child environment.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <set>
#include <sstream>

#include "fixtures.h"
#include "live/http_server.h"
#include "live/prometheus.h"
#include "jobs/live_snapshot.h"
#include "live/snapshot.h"
#include "report/summary.h"
#include "run_child.h"
#include "status_line.h"

using namespace gwtest;
using nlohmann::json;

namespace {

col::LiveSnapshot Snap(const col::JobTable& jobs) { return col::TakeSnapshot(jobs, col::Clock::now()); }

// One connection to 127.0.0.1:port: sends `request`, returns all it reads until close.
std::string Http(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  if (!request.empty()) REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) > 0);
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// What promtool checks about the shape, minus its lints: each sample line is
// name{labels} value, each family has # HELP and # TYPE before its first sample, and no
// (name, labels) pair repeats.
void CheckExposition(const std::string& text) {
  static const std::regex kSample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$)");
  std::set<std::string> helped, typed, seen;
  std::istringstream in(text);
  std::string line;
  REQUIRE(!text.empty());
  REQUIRE(text.back() == '\n');
  while (std::getline(in, line)) {
    INFO(line);
    if (line.rfind("# HELP ", 0) == 0) {
      helped.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      const std::string type = line.substr(line.rfind(' ') + 1);
      CHECK((type == "counter" || type == "gauge"));
      if (type == "counter") CHECK(name.size() > 6);
      if (type == "counter") CHECK(name.substr(name.size() - 6) == "_total");
      typed.insert(name);
      continue;
    }
    std::smatch m;
    REQUIRE(std::regex_match(line, m, kSample));
    CHECK(helped.count(m[1]));
    CHECK(typed.count(m[1]));
    CHECK(seen.insert(line.substr(0, line.rfind(' '))).second);
  }
}

double Value(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");  // a sample line, not # HELP
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + series.size() + 2));
}

}  // namespace

TEST_CASE("collector: live snapshot has the summary's figures, per rank, while connected") {
  col::JobTable jobs{col::JobTiming{}};
  FakeRank r0(jobs, Hello("j", 0, 2));
  FakeRank r1(jobs, Hello("j", 1, 2));
  const uint64_t ms = 1000000;
  wire::Batch b;
  Comm(&b, 7, 2, 0);
  Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 1000, 10 * ms, 1 * ms,
       wire::FLAG_PAGEABLE | wire::FLAG_BLOCKED_HOST);
  Copy(&b, wire::CUDA_MEMCPY_ASYNC, wire::COPY_H2D, 2000, 12 * ms, ms / 10, 0);
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 20 * ms, 5 * ms);
  Coll(&b, wire::NCCL_ALL_REDUCE, 7, 1 << 20, 2 * ms);
  Drop(&b, "ring_full", 3);
  REQUIRE(r0.SendBatch(b));

  col::LiveSnapshot s = Snap(jobs);
  REQUIRE(s.ranks.size() == 2);
  CHECK(s.jobs == 1);
  CHECK(s.ranks_connected == 2);
  const col::RankSample& a = s.ranks[0];
  CHECK(a.job == "j");
  CHECK(a.host == "node1");
  CHECK(a.rank == 0);
  CHECK(a.connected);
  CHECK(a.events == 4);  // 2 copies, a sync, an allreduce
  CHECK(a.h2d_bytes == 3000);
  CHECK(a.h2d_pageable_bytes == 1000);
  CHECK(a.sync_s == Approx(0.006));  // stream sync 5 ms + the blocking cudaMemcpy 1 ms
  CHECK(a.dropped == 3);
  REQUIRE(a.ops.size() == 1);
  CHECK(a.ops[0].op == "allreduce");
  CHECK(a.ops[0].calls == 1);
  CHECK(a.ops[0].seconds == Approx(0.002));
  // Same figures as summary.json: allreduce busbw = 2(n-1)/n * bytes / time.
  CHECK(a.ops[0].busbw_bps == Approx((1 << 20) / 0.002));
  CHECK_FALSE(a.has_gpu);  // no CUPTI records: no GPU busy figure
  CHECK(s.events == 4);
  CHECK(s.dropped == 3);

  // Live: a later batch shows in the next snapshot; a closed rank is no longer connected.
  wire::Batch b2;
  Add(&b2, wire::CUDA_DEVICE_SYNCHRONIZE, 40 * ms, 3 * ms);
  REQUIRE(r0.SendBatch(b2));
  r1.Goodbye();
  r1.Close();
  s = Snap(jobs);
  CHECK(s.ranks[0].sync_s == Approx(0.009));
  CHECK(s.ranks[0].events == 5);
  CHECK_FALSE(s.ranks[1].connected);
  CHECK(s.ranks_connected == 1);
}

TEST_CASE("collector: Prometheus text is well formed, labelled, escaped, unique") {
  col::JobTable jobs{col::JobTiming{}};
  wire::Frame h = Hello("job \"a\"\\b", 0, 2);
  FakeRank r0(jobs, h);
  FakeRank dup(jobs, [&] {  // a second process claiming rank 0: must not repeat a series
    wire::Frame f = h;
    f.mutable_hello()->set_pid(4242);
    return f;
  }());
  wire::Batch b;
  Comm(&b, 7, 2, 0);
  Copy(&b, wire::CUDA_MEMCPY, wire::COPY_H2D, 1000, 1000, 1000, wire::FLAG_PAGEABLE);
  Coll(&b, wire::NCCL_ALL_REDUCE, 7, 1 << 20, 2000000);
  Coll(&b, wire::NCCL_ALL_GATHER, 7, 1 << 20, 1000000);
  REQUIRE(r0.SendBatch(b));
  REQUIRE(dup.SendBatch(b));

  const std::string text = col::FormatPrometheus(Snap(jobs));
  INFO(text);
  CheckExposition(text);
  const std::string l = R"(job_id="job \"a\"\\b",host="node1",rank="0")";
  CHECK(Value(text, "gpuwatch_h2d_bytes_total{" + l + "}") == 1000);
  CHECK(Value(text, "gpuwatch_h2d_pageable_bytes_total{" + l + "}") == 1000);
  CHECK(Value(text, "gpuwatch_h2d_bytes_total{" + l + R"(,pid="4242"})") == 1000);
  CHECK(Value(text, "gpuwatch_collective_seconds_total{" + l + R"(,op="allreduce"})") ==
        Approx(0.002));
  CHECK(Value(text, "gpuwatch_collective_busbw_bytes_per_second{" + l + R"(,op="allgather"})") > 0);
  CHECK(Value(text, "gpuwatch_rank_connected{" + l + "}") == 1);
  CHECK(Value(text, "gpuwatch_collector_ranks_connected") == 2);
  for (const char* family : {"gpuwatch_sync_stall_seconds_total", "gpuwatch_steps_total",
                             "gpuwatch_dropped_records_total", "gpuwatch_events_received_total"})
    CHECK(text.find(std::string("# TYPE ") + family + " counter\n") != std::string::npos);
  // No device timeline: no GPU busy series at all rather than a made-up 0.
  CHECK(text.find("gpuwatch_gpu_busy_ratio") == std::string::npos);
  // An empty collector still answers with its own gauges.
  const std::string empty = col::FormatPrometheus({});
  CheckExposition(empty);
  CHECK(Value(empty, "gpuwatch_collector_jobs") == 0);
}

TEST_CASE("collector: metrics address parsing") {
  std::string host, error;
  int port = -1;
  CHECK(col::ParseListenAddress(":9400", &host, &port, &error));
  CHECK(host == "127.0.0.1");  // nothing said: loopback only
  CHECK(port == 9400);
  CHECK(col::ParseListenAddress("9401", &host, &port, &error));
  CHECK((host == "127.0.0.1" && port == 9401));
  CHECK(col::ParseListenAddress("0.0.0.0:80", &host, &port, &error));
  CHECK((host == "0.0.0.0" && port == 80));
  CHECK(col::ParseListenAddress("[::1]:0", &host, &port, &error));
  CHECK((host == "::1" && port == 0));
  for (const char* bad : {"", "host:", "host:x", ":70000", "[::1]", "a:-1"}) {
    INFO(bad);
    CHECK_FALSE(col::ParseListenAddress(bad, &host, &port, &error));
    CHECK(error.find("bad address") != std::string::npos);
  }
  auto taken = col::MetricsHttpServer::Start("127.0.0.1:0", [] { return std::string(); }, &error);
  REQUIRE(taken);
  CHECK_FALSE(col::MetricsHttpServer::Start("127.0.0.1:" + std::to_string(taken->port()),
                                            [] { return std::string(); }, &error));
  CHECK(error.find("cannot listen for metrics") != std::string::npos);
}

TEST_CASE("collector: /metrics server answers GET, 404s the rest, bounds requests") {
  col::LiveFeed feed;
  std::string error;
  auto server = col::ServeMetrics("127.0.0.1:0", feed, &error);
  REQUIRE(server);
  CHECK(server->url() == "http://127.0.0.1:" + std::to_string(server->port()) + "/metrics");

  // Before the first snapshot: the collector's own gauges.
  std::string r = Http(server->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(r.rfind("HTTP/1.0 200 OK\r\n", 0) == 0);
  CHECK(r.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
  CHECK(r.find("gpuwatch_collector_jobs 0\n") != std::string::npos);

  // Live: what the server thread publishes is what the next scrape sees.
  col::JobTable jobs{col::JobTiming{}};
  FakeRank r0(jobs, Hello("live", 3, 4));
  wire::Batch b;
  Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 1000, 250000000);
  REQUIRE(r0.SendBatch(b));
  feed.Publish(Snap(jobs));
  r = Http(server->port(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
  CHECK(r.find(R"(gpuwatch_sync_stall_seconds_total{job_id="live",host="node1",rank="3"} 0.25)") !=
        std::string::npos);

  CHECK(Http(server->port(), "GET / HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 404", 0) == 0);
  CHECK(Http(server->port(), "POST /metrics HTTP/1.0\r\n\r\n").rfind("HTTP/1.0 405", 0) == 0);
  CHECK(Http(server->port(), "nonsense\r\n\r\n").rfind("HTTP/1.0 400", 0) == 0);
  const std::string huge = "GET /metrics HTTP/1.0\r\nX: " + std::string(20000, 'a');
  CHECK(Http(server->port(), huge).rfind("HTTP/1.0 431", 0) == 0);

  // A client that connects and says nothing is dropped after the timeout; the next scrape
  // is answered.
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(server->port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(silent, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  r = Http(server->port(), "GET /metrics HTTP/1.0\r\n\r\n");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.rfind("HTTP/1.0 200", 0) == 0);
  CHECK(waited < col::MetricsHttpServer::kClientTimeoutMs / 1000.0 + 1.5);
  close(silent);
}

TEST_CASE("cli: status line figures, rates and width") {
  col::LiveSnapshot prev, now;
  prev.at = col::Clock::now();
  now.at = prev.at + std::chrono::milliseconds(500);
  prev.events = 1000;
  now.events = 7000;
  now.ranks.resize(4);
  now.ranks_total = 4;
  now.ranks_connected = 3;
  now.dropped = 2;
  prev.gpu_busy_s = 1.0;
  prev.gpu_active_s = 2.0;
  now.gpu_busy_s = 1.45;
  now.gpu_active_s = 2.5;
  const std::string line = gpuwatch::cli::FormatStatus(now, &prev, 75, 200);
  CHECK(line == "gpuwatch 01:15  ranks 3/4  events 12.0k/s  GPU busy 90%  dropped 2");
  // First draw: totals, and no GPU figure without a device timeline.
  col::LiveSnapshot first;
  first.events = 5;
  CHECK(gpuwatch::cli::FormatStatus(first, nullptr, 3725, 200) ==
        "gpuwatch 1:02:05  ranks 0  events 5  dropped 0");
  CHECK(gpuwatch::cli::FormatStatus(now, &prev, 75, 20).size() == 20);
}

TEST_CASE("cli: the command's environment preloads the library first and points at us") {
  CHECK(gpuwatch::cli::PrependPreload("/x/libgpuwatch.so", nullptr) == "/x/libgpuwatch.so");
  CHECK(gpuwatch::cli::PrependPreload("/x/libgpuwatch.so", "") == "/x/libgpuwatch.so");
  CHECK(gpuwatch::cli::PrependPreload("/x/libgpuwatch.so", "/y/libjemalloc.so") ==
        "/x/libgpuwatch.so:/y/libjemalloc.so");
  std::string a = "PATH=/bin", b = "GPUWATCH_OUT=old", c = "HOME=/h";
  char* base[] = {a.data(), b.data(), c.data(), nullptr};
  const auto env = gpuwatch::cli::MergeEnvironment(base, {{"GPUWATCH_OUT", "/new"}, {"LD_PRELOAD", "/l.so"}});
  CHECK(std::set<std::string>(env.begin(), env.end()) ==
        std::set<std::string>{"PATH=/bin", "HOME=/h", "GPUWATCH_OUT=/new", "LD_PRELOAD=/l.so"});
  CHECK(gpuwatch::cli::ExitCodeOf(7 << 8) == 7);
  CHECK(gpuwatch::cli::ExitCodeOf(SIGKILL) == 137);
}

TEST_CASE("collector: a large job's /metrics has its sums and its outlier ranks only") {
  col::JobTable jobs{col::JobTiming{}};
  constexpr int kRanks = 40;
  const uint64_t ms = 1000000;
  std::vector<std::unique_ptr<FakeRank>> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.push_back(std::make_unique<FakeRank>(jobs, Hello("big", r, kRanks)));
    wire::Batch b;
    Comm(&b, 7, kRanks, r);
    // Rank 17 blocks longest in syncs (lost time); rank 29 spends least in collectives
    // (the one the others wait for).
    Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, 20 * ms, (r == 17 ? 50 : 1 + r % 3) * ms);
    Coll(&b, wire::NCCL_ALL_REDUCE, 7, 1 << 20, (r == 29 ? 1 : 10 + r % 5) * ms);
    REQUIRE(ranks.back()->SendBatch(b));
  }
  const col::LiveSnapshot s = Snap(jobs);
  CHECK(s.ranks_total == kRanks);
  CHECK(s.ranks_connected == kRanks);
  CHECK(s.ranks.size() <= 1 + 2 * 4);  // the sums, and at most 4 outliers of each kind
  const std::string text = col::FormatPrometheus(s);
  INFO(text);
  // The sums: every rank's syncs and collectives.
  CHECK(Value(text, "gpuwatch_collective_calls_total{job_id=\"big\",host=\"all\",rank=\"all\",op=\"allreduce\"}") ==
        kRanks);
  CHECK(text.find("rank=\"17\",outlier=\"lost_time\"") != std::string::npos);
  CHECK(text.find("rank=\"29\",outlier=\"straggler\"") != std::string::npos);
  CHECK(text.find("rank=\"9\"") == std::string::npos);  // an ordinary rank: on its host's /metrics
  CHECK(Value(text, "gpuwatch_collector_ranks_connected") == kRanks);
}
