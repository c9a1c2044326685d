// Where CUPTI stopped recording mid-run for good (an application's profiler took it:
// Batch.cupti_ended_ns, interpret/coverage.h): the device timeline ends there. The calls
// made after it are no gap in a sample, and the steps after it have no device figures.
#include <catch2/catch.hpp>

#include "analyze/rank_model.h"
#include "fixtures.h"
#include "report/figures_json.h"

using namespace gwtest;

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

col::RankResult Run(const wire::Batch& b) {
  col::RankModel m;
  m.OnBatch(b);
  return m.Result();
}

}  // namespace

TEST_CASE("collector: a profiler that takes CUPTI mid-run ends the device timeline there, and is no sampling gap") {
  // The library's first window recorded [0, 300) ms whole; an application's profiler took
  // CUPTI at 300 ms, and the job launched 200 more kernels. The figures are those of the
  // timeline until then, exact: counted as calls outside windows, the 200 made the run read
  // as sampled and its 300 kernels as 500 (e2e `faults: a profiler that takes CUPTI mid-run ...`).
  SampledBatch s({{0, 300 * kMs}});
  s.b.set_cupti_ended_ns(300 * kMs);
  for (uint64_t ms = 0; ms < 300; ++ms) s.Launch(ms * kMs + kMs / 2, true, 400 * kUs);
  for (uint64_t ms = 300; ms < 500; ++ms) s.Launch(ms * kMs + kMs / 2, false, 0);
  const col::RankResult r = Run(s.b);
  const auto g = col::GpuJson(r.gpu);
  CHECK(g["coverage"]["sampled"] == false);
  CHECK(g["coverage"]["enqueue_share"].get<double>() == 1.0);
  CHECK(g["kernels"]["count"] == 300);
  CHECK(g["busy_s"].get<double>() == Approx(0.12).epsilon(1e-6));
  CHECK(r.host_last_ns > 499 * kMs);  // the rank's own span is the whole run

  // Sampled before the hand-over: the windows stand for the calls until it only. [0, 40) ms
  // records the start; [100, 150) ms 50 of the 160 launches after it and before the
  // hand-over at 200 ms; 200 launches follow it.
  SampledBatch t({{0, 40 * kMs}, {100 * kMs, 150 * kMs}});
  t.b.set_cupti_ended_ns(200 * kMs);
  for (uint64_t ms = 0; ms < 400; ++ms) {
    const bool in = ms < 40 || (ms >= 100 && ms < 150);
    t.Launch(ms * kMs + kMs / 2, in, in ? 400 * kUs : 0);
  }
  const auto h = col::GpuJson(Run(t.b).gpu);
  CHECK(h["coverage"]["sampled"] == true);
  CHECK(h["kernels"]["count"] == 200);  // 40 + 50 x 160 / 50 (with the 200 after: 400)
  CHECK(h["busy_s"].get<double>() == Approx(0.08).epsilon(1e-6));
  CHECK(h["active_s"].get<double>() == Approx(0.2).epsilon(0.01));  // the timeline's span ends at the hand-over
}

namespace {

// 20 NVTX steps of 10 ms, each nine launches of 400 us kernels; CUPTI records every kernel
// (GPUWATCH_CUPTI=full, or the budget's first window, open since the start) until a profiler
// takes it as step 10 starts.
col::RankResult HandedOverAtStep10(wire::CuptiMode mode) {
  constexpr uint64_t kEnded = 100 * kMs + kUs;
  SampledBatch s({});
  if (mode == wire::CUPTI_MODE_BUDGET) {
    auto* w = s.b.add_cupti_windows();
    w->set_start_ns(1);
    w->set_end_ns(kEnded);
  }
  s.b.mutable_overhead()->set_cupti_mode(mode);
  s.b.set_cupti_ended_ns(kEnded);
  auto* name = s.b.add_kernel_names();
  name->set_id(1);
  name->set_name("train_step");
  for (uint64_t step = 0; step < 20; ++step) {
    const uint64_t start = step * 10 * kMs + kUs;
    for (uint64_t k = 0; k < 9; ++k) s.Launch(start + k * kMs + kMs / 2, step < 10, 400 * kUs, 2);
    Add(&s.b, wire::NVTX_RANGE, start, 10 * kMs - 2 * kUs)->set_name_id(1);
  }
  return Run(s.b);
}

}  // namespace

TEST_CASE("collector: the steps after a profiler took CUPTI have no device figures, traced whole or sampled") {
  // Counted as recorded, the last ten steps read as idle GPUs and halved the mean step's compute.
  for (const auto mode : {wire::CUPTI_MODE_FULL, wire::CUPTI_MODE_BUDGET}) {
    INFO("mode " << mode);
    const col::RankResult r = HandedOverAtStep10(mode);
    CHECK_FALSE(r.gpu.coverage.sampled);
    CHECK(r.gpu.kernel_count == 90);
    REQUIRE(r.per_step.known);
    CHECK(r.per_step.steps == 10);  // the steps CUPTI recorded whole
    CHECK(r.per_step.compute_ms == Approx(3.6).epsilon(1e-6));
  }
}

TEST_CASE("collector: findings from the device timeline are scaled to the steps it spans, not past a profiler's hand-over") {
  // Scaled by count to all 20 steps, the GPU idle of the ten recorded ones was counted twice
  // (the e2e profiler test: 334 ms lost in a 203 ms run).
  const col::RankResult r = HandedOverAtStep10(wire::CUPTI_MODE_FULL);
  REQUIRE(r.per_step.steps == 10);
  const double recorded_host_idle_s = r.per_step.idle_ms[col::kIdleHost] * 10 / 1e3;
  REQUIRE(recorded_host_idle_s > 0.03);
  const col::Finding* data = nullptr;
  for (const col::Finding& f : r.findings)
    if (f.id == "data_loading") data = &f;
  REQUIRE(data != nullptr);
  CHECK(data->time_lost_s == Approx(recorded_host_idle_s).epsilon(0.01));
  CHECK(data->share <= 1.0);
}
