// Launches summarized on their thread (record/launch_summary.h): runs closed by the thread's
// next record, a pause or their length; quiet runs taken by the sender; tallies per kernel;
// every launch counted once whatever the owner and the sender see of each other.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <thread>

#include "record/launch_summary.h"
#include "record/record.h"

namespace gi = gpuwatch::inject;

namespace {

constexpr gi::LaunchSummary::Limits kLimits{100, 1000, 50};  // gap, length, stall (ticks)

struct Owner {
  std::unique_ptr<gi::LaunchSummary> s = std::make_unique<gi::LaunchSummary>();
  std::vector<gi::Record> markers;  // what the hook would push into the ring
  bool Launch(uintptr_t kernel, uint64_t t, uint64_t dur = 5, uint8_t api = gi::kApiLaunchKernel) {
    gi::Record m;
    bool closed = false;
    const bool ok = s->Add(api, kernel, t, dur, kLimits, &m, &closed);
    if (closed) markers.push_back(m);
    return ok;
  }
  void OtherCall() {
    gi::Record m;
    if (s->CloseOpenRun(&m)) markers.push_back(m);
  }
};

}  // namespace

TEST_CASE("launch summary: a run ends at the thread's next record, with its launches and times") {
  Owner o;
  for (uint64_t t = 1000; t < 1100; t += 10) REQUIRE(o.Launch(0xA0, t));
  CHECK(o.markers.empty());  // nothing pushed per launch
  o.OtherCall();
  REQUIRE(o.markers.size() == 1);
  const gi::Record& m = o.markers[0];
  CHECK(m.api == gi::kLaunchRun);
  const gi::LaunchSummary::Run r = o.s->FromMarker(m);
  CHECK(r.count == 10);
  CHECK(r.first_ticks == 1000);
  CHECK(r.end_ticks == 1095);
  CHECK(r.ticks == 50);
  CHECK(r.timed_ticks == 50);
  CHECK(r.stalls == 0);
  o.OtherCall();  // no launch since: no marker
  CHECK(o.markers.size() == 1);
}

TEST_CASE("launch summary: a pause or a long run starts a new run, and stalls are counted apart") {
  Owner o;
  o.Launch(1, 0);
  o.Launch(1, 10);
  o.Launch(1, 500);  // 485 ticks after the last end: over the gap
  REQUIRE(o.markers.size() == 1);
  CHECK(o.s->FromMarker(o.markers[0]).count == 2);
  for (uint64_t t = 510; t < 2000; t += 20) o.Launch(1, t);  // continuous, but longer than 1000
  REQUIRE(o.markers.size() == 2);
  const gi::LaunchSummary::Run long_run = o.s->FromMarker(o.markers[1]);
  CHECK(long_run.first_ticks == 500);
  CHECK(long_run.end_ticks - long_run.first_ticks <= 1000);
  o.Launch(1, 2000, 80);  // a stall: counted, its time out of the timed sum
  o.OtherCall();
  const gi::LaunchSummary::Run last = o.s->FromMarker(o.markers.back());
  CHECK(last.stalls == 1);
  CHECK(last.ticks - last.timed_ticks == 80);
}

TEST_CASE("launch summary: the sender takes a quiet run, and the thread's next launch starts a new one") {
  Owner o;
  o.Launch(1, 100);
  o.Launch(2, 110);
  uint64_t open_since = UINT64_MAX;
  // Not quiet yet at 150: left to the thread, and the settled time may not pass its start.
  CHECK(o.s->TakeQuietRun(150, 100, false, &open_since).count == 0);
  CHECK(open_since == 100);
  open_since = UINT64_MAX;
  const gi::LaunchSummary::Run taken = o.s->TakeQuietRun(400, 100, false, &open_since);
  CHECK(taken.count == 2);
  CHECK(taken.first_ticks == 100);
  CHECK(taken.end_ticks == 115);
  CHECK(open_since == UINT64_MAX);
  o.OtherCall();  // taken already: the thread closes nothing
  CHECK(o.markers.empty());
  o.Launch(1, 130);  // reads the take: a new run from 130 (not the 100 it had)
  o.OtherCall();
  REQUIRE(o.markers.size() == 1);
  const gi::LaunchSummary::Run next = o.s->FromMarker(o.markers[0]);
  CHECK(next.count == 1);
  CHECK(next.first_ticks == 130);
  // The last batch takes whatever is open.
  o.Launch(3, 200);
  CHECK(o.s->TakeQuietRun(201, 100, true, &open_since).count == 1);
}

TEST_CASE("launch summary: tallies per kernel and API ship their change once") {
  Owner o;
  for (int i = 0; i < 7; ++i) o.Launch(0xA0, 10 * i);
  for (int i = 0; i < 3; ++i) o.Launch(0xB0, 100 + i, 5, gi::kApiDriverLaunchKernel);
  o.Launch(0xA0, 200, 5, gi::kApiDriverLaunchKernel);  // the same kernel through the driver: its own tally
  o.Launch(0, 210);  // an unknown kernel: a key of its own
  std::map<std::pair<uint8_t, uintptr_t>, std::pair<uint64_t, uint64_t>> got;
  auto take = [&] {
    got.clear();
    o.s->TakeTallies([&](uint8_t api, uintptr_t k, uint64_t n, uint64_t ticks) { got[{api, k}] = {n, ticks}; });
  };
  take();
  REQUIRE(got.size() == 4);
  CHECK(got[{gi::kApiLaunchKernel, 0xA0}] == std::make_pair(uint64_t{7}, uint64_t{35}));
  CHECK(got[{gi::kApiDriverLaunchKernel, 0xB0}].first == 3);
  CHECK(got[{gi::kApiDriverLaunchKernel, 0xA0}].first == 1);
  CHECK(got[{gi::kApiLaunchKernel, 1}].first == 1);
  take();
  CHECK(got.empty());  // nothing new
  o.Launch(0xA0, 300);
  take();
  REQUIRE(got.size() == 1);
  CHECK(got[{gi::kApiLaunchKernel, 0xA0}].first == 1);
}

TEST_CASE("launch summary: a full table refuses the launch, which the hook then records") {
  Owner o;
  uint64_t refused = 0, added = 0;
  for (uintptr_t k = 1; k <= 4 * gi::LaunchSummary::kSlots; ++k) (o.Launch(k * 4096, k) ? added : refused)++;
  CHECK(added <= gi::LaunchSummary::kSlots);
  CHECK(added >= gi::LaunchSummary::kSlots / 2);
  CHECK(refused > 0);
  uint64_t tallied = 0;
  o.s->TakeTallies([&](uint8_t, uintptr_t, uint64_t n, uint64_t) { tallied += n; });
  CHECK(tallied == added);
}

TEST_CASE("launch summary: with the sender taking runs while the thread launches, every launch counts once") {
  // The owner launches and now and then makes another call; the sender drains the markers
  // and takes quiet runs at the same time. Runs and tallies must both add up to the launches.
  auto s = std::make_unique<gi::LaunchSummary>();
  constexpr uint64_t kLaunches = 400000;
  std::atomic<uint64_t> clock{1};
  std::atomic<bool> done{false};
  // A single-producer queue of markers, as the ring would be.
  std::vector<gi::Record> queue(kLaunches + 16);
  std::atomic<size_t> head{0};
  std::atomic<bool> refused{false};
  std::thread owner([&] {
    gi::Record m;
    bool closed = false;
    auto push = [&] {
      const size_t h = head.load(std::memory_order_relaxed);
      queue[h] = m;
      head.store(h + 1, std::memory_order_release);
    };
    for (uint64_t i = 0; i < kLaunches; ++i) {
      const uint64_t t = clock.fetch_add(3);
      if (!s->Add(gi::kApiLaunchKernel, 0x100 + (i % 5) * 64, t, 2, kLimits, &m, &closed)) refused = true;
      if (closed) push();
      if (i % 97 == 0 && s->CloseOpenRun(&m)) push();
    }
    done = true;
  });
  uint64_t from_runs = 0, from_tallies = 0;
  size_t tail = 0;
  uint64_t last_end = 0;
  bool ordered = true;
  auto drain = [&](bool all) {
    const size_t h = head.load(std::memory_order_acquire);
    for (; tail < h; ++tail) {
      const gi::LaunchSummary::Run r = s->FromMarker(queue[tail]);
      if (r.count == 0) continue;
      from_runs += r.count;
      ordered = ordered && r.first_ticks >= last_end;
      last_end = r.end_ticks;
    }
    uint64_t open = UINT64_MAX;
    const gi::LaunchSummary::Run q = s->TakeQuietRun(clock.load() + 1000, 10, all, &open);
    if (q.count) {
      from_runs += q.count;
      ordered = ordered && q.first_ticks >= last_end;
      last_end = q.end_ticks;
    }
    s->TakeTallies([&](uint8_t, uintptr_t, uint64_t n, uint64_t) { from_tallies += n; });
  };
  while (!done.load()) drain(false);
  owner.join();
  drain(true);
  CHECK_FALSE(refused.load());
  CHECK(from_runs == kLaunches);
  CHECK(from_tallies == kLaunches);
  CHECK(ordered);  // runs never overlap what was taken before them
}
