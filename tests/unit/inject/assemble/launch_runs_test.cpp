// Launches summarized on their thread (record/launch_summary.h) through the assembler: a run
// goes out as one CUDA_LAUNCH_RUN event in its place among the thread's calls, its kernels as
// named tallies, and the overhead budget counts its launches as if they had been records.
#include <catch2/catch.hpp>

#include "assembler_fixture.h"

using namespace assembler_test;  // NOLINT(google-build-using-namespace): the tests' fixture

namespace {

constexpr gi::LaunchSummary::Limits kLimits{1000, 100000, 500};

// What the hook does for a launch outside a window: into the summary, a marker into the
// ring when it closed a run.
void Summarize(gi::Ring& ring, uintptr_t kernel, uint64_t t, uint64_t dur = 4, uint8_t api = gi::kApiLaunchKernel) {
  gi::Record m;
  bool closed = false;
  REQUIRE(ring.launches.Add(api, kernel, t, dur, kLimits, &m, &closed));
  if (closed) ring.Push(m);
}
// What Emit does for any other record.
void Record(gi::Ring& ring, const gi::Record& r) {
  gi::Record m;
  if (ring.launches.CloseOpenRun(&m)) ring.Push(m);
  ring.Push(r);
}
gi::Record Sync(uint64_t t) {
  gi::Record r{};
  r.api = gi::kApiStreamSynchronize;
  r.t_ticks = t;
  r.dur_ticks = 100;
  return r;
}

}  // namespace

TEST_CASE("assembler: a run of summarized launches goes out in its place, its kernels as tallies") {
  Fixture fx;
  static const char stub = 0, other = 0;
  const uint32_t k1 = fx.names->Register(&stub, "_Z4stubv");
  const uint32_t k2 = fx.names->Register(&other, "_Z5otherv");
  for (uint64_t t = 100; t < 200; t += 10) Summarize(fx.ring, reinterpret_cast<uintptr_t>(&stub), t);
  Summarize(fx.ring, reinterpret_cast<uintptr_t>(&other), 200, 4, gi::kApiDriverLaunchKernel);
  Record(fx.ring, Sync(300));
  Summarize(fx.ring, reinterpret_cast<uintptr_t>(&stub), 500);
  gi::CuptiBudget::Cycle seen;
  fx.cycle.poll_activities = [&](const gi::CuptiBudget::Cycle& drained,
                                 const std::function<void(const gi::ActivityRecord&)>&) { seen = drained; };
  const w::Batch b = fx.Assemble();
  // The run before the sync, the sync, the quiet run after it (taken by the sender).
  REQUIRE(b.events_size() == 3);
  const w::Event& run = b.events(0);
  CHECK(run.api() == w::CUDA_LAUNCH_RUN);
  CHECK(run.calls() == 11);
  CHECK(run.t_ns() == kEpochNs + 300);
  CHECK(run.dur_ns() == (204 - 100) * 3);
  CHECK(run.calls_ns() == 11 * 4 * 3);
  CHECK(run.tid() == 42);
  CHECK(b.events(1).api() == w::CUDA_STREAM_SYNCHRONIZE);
  CHECK(b.events(2).api() == w::CUDA_LAUNCH_RUN);
  CHECK(b.events(2).calls() == 1);
  CHECK(b.events(2).t_ns() == kEpochNs + 1500);
  // Tallies: the change per kernel and API, named, the names defined once.
  uint64_t stub_launches = 0, other_launches = 0, stub_ns = 0;
  for (const w::LaunchTally& t : b.launch_tallies()) {
    if (t.name_id() == k1 && t.api() == w::CUDA_LAUNCH_KERNEL) stub_launches += t.launches(), stub_ns += t.ns();
    if (t.name_id() == k2 && t.api() == w::CUDA_DRIVER_LAUNCH_KERNEL) other_launches += t.launches();
  }
  CHECK(stub_launches == 11);
  CHECK(stub_ns == 11 * 4 * 3);
  CHECK(other_launches == 1);
  CHECK(b.kernel_names_size() == 2);
  // The budget counts them as it counts launch records.
  CHECK(seen.hook_calls == 13);
  CHECK(seen.enqueues == 12);
  CHECK(seen.launches.count() == 12);
  CHECK(seen.launches.TrimmedMean() == Approx(12.0));
  // Nothing new: no event, no tally, and the batch is not worth sending for them.
  const w::Batch again = fx.Assemble();
  CHECK(again.events_size() == 0);
  CHECK(again.launch_tallies_size() == 0);
}

TEST_CASE("assembler: a run still going is left to its thread, and the settled time stays before it") {
  Fixture fx;
  Summarize(fx.ring, 0x40, 1'000'000);
  Summarize(fx.ring, 0x40, 1'000'010);
  fx.cycle.now_ticks = 1'000'100;  // 86 ticks after the last end: not quiet for 1000
  fx.cycle.run_quiet_ticks = 1000;
  w::Batch b = fx.Assemble();
  CHECK(b.events_size() == 0);
  CHECK(b.launch_tallies_size() == 1);  // counted already: tallies do not wait for the run
  // A sync on another thread makes the batch settle: not past the open run's start.
  gi::Ring other(64);
  other.tid.store(7);
  fx.rings.push_back(&other);
  Record(other, Sync(2'000'000));
  b = fx.Assemble();
  REQUIRE(b.events_size() == 1);
  CHECK(b.settled_ns() <= kEpochNs + 3'000'000);
  // The last batch takes it whatever its age.
  fx.cycle.final = true;
  b = fx.Assemble();
  REQUIRE(b.events_size() == 1);
  CHECK(b.events(0).calls() == 2);
  CHECK(b.events(0).t_ns() == kEpochNs + 3'000'000);
}

TEST_CASE("assembler: launches made while CUPTI lingered count apart for the budget, in runs too") {
  Fixture fx;
  for (uint64_t t = 10; t <= 40; t += 10) Summarize(fx.ring, 0x40, t);
  Record(fx.ring, Sync(50));
  for (uint64_t t = 2000; t <= 2030; t += 10) Summarize(fx.ring, 0x40, t);
  fx.cycle.cupti_linger.from[0] = kEpochNs + 6000;  // ticks 2000 on
  fx.cycle.cupti_linger.to[0] = UINT64_MAX;
  gi::CuptiBudget::Cycle seen;
  fx.cycle.poll_activities = [&](const gi::CuptiBudget::Cycle& drained,
                                 const std::function<void(const gi::ActivityRecord&)>&) { seen = drained; };
  fx.Assemble();
  CHECK(seen.enqueues == 8);
  CHECK(seen.linger_enqueues == 4);
  CHECK(seen.linger_launches.count() == 4);
  CHECK(seen.launches.count() == 4);
}
