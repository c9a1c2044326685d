// The pieces of a hook, one by one (Google Benchmark): the timestamp gpuwatch uses and its
// two candidates, the kernel-name lookup with a framework's worth of registered kernels,
// the pinned-range lookup, the ring store, and the in-flight marks of calls that can block. It explains hook_bench's totals on a machine where they
// differ from the development VM's (a real GPU machine, a different hypervisor).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>
#include <x86intrin.h>

#include "record/pinned_ranges.h"
#include "record/recorder.h"
#include "record/registry.h"
#include "record/stamp_clock.h"

namespace gi = gpuwatch::inject;

namespace {

void BM_Stamp(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gi::Stamp());
}
void BM_Rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
void BM_ClockGettimeMonotonic(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(gi::NowNs());
}

// 30,000 registered kernels, as PyTorch's CUDA library registers at load.
void BM_KernelNameFind(benchmark::State& state) {
  static std::vector<char> stubs(30000);
  static bool once = [] {
    for (size_t i = 0; i < stubs.size(); ++i) gi::Kernels().Register(&stubs[i], "k");
    return true;
  }();
  (void)once;
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(gi::Kernels().Find(&stubs[(i += 7919) % stubs.size()]));
}

void BM_PinnedContains(benchmark::State& state) {
  static std::vector<char> buf(1 << 20);
  static bool once = [] {
    gi::Pinned().Add(buf.data(), buf.size());
    return true;
  }();
  (void)once;
  for (auto _ : state) benchmark::DoNotOptimize(gi::Pinned().Contains(buf.data() + 4096));
}

// A record into the thread's ring (the sender's drain, here every 4096 records, included).
void BM_RingPush(benchmark::State& state) {
  static gi::Ring ring(16384);
  gi::Record r{};
  r.api = 1;
  uint64_t n = 0;
  for (auto _ : state) {
    r.t_ticks = n;
    ring.Push(r);
    if ((++n & 4095) == 0) ring.Drain([](const gi::Record& x) { benchmark::DoNotOptimize(x.t_ticks); });
  }
}

// EnterCall + LeaveCall: what a sync, a collective or a copy adds to mark itself in flight.
void BM_EnterLeaveCall(benchmark::State& state) {
  static gi::Ring ring(64);
  gi::tl_ring = &ring;
  uint64_t t = 1;
  for (auto _ : state) {
    gi::EnterCall(3, ++t, 7);
    benchmark::ClobberMemory();
    gi::LeaveCall();
  }
  gi::tl_ring = nullptr;
}

}  // namespace

BENCHMARK(BM_RingPush);
BENCHMARK(BM_EnterLeaveCall);
BENCHMARK(BM_Stamp);
BENCHMARK(BM_Rdtsc);
BENCHMARK(BM_ClockGettimeMonotonic);
BENCHMARK(BM_KernelNameFind);
BENCHMARK(BM_PinnedContains);

int main(int argc, char** argv) {
  std::string clocksource;
  std::ifstream("/sys/devices/system/clocksource/clocksource0/current_clocksource") >> clocksource;
  std::printf("stamp source: %s; kernel clocksource: %s\n", gi::g_stamp_is_tsc ? "TSC (invariant)" : "clock_gettime",
              clocksource.c_str());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
