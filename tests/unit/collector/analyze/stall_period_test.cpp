// Periodic stalls among a rank's long steps (analyze/stall_period.h).
#include <catch2/catch.hpp>

#include "analyze/stall_period.h"

namespace col = gpuwatch::collector;
using Steps = std::vector<size_t>;

TEST_CASE("collector: periodic stalls are the long steps on one regular period, noise left out") {
  SECTION("a checkpoint every 10 steps") {
    const col::StallPeriod p = col::FindStallPeriod({9, 19, 29, 39});
    CHECK(p.period == 10);
    CHECK(p.stalls == Steps{9, 19, 29, 39});
  }
  SECTION("two preempted steps among them: still every 10, without them") {
    const col::StallPeriod p = col::FindStallPeriod({3, 9, 15, 19, 29, 39});
    CHECK(p.period == 10);
    CHECK(p.stalls == Steps{9, 19, 29, 39});
  }
  SECTION("one checkpoint that did not run long: the period holds") {
    const col::StallPeriod p = col::FindStallPeriod({9, 19, 39});
    CHECK(p.period == 10);
    CHECK(p.stalls == Steps{9, 19, 39});
  }
  SECTION("two long steps alone are their own period") {
    CHECK(col::FindStallPeriod({9, 19}).period == 10);
  }
  SECTION("irregular long steps are none") {
    CHECK(col::FindStallPeriod({5, 17, 22, 31}).period == 0);
    CHECK(col::FindStallPeriod({5, 17, 22, 31}).stalls.empty());
    CHECK(col::FindStallPeriod({4, 5}).period == 0);  // neighbours: no period under 2 steps
    CHECK(col::FindStallPeriod({7}).period == 0);
  }
}
