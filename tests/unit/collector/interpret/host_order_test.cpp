// The interpret stage's host order (interpret/host_order.h): calls come out in order of
// their key, released as soon as the library says nothing earlier can come, else after
// the horizon; syncs and NVTX ranges count at their end.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "interpret/host_order.h"
#include "interpret/rank_interpreter.h"
#include "step_loop.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;
using namespace gpuwatch::collector::test_loop;

namespace {

col::HostCall Call(wire::Api api, uint64_t t, uint64_t dur) {
  col::HostCall c{};
  c.api = api;
  c.t_ns = t;
  c.dur_ns = dur;
  c.sync_kind = col::SyncKindOf(api, 0, 0, wire::COPY_UNSPECIFIED);
  return c;
}

// Records what the interpreter emits, in order.
struct Recorder final : col::EventSink {
  std::vector<uint64_t> host_keys;
  std::vector<uint64_t> work_starts;
  uint64_t busy_ns = 0, idle_ns = 0, steps = 0;
  void OnHostCall(const col::HostCall& c) override { host_keys.push_back(col::HostOrder::Key(c)); }
  void OnDeviceWork(const col::DeviceWork& w) override { work_starts.push_back(w.start_ns); }
  void OnBusy(const col::BusySpan& b) override {
    if (!b.noncomm) busy_ns += b.end_ns - b.start_ns;
  }
  void OnIdle(const col::IdleGap& g) override {
    if (!g.trailing) idle_ns += g.end_ns - g.start_ns;
  }
  void OnStep(const col::StepMark&) override { ++steps; }
};

}  // namespace

TEST_CASE("collector: host calls come out in key order, a sync at its end, whatever the arrival") {
  std::mt19937_64 rng(3);
  col::HostOrder order;
  std::vector<col::HostCall> calls;
  for (int i = 0; i < 2000; ++i) {
    const bool sync = i % 7 == 0;
    calls.push_back(Call(sync ? wire::CUDA_STREAM_SYNCHRONIZE : wire::CUDA_LAUNCH_KERNEL, 1000 * kMs + i * kUs,
                         sync ? 5 * kUs : 1 * kUs));
  }
  // Mostly in order, with blocks shuffled (a collective held back by the library).
  for (size_t i = 0; i < calls.size(); i += 50) std::shuffle(calls.begin() + i, calls.begin() + i + 50, rng);
  std::vector<uint64_t> keys;
  for (const auto& c : calls) order.Hold(c);
  order.Release(true, [&](const col::HostCall& c) { keys.push_back(col::HostOrder::Key(c)); });
  REQUIRE(keys.size() == calls.size());
  CHECK(std::is_sorted(keys.begin(), keys.end()));
  CHECK(order.held() == 0);
}

TEST_CASE("collector: a host call waits until the library's settled time, or the horizon") {
  col::HostOrder order;
  for (int i = 0; i < 10; ++i) order.Hold(Call(wire::CUDA_LAUNCH_KERNEL, 1000 * kMs + i * kMs, kUs));
  int out = 0;
  order.Release(false, [&](const col::HostCall&) { ++out; });
  CHECK(out == 0);  // nothing said, all within the horizon of the newest
  order.Settle(1004 * kMs + 1);
  order.Release(false, [&](const col::HostCall&) { ++out; });
  CHECK(out == 5);
  CHECK(order.released_until() == 1004 * kMs + 1);
  order.Hold(Call(wire::CUDA_LAUNCH_KERNEL, 1000 * kMs + col::kHostHorizonNs + 20 * kMs, kUs));
  order.Release(false, [&](const col::HostCall&) { ++out; });
  CHECK(out == 10);  // the horizon of the newest passed the rest
}

TEST_CASE("collector: the device stream never runs ahead of the host stream") {
  // A loop of NVTX steps whose device records arrive with the host calls, while the
  // library says nothing is settled: device work waits for the host calls before it.
  col::RankInterpreter in;
  Recorder rec;
  in.Subscribe(&rec);
  uint64_t end = 0;
  wire::Batch b = Loop(40, 5, 5, 1000 * kMs, &end);
  in.OnBatch(b);
  // Device records more than the 2 s horizon later, but no host call released yet.
  wire::Batch late;
  auto* k = late.add_activities();
  k->set_kind(wire::ACTIVITY_KERNEL);
  k->set_start_ns(end + 3000 * kMs);
  k->set_end_ns(end + 3001 * kMs);
  in.OnBatch(late);
  CHECK(rec.host_keys.empty());
  CHECK(rec.work_starts.empty());
  in.Flush();
  CHECK(rec.host_keys.size() == 40 * 3);
  CHECK(rec.work_starts.size() == 41);
  CHECK(std::is_sorted(rec.work_starts.begin(), rec.work_starts.end()));
  CHECK(rec.steps == 40);
  CHECK(rec.busy_ns == 40 * 5 * kMs + 1 * kMs);
}
