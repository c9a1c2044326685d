// The pieces of a hook, one by one (Google Benchmark): the timestamp gpuwatch uses and its
// two candidates, the kernel-name lookup with a framework's worth of registered kernels,
// the pinned-range lookup, the ring store, and the in-flight marks of calls that can block. It explains hook_bench's totals on a machine where they
// differ from the development VM's (a real GPU machine, a different hypervisor). And the
// whole launch hook (hooks::Timed around a call that does nothing) warm, and cold: after the
// job's own work has pushed the hook's cache lines out, as a framework's launch path does
// (PyTorch's dispatcher runs ~7 us of its own code and data between two launches).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>
#include <x86intrin.h>

#include "hooks/cuda_call.h"
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

// ns per TSC tick, over 20 ms against CLOCK_MONOTONIC.
double NsPerTick() {
  const uint64_t t0 = __rdtsc(), n0 = gi::NowNs();
  while (gi::NowNs() - n0 < 20'000'000) {
  }
  return static_cast<double>(gi::NowNs() - n0) / static_cast<double>(__rdtsc() - t0);
}

// The launch hook as the library runs it, timed alone (lfence-bracketed TSC reads, their own
// cost taken out), with `evict_bytes` of other data read between two calls (0: warm).
void LaunchHook(benchmark::State& state, size_t evict_bytes) {
  static std::vector<char> stubs = [] {
    std::vector<char> v(30000);
    for (char& c : v) gi::Kernels().Register(&c, "k");
    return v;
  }();
  static gi::Ring ring(16384);
  static const double ns_per_tick = NsPerTick();
  gi::tl_ring = &ring;
  std::vector<uint64_t> other(evict_bytes / sizeof(uint64_t) + 1, 1);
  const auto fenced = [] {
    _mm_lfence();
    const uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
  };
  uint64_t bracket = UINT64_MAX;  // the two reads alone: the fastest of a few
  for (int i = 0; i < 1000; ++i) {
    const uint64_t a = fenced();
    bracket = std::min(bracket, fenced() - a);
  }
  uint64_t sink = 0, n = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < other.size(); i += 8) sink += other[i];  // one read a cache line
    const void* kernel = &stubs[(n * 7919) % stubs.size()];
    const uint64_t t0 = fenced();
    gi::hooks::Timed(gi::kApiLaunchKernel, nullptr, gi::hooks::KernelId(kernel), [] { return cudaSuccess; });
    const uint64_t ticks = fenced() - t0;
    state.SetIterationTime(static_cast<double>(ticks > bracket ? ticks - bracket : 0) * ns_per_tick * 1e-9);
    if ((++n & 4095) == 0) ring.Drain([](const gi::Record& x) { benchmark::DoNotOptimize(x.t_ticks); });
  }
  benchmark::DoNotOptimize(sink);
  gi::tl_ring = nullptr;
}
void BM_LaunchHookWarm(benchmark::State& state) { LaunchHook(state, 0); }
void BM_LaunchHookCold(benchmark::State& state) { LaunchHook(state, static_cast<size_t>(state.range(0)) << 10); }

}  // namespace

// Defined by the library's graph hooks (hooks_cuda_graphs.cpp), not linked here.
namespace gpuwatch::inject::hooks {
std::atomic<int> g_open_captures{0};
}

BENCHMARK(BM_LaunchHookWarm)->UseManualTime();
// KiB read between two launches: within L2, past it, past most L3s' share of a core.
BENCHMARK(BM_LaunchHookCold)->UseManualTime()->Iterations(20000)->Arg(256)->Arg(1024)->Arg(4096);
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
