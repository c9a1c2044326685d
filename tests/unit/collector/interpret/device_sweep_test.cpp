// The interpret stage's device sweep (interpret/device_sweep.h): busy spans, idle gaps
// classified once, the launching call joined to its work, the gap after the last work.
#include <catch2/catch.hpp>

#include <vector>

#include "interpret/device_sweep.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

constexpr uint64_t kUs = 1000;

wire::Activity Act(wire::ActivityKind kind, uint64_t start, uint64_t end, uint32_t corr, uint32_t name = 1) {
  wire::Activity a;
  a.set_kind(kind);
  a.set_start_ns(start);
  a.set_end_ns(end);
  a.set_correlation_id(corr);
  a.set_name_id(name);
  return a;
}

struct Recorder final : col::EventSink {
  std::vector<col::BusySpan> busy;
  std::vector<col::IdleGap> idle;
  std::vector<col::DeviceWork> work;  // api pointers not kept
  std::vector<bool> had_api;
  void OnBusy(const col::BusySpan& b) override { busy.push_back(b); }
  void OnIdle(const col::IdleGap& g) override { idle.push_back(g); }
  void OnDeviceWork(const col::DeviceWork& w) override {
    work.push_back(w);
    had_api.push_back(w.api != nullptr);
  }
};

}  // namespace

TEST_CASE("collector: device sweep merges busy spans and classifies each gap once") {
  col::DeviceSweep sweep;
  col::RankFacts facts;
  col::Coverage all;  // recorded whole
  wire::Batch names;
  auto* n = names.add_kernel_names();
  n->set_id(2);
  n->set_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  facts.OnBatch(names);
  Recorder rec;
  // K1 [100,200]; K2 overlaps [150,300]; NCCL [300,400] touches; gap to K3 at 600 whose
  // launch began at 540 (after the gap began; 200 us gap): host_wait. Gap to K4 at 650 whose
  // launch call [630, 645] had not returned when the gap began (640): launch_wait. Gap to K5 at
  // 900, launched at 10: other; K6 at 1000 during a host sync [920, 1000]: sync_wait.
  for (const auto& a : {Act(wire::ACTIVITY_API, 540 * kUs, 560 * kUs, 3), Act(wire::ACTIVITY_API, 630 * kUs, 645 * kUs, 4),
                        Act(wire::ACTIVITY_API, 10 * kUs, 11 * kUs, 5), Act(wire::ACTIVITY_API, 12 * kUs, 13 * kUs, 6)})
    sweep.AddApi(a);
  sweep.AddBlocked(920 * kUs, 1000 * kUs, wire::GPU_SOURCE_CUPTI);
  for (const auto& a : {Act(wire::ACTIVITY_KERNEL, 100 * kUs, 200 * kUs, 1), Act(wire::ACTIVITY_KERNEL, 150 * kUs, 300 * kUs, 0),
                        Act(wire::ACTIVITY_KERNEL, 300 * kUs, 400 * kUs, 0, 2), Act(wire::ACTIVITY_KERNEL, 600 * kUs, 640 * kUs, 3),
                        Act(wire::ACTIVITY_KERNEL, 650 * kUs, 700 * kUs, 4), Act(wire::ACTIVITY_KERNEL, 900 * kUs, 910 * kUs, 5),
                        Act(wire::ACTIVITY_KERNEL, 1000 * kUs, 1010 * kUs, 6)})
    sweep.AddWork(a);
  sweep.Flush(1500 * kUs, facts, all, rec);  // the last step ended at 1500: the gap after 1010
  REQUIRE(rec.idle.size() == 5);
  CHECK(rec.idle[0].kind == col::kIdleHost);
  CHECK(rec.idle[0].end_ns - rec.idle[0].start_ns == 200 * kUs);
  CHECK(rec.idle[1].kind == col::kIdleLaunch);
  CHECK(rec.idle[2].kind == col::kIdleOther);
  CHECK(rec.idle[3].kind == col::kIdleSync);
  CHECK(rec.idle[4].trailing);
  CHECK(rec.idle[4].kind == col::kIdleHost);
  CHECK(rec.idle[4].end_ns - rec.idle[4].start_ns == 490 * kUs);
  uint64_t busy = 0, noncomm = 0;
  for (const auto& b : rec.busy) (b.noncomm ? noncomm : busy) += b.end_ns - b.start_ns;
  CHECK(busy == (300 + 40 + 50 + 10 + 10) * kUs);
  CHECK(noncomm == (200 + 40 + 50 + 10 + 10) * kUs);  // the NCCL kernel is not in it
  REQUIRE(rec.work.size() == 7);
  CHECK(rec.work[2].comm);
  CHECK(!rec.had_api[1]);  // correlation 0: no launching call
  CHECK(rec.had_api[3]);
  CHECK(!rec.had_api[0]);  // correlation 1 was never reported
  CHECK(sweep.late() == 0);
}

TEST_CASE("collector: device sweep marks the first work of a call, and late work") {
  col::DeviceSweep::Limits lim;
  lim.max_pending = 2;
  col::DeviceSweep sweep(lim);
  col::RankFacts facts;
  col::Coverage all;  // recorded whole
  Recorder rec;
  sweep.AddApi(Act(wire::ACTIVITY_API, 0, 5 * kUs, 7));
  // Three pieces of work of one call (a graph launch), then one that arrives after the
  // window had to release the ones after it.
  sweep.AddWork(Act(wire::ACTIVITY_KERNEL, 100 * kUs, 110 * kUs, 7));
  sweep.AddWork(Act(wire::ACTIVITY_KERNEL, 120 * kUs, 130 * kUs, 7));
  sweep.AddWork(Act(wire::ACTIVITY_KERNEL, 140 * kUs, 150 * kUs, 7));
  sweep.Advance(UINT64_MAX, facts, all, rec);
  sweep.AddWork(Act(wire::ACTIVITY_KERNEL, 50 * kUs, 60 * kUs, 0));
  sweep.Flush(0, facts, all, rec);
  REQUIRE(rec.work.size() == 4);
  CHECK(rec.work[0].first_of_api);
  CHECK(rec.work[1].late);  // 50 us: the sweep had already passed it
  CHECK(!rec.work[2].first_of_api);
  CHECK(sweep.overflow() == 1);
  CHECK(sweep.late() == 1);
}

TEST_CASE("collector: device sweep continues after a flush (a rank that reconnects)") {
  col::DeviceSweep sweep;
  col::RankFacts facts;
  col::Coverage all;  // recorded whole
  Recorder rec;
  sweep.AddWork(Act(wire::ACTIVITY_KERNEL, 100 * kUs, 200 * kUs, 0));
  sweep.Flush(0, facts, all, rec);  // the rank's connection closed
  // It reconnects: one piece of work overlaps what was emitted, one comes 300 us later.
  sweep.AddWork(Act(wire::ACTIVITY_KERNEL, 150 * kUs, 250 * kUs, 0));
  sweep.AddWork(Act(wire::ACTIVITY_KERNEL, 550 * kUs, 600 * kUs, 0));
  sweep.Flush(0, facts, all, rec);
  uint64_t busy = 0;
  for (const auto& b : rec.busy)
    if (!b.noncomm) busy += b.end_ns - b.start_ns;
  CHECK(busy == (100 + 50 + 50) * kUs);  // [100,200], then [200,250] once, [550,600]
  REQUIRE(rec.idle.size() == 1);
  CHECK(rec.idle[0].start_ns == 250 * kUs);
  CHECK(rec.idle[0].end_ns == 550 * kUs);
}

TEST_CASE("collector: coverage says which host syncs may bear on a recorded gap") {
  col::Coverage c;
  CHECK(c.Touches(10, 20));  // not sampled: every one
  c.SetSampled(true);
  CHECK_FALSE(c.Touches(10, 20));  // no window yet
  c.AddWindow(100, 200);
  CHECK(c.Touches(50, 100));
  CHECK(c.Touches(150, 160));
  CHECK(c.Touches(200, 300));
  CHECK_FALSE(c.Touches(201, 300));  // after it, and no window open
  CHECK_FALSE(c.Touches(10, 99));
  c.SetOpenSince(500);
  CHECK(c.Touches(450, 500));  // reaches the open window
  CHECK_FALSE(c.Touches(300, 499));
  c.Pass(250);  // the sweep is past the closed window: nothing there matters any more
  CHECK_FALSE(c.Touches(150, 160));
}
