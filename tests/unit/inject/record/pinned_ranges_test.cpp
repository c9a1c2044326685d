#include <catch2/catch.hpp>

#include <thread>

#include "record/pinned_ranges.h"

using gpuwatch::inject::PinnedRanges;

TEST_CASE("pinned ranges classify addresses inside and outside") {
  auto map = std::make_unique<PinnedRanges>();
  char a[100], b[100], c[100];
  map->Add(b, 100);
  map->Add(a, 50);
  CHECK(map->Contains(a));
  CHECK(map->Contains(a + 49));
  CHECK_FALSE(map->Contains(a + 50));
  CHECK(map->Contains(b + 99));
  CHECK_FALSE(map->Contains(c));
  map->Remove(b);
  CHECK_FALSE(map->Contains(b + 10));
  CHECK(map->Contains(a + 10));
}

TEST_CASE("pinned ranges count overflow instead of growing") {
  auto map = std::make_unique<PinnedRanges>();
  std::vector<char> buf(PinnedRanges::kMaxRanges * 2 + 10);
  for (size_t i = 0; i < PinnedRanges::kMaxRanges + 5; ++i) map->Add(&buf[i * 2], 1);
  CHECK(map->overflow() == 5);
  CHECK(map->Contains(&buf[0]));
  CHECK_FALSE(map->Contains(&buf[1]));
}

TEST_CASE("pinned ranges stay consistent for readers while a writer changes them") {
  auto map = std::make_unique<PinnedRanges>();
  static char stable[64];
  static char churn[64][16];
  map->Add(stable, sizeof stable);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int round = 0; round < 2000; ++round) {
      for (auto& c : churn) map->Add(c, sizeof c);
      for (auto& c : churn) map->Remove(c);
    }
    stop = true;
  });
  uint64_t wrong = 0;
  while (!stop) {
    if (!map->Contains(stable + 7)) ++wrong;
  }
  writer.join();
  CHECK(wrong == 0);
}
