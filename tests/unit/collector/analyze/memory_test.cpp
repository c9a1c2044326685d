// The memory analysis (analyze/memory.h): the live set of allocations, the peak, the
// device's total, reserved bytes over time; and the utilization curve's shape
// (analyze/utilization_shape.h) on made-up curves.
#include <catch2/catch.hpp>

#include <vector>

#include "analyze/memory.h"
#include "analyze/utilization_shape.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kMs = 1'000'000;

col::HostCall Call(wire::Api api, uint64_t t_ns, uint64_t address, uint64_t bytes = 0, uint64_t total = 0) {
  col::HostCall c{};
  c.api = api;
  c.t_ns = t_ns;
  c.dur_ns = 1000;
  c.address = address;
  c.bytes = bytes;
  c.total_bytes = total;
  return c;
}

}  // namespace

TEST_CASE("collector: memory follows allocations and frees to the peak") {
  col::MemoryCounter m;
  m.OnHostCall(Call(wire::CUDA_MALLOC, 0, 0x1000, 100));
  m.OnHostCall(Call(wire::CUDA_MALLOC_ASYNC, 5 * kMs, 0x2000, 50));
  m.OnHostCall(Call(wire::CUDA_MEM_GET_INFO, 6 * kMs, 0, 800, 1000));
  m.OnHostCall(Call(wire::CUDA_FREE_ASYNC, 25 * kMs, 0x2000));
  m.OnHostCall(Call(wire::CUDA_MALLOC_MANAGED, 30 * kMs, 0x3000, 20));
  m.OnHostCall(Call(wire::CUDA_FREE, 31 * kMs, 0x9999));  // never allocated here
  m.OnHostCall(Call(wire::CUDA_LAUNCH_KERNEL, 32 * kMs, 0));
  col::EnvFacts env;
  env.device_memory_bytes = 5000;  // the application's cudaMemGetInfo wins
  const col::MemoryFigures f = m.Result(env);
  CHECK(f.allocations == 3);
  CHECK(f.frees == 1);
  CHECK(f.untracked == 1);
  CHECK(f.allocated_bytes == 170);
  CHECK(f.peak_bytes == 150);
  CHECK(f.peak_t_ns == 5 * kMs + 1000);
  CHECK(f.reserved_bytes == 120);
  CHECK(f.total_bytes == 1000);
  CHECK(f.headroom_bytes() == 850);
  CHECK(f.min_free_bytes == 800);
  // 10 ms windows: [0,10) held up to 150, [10,20) kept 150, [20,30) freed to 100, [30,40) 120.
  REQUIRE(f.series.size() == 4);
  CHECK(f.series.Peak(0) == 150);
  CHECK(f.series.Peak(1) == 150);
  CHECK(f.series.Peak(2) == 150);  // held 150 until the free at 25 ms
  CHECK(f.series.Peak(3) == 120);

  col::MemoryCounter none;
  none.OnHostCall(Call(wire::CUDA_MALLOC, 0, 0x1000, 10));
  env.device_memory_bytes = 5000;
  CHECK(none.Result(env).total_bytes == 5000);  // never asked: the device's properties
}

TEST_CASE("collector: reserved memory over a long run keeps a bounded number of windows") {
  col::MemoryCounter m;
  for (uint64_t i = 0; i < 10000; ++i) m.OnHostCall(Call(wire::CUDA_MALLOC, i * 10 * kMs, 0x1000 + i, 1));
  const col::MemoryFigures f = m.Result({});
  CHECK(f.series.size() <= col::PeakSeries::kMaxWindows);
  CHECK(f.series.Peak(f.series.size() - 1) == 10000);
  CHECK(f.peak_bytes == 10000);
}

namespace {

std::vector<double> Repeat(std::initializer_list<double> period, size_t times) {
  std::vector<double> v;
  for (size_t i = 0; i < times; ++i) v.insert(v.end(), period);
  return v;
}

}  // namespace

TEST_CASE("collector: the utilization curve's shape") {
  using S = col::UtilizationShape;
  // Input every step: 40 ms idle, 10 ms busy, 20 steps.
  CHECK(col::ClassifyUtilization(Repeat({0.0, 0.0, 0.0, 0.0, 0.8}, 20), 20).kind == S::kSawtooth);
  CHECK(col::ClassifyUtilization(Repeat({0.0, 0.0, 0.0, 0.0, 0.8}, 20), 0).kind == S::kSawtooth);
  // Small kernels: 40-60% busy all along.
  CHECK(col::ClassifyUtilization(Repeat({0.4, 0.6, 0.5}, 30), 90).kind == S::kSteadyLow);
  CHECK(col::ClassifyUtilization(Repeat({0.97, 1.0, 0.92}, 30), 90).kind == S::kSteadyHigh);
  // A checkpoint every 10 steps: 15 busy windows, then 25 idle ones, 4 times.
  std::vector<double> ckpt;
  for (int k = 0; k < 4; ++k) {
    ckpt.insert(ckpt.end(), 15, 0.9);
    ckpt.insert(ckpt.end(), 25, 0.0);
  }
  CHECK(col::ClassifyUtilization(ckpt, 40).kind == S::kPeriodicDrops);
  CHECK(col::ClassifyUtilization(ckpt, 0).kind == S::kPeriodicDrops);
  // Falling from 90% to 30%.
  std::vector<double> fall;
  for (int i = 0; i < 60; ++i) fall.push_back(0.9 - 0.01 * i);
  const S s = col::ClassifyUtilization(fall, 60);
  CHECK(s.kind == S::kDegrading);
  CHECK(std::string(s.key()) == "degrading");
  // Too short to say.
  CHECK(col::ClassifyUtilization({0.5, 0.0, 0.5}, 1).kind == S::kUnknown);
  CHECK(col::ClassifyUtilization({0.5, 0.0, 0.5}, 1).key() == nullptr);
}
