// Diagnosis on synthetic batches (issue 6): steps from NVTX ranges and from the pattern of
// collectives, per-step device figures, and the findings built on them.
#include <catch2/catch.hpp>

#include <algorithm>

#include "findings_lookup.h"
#include "analyze/findings.h"
#include "analyze/verdict.h"
#include "analyze/job_result.h"
#include "analyze/rank_model.h"
#include "report/figures_json.h"
#include "step_loop.h"

namespace wire = gpuwatch::wire;
namespace dg = gpuwatch::collector;

namespace {

using namespace gpuwatch::collector::test_loop;

}  // namespace

TEST_CASE("collector: steps from NVTX ranges, data loading ranks first") {
  dg::RankModel c;
  c.OnBatch(Loop(10, 30, 5));
  const dg::RankResult d = c.Result();
  CHECK(d.found.source == "nvtx:train_step");
  CHECK(d.steps_total() == 10);
  CHECK(d.per_step_device);
  CHECK(d.StepMedianS() == Approx(0.03503).epsilon(0.01));
  const auto f = dg::RankFindings(d);
  REQUIRE(!f.empty());
  CHECK(f[0].id == "data_loading");
  CHECK(f[0].severity == "high");
  // 9 gaps of 30 ms (the first step's host work precedes any GPU work) plus nothing else.
  CHECK(f[0].evidence["gpu_idle_waiting_for_host_s"].get<double>() == Approx(0.27).epsilon(0.01));
  // The trailing sync of each step is not a stall.
  for (const auto& x : f) CHECK(x.id != "sync_stall");
  const auto j = dg::StepsJson(d);
  CHECK(j["count"] == 10);
  CHECK(j["per_step_ms"]["gpu_compute"].get<double>() == Approx(5.0).epsilon(0.01));
}

TEST_CASE("collector: GPUWATCH_STEP_RANGE picks the range, other names are not steps") {
  dg::RankModel c;
  wire::Hello h;
  h.set_step_range("iteration_block");
  c.OnHello(h);
  c.OnBatch(Loop(5, 1, 1));
  const dg::RankResult d = c.Result();
  CHECK(d.found.source.rfind("nvtx:", 0) != 0);  // train_step is not the chosen range
}

TEST_CASE("collector: steps inferred from the collective pattern without NVTX") {
  dg::RankModel c;
  wire::Batch b;
  uint64_t t = 1000 * kMs;
  for (int s = 0; s < 12; ++s) {
    for (int k = 0; k < 2; ++k) {  // two collectives of different sizes per step
      auto* e = Ev(b, wire::NCCL_ALL_REDUCE, t + k * kMs, 10 * kUs);
      e->set_bytes(k ? 1024 : 4096);
      e->set_comm_id(1);
      e->set_seq(2 * s + k);
    }
    t += 20 * kMs;
  }
  c.OnBatch(b);
  const dg::RankResult d = c.Result();
  CHECK(d.found.source == "inferred:collectives");
  // 12 boundaries close 11 steps; the last step, whose collectives all came, is counted at
  // the end of the run.
  CHECK(d.steps_total() == 12);
  CHECK(d.StepMedianS() == Approx(0.020).epsilon(0.001));
}

TEST_CASE("collector: periodic stalls from long steps whose excess is GPU idle") {
  dg::RankResult d;
  d.rank = 0;
  d.gpu.cupti_ranks = 1;
  d.per_step_device = true;
  for (int s = 0; s < 40; ++s) {
    dg::StepRec r;
    r.start = s * 1000 * kMs;
    const bool stall = s % 10 == 9;
    r.end = r.start + (stall ? 260 : 10) * kMs;
    r.dev.busy = r.dev.noncomm_busy = r.dev.compute = 9 * kMs;
    r.dev.idle[dg::kIdleHost] = (stall ? 251 : 1) * kMs;
    d.steps.steps.push_back(r);
  }
  d.found.total = 40;
  const auto f = dg::RankFindings(d);
  REQUIRE(!f.empty());
  CHECK(f[0].id == "periodic_stall");
  CHECK(f[0].evidence["period_steps"] == 10);
  CHECK(f[0].evidence["stalls"] == 4);
  CHECK(f[0].time_lost_s == Approx(4 * 0.25));
  // The stall steps' idle is not data loading.
  for (const auto& x : f)
    if (x.id == "data_loading") CHECK(x.time_lost_s == Approx(0.040).epsilon(0.01));
}

TEST_CASE("collector: the overhead budget's windows are not periodic stalls") {
  // Sampled: every 10th step lies inside a window, where CUPTI's cost per launch made it
  // 2.2x longer with the GPU idling meanwhile (and only those steps carry device figures).
  // Against the median of all steps they read as a stall every 10 steps; against the
  // windows' own steps they are normal. A real stall inside the windows still shows.
  for (const bool real_stalls : {false, true}) {
    dg::RankResult d;
    d.rank = 0;
    d.gpu.cupti_ranks = 1;
    d.gpu.coverage.sampled = true;
    d.per_step_device = true;
    for (int s = 0; s < 60; ++s) {
      dg::StepRec r;
      r.start = s * 1000 * kMs;
      r.covered = s % 10 == 9;
      const bool stall = real_stalls && s % 20 == 19;
      r.end = r.start + (r.covered ? (stall ? 120 : 22) : 10) * kMs;
      if (r.covered) {
        r.dev.busy = r.dev.noncomm_busy = r.dev.compute = 9 * kMs;
        r.dev.idle[dg::kIdleLaunch] = (stall ? 111 : 13) * kMs;
      }
      d.steps.steps.push_back(r);
    }
    d.found.total = 60;
    const auto f = dg::RankFindings(d);
    const auto stall = std::find_if(f.begin(), f.end(), [](const dg::Finding& x) { return x.id == "periodic_stall"; });
    INFO("real stalls " << real_stalls);
    CHECK((stall != f.end()) == real_stalls);
    if (real_stalls && stall != f.end()) CHECK(stall->time_lost_s == Approx(3 * 0.098));  // over the windows' median
  }
}

TEST_CASE("collector: the straggler is the rank that reaches collectives last") {
  std::vector<dg::RankResult> ranks = gpuwatch::collector::test::LateRank2Job();
  for (auto& r : ranks) r.findings = dg::RankFindings(r);
  const auto f = dg::JobFindings(ranks);
  REQUIRE(!f.empty());
  CHECK(f[0].id == "straggler");
  CHECK(f[0].ranks == std::vector<int>{2});
  CHECK(f[0].evidence["last_share"] == 1.0);
  CHECK(f[0].evidence["wait_s_by_rank"]["0"].get<double>() == Approx(0.2));
  // Ranks 0 and 1 wait 0.2 s each, rank 2 not at all: the job loses their mean per rank.
  CHECK(f[0].time_lost_s == Approx(0.4 / 3));
  const std::string v = dg::Verdict(ranks, f);
  CHECK(v.find("straggler rank (rank 2)") != std::string::npos);
}

TEST_CASE("collector: across hosts, a call timed in a CUPTI window is not compared with one timed by events") {
  // Two hosts; each collective's kernels take 5 ms. Rank 0's even calls fall in its CUPTI
  // windows (timed from the kernels: 5 ms), every other call is timed by its event pair,
  // which also holds the 4 ms before the kernel started. Set against each other, rank 0
  // would read 4 ms shorter, "last", on every even call. With `late`, rank 1 really is
  // last: its calls are 6 ms shorter than rank 0's, however both are timed.
  for (const bool late : {false, true}) {
    std::vector<dg::RankResult> ranks(2);
    for (int r = 0; r < 2; ++r) {
      ranks[r].rank = r;
      ranks[r].host = r ? "node2" : "node1";
      for (uint64_t s = 0; s < 20; ++s) {
        dg::StepRec st;
        st.start = s * 30 * kMs;
        st.end = st.start + 30 * kMs;
        ranks[r].steps.steps.push_back(st);
        const bool in_window = r == 0 && s % 2 == 0;
        const uint64_t gpu = (in_window ? 5 : 9) * kMs - (late && r == 1 ? 6 * kMs : 0);
        ranks[r].collectives.sample.push_back({42, s, st.start + 5 * kMs, gpu, false, in_window});
      }
      ranks[r].found.total = 20;
    }
    for (auto& r : ranks) r.findings = dg::RankFindings(r);
    const auto f = dg::JobFindings(ranks);
    const auto st = std::find_if(f.begin(), f.end(), [](const dg::Finding& x) { return x.id == "straggler"; });
    INFO("late " << late);
    REQUIRE((st != f.end()) == late);
    if (!late) continue;
    CHECK(st->ranks == std::vector<int>{1});
    CHECK(st->evidence["collectives_compared"] == 10);  // the odd calls: both timed by events
    CHECK(st->evidence["last_share"] == 1.0);
    CHECK(st->evidence["wait_s_by_rank"]["0"].get<double>() == Approx(0.06));  // 10 x 6 ms
  }
}

TEST_CASE("collector: a job finding's summary says whose figures it shows when the ranks differ") {
  // The job's time lost is the ranks' median; its summary line is the most affected rank's.
  for (const double other : {1.0, 3.0}) {
    std::vector<dg::RankResult> ranks(2);
    for (int r = 0; r < 2; ++r) {
      ranks[r].rank = r;
      ranks[r].host = "node1";
      dg::StepRec st;  // 10 s of steps: the base the findings' shares are of
      st.end = 10'000 * kMs;
      ranks[r].steps.steps.push_back(st);
      ranks[r].found.total = 1;
      dg::Finding f;
      f.id = "data_loading";
      f.time_lost_s = r == 1 ? other : 1.0;
      f.summary = "GPU idle waiting for the host";
      f.ranks = {r};  // as RankFindings sets it
      ranks[r].findings = {f};
    }
    const auto job = dg::JobFindings(ranks);
    REQUIRE(job.size() == 1);
    INFO(job[0].summary);
    CHECK(job[0].time_lost_s == Approx((1.0 + other) / 2));
    if (other == 1.0) CHECK(job[0].summary == "GPU idle waiting for the host");
    else CHECK(job[0].summary == "GPU idle waiting for the host (rank 1, the most affected)");
  }
}

TEST_CASE("collector: a balanced job has no straggler and no high finding") {
  std::vector<dg::RankResult> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[r].rank = r;
    ranks[r].host = "node1";
    for (uint64_t s = 0; s < 20; ++s)
      ranks[r].collectives.sample.push_back({7, s, s * 30 * kMs + (s + r) % 2 * 10 * kUs, 1 * kMs});
  }
  for (auto& r : ranks) r.findings = dg::RankFindings(r);
  for (const auto& x : dg::JobFindings(ranks)) CHECK(x.id != "straggler");
}

TEST_CASE("collector: host events wait for the horizon, or only until the library's settled time") {
  // 20 syncs and launches 1 ms apart: all within the 500 ms horizon of the newest.
  auto batch = [](uint64_t settled_ns) {
    wire::Batch b;
    for (int i = 0; i < 20; ++i)
      Ev(b, i % 2 ? wire::CUDA_STREAM_SYNCHRONIZE : wire::CUDA_LAUNCH_KERNEL, 1000 * kMs + i * kMs, 10 * kUs);
    b.set_settled_ns(settled_ns);
    return b;
  };
  dg::RankModel waits;
  waits.OnBatch(batch(0));  // an older library says nothing
  CHECK(waits.interpreter().held_host_calls() == 20);
  dg::RankModel settled;
  settled.OnBatch(batch(1010 * kMs));  // events before 1010 ms are final: 10 go now
  CHECK(settled.interpreter().held_host_calls() == 10);
  settled.OnBatch(batch(2000 * kMs));
  CHECK(settled.interpreter().held_host_calls() == 0);
  // Both end with the same figures.
  settled.OnGoodbye({});
  waits.OnBatch(batch(0));
  waits.OnGoodbye({});
  CHECK(settled.interpreter().held_host_calls() == 0);
  CHECK(waits.interpreter().held_host_calls() == 0);
  CHECK(settled.Result().sync.KindCount() == waits.Result().sync.KindCount());
  CHECK(settled.Result().launches.launches == waits.Result().launches.launches);
}

TEST_CASE("collector: a run total's share is of the run, not of steps that cover part of it") {
  // 5 NVTX steps of 10 ms at the end of a 10 s run whose setup spent 2 s in pageable copies.
  dg::RankResult d;
  d.rank = 0;
  d.per_step_device = true;
  d.host_first_ns = 1000 * kMs;
  d.host_last_ns = 11000 * kMs;
  for (int s = 0; s < 5; ++s) {
    dg::StepRec r;
    r.start = 10900 * kMs + s * 10 * kMs;
    r.end = r.start + 10 * kMs;
    d.steps.steps.push_back(r);
  }
  d.found.total = 5;
  d.copies.pageable.count = 100;
  d.copies.pageable.bytes = 100ull << 20;
  d.copies.pageable.ns = 2000 * kMs;
  const auto f = dg::RankFindings(d);
  const auto it = std::find_if(f.begin(), f.end(), [](const dg::Finding& x) { return x.id == "pageable_copy"; });
  REQUIRE(it != f.end());
  CHECK(it->share == Approx(0.2));  // 2 s of 10 s; over the 50 ms of steps it read 4000%
  CHECK(it->share <= 1.0);
}

TEST_CASE("collector: a per-step share is of the span the steps' figures cover, never over 100%") {
  // 10 NVTX ranges of 10 ms every 100 ms: the host works 90 ms outside them, and the GPU
  // idles then. A step holds the device's time until the next step starts, so that idle is
  // in the steps' figures; over the 100 ms of NVTX ranges data loading read 950%.
  dg::RankResult d;
  d.rank = 0;
  d.gpu.cupti_ranks = 1;
  d.per_step_device = true;
  for (int s = 0; s < 10; ++s) {
    dg::StepRec r;
    r.start = 1000 * kMs + s * 100 * kMs;
    r.end = r.start + 10 * kMs;
    r.dev.busy = r.dev.noncomm_busy = r.dev.compute = 5 * kMs;
    r.dev.idle[dg::kIdleHost] = 95 * kMs;
    d.steps.steps.push_back(r);
  }
  d.steps.charged_until = 1000 * kMs + 1000 * kMs;  // the last step held 90 ms after its end
  d.found.total = 10;
  const auto f = dg::RankFindings(d);
  REQUIRE(!f.empty());
  CHECK(f[0].id == "data_loading");
  CHECK(f[0].time_lost_s == Approx(0.95));
  CHECK(f[0].share == Approx(0.95));
  for (const auto& x : f) CHECK(x.share <= 1.0);
}
