// The utilization series (analyze/busy_series.h): busy shares of all work and of useful work
// (all but NCCL kernels) per window, from the first work's start, folded as the run grows;
// and the device timeline's useful busy (gpu.compute_busy) through the whole rank model.
#include <catch2/catch.hpp>

#include "analyze/busy_series.h"
#include "analyze/rank_model.h"
#include "analyze/utilization_shape.h"
#include "fixtures.h"
#include "report/figures_json.h"

using namespace gwtest;

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

}  // namespace

TEST_CASE("collector: busy series keeps all work and useful work apart, from the first work's start") {
  col::BusySeries s;
  s.Start(5 * kMs);
  // A useful span closed before the span of all work that holds it (an NCCL kernel still ran).
  s.Add(5 * kMs, 12 * kMs, true);
  s.Add(5 * kMs, 25 * kMs);
  s.Start(1 * kMs);  // ignored once started
  CHECK(s.origin_ns() == 5 * kMs);
  REQUIRE(s.size() == 2);
  CHECK(s.Fraction(0) == Approx(1.0));
  CHECK(s.Fraction(0, true) == Approx(0.7));
  CHECK(s.Fraction(1) == Approx(1.0));  // 15..25 ms, the last window up to the end
  CHECK(s.Fraction(1, true) == Approx(0.0));
}

TEST_CASE("collector: busy series folds both curves alike when the run outgrows its windows") {
  col::BusySeries s;
  s.Start(0);
  // All work: every window full; useful work: the first half of every 10 ms window.
  const uint64_t windows = col::BusySeries::kMaxWindows * 2;
  s.Add(0, windows * 10 * kMs);
  for (uint64_t w = 0; w < windows; ++w) s.Add(w * 10 * kMs, w * 10 * kMs + 5 * kMs, true);
  CHECK(s.window_ns() == 20 * kMs);
  REQUIRE(s.size() == col::BusySeries::kMaxWindows);
  for (size_t i = 0; i < s.size(); ++i) {
    CHECK(s.Fraction(i) == Approx(1.0));
    CHECK(s.Fraction(i, true) == Approx(0.5));
  }
}

TEST_CASE("collector: an NCCL kernel keeps the GPU busy, not usefully busy") {
  // 30 steps of 10 ms: 3 ms of a kernel, then 6 ms of an NCCL kernel waiting for its peers.
  wire::Batch b;
  auto* k = b.add_kernel_names();
  k->set_id(1);
  k->set_name("_Z6gemm_fPfi");
  auto* n = b.add_kernel_names();
  n->set_id(2);
  n->set_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  for (uint64_t s = 0; s < 30; ++s) {
    const uint64_t t = 1 * kMs + s * 10 * kMs;
    Work(&b, wire::ACTIVITY_KERNEL, t, t + 3 * kMs, 0, 1)->set_name_id(1);
    Work(&b, wire::ACTIVITY_KERNEL, t + 3 * kMs, t + 9 * kMs, 0, 2)->set_name_id(2);
  }
  col::RankModel m;
  m.OnBatch(b);
  const col::RankResult r = m.Result();
  const auto g = col::GpuJson(r.gpu);
  CHECK(g["busy_s"].get<double>() == Approx(0.27));
  CHECK(g["compute_busy_s"].get<double>() == Approx(0.09));
  // Active: the first work's start (1 ms) to the last one's end (300 ms).
  CHECK(g["compute_busy"].get<double>() == Approx(0.09 / 0.299).epsilon(0.001));
  CHECK(g["utilization"].get<double>() == Approx(0.27 / 0.299).epsilon(0.001));
  // The series: all work 90% of each 10 ms window, useful work 30%.
  const auto& ser = g["utilization_series"];
  REQUIRE(ser["busy"].size() == ser["compute_busy"].size());
  CHECK(ser["busy"][5].get<double>() == Approx(0.9));
  CHECK(ser["compute_busy"][5].get<double>() == Approx(0.3));
  // The shape reads the useful curve: steady and low, not the steady high of all work.
  CHECK(r.gpu_shape.kind == col::UtilizationShape::kSteadyLow);
  CHECK(r.gpu_shape.mean == Approx(0.3).epsilon(0.05));
}

TEST_CASE("collector: the shape reads the windows mostly inside the steps' span, not a sliver at either end") {
  col::BusySeries s;
  s.Start(0);
  s.Add(0, 100 * kMs, true);  // ten 10 ms windows, all busy
  // Steps from 8 ms to 93 ms: the first window holds 2 ms of them, the last 3 ms; both left out.
  const std::vector<double> w = col::SeriesWindows(s, 8 * kMs, 93 * kMs, true);
  CHECK(w.size() == 8);
  // Half inside is enough: 5 ms of the first window and 5 of the last.
  CHECK(col::SeriesWindows(s, 5 * kMs, 95 * kMs, true).size() == 10);
  CHECK(col::SeriesWindows(s, 0, 0, true).size() == 10);  // no span: every window
}
