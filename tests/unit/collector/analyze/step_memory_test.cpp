// The step analysis in constant memory (issue 8): durations of every step in a histogram,
// steps without NVTX folded as they come once their period is known, per-step records only
// for the first kMaxSteps steps, and no device time charged past the last of them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "analyze/findings.h"
#include "interpret/step_pattern.h"
#include "interpret/step_stats.h"
#include "analyze/rank_model.h"
#include "report/figures_json.h"
#include "common/thresholds.h"
#include "step_loop.h"

namespace wire = gpuwatch::wire;
namespace dg = gpuwatch::collector;
using namespace gpuwatch::collector::test_loop;

TEST_CASE("collector: step statistics read a percentile within 1/128 of the exact one") {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> ms(3.0, 0.6);
  dg::StepStats st;
  std::vector<uint64_t> all;
  for (int i = 0; i < 50000; ++i) {
    const auto ns = static_cast<uint64_t>(ms(rng) * 1e6);
    st.Add(ns);
    all.push_back(ns);
  }
  CHECK(st.count() == all.size());
  CHECK(st.max_ns() == *std::max_element(all.begin(), all.end()));
  for (double p : {0.01, 0.5, 0.9, 0.99}) {
    const double exact = static_cast<double>(dg::Percentile(all, p));
    INFO("p" << p);
    CHECK(std::abs(static_cast<double>(st.Percentile(p)) - exact) <= exact / 128);
  }
  dg::StepStats small;  // exact below 64 ns
  for (uint64_t v : {5, 9, 63}) small.Add(v);
  CHECK(small.Percentile(0.5) == 9);
  CHECK(small.sum_ns() == 77);
}

TEST_CASE("collector: steps inferred past the anchor window are folded, counted and timed") {
  // Two collectives of different sizes per step; steps get longer halfway.
  const int kSteps = 20000;
  dg::StepPattern pattern;
  uint64_t t = 1000 * kMs;
  std::vector<uint64_t> exact;
  for (int s = 0; s < kSteps; ++s) {
    const uint64_t step = (s < kSteps / 2 ? 10 : 30) * kMs;
    pattern.Add(1, t);
    pattern.Add(2, t + kMs);
    if (s + 1 < kSteps) exact.push_back(step);
    t += step;
  }
  std::vector<dg::StepMark> steps;
  uint64_t total = 0;
  dg::StepStats st;
  REQUIRE(pattern.Result(&steps, &total, &st));
  CHECK(total == kSteps - 1);  // the last step has no closing anchor
  CHECK(steps.size() == dg::kMaxSteps);
  CHECK(steps[0].end_ns - steps[0].start_ns == 10 * kMs);
  CHECK(st.count() == total);
  CHECK(st.Percentile(0.9) == Approx(30 * kMs).epsilon(1.0 / 128));
  CHECK(st.sum_ns() == std::accumulate(exact.begin(), exact.end(), uint64_t{0}));

  // Fewer anchors than the window: found at the end, as before.
  dg::StepPattern few;
  for (int s = 0; s < 100; ++s) {
    few.Add(1, 1000 * kMs + s * 10 * kMs);
    few.Add(2, 1000 * kMs + s * 10 * kMs + kMs);
  }
  steps.clear();
  REQUIRE(few.Result(&steps, &total, &st));
  CHECK(total == 99);
  CHECK(steps.size() == 99);
}

TEST_CASE("collector: NVTX steps past kMaxSteps count, give the median, and take no device time") {
  dg::RankModel c;
  uint64_t end = 0;
  c.OnBatch(Loop(static_cast<int>(dg::kMaxSteps), 1, 1, 1000 * kMs, &end));
  c.OnBatch(Loop(10000, 5, 1, end));  // longer steps, more of them
  c.OnGoodbye({});
  const dg::RankResult& d = c.Result();
  CHECK(d.steps_total() == dg::kMaxSteps + 10000);
  CHECK(d.steps.steps.size() == dg::kMaxSteps);
  // The median of all steps is a 6 ms one; of the kept ones it would be 2 ms.
  CHECK(d.StepMedianS() == Approx(0.00603).epsilon(0.01));
  CHECK(d.StepsTotalS() == Approx(dg::kMaxSteps * 0.00203 + 10000 * 0.00603).epsilon(0.01));
  // The last kept step has its own 1 ms kernel, not the 10000 after it.
  CHECK(d.steps.steps.back().dev.compute <= 2 * kMs);
  CHECK(dg::StepsJson(d)["per_step_records"] == dg::kMaxSteps);
}

TEST_CASE("collector: collective calls are sampled by sequence number over the whole run") {
  // 3 ranks, 20000 all-reduces 3 ms apart; rank 2 calls each 1 ms after the others, whose
  // GPU time is 1 ms longer (they wait inside the collective for it).
  const uint64_t kCalls = 20000;
  std::vector<dg::RankModel> cs(3);
  for (int r = 0; r < 3; ++r) {
    wire::Hello h;
    h.set_rank(r);
    h.set_host("node1");
    cs[r].OnHello(h);
    wire::Batch b;
    auto* comm = b.add_communicators();
    comm->set_comm_id(9);
    comm->set_nranks(3);
    comm->set_unique_hash(77);
    for (uint64_t s = 0; s < kCalls; ++s) {
      auto* e = Ev(b, wire::NCCL_ALL_REDUCE, 1000 * kMs + s * 3 * kMs + (r == 2 ? kMs : 0), 20 * kUs);
      e->set_comm_id(9);
      e->set_seq(s);
      e->set_bytes(4096);
      e->set_gpu_ns((r == 2 ? 1 : 2) * kMs);
    }
    cs[r].OnBatch(b);
    cs[r].OnGoodbye({});
  }
  dg::RankList ranks;
  for (const auto& c : cs) ranks.push_back(&c.Result());
  for (const auto& d : ranks) {
    CHECK(d.collectives.sample.size() <= dg::kMaxCollCalls);
    CHECK(d.collectives.stride == 4);  // 20000 calls: thinned twice past 8192
    CHECK(d.collectives.sample.back().seq == kCalls - 4);  // the sample reaches the end of the run
  }
  const auto f = dg::JobFindings(ranks);
  const auto it = std::find_if(f.begin(), f.end(), [](const dg::Finding& x) { return x.id == "straggler"; });
  REQUIRE(it != f.end());
  CHECK(it->ranks == std::vector<int>{2});
  CHECK(it->evidence["collectives_compared"] == kCalls / 4);
  CHECK(it->evidence["compared_every"] == 4);
  // Each of the others waited 1 ms in each of the 20000 calls, not only in the sampled ones.
  CHECK(it->evidence["wait_s_by_rank"]["0"].get<double>() == Approx(20.0).epsilon(0.001));
  CHECK(it->evidence["mean_wait_per_collective_ms"].get<double>() == Approx(1.0).epsilon(0.001));
}

TEST_CASE("collector: collectives of an unknown communicator do not grow the sample or its stride") {
  dg::RankModel c;
  wire::Batch b;
  for (uint64_t s = 0; s < 3 * dg::kMaxCollCalls; ++s) {  // no Communicator: every seq is 0
    auto* e = Ev(b, wire::NCCL_ALL_REDUCE, 1000 * kMs + s * kMs, 20 * kUs);
    e->set_comm_id(5);
    e->set_bytes(4096);
  }
  c.OnBatch(b);
  c.OnGoodbye({});
  CHECK(c.Result().collectives.sample.size() == dg::kMaxCollCalls);
  CHECK(c.Result().collectives.stride == 1);
}
