// Steps without NVTX (interpret/step_pattern.h): the period of a loop's launches, found a
// few steps in, starting where the loop pauses for its next batch.
#include <catch2/catch.hpp>

#include <algorithm>

#include "common/thresholds.h"
#include "interpret/step_pattern.h"

namespace dg = gpuwatch::collector;

namespace {
constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;
}

TEST_CASE("collector: a step of identical launches and one copy has the copy's period, not 1") {
  // Per step: a copy after a 4 ms pause, then 32 launches of one kernel 10 us apart.
  std::vector<uint64_t> sig;
  for (int s = 0; s < 10; ++s) {
    sig.push_back(7);
    for (int k = 0; k < 32; ++k) sig.push_back(3);
  }
  CHECK(dg::FindPeriod(sig, dg::kLaunchMaxPeriod) == 33);
  // Unweighted, period 1 repeats 97% of the anchors; weighted by kind it is half.
  CHECK(dg::FindPeriod(std::vector<uint64_t>(sig.begin(), sig.begin() + 60), dg::kLaunchMaxPeriod) == 0);
}

TEST_CASE("collector: launch steps are found while the run goes on and open after the pause") {
  dg::StepPattern p(dg::kLaunchAnchorWindow, dg::kLaunchMaxPeriod, dg::kFirstLaunchSearch);
  uint64_t t = 1000 * kMs;
  std::vector<uint64_t> step_starts;
  int locked_at = -1;
  for (int s = 0; s < 30; ++s) {
    // The window begins mid-step: two launches of the previous step's tail come first.
    if (s == 0) {
      p.Add(5, t);
      p.Add(6, t + 10 * kUs);
    }
    t += 4 * kMs;  // loading the next batch
    step_starts.push_back(t);
    for (int k = 0; k < 20; ++k) p.Add(100 + k, t + k * 10 * kUs);
    p.Add(5, t + 300 * kUs);  // optimizer
    p.Add(6, t + 310 * kUs);
    t += 310 * kUs;
    if (locked_at < 0 && p.locked()) locked_at = s;
  }
  CHECK(locked_at >= 0);
  CHECK(locked_at <= 8);  // a few steps in, not at the end
  const auto& b = p.boundaries();
  REQUIRE(b.size() >= 20);
  // Every boundary is the first launch after a pause.
  for (uint64_t x : b) CHECK(std::find(step_starts.begin(), step_starts.end(), x) != step_starts.end());
  CHECK(p.open_step_complete());
  std::vector<dg::StepMark> steps;
  uint64_t total = 0;
  dg::StepStats stats;
  REQUIRE(p.Result(&steps, &total, &stats));
  CHECK(total == 29);  // 30 starts: 29 closed steps; the last is closed by the finder at the end
}

TEST_CASE("collector: sync steps end at the sync before the pause, and the teardown's sync closes no step") {
  // Per step: 5 ms loading the batch, a .item() (kind 1) mid-step, the step's closing
  // stream sync (kind 2). The run ends with a cudaDeviceSynchronize (kind 3).
  dg::StepPattern p(dg::kAnchorWindow, dg::kMaxPeriod, dg::kFirstSearch, /*anchors_end_steps=*/true);
  uint64_t t = 1000 * kMs;
  std::vector<uint64_t> step_ends;
  for (int s = 0; s < 40; ++s) {
    t += 5 * kMs;
    p.Add(1, t + kMs);  // item: the time is the sync's end
    p.Add(2, t + 3 * kMs);
    t += 3 * kMs;
    step_ends.push_back(t);
  }
  REQUIRE(p.locked());
  p.Add(3, t + kMs);
  const auto& b = p.boundaries();
  REQUIRE(b.size() == 40);  // every step's end; the first step's start is unknown
  for (size_t i = 0; i < b.size(); ++i) CHECK(b[i] == step_ends[i]);
  CHECK_FALSE(p.open_step_complete());  // what follows the last sync is teardown
  std::vector<dg::StepMark> steps;
  uint64_t total = 0;
  dg::StepStats stats;
  REQUIRE(p.Result(&steps, &total, &stats));
  CHECK(total == 39);
  CHECK(stats.Percentile(0.5) == 8 * kMs);
}

TEST_CASE("collector: a launch step is complete only when all its anchors came, and an odd anchor in the boundary's place is no boundary") {
  dg::StepPattern p(dg::kLaunchAnchorWindow, dg::kLaunchMaxPeriod, dg::kFirstLaunchSearch, false, ~uint64_t{1});
  uint64_t t = 1000 * kMs;
  for (int s = 0; s < 30; ++s) {
    t += 4 * kMs;
    // The first launch after the pause carries the pause bit, except now and then.
    p.Add((10 << 1) | (s % 7 != 3), t);
    for (int k = 0; k < 5; ++k) p.Add(20 + k, t + (k + 1) * 10 * kUs);
    t += 60 * kUs;
  }
  REQUIRE(p.locked());
  CHECK(p.boundaries().size() == 30);  // the pause bit does not change the kind of anchor
  CHECK(p.open_step_complete());
  t += 4 * kMs;
  p.Add(10 << 1 | 1, t);  // a new step opens...
  CHECK_FALSE(p.open_step_complete());
  for (int k = 0; k < 5; ++k) p.Add(20 + k, t + (k + 1) * 10 * kUs);
  CHECK(p.open_step_complete());  // ...and is whole
  p.Add(99 << 1, t + kMs);  // teardown: a copy in the boundary's place
  CHECK(p.boundaries().size() == 31);
}
