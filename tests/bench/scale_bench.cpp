// Several hosts at scale (issue #21): one root collector (TCP, loopback), H host
// collectors sending it their ranks (--upstream), and on each host R synthetic ranks
// (one sender process per host, no simulator) that make `rate` calls a second each for
// `seconds`, paced in real time, then say Goodbye. Prints, as one JSON line, what the root
// cost: CPU seconds per second of job, max RSS, bytes it read per rank per second, and the
// time from the last rank's end to the root's summary.json; and each host collector's CPU
// per second of job (mean) and max RSS (largest).
//
//   scale_bench COLLECTOR_BIN WORK_DIR HOSTS RANKS_PER_HOST SECONDS CALLS_PER_S [raw]
//
// "raw": the hosts forward every frame (--upstream-raw) instead of their ranks' figures.
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_socket.h"
#include "frame.h"
#include "gpuwatch.pb.h"

namespace w = gpuwatch::wire;
using Steady = std::chrono::steady_clock;

namespace {

const char* const kToken = "scale-bench-token";
constexpr int kTickMs = 100;  // a sender writes each rank's batch every tick

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool WaitFor(const std::string& path, const std::regex& re, double seconds, std::smatch* m = nullptr) {
  const auto until = Steady::now() + std::chrono::duration<double>(seconds);
  while (Steady::now() < until) {
    const std::string text = Slurp(path);
    std::smatch local;
    if (std::regex_search(text, m ? *m : local, re)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

pid_t Start(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("GPUWATCH_TOKEN", kToken, 1);
    freopen(log.c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

using gpuwatch::bench::Connect;
using gpuwatch::bench::WriteAll;

struct Rank {
  int fd = -1;
  uint64_t t = 0, seq = 0, n = 0;
};

// One training step of `calls` events of one rank from its clock `r.t` on: launches, and
// every 64th a copy, a collective and a sync, inside an NVTX range. One step per tick
// whatever the rate: a faster rank launches more per step, it does not step faster.
std::string Batch(Rank& r, int calls, uint64_t ns_per_call) {
  w::Frame f;
  auto* b = f.mutable_batch();
  const uint64_t step_start = r.t + 1;
  for (int i = 0; i < calls; ++i, ++r.n) {
    auto* e = b->add_events();
    r.t += ns_per_call;
    e->set_t_ns(r.t);
    e->set_dur_ns(ns_per_call / 4);
    e->set_tid(1);
    switch (r.n % 64) {
      case 0:
        e->set_api(w::CUDA_MEMCPY_ASYNC);
        e->set_copy_kind(w::COPY_H2D);
        e->set_bytes(1 << 20);
        break;
      case 1:
        e->set_api(w::NCCL_ALL_REDUCE);
        e->set_comm_id(1);
        e->set_seq(r.seq++);
        e->set_bytes(1 << 22);
        e->set_gpu_ns(ns_per_call / 2);
        break;
      case 63:
        e->set_api(w::CUDA_STREAM_SYNCHRONIZE);
        break;
      default:
        e->set_api(w::CUDA_LAUNCH_KERNEL);
        e->set_name_id(2 + r.n % 8);
        e->set_stream(7);
    }
  }
  auto* step = b->add_events();
  step->set_api(w::NVTX_RANGE);
  step->set_name_id(1);
  step->set_t_ns(step_start);
  step->set_dur_ns(r.t - step_start);
  step->set_tid(1);
  b->set_settled_ns(r.t + 1);
  std::string out;
  w::AppendFrame(f, out);
  return out;
}

// One host's ranks, paced: every tick each rank sends the calls of that tick.
void Sender(const std::string& sock, int host, int ranks, int world, double seconds, int rate) {
  std::vector<Rank> rs(ranks);
  for (int i = 0; i < ranks; ++i) {
    Rank& r = rs[i];
    r.fd = Connect(sock);
    if (r.fd < 0) _exit(3);
    r.t = 1'000'000'000;
    const int rank = host * ranks + i;
    std::string head;
    w::Frame hello;
    auto* h = hello.mutable_hello();
    h->set_protocol_version(w::PROTOCOL_VERSION);
    h->set_job_id("scale-bench");
    h->set_rank(rank);
    h->set_local_rank(i);
    h->set_world_size(world);
    h->set_host("h" + std::to_string(host));
    h->set_pid(100000 + rank);
    w::AppendFrame(hello, head);
    w::Frame meta;
    auto* step = meta.mutable_batch()->add_kernel_names();
    step->set_id(1);
    step->set_name("train_step");
    for (int k = 2; k < 10; ++k) {
      auto* n = meta.mutable_batch()->add_kernel_names();
      n->set_id(k);
      n->set_name("_Z6kernelILi" + std::to_string(k) + "EEvv");
    }
    meta.mutable_batch()->set_gpu_source(w::GPU_SOURCE_EVENTS);
    auto* c = meta.mutable_batch()->add_communicators();
    c->set_comm_id(1);
    c->set_nranks(world);
    c->set_rank(rank);
    c->set_unique_hash(0x5ca1e);
    w::AppendFrame(meta, head);
    if (!WriteAll(r.fd, head)) _exit(4);
  }
  const int per_tick = std::max(1, rate * kTickMs / 1000);
  const uint64_t ns_per_call = 1'000'000'000ull / static_cast<uint64_t>(std::max(1, rate));
  const int ticks = static_cast<int>(seconds * 1000 / kTickMs);
  auto next = Steady::now();
  for (int k = 0; k < ticks; ++k) {
    for (Rank& r : rs) {
      if (!WriteAll(r.fd, Batch(r, per_tick, ns_per_call))) _exit(4);
      // A heartbeat a second, as the library sends.
      if (k % (1000 / kTickMs) == 0) {
        w::Frame hb;
        hb.mutable_heartbeat()->set_now_ns(r.t);
        std::string bytes;
        w::AppendFrame(hb, bytes);
        WriteAll(r.fd, bytes);
      }
    }
    next += std::chrono::milliseconds(kTickMs);
    std::this_thread::sleep_until(next);
  }
  for (Rank& r : rs) {
    w::Frame bye;
    bye.mutable_goodbye()->set_end_ns(r.t + 1);
    std::string tail;
    w::AppendFrame(bye, tail);
    WriteAll(r.fd, tail);
    close(r.fd);
  }
  _exit(0);
}

double CpuS(const rusage& ru) {
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

uint64_t ReadChars(pid_t pid) {
  std::smatch m;
  const std::string io = Slurp("/proc/" + std::to_string(pid) + "/io");
  return std::regex_search(io, m, std::regex("rchar: (\\d+)")) ? std::stoull(m[1]) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    std::fprintf(stderr, "usage: scale_bench COLLECTOR_BIN WORK_DIR HOSTS RANKS_PER_HOST SECONDS CALLS_PER_S [raw]\n");
    return 2;
  }
  const std::string bin = argv[1], work = argv[2];
  const int hosts = std::atoi(argv[3]), ranks = std::atoi(argv[4]), rate = std::atoi(argv[6]);
  const double seconds = std::atof(argv[5]);
  const bool raw = argc == 8 && std::string(argv[7]) == "raw";
  if (hosts < 1 || ranks < 1 || rate < 10 || seconds <= 0) {
    std::fprintf(stderr, "scale_bench: HOSTS, RANKS_PER_HOST >= 1, CALLS_PER_S >= 10, SECONDS > 0\n");
    return 2;
  }
  const int world = hosts * ranks;
  signal(SIGPIPE, SIG_IGN);

  const std::string root_log = work + "/root.log";
  const pid_t root = Start({bin, "--listen", work + "/root.sock", "--listen-tcp", "127.0.0.1:0", "--out",
                            work + "/root-out", "--trace", "off", "--no-journal"},
                           root_log);
  std::smatch m;
  if (!WaitFor(root_log, std::regex("listening on TCP 127\\.0\\.0\\.1:(\\d+)"), 20, &m)) {
    std::fprintf(stderr, "scale_bench: the root never listened (%s)\n", root_log.c_str());
    kill(root, SIGKILL);
    return 1;
  }
  const std::string upstream = "tcp://127.0.0.1:" + m[1].str();
  std::vector<pid_t> collectors;
  for (int h = 0; h < hosts; ++h) {
    const std::string name = work + "/h" + std::to_string(h);
    std::vector<std::string> args = {bin, "--listen", name + ".sock", "--out", name + "-out", "--upstream", upstream,
                                     "--trace", "off", "--no-journal"};
    if (raw) args.push_back("--upstream-raw");
    collectors.push_back(Start(args, name + ".log"));
  }
  for (int h = 0; h < hosts; ++h)
    if (!WaitFor(work + "/h" + std::to_string(h) + ".log", std::regex("forwarding every rank"), 60)) {
      std::fprintf(stderr, "scale_bench: host collector %d never reached the root\n", h);
      return 1;
    }

  const uint64_t read_before = ReadChars(root);
  std::vector<pid_t> senders;
  const auto t0 = Steady::now();
  for (int h = 0; h < hosts; ++h) {
    const pid_t p = fork();
    if (p == 0) Sender(work + "/h" + std::to_string(h) + ".sock", h, ranks, world, seconds, rate);
    senders.push_back(p);
  }
  int failed = 0;
  for (pid_t p : senders) {
    int st = 0;
    waitpid(p, &st, 0);
    failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  const auto ended = Steady::now();
  const std::string summary = work + "/root-out/summary.json";
  bool written = false;
  for (auto until = ended + std::chrono::seconds(120); !written && Steady::now() < until;) {
    written = access(summary.c_str(), R_OK) == 0;
    if (!written) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto summarized = Steady::now();
  const uint64_t read_after = ReadChars(root);
  const double job_s = std::chrono::duration<double>(ended - t0).count();

  for (pid_t c : collectors) kill(c, SIGTERM);
  double host_cpu = 0;
  long host_rss = 0;
  for (pid_t c : collectors) {
    rusage hr{};
    wait4(c, nullptr, 0, &hr);
    host_cpu += CpuS(hr);
    host_rss = std::max(host_rss, hr.ru_maxrss);
  }
  kill(root, SIGTERM);
  int st = 0;
  rusage ru{};
  wait4(root, &st, 0, &ru);
  // The summary's rank count: every rank reached the root.
  const auto doc = nlohmann::json::parse(Slurp(summary), nullptr, false);
  const size_t ranks_seen = doc.is_object() && doc.contains("ranks") ? doc["ranks"].size() : 0;
  std::printf("{\"mode\": \"%s\", \"hosts\": %d, \"ranks\": %d, \"calls_per_rank_s\": %d, \"job_s\": %.2f, "
              "\"root_cpu_s\": %.3f, \"root_cpu_per_job_s\": %.4f, \"root_max_rss_kib\": %ld, "
              "\"bytes_up_per_rank_s\": %.0f, \"end_to_summary_s\": %.3f, \"summary_written\": %s, "
              "\"ranks_in_summary\": %zu, \"failed_senders\": %d, \"host_cpu_per_job_s\": %.4f, "
              "\"host_max_rss_kib\": %ld}\n",
              raw ? "raw" : "figures", hosts, world, rate, job_s, CpuS(ru), CpuS(ru) / job_s, ru.ru_maxrss,
              static_cast<double>(read_after - read_before) / world / job_s,
              std::chrono::duration<double>(summarized - ended).count(), written ? "true" : "false", ranks_seen,
              failed, host_cpu / hosts / job_s, host_rss);
  return failed == 0 && written ? 0 : 1;
}
