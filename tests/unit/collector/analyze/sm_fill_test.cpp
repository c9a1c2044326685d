// SM fill (analyze/sm_fill.h): kernels' grids against the device's SMs, the theoretical
// occupancy of a block shape, and the small_batch finding that reads them.
#include <catch2/catch.hpp>

#include "analyze/findings.h"
#include "analyze/sm_fill.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kMs = 1'000'000;

col::DeviceWork Kernel(uint32_t name_id, uint64_t start, uint64_t dur, col::LaunchGeometry g, bool comm = false) {
  col::DeviceWork w{};
  w.start_ns = start;
  w.end_ns = start + dur;
  w.name_id = name_id;
  w.kind = wire::ACTIVITY_KERNEL;
  w.comm = comm;
  w.geometry = g;
  return w;
}

col::RankFacts Facts(int sm_count) {
  col::RankFacts facts;
  wire::Batch b;
  b.mutable_environment()->set_device_sm_count(sm_count);
  auto* k = b.add_kernel_names();
  k->set_id(1);
  k->set_name("_Z5smallPf");
  k = b.add_kernel_names();
  k->set_id(2);
  k->set_name("big_gemm");
  facts.OnBatch(b);
  return facts;
}

}  // namespace

TEST_CASE("collector: theoretical occupancy from threads, registers and shared memory (Hopper's limits)") {
  CHECK(col::TheoreticalOccupancy({1, 1, 0, 0}) == Approx(0.5));             // the SM's 32 blocks, one warp each
  CHECK(col::TheoreticalOccupancy({1, 256, 0, 0}) == Approx(1.0));           // 8 blocks of 8 warps
  CHECK(col::TheoreticalOccupancy({1, 256, 128, 0}) == Approx(0.25));        // 64K regs / (128 x 256) = 2 blocks
  CHECK(col::TheoreticalOccupancy({1, 128, 32, 100 * 1024}) == Approx(0.125));  // 228 KiB / 101 KiB = 2 blocks of 4 warps
  CHECK(col::TheoreticalOccupancy({1, 4096, 0, 0}) == 0);                    // more threads than an SM holds
  CHECK(col::TheoreticalOccupancy({1, 0, 0, 0}) == 0);
}

TEST_CASE("collector: SM fill weighs each kernel's time by the SMs its grid leaves without a block") {
  col::SmFillCounter c;
  c.OnDeviceWork(Kernel(1, 0, 10 * kMs, {33, 128, 32, 0}));       // a quarter of 132 SMs: 7.5 ms idle
  c.OnDeviceWork(Kernel(1, 10 * kMs, 10 * kMs, {33, 128, 32, 0}));
  c.OnDeviceWork(Kernel(2, 20 * kMs, 20 * kMs, {1000, 256, 64, 0}));  // fills the device
  c.OnDeviceWork(Kernel(3, 40 * kMs, 50 * kMs, {1, 1, 0, 0}, true));   // NCCL's: left out
  c.OnDeviceWork(Kernel(2, 90 * kMs, 5 * kMs, {}));                 // no geometry: left out
  const col::SmFillFigures f = c.Result(Facts(132));
  CHECK(f.sm_count == 132);
  CHECK(f.kernels == 3);
  CHECK(f.kernel_ns == 40 * kMs);
  CHECK(f.small_grid_kernels == 2);
  CHECK(f.idle_sm_ns == Approx(15.0 * kMs));
  CHECK(f.fill() == Approx(1 - 15.0 / 40));
  REQUIRE(f.top.size() == 1);  // only the grids that left SMs idle
  CHECK(f.top[0].name == "_Z5smallPf");
  CHECK(f.top[0].count == 2);
  CHECK(f.top[0].sm_share == Approx(0.25));
  CHECK(f.top[0].occupancy == Approx(1.0));  // 16 blocks of 4 warps at 32 registers: all 64 warps

  // Without the device's SM count there is nothing to compare the grids with.
  CHECK_FALSE(c.Result(Facts(0)).known());
}

TEST_CASE("collector: small_batch needs idle SMs and free memory, its time lost is the idle SM capacity") {
  col::RankResult r;
  r.rank = 0;
  r.gpu.cupti_ranks = 1;
  r.gpu.first_ns = 0;
  r.gpu.last_ns = r.gpu.active_ns = 100 * kMs;
  r.gpu.run.busy = 100 * kMs;
  col::SmFillCounter c;
  for (int i = 0; i < 10; ++i) c.OnDeviceWork(Kernel(1, i * 10 * kMs, 10 * kMs, {16, 64, 32, 0}));
  r.sm_fill = c.Result(Facts(128));
  r.memory.allocations = 1;
  r.memory.peak_bytes = 10;
  r.memory.total_bytes = 100;

  auto find = [](const std::vector<col::Finding>& v) -> const col::Finding* {
    for (const auto& f : v)
      if (f.id == "small_batch") return &f;
    return nullptr;
  };
  const auto found = col::RankFindings(r);
  const col::Finding* f = find(found);
  REQUIRE(f);
  CHECK(f->time_lost_s == Approx(0.1 * (1 - 16.0 / 128)));
  CHECK(f->evidence["sm_fill"].get<double>() == Approx(0.125));
  CHECK(f->evidence["top_kernels"][0]["blocks"] == 16);
  CHECK(f->fix.find("batch") != std::string::npos);

  // Memory nearly full: a larger batch would not fit, so no small_batch.
  r.memory.peak_bytes = 60;
  CHECK_FALSE(find(col::RankFindings(r)));
  // Memory never seen: not claimed either.
  r.memory = {};
  CHECK_FALSE(find(col::RankFindings(r)));
}
