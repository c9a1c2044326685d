// The recording API without the library around it: the test gives the recorder its set-up
// (no sender thread), records from threads of its own and reads their rings. The main thread
// never records, so every ring here belongs to a thread that has ended.
#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "record/recorder.h"

namespace gi = gpuwatch::inject;

namespace {

std::atomic<int> g_starts{0}, g_first_records{0};
bool g_start_ok = true;

bool FakeStart() {
  ++g_starts;
  if (g_start_ok) gi::MarkRunning();
  return g_start_ok;
}
void FakeFirstRecord() { ++g_first_records; }

// A process that has not recorded yet, set up with rings of `capacity` records.
void FreshProcess(size_t capacity = 64, bool start_ok = true) {
  gi::RecorderSetup s;
  s.ring_records = capacity;
  s.start = FakeStart;
  s.first_record = FakeFirstRecord;
  gi::SetUpRecorder(s);
  g_start_ok = start_ok;
  g_starts = 0;
  g_first_records = 0;
  gi::g_state.store(static_cast<int>(gi::State::kIdle));
}

// Drains every ring; the records of thread `tid`.
std::vector<gi::Record> DrainAll(uint32_t tid) {
  std::vector<gi::Ring*> rings;
  gi::CollectRings(rings);
  std::vector<gi::Record> out;
  for (gi::Ring* r : rings) {
    const bool mine = r->tid.load() == tid;
    r->Drain([&](const gi::Record& rec) {
      if (mine) out.push_back(rec);
    });
  }
  return out;
}

gi::Record At(uint64_t t_ticks) {
  gi::Record r{};
  r.api = gi::kApiLaunchKernel;
  r.t_ticks = t_ticks;
  return r;
}

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

}  // namespace

TEST_CASE("recorder: a dead thread's ring changes hands only once drained, so its records keep their thread") {
  FreshProcess();
  DrainAll(0);
  uint32_t tid_a = 0, tid_b = 0;
  std::thread([&] {
    tid_a = Tid();
    gi::Emit(At(1));
  }).join();
  std::thread([&] {  // a's records are still in its ring
    tid_b = Tid();
    gi::Emit(At(2));
  }).join();
  std::vector<gi::Ring*> rings;
  gi::CollectRings(rings);
  std::vector<std::pair<uint32_t, uint64_t>> seen;  // (the ring's tid, t_ticks), as the sender sees them
  for (gi::Ring* r : rings) {
    const uint32_t tid = r->tid.load();
    r->Drain([&](const gi::Record& rec) { seen.emplace_back(tid, rec.t_ticks); });
  }
  REQUIRE(seen.size() == 2);
  CHECK(std::count(seen.begin(), seen.end(), std::make_pair(tid_a, uint64_t{1})) == 1);
  CHECK(std::count(seen.begin(), seen.end(), std::make_pair(tid_b, uint64_t{2})) == 1);
}

TEST_CASE("recorder: the first record starts recording once, and each thread's records land in its own ring") {
  FreshProcess();
  DrainAll(0);
  uint32_t tid_a = 0, tid_b = 0;
  std::thread a([&] {
    tid_a = Tid();
    for (uint64_t t = 1; t <= 3; ++t) gi::Emit(At(t));
  });
  a.join();
  const auto ra = DrainAll(tid_a);  // before another thread takes a's ring and tags it
  std::thread b([&] {
    tid_b = Tid();
    gi::Emit(At(10));
  });
  b.join();
  CHECK(g_starts == 1);
  CHECK(g_first_records == 2);  // once per thread
  CHECK(gi::g_state.load() == static_cast<int>(gi::State::kRunning));
  REQUIRE(ra.size() == 3);
  CHECK(ra[0].t_ticks == 1);
  CHECK(ra[2].t_ticks == 3);
  // b's thread took a ring of its own (a dead thread's), tagged with its id.
  const auto rb = DrainAll(tid_b);
  REQUIRE(rb.size() == 1);
  CHECK(rb[0].t_ticks == 10);
}

TEST_CASE("recorder: a full ring drops the new record and counts it, without waiting") {
  FreshProcess();
  DrainAll(0);
  gi::Ring* ring = nullptr;
  uint64_t dropped_here = 0;
  std::thread([&] {
    ring = gi::ThreadRingSlow();
    if (!ring) return;
    const uint64_t before = ring->dropped();
    for (uint64_t i = 0; i < ring->capacity() + 5; ++i) gi::Emit(At(i));
    dropped_here = ring->dropped() - before;
  }).join();
  REQUIRE(ring != nullptr);
  CHECK(dropped_here == 5);
  std::vector<uint64_t> kept;
  ring->Drain([&](const gi::Record& r) { kept.push_back(r.t_ticks); });
  REQUIRE(kept.size() == ring->capacity());
  CHECK(kept.front() == 0);
  CHECK(kept.back() == ring->capacity() - 1);  // the newest records were the ones dropped
}

TEST_CASE("recorder: EnterCall marks the thread in flight until LeaveCall") {
  FreshProcess();
  struct Seen {
    uint64_t since, stream, comm, seq, after;
    uint8_t api;
  } seen{};
  gi::Ring* ring = nullptr;
  std::thread([&] {
    gi::EnsureRing();
    ring = gi::tl_ring;
    if (!ring) return;
    gi::EnterCall(gi::kApiAllReduce, 1234, 0x7f00, 3, 17);
    seen = {ring->inflight.since_ticks.load(), ring->inflight.stream.load(), ring->inflight.comm_id.load(),
            ring->inflight.seq.load(), 0, ring->inflight.api.load()};
    gi::LeaveCall();
    seen.after = ring->inflight.since_ticks.load();
  }).join();
  REQUIRE(ring != nullptr);
  CHECK(seen.since == 1234);
  CHECK(seen.api == gi::kApiAllReduce);
  CHECK(seen.stream == 0x7f00);
  CHECK(seen.comm == 3);
  CHECK(seen.seq == 17);
  CHECK(seen.after == 0);
}

TEST_CASE("recorder: when the start fails, recording is off for good and nothing is kept") {
  FreshProcess(64, /*start_ok=*/false);
  DrainAll(0);
  const uint64_t too_many = gi::DroppedTooManyThreads();
  uint32_t tid = 0;
  bool recording_before = false, recording_after = true, ring_after = true;
  std::thread([&] {
    tid = Tid();
    recording_before = gi::Recording();  // before the first call: it is what starts recording
    gi::Emit(At(1));
    recording_after = gi::Recording();
    gi::EnsureRing();
    gi::EnterCall(gi::kApiStreamSynchronize, 5, 0);  // no ring: nothing to mark, no crash
    ring_after = gi::tl_ring != nullptr;
  }).join();
  CHECK(recording_before);
  CHECK_FALSE(recording_after);
  CHECK_FALSE(ring_after);
  CHECK(g_starts == 1);
  CHECK(gi::g_state.load() == static_cast<int>(gi::State::kOff));
  CHECK(DrainAll(tid).empty());
  CHECK(gi::DroppedTooManyThreads() == too_many);  // not counted as a loss: recording is off
}

TEST_CASE("recorder: before it is set up, records are not kept and recording can still start") {
  gi::SetUpRecorder({});
  gi::g_state.store(static_cast<int>(gi::State::kIdle));
  std::thread([] { gi::Emit(At(1)); }).join();
  CHECK(gi::g_state.load() == static_cast<int>(gi::State::kIdle));
  FreshProcess();
  std::thread([] { gi::Emit(At(2)); }).join();
  CHECK(gi::g_state.load() == static_cast<int>(gi::State::kRunning));
  DrainAll(0);
}

TEST_CASE("recorder: gpuwatch's own thread and a forked child record nothing") {
  FreshProcess();
  bool internal = true, normal = false, had_ring = false, ring_in_child = true, recording_in_child = true;
  std::thread([&] {
    gi::tl_internal = true;
    internal = gi::Recording();
    gi::tl_internal = false;
    normal = gi::Recording();
    gi::EnsureRing();
    had_ring = gi::tl_ring != nullptr;
    gi::OnForkChild();  // what the child of a fork runs
    ring_in_child = gi::tl_ring != nullptr;
    recording_in_child = gi::Recording();
  }).join();
  CHECK_FALSE(internal);
  CHECK(normal);
  CHECK(had_ring);
  CHECK_FALSE(ring_in_child);
  CHECK_FALSE(recording_in_child);
  DrainAll(0);
}

TEST_CASE("recorder: past kMaxThreads live threads, records are counted as too_many_threads") {
  FreshProcess(64);
  DrainAll(0);
  const uint64_t before = gi::DroppedTooManyThreads();
  constexpr int kExtra = 4;
  std::mutex mu;
  std::condition_variable cv;
  int recorded = 0;
  bool release = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < gi::kMaxThreads + kExtra; ++i) {
    threads.emplace_back([&] {
      gi::Emit(At(1));
      std::unique_lock<std::mutex> lock(mu);
      ++recorded;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });  // hold the ring until every thread recorded
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return recorded == gi::kMaxThreads + kExtra; });
    release = true;
    cv.notify_all();
  }
  for (auto& t : threads) t.join();
  CHECK(gi::DroppedTooManyThreads() - before == kExtra);
  std::vector<gi::Ring*> rings;
  gi::CollectRings(rings);
  CHECK(rings.size() == static_cast<size_t>(gi::kMaxThreads));
  DrainAll(0);
}

TEST_CASE("recorder: one hooked call in kHookCostEvery times its hook in place, the real call left out") {
  FreshProcess();
  gi::g_hook_cost_max_ticks.store(UINT64_MAX);
  uint64_t ticks = 0, samples = 0, calls = 0;
  std::thread([&] {
    gi::EnsureRing();
    gi::Ring* ring = gi::tl_ring;
    if (!ring) return;
    // A "real call" of ~20 us between the stamps: left out of what the probe adds.
    for (uint32_t i = 0; i < 3 * gi::kHookCostEvery; ++i, ++calls) {
      const gi::HookCostProbe probe;
      const uint64_t t0 = gi::Stamp();
      if (i % gi::kHookCostEvery == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
      gi::Record r{};
      r.dur_ticks = probe.StampCallEnd() - t0;
      probe.Done(r);
    }
    ticks = ring->hook_cost.ticks.load();
    samples = ring->hook_cost.samples.load();
    const gi::HookCostSums sums = gi::SumHookCosts({ring});
    CHECK(sums.ticks == ticks);
    CHECK(sums.samples == samples);
  }).join();
  REQUIRE(calls == 3 * gi::kHookCostEvery);
  CHECK(samples == 3);  // the first call of each kHookCostEvery, which slept
  // Each sample is the probe's own few stamps, not the 20 us "call": far under 20 us of ticks
  // (on TSC, a few GHz x 20 us = tens of thousands of ticks; as ns, 20000).
  CHECK(ticks / samples < 5000);

  // A sample over the limit (a preemption) is left out.
  gi::g_hook_cost_max_ticks.store(0);
  std::thread([&] {
    gi::EnsureRing();
    const uint64_t before = gi::tl_ring->hook_cost.samples.load();  // a reused ring keeps its sums
    for (uint32_t i = 0; i < gi::kHookCostEvery; ++i) gi::HookCostProbe().Done(gi::Record{});
    CHECK(gi::tl_ring->hook_cost.samples.load() == before);
  }).join();

  // A hook that captured its call site may take kSiteCostFactor times the limit: a hook
  // spinning 100k ticks (tens of us) against a limit of 10k is left out, unless it did.
  constexpr uint64_t kSpin = 100000;
  gi::g_hook_cost_max_ticks.store(kSpin / 10);
  std::thread([&] {
    gi::EnsureRing();
    auto one_sample = [](uint32_t site_id) {
      const uint64_t before = gi::tl_ring->hook_cost.samples.load();
      for (uint32_t i = 0; i < gi::kHookCostEvery; ++i) {
        const gi::HookCostProbe probe;
        gi::Record r{};
        r.site_id = site_id;
        if (i == 0)
          for (const uint64_t t = gi::Stamp(); gi::Stamp() - t < kSpin;) {
          }
        probe.Done(r);
      }
      return gi::tl_ring->hook_cost.samples.load() - before;
    };
    gi::tl_ring->hook_cost.countdown = 0;  // the next call is sampled
    CHECK(one_sample(0) == 0);
    gi::tl_ring->hook_cost.countdown = 0;
    CHECK(one_sample(7) == 1);
  }).join();
  gi::g_hook_cost_max_ticks.store(0);
}
