#include <catch2/catch.hpp>

#include <thread>

#include "record/ring.h"

using gpuwatch::inject::Record;
using gpuwatch::inject::Ring;

TEST_CASE("ring keeps order and drops when full without blocking") {
  Ring ring(8);
  for (uint64_t i = 0; i < 10; ++i) {
    Record r{};
    r.t_ticks = i;
    ring.Push(r);
  }
  CHECK(ring.dropped() == 2);
  std::vector<uint64_t> seen;
  ring.Drain([&](const Record& r) { seen.push_back(r.t_ticks); });
  CHECK(seen == std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  Record r{};
  r.t_ticks = 42;
  CHECK(ring.Push(r));
  seen.clear();
  ring.Drain([&](const Record& x) { seen.push_back(x.t_ticks); });
  CHECK(seen == std::vector<uint64_t>{42});
}

TEST_CASE("ring hands every record across threads exactly once") {
  Ring ring(1024);
  constexpr uint64_t kN = 2'000'000;
  std::atomic<bool> done{false};
  uint64_t next = 0, mismatches = 0, received = 0;
  std::thread consumer([&] {
    while (!done.load() || received + ring.dropped() < kN) {
      ring.Drain([&](const Record& r) {
        if (r.t_ticks < next) ++mismatches;  // order must be preserved
        next = r.t_ticks + 1;
        if (r.bytes != r.t_ticks * 3) ++mismatches;  // no torn record
        ++received;
      });
    }
  });
  for (uint64_t i = 0; i < kN; ++i) {
    Record r{};
    r.t_ticks = i;
    r.bytes = i * 3;
    ring.Push(r);
  }
  done = true;
  consumer.join();
  CHECK(mismatches == 0);
  CHECK(received + ring.dropped() == kN);
  CHECK(received > 0);
}
