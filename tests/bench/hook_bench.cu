// Cost of each intercepted call, measured with Google Benchmark. scripts/bench.sh runs this
// program twice against the simulated GPU with its device work set to zero — once plain,
// once with libgpuwatch.so preloaded — and reports the difference per call: what a hook adds.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

// A real CUDA process has several threads (the driver's, the framework's). With only one,
// glibc skips the atomics in mutexes and malloc, which the preloaded run, having the
// library's sender thread, cannot: the A/B then charged the simulator's own locks to the
// hooks (~90 of the 130 ns measured per launch). A second, idle thread in both runs.
const bool kMultiThreaded = [] {
  std::thread([] {
    for (;;) pause();
  }).detach();
  return true;
}();

__global__ void empty_kernel() {}

struct Fixture {
  cudaStream_t stream{};
  void* dev = nullptr;
  void* pinned = nullptr;
  ncclComm_t comm{};
  Fixture() {
    cudaStreamCreate(&stream);
    cudaMalloc(&dev, 1 << 20);
    cudaMallocHost(&pinned, 1 << 20);
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) {
      std::fprintf(stderr, "hook_bench: NCCL init failed\n");
      std::exit(1);
    }
  }
};

Fixture& F() {
  static Fixture f;
  return f;
}

// Work queued without bound would make later calls slower; drain now and then, outside
// the timed region.
template <typename Fn>
void Loop(benchmark::State& state, Fn&& call) {
  auto& f = F();
  int n = 0;
  for (auto _ : state) {
    call(f);
    if (++n == 256) {
      state.PauseTiming();
      cudaStreamSynchronize(f.stream);
      n = 0;
      state.ResumeTiming();
    }
  }
  cudaStreamSynchronize(f.stream);
}

void BM_KernelLaunch(benchmark::State& state) {
  Loop(state, [](Fixture& f) { empty_kernel<<<1, 1, 0, f.stream>>>(); });
}
void BM_MemcpyAsyncPinned(benchmark::State& state) {
  Loop(state, [](Fixture& f) { cudaMemcpyAsync(f.dev, f.pinned, 4, cudaMemcpyHostToDevice, f.stream); });
}
void BM_StreamSyncIdle(benchmark::State& state) {
  Loop(state, [](Fixture& f) { cudaStreamSynchronize(f.stream); });
}
void BM_AllReduceEnqueue(benchmark::State& state) {
  Loop(state, [](Fixture& f) {
    ncclAllReduce(f.dev, f.dev, 1, ncclFloat, ncclSum, f.comm, f.stream);
  });
}

}  // namespace

BENCHMARK(BM_KernelLaunch);
BENCHMARK(BM_MemcpyAsyncPinned);
BENCHMARK(BM_StreamSyncIdle);
BENCHMARK(BM_AllReduceEnqueue);
BENCHMARK_MAIN();
