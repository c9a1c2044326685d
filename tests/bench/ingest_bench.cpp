// Collector ingest throughput: S sender processes (fake ranks of one job) stream B batches
// of E events each into one `gpuwatch-collector --autostart`, as fast as the socket takes
// them. Prints the collector's CPU seconds, records per CPU-second, max RSS and drops.
//
//   ingest_bench COLLECTOR_BIN WORK_DIR SENDERS BATCHES EVENTS_PER_BATCH [MIX]
//
// MIX "every16" (the default): a copy, a sync and a collective in every 16 events, so a
// "step" found from them is 48 us: the most work per record the step analysis can get.
// MIX "steps": training steps of 1024 events (an input copy, 8 all-reduces, a sync at the
// end, launches between), 3 ms each: how memory behaves as a run gets longer.
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
#include <string>
#include <thread>

#include "bench_socket.h"
#include "frame.h"
#include "gpuwatch.pb.h"

namespace w = gpuwatch::wire;

namespace {

using gpuwatch::bench::Connect;
using gpuwatch::bench::WriteAll;

enum class Mix { kEvery16, kSteps };

// What the n-th event of a sender is.
enum class Kind { kCopy, kSync, kCollective, kLaunch };
Kind KindOf(Mix mix, uint64_t n) {
  if (mix == Mix::kEvery16) {
    switch (n % 16) {
      case 0: return Kind::kCopy;
      case 1: return Kind::kSync;
      case 2: return Kind::kCollective;
      default: return Kind::kLaunch;
    }
  }
  const uint64_t k = n % 1024;
  if (k == 0) return Kind::kCopy;
  if (k == 1023) return Kind::kSync;
  if (k % 128 == 100) return Kind::kCollective;
  return Kind::kLaunch;
}

std::string MakeBatch(Mix mix, int events, uint64_t& n, uint64_t& t, uint64_t& seq) {
  w::Frame f;
  auto* b = f.mutable_batch();
  for (int i = 0; i < events; ++i, ++n) {
    auto* e = b->add_events();
    t += 3000;
    e->set_t_ns(t);
    e->set_dur_ns(2000);
    e->set_tid(1);
    switch (KindOf(mix, n)) {
      case Kind::kCopy:
        e->set_api(w::CUDA_MEMCPY_ASYNC);
        e->set_copy_kind(w::COPY_H2D);
        e->set_bytes(1 << 20);
        break;
      case Kind::kSync:
        e->set_api(w::CUDA_STREAM_SYNCHRONIZE);
        break;
      case Kind::kCollective:
        e->set_api(w::NCCL_ALL_REDUCE);
        e->set_comm_id(1);
        e->set_seq(seq++);
        e->set_bytes(1 << 22);
        e->set_gpu_ns(500000);
        break;
      case Kind::kLaunch:
        e->set_api(w::CUDA_LAUNCH_KERNEL);
        e->set_name_id(1 + n % 8);
        e->set_stream(7);
    }
  }
  b->set_settled_ns(t + 1);  // as the library says: every event up to here is sent
  std::string out;
  w::AppendFrame(f, out);
  return out;
}

void Sender(const std::string& path, Mix mix, int rank, int world, int batches, int events) {
  const int fd = Connect(path);
  if (fd < 0) _exit(3);
  std::string head;
  w::Frame hello;
  auto* h = hello.mutable_hello();
  h->set_protocol_version(w::PROTOCOL_VERSION);
  h->set_job_id("ingest-bench");
  h->set_rank(rank);
  h->set_world_size(world);
  h->set_host("bench");
  h->set_pid(getpid());
  w::AppendFrame(hello, head);
  w::Frame meta;
  for (int k = 1; k <= 8; ++k) {
    auto* n = meta.mutable_batch()->add_kernel_names();
    n->set_id(k);
    n->set_name("_Z6kernelILi" + std::to_string(k) + "EEvv");
  }
  // No device records come (as from a library with CUPTI off): say so, as the library does.
  meta.mutable_batch()->set_gpu_source(w::GPU_SOURCE_EVENTS);
  auto* c = meta.mutable_batch()->add_communicators();
  c->set_comm_id(1);
  c->set_nranks(world);
  c->set_rank(rank);
  w::AppendFrame(meta, head);
  if (!WriteAll(fd, head)) _exit(4);
  uint64_t t = 1'000'000'000, seq = 0, n = 0;
  for (int i = 0; i < batches; ++i) {
    if (!WriteAll(fd, MakeBatch(mix, events, n, t, seq))) _exit(4);
  }
  w::Frame bye;
  bye.mutable_goodbye()->set_events_sent(static_cast<uint64_t>(batches) * events);
  std::string tail;
  w::AppendFrame(bye, tail);
  WriteAll(fd, tail);
  close(fd);
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr, "usage: ingest_bench COLLECTOR_BIN WORK_DIR SENDERS BATCHES EVENTS_PER_BATCH [every16|steps]\n");
    return 2;
  }
  const std::string mix_name = argc == 7 ? argv[6] : "every16";
  if (mix_name != "every16" && mix_name != "steps") {
    std::fprintf(stderr, "ingest_bench: unknown mix '%s' (every16, steps)\n", mix_name.c_str());
    return 2;
  }
  const Mix mix = mix_name == "steps" ? Mix::kSteps : Mix::kEvery16;
  const std::string bin = argv[1], work = argv[2];
  const int senders = std::atoi(argv[3]), batches = std::atoi(argv[4]), events = std::atoi(argv[5]);
  const std::string sock = work + "/collector.sock";
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t collector = fork();
  if (collector == 0) {
    const std::string out = work + "/out";
    execl(bin.c_str(), bin.c_str(), "--autostart", "--listen", sock.c_str(), "--out", out.c_str(),
          "--linger-ms", "200", static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int r = 0; r < senders; ++r) {
    if (fork() == 0) Sender(sock, mix, r, senders, batches, events);
  }
  int failed = 0;
  for (int r = 0; r < senders; ++r) {
    int st = 0;
    const pid_t p = wait(&st);
    if (p == collector) {
      --r;  // the collector ended early: count it below
      continue;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++failed;
  }
  int st = 0;
  rusage ru{};
  wait4(collector, &st, 0, &ru);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  const double records = static_cast<double>(senders) * batches * events;
  std::printf("{\"senders\": %d, \"records\": %.0f, \"wall_s\": %.3f, \"collector_cpu_s\": %.3f, "
              "\"records_per_cpu_s\": %.0f, \"collector_max_rss_kib\": %ld, \"failed_senders\": %d, "
              "\"collector_exit\": %d}\n",
              senders, records, wall, cpu, cpu > 0 ? records / cpu : 0.0, ru.ru_maxrss, failed,
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return failed == 0 ? 0 : 1;
}
