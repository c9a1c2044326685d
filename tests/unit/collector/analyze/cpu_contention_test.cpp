// An oversubscribed host (analyze/cpu_contention.h, findings_oversubscribed.cpp): the ranks'
// threads' run-queue waits per host, whether they explain a straggler's spread (then the
// finding is the host's, cpu_oversubscribed, instead), and the host named on its own.
#include <catch2/catch.hpp>

#include <algorithm>

#include "findings_lookup.h"
#include "analyze/cpu_contention.h"
#include "analyze/findings.h"
#include "common/thresholds.h"

namespace col = gpuwatch::collector;

namespace {

constexpr uint64_t kMs = 1'000'000;

using gpuwatch::collector::test::Find;

// Three ranks on one host, 20 steps of 30 ms; rank 2 reaches every all-reduce 10 ms late, so
// ranks 0 and 1 wait 0.2 s for it in all. Each rank's threads waited `run_wait_s` for a CPU
// over the 0.6 s sampled.
std::vector<col::RankResult> LateRank2(double run_wait_s) {
  std::vector<col::RankResult> ranks = col::test::LateRank2Job();
  for (int r = 0; r < 3; ++r) {
    ranks[r].env.cpu_affinity = "0-1";
    ranks[r].io.all_s = 0.6;
    ranks[r].io.all_cpu_s = 0.3;
    ranks[r].io.all_run_wait_s = run_wait_s;
  }
  for (auto& r : ranks) r.findings = col::RankFindings(r);
  return ranks;
}

}  // namespace

TEST_CASE("collector: a host's contention is the median rank's wait, its CPUs the union of the ranks'") {
  std::vector<col::RankResult> ranks(4);
  const double waits[] = {0.1, 0.3, 0.2, 5.0};
  for (int r = 0; r < 4; ++r) {
    ranks[r].rank = r;
    ranks[r].host = r < 3 ? "a" : "b";
    ranks[r].env.cpu_affinity = r == 0 ? "0-1" : "1-2";
    ranks[r].io.all_s = 1.0;
    ranks[r].io.all_cpu_s = 0.5;
    ranks[r].io.all_run_wait_s = waits[r];
    ranks[r].io.all_throttled_s = r == 1 ? 0.1 : 0.0;
    // The GPU waited 0.4 s for the host, 0.2 s of it sampled, in which the threads waited
    // 0.3 s for a CPU (summed over threads: more than the gap, so the gap).
    ranks[r].io.host_wait_s = 0.4;
    ranks[r].io.gap_s = 0.2;
    ranks[r].io.run_wait_s = r == 0 ? 0.3 : 0.05;
  }
  const col::HostContention a = col::MeasureHost(ranks, "a");
  CHECK(a.ranks == std::vector<int>{0, 1, 2});
  CHECK(a.cpus == 3);
  CHECK(a.cores_busy == Approx(1.5));
  CHECK(a.run_wait_share == Approx(0.2));
  CHECK(a.throttled_share == Approx(0.0));
  CHECK(a.wait_s == Approx(0.2));  // 0.1, 0.3 + 0.1 throttled, 0.2
  CHECK(a.run_wait_share_by_rank == std::vector<double>{0.1, 0.3, 0.2});
  CHECK(a.gpu_idle_waiting_for_cpu_s == Approx(0.1));  // 0.4, 0.1, 0.1: scaled to every gap
  // Each tree also ran 0.1 s on a core in its gaps: of its demand a quarter was served, so at
  // most three quarters of the gaps were waits for a CPU.
  for (int r = 0; r < 3; ++r) ranks[r].io.cpu_s = 0.1, ranks[r].io.run_wait_s = 0.3;
  CHECK(col::MeasureHost(ranks, "a").gpu_idle_waiting_for_cpu_s == Approx(0.4 * 0.75));
  CHECK(a.Oversubscribed());
  CHECK(a.ExplainsSpread(0.4));
  CHECK_FALSE(a.ExplainsSpread(0.41));
  const col::HostContention b = col::MeasureHost(ranks, "b");
  CHECK(b.ranks == std::vector<int>{3});
  CHECK(b.run_wait_share == Approx(5.0));
  // A host with cores to spare: its threads seldom wait.
  for (auto& r : ranks) r.io.all_run_wait_s = 0.01, r.io.all_throttled_s = 0;
  CHECK_FALSE(col::MeasureHost(ranks, "a").Oversubscribed());
  CHECK_FALSE(col::MeasureHost(ranks, "a").ExplainsSpread(0.001));
  // No samples: nothing known.
  CHECK_FALSE(col::MeasureHost(std::vector<col::RankResult>{col::RankResult{}}, "").Oversubscribed());
}

TEST_CASE("collector: a straggler whose host's CPU waits explain the spread is cpu_oversubscribed") {
  // Each rank waited 0.15 s for a CPU, 25% of the time: at least half the 0.2 s the ranks
  // waited for rank 2.
  const auto f = col::JobFindings(LateRank2(0.15));
  REQUIRE(!f.empty());
  CHECK(Find(f, "straggler") == nullptr);
  const col::Finding* o = Find(f, "cpu_oversubscribed");
  REQUIRE(o != nullptr);
  CHECK(o->id == f[0].id);
  CHECK(o->ranks == std::vector<int>{0, 1, 2});
  // The straggler's time lost (the ranks' mean wait: 0.2, 0.2 and 0): the same loss, the host's.
  CHECK(o->time_lost_s == Approx(0.4 / 3));
  CHECK(o->evidence["host"] == "node1");
  CHECK(o->evidence["cpus"] == 2);
  CHECK(o->evidence["run_wait_share"].get<double>() == Approx(0.25));
  CHECK(o->evidence["straggler_explained"]["rank"] == 2);
  CHECK(o->evidence["straggler_explained"]["time_lost_s"].get<double>() == Approx(0.4 / 3));
  CHECK(o->summary.find("3 ranks on host node1 (2 CPUs)") == 0);
  CHECK(o->fix.find("OMP_NUM_THREADS") != std::string::npos);
  // The ranks that waited say the same: their waits are the host's, not rank 2's.
  std::vector<std::vector<col::Finding>> per;
  col::JobFindings(LateRank2(0.15), &per);
  REQUIRE(per.size() == 3);
  for (int r : {0, 1}) {
    INFO("rank " << r);
    CHECK(Find(per[r], "straggler") == nullptr);
    const col::Finding* g = Find(per[r], "cpu_oversubscribed");
    REQUIRE(g != nullptr);
    CHECK(g->time_lost_s == Approx(0.2));
    CHECK(g->ranks == std::vector<int>{0, 1, 2});
  }
}

TEST_CASE("collector: a straggler slower than its host's CPU waits explain stays the straggler") {
  // 0.05 s of CPU waits per rank: a quarter of the 0.2 s spread.
  const auto f = col::JobFindings(LateRank2(0.05));
  REQUIRE(!f.empty());
  CHECK(f[0].id == "straggler");
  CHECK(f[0].ranks == std::vector<int>{2});
  CHECK(Find(f, "cpu_oversubscribed") == nullptr);  // no host-wait gap: no GPU time lost to it
}

TEST_CASE("collector: an oversubscribed host without a straggler is named by the GPU time it idled") {
  std::vector<col::RankResult> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[r].rank = r;
    ranks[r].host = "vm";
    ranks[r].gpu.cupti_ranks = 1;
    ranks[r].gpu.last_ns = ranks[r].gpu.active_ns = 1000 * kMs;
    ranks[r].io.all_s = 1.0;
    ranks[r].io.all_run_wait_s = 0.3;
    ranks[r].io.host_wait_s = 0.2;
    ranks[r].io.gap_s = 0.1;
    ranks[r].io.run_wait_s = r == 0 ? 0.04 : 0.06;
  }
  const auto f = col::JobFindings(ranks);
  const col::Finding* o = Find(f, "cpu_oversubscribed");
  REQUIRE(o != nullptr);
  CHECK(o->time_lost_s == Approx(0.1));  // the median rank's 0.05 s in the sampled gaps, x2
  CHECK(o->severity == "medium");
  CHECK_FALSE(o->evidence.contains("straggler_explained"));
  CHECK(o->evidence["hosts"].size() == 1);
  // The same host with its threads seldom waiting: nothing.
  for (auto& r : ranks) r.io.all_run_wait_s = 0.01;
  CHECK(Find(col::JobFindings(ranks), "cpu_oversubscribed") == nullptr);
}

TEST_CASE("collector: a straggler within a group is weighed by its group's waiting peers, not the job's mean") {
  // Rank 2 is last in a TP pair {1, 2} of the three ranks; its peer waited 0.3 s for it, the
  // job's mean is 0.1 s. Each rank waited 0.06 s for a core: over half the job's mean, a fifth
  // of what its peer waited.
  std::vector<col::RankResult> ranks = LateRank2(0.06);
  col::Finding straggler;
  straggler.id = "straggler";
  straggler.ranks = {2};
  straggler.time_lost_s = 0.1;
  straggler.evidence = {{"comm", {{"kind", "tp"}, {"members", {1, 2}}}}, {"peers_wait_s", 0.3}};
  bool explains = true;
  col::CpuOversubscribed(ranks, 1.0, straggler, &explains);
  CHECK_FALSE(explains);
  // The same waits against a straggler of the whole job's group: they explain its spread.
  straggler.evidence["comm"]["members"] = {0, 1, 2};
  straggler.evidence["peers_wait_s"] = 0.2;
  col::CpuOversubscribed(ranks, 1.0, straggler, &explains);
  CHECK(explains);
}
