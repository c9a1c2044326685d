// The /proc sampler behind `input_io`: it must see a child's CPU time and reads
// (DataLoader workers are children), keep counting a child once it has been reaped, and
// stay cheap (it runs every 100 ms on the sender thread).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "enrich/environment_probe.h"
#include "enrich/proc_sampler.h"

namespace gi = gpuwatch::inject;

namespace {

uint64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1'000'000'000ull + ts.tv_nsec;
}

// A child that spins for `spin_ms` of CPU time, then reads the pipe the parent fills until it closes.
pid_t Child(int spin_ms, int fds[2]) {
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[1]);  // else the read below never sees end-of-file
    const int fd_read = fds[0];
    // CPU time, not wall time: on a loaded machine the spin gets a fraction of a core.
    timespec ts{};
    do clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    while (ts.tv_sec * 1000 + ts.tv_nsec / 1'000'000 < spin_ms);
    char buf[65536];
    while (read(fd_read, buf, sizeof buf) > 0) {
    }
    _exit(0);
  }
  return pid;
}

}  // namespace

TEST_CASE("proc sampler: a child's CPU and reads count, also after it is reaped") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  gi::ProcSampler sampler(getpid());
  const gi::ProcTotals before = sampler.Sample(Now());
  const pid_t child = Child(300, fds);
  REQUIRE(child > 0);
  close(fds[0]);
  // Discovery runs at most once a second (every 2 s by /proc scan): sample until it is seen.
  gi::ProcTotals mid;
  for (int i = 0; i < 40; ++i) {
    usleep(100'000);
    mid = sampler.Sample(Now());
    if (std::count(sampler.tree().begin(), sampler.tree().end(), child)) break;
  }
  CHECK(std::count(sampler.tree().begin(), sampler.tree().end(), child) == 1);
  CHECK(mid.processes >= 2);
  std::vector<char> data(8 << 20, 'x');
  for (size_t off = 0; off < data.size();) off += write(fds[1], data.data() + off, data.size() - off);
  close(fds[1]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  const gi::ProcTotals after = sampler.Sample(Now() + 10'000'000'000ull);
  INFO("cpu " << (after.cpu_ns - before.cpu_ns) * 1e-9 << " s, rchar " << after.read_chars - before.read_chars);
  // 300 ms of CPU (counted in 10 ms ticks): reaped, it is in our cutime/cstime.
  CHECK(after.cpu_ns - before.cpu_ns >= 250'000'000ull);
  CHECK(after.read_chars - before.read_chars >= (8u << 20));
  CHECK(after.processes == 1);
}

TEST_CASE("proc sampler: one sample costs little, and SampleIfDue keeps to 100 ms") {
  gi::ProcSampler sampler(getpid());
  sampler.Sample(Now());  // discovery
  const int n = 200;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) sampler.Sample(Now());
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  WARN("proc sampler: " << us << " us per sample of " << sampler.tree().size() << " process(es)");
  CHECK(us < 2000);
  const uint64_t t = Now();
  CHECK(sampler.SampleIfDue(t + 1'000'000'000ull).has_value());
  CHECK_FALSE(sampler.SampleIfDue(t + 1'050'000'000ull).has_value());  // 50 ms later: nothing
  CHECK(sampler.SampleIfDue(t + 1'100'000'000ull).has_value());
}

TEST_CASE("environment probe: watched settings are read from the environment") {
  setenv("NCCL_P2P_DISABLE", "1", 1);
  setenv("NCCL_NET", std::string(300, 'S').c_str(), 1);
  const auto s = gi::WatchedSettings();
  unsetenv("NCCL_P2P_DISABLE");
  unsetenv("NCCL_NET");
  auto find = [&](const std::string& k) -> std::string {
    for (const auto& [n, v] : s)
      if (n == k) return v;
    return "<unset>";
  };
  CHECK(find("NCCL_P2P_DISABLE") == "1");
  CHECK(find("NCCL_NET").size() == 128);
  CHECK(find("NCCL_ALGO") == "<unset>");
}

TEST_CASE("proc sampler: the collector a rank started is not part of its tree, its CPU is counted apart") {
  gi::ProcSampler sampler(getpid());
  sampler.Sample(Now());
  const pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_NAME, "gpuwatch-collector");  // what exec of the collector shows in comm
    // 200 ms of CPU (the overhead budget charges it to the job where its cores are busy).
    timespec t0{}, t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    do clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    while ((t.tv_sec - t0.tv_sec) * 1'000'000'000L + (t.tv_nsec - t0.tv_nsec) < 200'000'000L);
    pause();
    _exit(0);
  }
  REQUIRE(child > 0);
  const uint64_t cpu_before = sampler.Sample(Now() + 2'000'000'000ull).cpu_ns;
  // Its CPU spent (its utime in /proc, not what the test waited on the wall).
  for (int i = 0; i < 200; ++i) {
    usleep(20'000);
    if (sampler.Sample(Now() + 3'000'000'000ull + i * 1'000'000'000ull).collector_cpu_ns >= 150'000'000) break;
  }
  const gi::ProcTotals t = sampler.Sample(Now() + 300'000'000'000ull);  // past the next discovery, by either method
  CHECK(std::count(sampler.tree().begin(), sampler.tree().end(), child) == 0);
  CHECK(t.collector_cpu_ns >= 150'000'000);
  CHECK(t.cpu_ns - cpu_before < 150'000'000);  // not the job's
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}
