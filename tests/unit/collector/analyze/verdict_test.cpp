// The job's verdict (analyze/verdict.h): the top finding first, then the GPU's busy and useful
// shares, then the useful curve's shape, read only where it agrees with the top finding.
#include <catch2/catch.hpp>

#include "analyze/findings.h"
#include "analyze/verdict.h"

namespace col = gpuwatch::collector;

namespace {

constexpr uint64_t kMs = 1'000'000;

// A rank with a device timeline of 1 s: `busy` ms busy, `useful` ms of it not NCCL kernels.
col::RankResult Rank(uint64_t busy, uint64_t useful, col::UtilizationShape::Kind shape) {
  col::RankResult r;
  r.gpu.cupti_ranks = 1;
  r.gpu.work = 100;
  r.gpu.first_ns = 0;
  r.gpu.last_ns = r.gpu.active_ns = 1000 * kMs;
  r.gpu.run.busy = busy * kMs;
  r.gpu.run.noncomm_busy = useful * kMs;
  r.gpu_shape.kind = shape;
  return r;
}

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool Has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

}  // namespace

TEST_CASE("collector: the verdict opens with the top finding, then busy beside useful busy") {
  const std::vector<col::RankResult> ranks{Rank(900, 300, col::UtilizationShape::kSawtooth)};
  const std::vector<col::Finding> f{col::MakeFinding("data_loading", 0.5, 1.0)};
  const std::string v = col::Verdict(ranks, f);
  INFO(v);
  CHECK(StartsWith(v, "Biggest loss: data loading, 500.000 ms (50%). Fix: more DataLoader workers"));
  CHECK(Has(v, " GPU busy 90% of the time, 30% on compute and copies (NCCL kernels left out)."));
  // A sawtooth is what the guide reads as waiting for input: it agrees, and is given whole.
  CHECK(Has(v, " Compute curve: a sawtooth: the GPU waits for input every step (data loading)."));
  CHECK(v.find("Biggest loss") < v.find("GPU busy"));
  CHECK(v.find("GPU busy") < v.find("Compute curve"));
  // Host work makes the same sawtooth: the curve agrees, but its reading (data loading)
  // would name another cause.
  const std::string host = col::Verdict(ranks, {col::MakeFinding("host_overhead", 0.5, 1.0)});
  INFO(host);
  CHECK(Has(host, " Compute curve: a sawtooth, the shape host work while the GPU waited makes."));
  CHECK_FALSE(Has(host, "(data loading)"));
}

TEST_CASE("collector: a shape that contradicts the top finding is given with the measured cause") {
  // sync_stall's GPU idles while the host waits on it: the curve is steady and low, which the
  // guide alone would read as work too small for the GPU.
  const std::vector<col::RankResult> ranks{Rank(570, 560, col::UtilizationShape::kSteadyLow),
                                           Rank(570, 560, col::UtilizationShape::kSteadyLow)};
  const std::vector<col::Finding> f{col::MakeFinding("sync_stall", 0.55, 1.0),
                                    col::MakeFinding("host_overhead", 0.4, 1.0)};
  const std::string v = col::Verdict(ranks, f);
  INFO(v);
  CHECK(StartsWith(v, "Biggest loss: host waiting on the GPU (syncs)"));
  CHECK(Has(v, "Compute curve: steady and low, which the guide reads as the work is too small for the GPU"));
  CHECK(Has(v, "here the measured cause is host waiting on the GPU (syncs)."));
  CHECK_FALSE(Has(v, "steady and low: "));
  // The same curve under launch_bound is its cause: given as the guide reads it.
  const std::string agree = col::Verdict(ranks, {col::MakeFinding("launch_bound", 0.55, 1.0)});
  INFO(agree);
  CHECK(Has(agree, "Compute curve: steady and low: the work is too small for the GPU"));
}

TEST_CASE("collector: a straggler over a GPU busy in NCCL kernels reads its useful share") {
  // NCCL kernels waiting for the straggler keep the GPU 99% busy; 20% of it is useful.
  const std::vector<col::RankResult> ranks{Rank(990, 200, col::UtilizationShape::kSawtooth),
                                           Rank(990, 200, col::UtilizationShape::kSawtooth),
                                           Rank(220, 200, col::UtilizationShape::kSawtooth)};
  col::Finding s = col::MakeFinding("straggler", 0.8, 1.0);
  s.ranks = {2};
  const std::string v = col::Verdict(ranks, {s});
  INFO(v);
  CHECK(StartsWith(v, "Biggest loss: a straggler rank (rank 2)"));
  CHECK(Has(v, "GPU busy 73% of the time, 20% on compute and copies"));
  CHECK(Has(v, "here the measured cause is a straggler rank."));
}

TEST_CASE("collector: without a significant loss the verdict says so first, and a steady high curve plainly") {
  const std::vector<col::RankResult> ranks{Rank(990, 980, col::UtilizationShape::kSteadyHigh)};
  std::string v = col::Verdict(ranks, {col::MakeFinding("data_loading", 0.012, 1.0)});
  INFO(v);
  CHECK(StartsWith(v, "No significant loss found (largest: data loading, 1%). GPU busy 99% of the time"));
  CHECK(Has(v, " Compute curve: steady and high."));
  // A shape whose usual cause nothing measured confirms.
  v = col::Verdict(std::vector<col::RankResult>{Rank(400, 400, col::UtilizationShape::kSteadyLow)}, {});
  INFO(v);
  CHECK(StartsWith(v, "No significant loss found. GPU busy 40% of the time"));
  CHECK(Has(v, "Compute curve: steady and low, which the guide reads as the work is too small for the GPU "
               "(batch size, launches, compute graph); no measured loss confirms it."));
}

TEST_CASE("collector: without CUPTI the verdict has no busy figures and no curve") {
  col::RankResult r;
  r.gpu.events_ranks = 1;
  const std::string v = col::Verdict(std::vector<col::RankResult>{r}, {col::MakeFinding("sync_stall", 0.3, 1.0)});
  INFO(v);
  CHECK(StartsWith(v, "Biggest loss: host waiting on the GPU (syncs)"));
  CHECK(Has(v, " No GPU timeline (CUPTI unavailable)."));
  CHECK_FALSE(Has(v, "Compute curve"));
}

TEST_CASE("collector: each utilization shape agrees with the findings whose cause it names") {
  using S = col::UtilizationShape;
  CHECK(S{S::kSawtooth}.Agrees("data_loading"));
  CHECK(S{S::kSawtooth}.Agrees("cpu_oversubscribed"));
  CHECK_FALSE(S{S::kSawtooth}.Agrees("communication"));
  CHECK(S{S::kSteadyLow}.Agrees("launch_bound"));
  CHECK_FALSE(S{S::kSteadyLow}.Agrees("sync_stall"));
  CHECK(S{S::kPeriodicDrops}.Agrees("periodic_stall"));
  CHECK(S{S::kDegrading}.Agrees("clocks_throttled"));
  CHECK(S{S::kSteadyHigh}.Agrees("mixed_precision"));
  CHECK_FALSE(S{S::kSteadyHigh}.Agrees("straggler"));
  CHECK_FALSE(S{S::kUnknown}.Agrees("data_loading"));
  CHECK(std::string(S{S::kSawtooth}.form()) == "a sawtooth");
  CHECK(std::string(S{S::kSawtooth}.cause()) == "the GPU waits for input every step (data loading)");
  CHECK(std::string(S{S::kSteadyHigh}.cause()).empty());
}

TEST_CASE("collector: an oversubscribed host behind the top loss is named after it") {
  const std::vector<col::RankResult> ranks{Rank(600, 500, col::UtilizationShape::kSteadyLow)};
  col::Finding host = col::MakeFinding("cpu_oversubscribed", 0.17, 1.0);
  const std::string v = col::Verdict(ranks, {col::MakeFinding("data_loading", 0.4, 1.0), host});
  INFO(v);
  CHECK(StartsWith(v, "Biggest loss: data loading, 400.000 ms (40%)."));
  CHECK(Has(v, " Behind it: ranks waiting for a CPU (host oversubscribed) (17%). GPU busy"));
  // Low: not named.
  const std::string low = col::Verdict(ranks, {col::MakeFinding("data_loading", 0.4, 1.0),
                                               col::MakeFinding("cpu_oversubscribed", 0.02, 1.0)});
  CHECK_FALSE(Has(low, "Behind it"));
}
