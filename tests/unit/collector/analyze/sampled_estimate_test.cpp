// A sampled timeline's communication (analyze/sampled_estimate.h): the collectives' own GPU
// times stand for it, of the run, of a typical step and of each communicator, where the
// windows' NCCL kernels are an unfair sample (the first window holds the start, where ranks
// wait for each other).
#include <catch2/catch.hpp>

#include "analyze/rank_model.h"
#include "analyze/sampled_estimate.h"
#include "analyze/step_figures.h"
#include "fixtures.h"
#include "report/figures_json.h"

using namespace gwtest;

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;
constexpr uint64_t kT0 = 1000 * kMs;
constexpr uint64_t kComm = 7;

// 100 NVTX steps of 10 ms from kT0: nine launches (kernels of 400 us) and one all-reduce on
// the same stream. The overhead budget recorded steps 0-7 (the first window, the start, where
// the all-reduce waits 400 us for a late peer) and step 50 (the rest, 200 us). Inside windows
// the collective is timed by its NCCL kernel, outside by its event pair. `hidden`: after the
// start, the all-reduce runs on its own stream under the step's last kernel (DDP's), so only
// the start's waits are exposed. `graph`: each step first replays a CUDA graph holding one
// 100 us NCCL kernel (a captured collective: no call of its own at replay).
wire::Batch SampledSteps(bool hidden = false, bool graph = false) {
  SampledBatch sb({{kT0, kT0 + 80 * kMs}, {kT0 + 500 * kMs, kT0 + 510 * kMs}});
  wire::Batch& b = sb.b;
  const std::pair<uint32_t, const char*> names[] = {
      {1, "train_step"}, {2, "fwd"}, {3, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}};
  for (auto [id, name] : names) {
    auto* n = b.add_kernel_names();
    n->set_id(id);
    n->set_name(name);
  }
  Comm(&b, kComm, 2, 0);
  for (uint64_t s = 0; s < 100; ++s) {
    const uint64_t start = kT0 + s * 10 * kMs;
    const bool recorded = s < 8 || s == 50;
    if (graph) {
      const uint64_t t = start + 100 * kUs;
      Add(&b, wire::CUDA_GRAPH_LAUNCH, t, 20 * kUs);
      if (recorded) sb.Record(t, 100 * kUs, 3)->set_graph_id(5);
    }
    for (uint64_t k = 0; k < 9; ++k) {
      sb.Launch(start + k * kMs + kMs / 2, recorded, 400 * kUs, 2);
    }
    const bool under = hidden && s >= 8;
    const uint64_t t = start + (under ? 8 * kMs + kMs / 2 + 20 * kUs : 9 * kMs + kMs / 2);
    const uint64_t nccl = s < 8 ? 400 * kUs : 200 * kUs;
    Coll(&b, wire::NCCL_ALL_REDUCE, kComm, 1 << 20, nccl, t, recorded ? wire::FLAG_KERNEL_TIMED : 0);
    if (recorded) sb.Record(t, nccl, 3, under ? 2 : 1);
    Add(&b, wire::NVTX_RANGE, start, 10 * kMs - kUs)->set_name_id(1);
  }
  return b;
}

col::RankResult Run(const wire::Batch& b) {
  col::RankModel m;
  m.OnBatch(b);
  return m.Result();
}

// The device's own account of SampledSteps.
constexpr double kCommTruthS = (8 * 400 + 92 * 200) * 1e-6;      // 21.6 ms
constexpr double kBusyTruthS = 100 * 9 * 400e-6 + kCommTruthS;  // 381.6 ms

}  // namespace

TEST_CASE("collector: a sampled timeline's communication is its collectives' own GPU time, not the windows' kernels") {
  const col::RankResult r = Run(SampledSteps());
  const auto g = col::GpuJson(r.gpu);
  REQUIRE(g["coverage"]["sampled"] == true);
  // The later window holds too few calls for strata (10 against the first's 80): one share of
  // launches (90 of 1000) scaled the windows' 3.4 ms of NCCL kernels to 38 ms and busy to 398 ms.
  CHECK(g["comm_kernels"]["total_s"].get<double>() == Approx(kCommTruthS).epsilon(1e-6));
  CHECK(g["busy_s"].get<double>() == Approx(kBusyTruthS).epsilon(1e-6));
  CHECK(g["utilization"].get<double>() <= 1.0);
  // Compute is the windows' work, scaled by launches, as before.
  CHECK(g["kernels"]["total_s"].get<double>() == Approx(100 * 9 * 400e-6).epsilon(1e-6));

  // The overlap figures, of the rank and of its communicator: every call's time, exposed as
  // the windows saw it (all of it: one stream).
  CHECK(r.overlap.total.nccl_ns == Approx(kCommTruthS * 1e9).epsilon(1e-6));
  CHECK(r.overlap.total.overlapped_ns == 0);
  REQUIRE(r.comms.comms.size() == 1);
  CHECK(r.comms.comms[0].kernel_ns == Approx(kCommTruthS * 1e9).epsilon(1e-6));
  CHECK(r.comms.comms[0].ExposedNs() == r.comms.comms[0].kernel_ns);
  CHECK(r.comms.comms[0].kernels == r.gpu.comm_kernels);

  // A typical step: 216 us of communication, where the windows' steps averaged 378 us.
  REQUIRE(r.per_step.known);
  CHECK(r.per_step.comm_not_overlapped_ms == Approx(kCommTruthS * 1e3 / 100).epsilon(1e-3));
  CHECK(r.per_step.compute_ms == Approx(3.6).epsilon(1e-6));
  // The finding charges the same.
  const col::Finding* comm = nullptr;
  for (const col::Finding& f : r.findings)
    if (f.id == "communication") comm = &f;
  REQUIRE(comm != nullptr);
  CHECK(comm->evidence["exposed_comm_s"].get<double>() == Approx(kCommTruthS).epsilon(0.01));
}

TEST_CASE("collector: a sampled timeline's exposed communication: the start's share for the start, the rest's for the rest") {
  // The start's all-reduces wait in the open (3.2 ms, all exposed); after it they run under the
  // step's last kernel (none exposed). The windows' share pooled (3.2 of 3.4 ms exposed) would
  // expose 94% of all 21.6 ms: 20.3 ms.
  const col::RankResult r = Run(SampledSteps(true));
  const auto g = col::GpuJson(r.gpu);
  REQUIRE(g["coverage"]["sampled"] == true);
  CHECK(g["comm_kernels"]["total_s"].get<double>() == Approx(kCommTruthS).epsilon(1e-6));
  CHECK(g["busy_s"].get<double>() == Approx(100 * 9 * 400e-6 + 8 * 400e-6).epsilon(1e-6));
  CHECK(r.overlap.total.nccl_ns == Approx(kCommTruthS * 1e9).epsilon(1e-6));
  CHECK(r.overlap.total.ExposedNs() == Approx(3.2e6).epsilon(1e-6));
  REQUIRE(r.comms.comms.size() == 1);
  CHECK(r.comms.comms[0].ExposedNs() == Approx(3.2e6).epsilon(1e-6));
  // A typical step: the rank's share of its 216 us.
  REQUIRE(r.per_step.known);
  CHECK(r.per_step.comm_not_overlapped_ms == Approx(0.032).epsilon(1e-3));
}

TEST_CASE("collector: a sampled timeline's first window ends where its work does, not with the busy span it ends in") {
  // 100 steps of 10 ms. The host enqueues a step in its first millisecond: five kernels, an
  // all-reduce on the same stream, four kernels; the device runs them from 1 ms on, back to
  // back (0.9 ms each, the all-reduce 200 us: all of it exposed). The first window closes at
  // 71.5 ms, after step 7's calls but while its work runs; the later window holds steps 50-52.
  // Cut at the close, step 7's busy span counted whole in the first window but the kernels
  // after its all-reduce not (their span starts after the close): 5.2 ms exposed for 1.6 ms
  // of all-reduce, and the later windows' share 0.
  SampledBatch sb({{kT0, kT0 + 71 * kMs + kMs / 2}, {kT0 + 500 * kMs, kT0 + 529 * kMs}});
  wire::Batch& b = sb.b;
  for (auto [id, name] : {std::pair<uint32_t, const char*>{1, "train_step"}, {2, "fwd"},
                          {3, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}}) {
    auto* n = b.add_kernel_names();
    n->set_id(id);
    n->set_name(name);
  }
  Comm(&b, kComm, 2, 0);
  const uint64_t kernel = 900 * kUs, nccl = 200 * kUs;
  for (uint64_t s = 0; s < 100; ++s) {
    const uint64_t start = kT0 + s * 10 * kMs;
    const bool recorded = s < 8 || (s >= 50 && s < 53);
    uint64_t device = start + kMs;  // where the next piece of work starts on the device
    const auto work = [&](uint64_t t, uint64_t ns, uint32_t name) {
      if (!recorded) return;
      Work(&b, wire::ACTIVITY_API, t, t + SampledBatch::kApiNs, ++sb.corr, 0)->set_api_domain(1);
      Work(&b, wire::ACTIVITY_KERNEL, device, device + ns, sb.corr, 1)->set_name_id(name);
      device += ns;
    };
    uint64_t t = start;
    for (int k = 0; k < 5; ++k, t += 100 * kUs) {
      Add(&b, wire::CUDA_LAUNCH_KERNEL, t, SampledBatch::kApiNs);
      work(t, kernel, 2);
    }
    Coll(&b, wire::NCCL_ALL_REDUCE, kComm, 1 << 20, nccl, t, recorded ? wire::FLAG_KERNEL_TIMED : 0);
    work(t, nccl, 3);
    for (int k = 0; k < 4; ++k) {
      t += 100 * kUs;
      Add(&b, wire::CUDA_LAUNCH_KERNEL, t, SampledBatch::kApiNs);
      work(t, kernel, 2);
    }
    Add(&b, wire::NVTX_RANGE, start, 10 * kMs - kUs)->set_name_id(1);
  }
  const col::RankResult r = Run(b);
  const auto g = col::GpuJson(r.gpu);
  REQUIRE(g["coverage"]["sampled"] == true);
  CHECK(g["comm_kernels"]["total_s"].get<double>() == Approx(100 * 200e-6).epsilon(1e-6));
  CHECK(r.overlap.total.nccl_ns == Approx(20e6).epsilon(1e-6));
  CHECK(r.overlap.total.ExposedNs() == Approx(20e6).epsilon(0.01));
  CHECK(g["busy_s"].get<double>() == Approx(100 * (9 * 900e-6 + 200e-6)).epsilon(0.01));
  REQUIRE(r.per_step.known);
  CHECK(r.per_step.comm_not_overlapped_ms == Approx(0.2).epsilon(0.01));
}

TEST_CASE("collector: a sampled timeline's NCCL kernels replayed by CUDA graphs are estimated from the windows") {
  // 100 graph replays of a 100 us NCCL kernel: no call times them, the windows' 9 (0.9 ms) stand
  // for them by the share of launches (99 of 1100): 10 ms, beside the calls' 21.6.
  const col::RankResult r = Run(SampledSteps(false, true));
  const auto g = col::GpuJson(r.gpu);
  REQUIRE(g["coverage"]["sampled"] == true);
  CHECK(g["comm_kernels"]["total_s"].get<double>() == Approx(kCommTruthS + 0.010).epsilon(1e-6));
  CHECK(g["busy_s"].get<double>() == Approx(kBusyTruthS + 0.010).epsilon(1e-6));
}

TEST_CASE("collector: a step's collectives are those called in it, and a step found again after a reset lost them") {
  col::StepCharger charger;
  const auto coll = [&](uint64_t t, uint64_t gpu_ns, bool timed) {
    col::HostCall c{};
    c.api = wire::NCCL_ALL_REDUCE;
    c.t_ns = t;
    c.dur_ns = 10;
    c.gpu_ns = gpu_ns;
    c.timed = timed;
    charger.OnHostCall(c);
  };
  coll(5 * kMs, 100, true);  // before the first step: no step's
  coll(12 * kMs, 200, true);
  coll(15 * kMs, 0, false);  // no GPU time: counted, not timed
  coll(21 * kMs, 300, true);  // between steps 1 and 2: the first step's (it holds the time until the next starts)
  charger.OnStep({10 * kMs, 20 * kMs, true});
  coll(25 * kMs, 400, true);
  coll(31 * kMs, 500, true);  // after the step's end: waits for the next
  charger.OnStep({22 * kMs, 30 * kMs, true});
  const auto& s = charger.figures().steps;
  REQUIRE(s.size() == 2);
  CHECK(s[0].coll_known);
  CHECK(s[0].colls.calls == 3);
  CHECK(s[0].colls.timed == 2);
  CHECK(s[0].colls.ns == 500);
  CHECK(s[1].colls.calls == 1);
  CHECK(s[1].colls.ns == 400);
  // A reset finds the steps again from the start: their calls went to the steps before it.
  charger.OnStepsReset();
  charger.OnStep({10 * kMs, 20 * kMs, true});
  charger.OnStep({22 * kMs, 30 * kMs, true});
  charger.OnStep({30 * kMs, 40 * kMs, true});
  const auto& again = charger.figures().steps;
  REQUIRE(again.size() == 3);
  CHECK_FALSE(again[0].coll_known);
  CHECK_FALSE(again[1].coll_known);
  CHECK(again[2].coll_known);  // starts after every call given out: its own are its own
  CHECK(again[2].colls.calls == 1);
  CHECK(again[2].colls.ns == 500);
}

TEST_CASE("collector: an estimated busy time stays within the active span, the windows' looser part cut") {
  col::GpuFigures f;
  f.active_ns = 100;
  f.run.busy = 150;
  f.run.noncomm_busy = 120;
  f.run.comm = 60;  // half of it exposed in the windows: the windows' share is what yields
  f.run.idle[col::kIdleHost] = 5;
  col::SpreadIdle(f);
  CHECK(f.run.busy == 100);
  CHECK(f.run.noncomm_busy == 100);
  CHECK(f.run.IdleTotal() == 0);
  // Communication never beside compute (one stream): its measured time stays, compute yields.
  f.active_ns = 1000;
  f.run.busy = 1030;
  f.run.noncomm_busy = 1010;
  f.run.comm = 20;
  col::SpreadIdle(f);
  CHECK(f.run.busy == 1000);
  CHECK(f.run.ExposedComm() == 20);
  CHECK(col::SameShare(30, 60, 10) == 5);
  CHECK(col::SameShare(30, 0, 10) == 0);  // nothing measured: no share to keep
  CHECK(col::SameShare(90, 60, 10) == 10);
}

TEST_CASE("collector: a sampled rank's exposed communication reads the same on its communicator where its windows saw none") {
  // The rank's share (a tenth exposed, from its strata) against a communicator whose windowed
  // kernels all ran under compute: one figure in both views, not the rank's beside zero.
  col::RankResult r;
  r.gpu.coverage.sampled = true;
  r.gpu.run.comm = 1000 * kUs;
  r.gpu.run.noncomm_busy = 5000 * kUs;
  r.gpu.run.busy = r.gpu.run.noncomm_busy + 100 * kUs;
  r.gpu.comm_kernels = 10;
  auto& op = r.collectives.ops[0];
  op.count = op.timed.count = 10;
  op.timed.ns = 1000 * kUs;
  col::CommFigures c;
  c.ops[0] = op;
  c.kernel_ns = 300 * kUs;
  c.overlapped_ns = 300 * kUs;
  r.comms.comms.push_back(c);
  col::EstimateSampledComm(r);
  CHECK(r.comms.comms[0].kernel_ns == 1000 * kUs);
  CHECK(r.comms.comms[0].ExposedNs() == 100 * kUs);
}
