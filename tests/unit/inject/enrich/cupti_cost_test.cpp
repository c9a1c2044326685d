// What CUPTI adds to a launch, from the launch calls' own times in and out of windows
// (enrich/cupti_cost.h), fed cycle by cycle: how much each window's calls weigh.
#include <catch2/catch.hpp>

#include "enrich/cupti_cost.h"

namespace gi = gpuwatch::inject;

namespace {

constexpr uint64_t kMs = 1'000'000;

struct Feed {
  gi::CuptiCost cost;
  uint64_t now = 1000 * kMs;
  // `cycles` 10 ms cycles of `calls` launches of `ns` each, in a window or outside.
  void Cycles(int cycles, bool in_window, uint64_t calls, uint64_t ns) {
    for (int i = 0; i < cycles; ++i) {
      gi::LaunchTimes t;
      for (uint64_t k = 0; k < calls; ++k) t.Add(ns);
      cost.Add(now += 10 * kMs, in_window, t);
    }
  }
};

}  // namespace

TEST_CASE("CUPTI's cost: a long window weighs no more than the calls it is set against") {
  // A quiet phase (50 launches a cycle of 6 us) ends inside a window that runs 0.3 s into a
  // launch-heavy phase (1750 a cycle of 4 us, 7 with CUPTI): those 52k calls lean on the 750
  // quiet ones before the window, and read CUPTI's 3 us as 1. Weighed by their calls they
  // outweighed the twenty short windows after it (1750 calls each, 3 us against the heavy
  // phase's own calls): 1.8 us.
  Feed f;
  f.Cycles(20, false, 50, 6000);
  f.Cycles(30, true, 1750, 7000);
  for (int w = 0; w < 20; ++w) {
    f.Cycles(15, false, 1750, 4000);
    f.Cycles(1, true, 1750, 7000);
  }
  INFO("CUPTI read " << f.cost.Ns() << " ns a launch");
  CHECK(f.cost.Ns() == Approx(3000).epsilon(0.05));
  CHECK(f.cost.paired() == 30 * 1750 + 20 * 1750);  // every call counted as paired all the same
}

TEST_CASE("CUPTI's cost: short windows against a long reference weigh by their calls") {
  // The common case, a steady launch loop: every window's calls are fewer than those before
  // it, so each weighs by its calls, and a window with twice the calls counts twice.
  Feed f;
  f.Cycles(15, false, 2000, 4000);
  f.Cycles(1, true, 2000, 6000);   // +2 us, 2000 calls
  f.Cycles(15, false, 2000, 4000);
  f.Cycles(2, true, 2000, 7000);   // +3 us, 4000 calls
  CHECK(f.cost.Ns() == Approx((2000.0 * 2000 + 4000.0 * 3000) / 6000).epsilon(0.01));
}
