// CompareRuns on small documents that differ in one thing each: the headline (the diff's
// first line) names the change with its time per step; noise, lengths, world sizes and
// runs that cannot be compared.
#include <catch2/catch.hpp>

#include "compare/summary_diff.h"
#include "summaries.h"

using namespace gpuwatch::collector::compare;
using gwdiff::AddFinding;
using gwdiff::Doc;
using nlohmann::json;

namespace {

SummaryDiff Diff(const json& a, const json& b, double noise_pct = 3.0) {
  DiffOptions o;
  o.noise_pct = noise_pct;
  return CompareRuns(ExtractFigures(a, "base"), ExtractFigures(b, "new"), o);
}

const FindingDelta* Finding(const SummaryDiff& d, const std::string& id) {
  for (const FindingDelta& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

}  // namespace

TEST_CASE("collector: diff of a run with itself has no change beyond noise") {
  json a = Doc();
  AddFinding(a, "communication", "medium", 2.0);
  const SummaryDiff d = Diff(a, a);
  CHECK(d.comparable);
  CHECK(d.gpu_comparable);
  CHECK(d.headline.kind == "none");
  CHECK(d.headline.text == "gpuwatch diff: step time 20.00 -> 20.00 ms (+0.0%); no change beyond noise (0.60 ms/step)");
  CHECK(d.environment.empty());
  CHECK(d.notes.empty());
  for (const FindingDelta& f : d.findings) CHECK(f.trend == Trend::kUnchanged);
  for (const SyncDelta& s : d.sync) CHECK(s.trend == Trend::kUnchanged);
  CHECK(d.noise_ms == Approx(0.6));  // 3% of 20 ms
}

TEST_CASE("collector: diff headline names a new finding with its time per step") {
  json a = Doc(), b = Doc();
  AddFinding(a, "communication", "medium", 2.0);
  AddFinding(b, "communication", "medium", 2.1);
  AddFinding(b, "sync_stall", "high", 8.5, "host waiting on the GPU (syncs)");
  gwdiff::SetStepMedian(b, 21.0);
  const SummaryDiff d = Diff(a, b);
  CHECK(d.headline.kind == "finding");
  CHECK(d.headline.key == "sync_stall");
  CHECK(d.headline.trend == Trend::kNew);
  CHECK(d.headline.text ==
        "gpuwatch diff: step time 20.00 -> 21.00 ms (+5.0%); biggest change: sync_stall new, 8.50 "
        "ms/step (host waiting on the GPU (syncs))");
  REQUIRE(d.findings.size() == 2);
  CHECK(d.findings[0].id == "sync_stall");  // ranked by the change per step
  CHECK(d.findings[0].severity_before.empty());
  CHECK(d.findings[0].severity_after == "high");
  CHECK(d.findings[1].trend == Trend::kUnchanged);  // +0.1 ms/step: noise
  CHECK_FALSE(d.findings[1].beyond_noise);
}

TEST_CASE("collector: diff findings grow, shrink and go") {
  json a = Doc(), b = Doc();
  AddFinding(a, "data_loading", "high", 10.0);
  AddFinding(a, "input_io", "high", 10.0);
  AddFinding(a, "pageable_copy", "medium", 3.0);
  AddFinding(b, "data_loading", "high", 4.0);
  AddFinding(b, "input_io", "high", 4.0);
  AddFinding(b, "communication", "medium", 5.0);
  const SummaryDiff d = Diff(a, b);
  CHECK(Finding(d, "data_loading")->trend == Trend::kShrunk);
  CHECK(*Finding(d, "data_loading")->ms_per_step.Delta() == Approx(-6.0));
  CHECK(Finding(d, "pageable_copy")->trend == Trend::kGone);
  CHECK(Finding(d, "communication")->trend == Trend::kNew);
  // input_io is data_loading's time explained, never the headline itself.
  CHECK(d.headline.key == "data_loading");
  CHECK_THAT(d.headline.text, Catch::Contains("data_loading shrunk, 10.00 -> 4.00 ms/step (-6.00)"));
}

TEST_CASE("collector: diff compares runs of different lengths per step") {
  json a = Doc(50), b = Doc(100);
  AddFinding(a, "sync_stall", "high", 5.0);
  AddFinding(b, "sync_stall", "high", 5.0);  // twice the time over twice the steps
  const SummaryDiff d = Diff(a, b);
  CHECK(d.comparable);
  CHECK(d.headline.kind == "none");
  CHECK(Finding(d, "sync_stall")->trend == Trend::kUnchanged);
  for (const SyncDelta& s : d.sync) CHECK(s.trend == Trend::kUnchanged);
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0] == "BASE has 50 steps, NEW 100: compared per step");
}

TEST_CASE("collector: diff compares runs of different world sizes per rank") {
  json a = Doc(), b = Doc();
  // Four ranks with the same per-rank figures: nothing changed per rank.
  b["ranks"].push_back(gwdiff::Rank(2));
  b["ranks"].push_back(gwdiff::Rank(3));
  for (json& r : b["ranks"]) r["world_size"] = 4;
  b["job"]["ranks"] = 4;
  b["job"]["world_size"] = 4;
  b["job"]["gpu"]["kernels"]["top"][0]["total_s"] = 2 * 0.024 * 50;  // the job's sum doubles
  const SummaryDiff d = Diff(a, b);
  CHECK(d.comparable);
  CHECK(d.headline.kind == "none");
  for (const KernelDelta& k : d.kernels) CHECK(k.trend == Trend::kUnchanged);
  bool world = false;
  for (const EnvDifference& e : d.environment)
    if (e.what == "world size") world = e.before == "2" && e.after == "4";
  CHECK(world);
  CHECK_THAT(d.notes.at(0), Catch::Contains("compared per rank"));
}

TEST_CASE("collector: diff says when runs are not comparable") {
  json a = Doc(), b = Doc();
  b["job"]["steps"] = {{"count", 0}, {"source", "none"}, {"median_ms", 0}};
  AddFinding(b, "data_loading", "high", 0.0);
  SummaryDiff d = Diff(a, b);
  CHECK_FALSE(d.comparable);
  CHECK(d.headline.kind == "not_comparable");
  CHECK(d.headline.text ==
        "gpuwatch diff: not comparable: NEW has no steps (steps.source none, count 0); GPU busy 80% -> 80%");
  CHECK_FALSE(d.step_median_ms.before);  // no numbers that mean nothing
  CHECK(d.sync.empty());
  // Findings still compare by presence and share.
  CHECK(Finding(d, "data_loading")->trend == Trend::kNew);
  CHECK_FALSE(Finding(d, "data_loading")->ms_per_step.after);

  json c = Doc();
  c["job"]["steps"]["source"] = "inferred:collectives";
  d = Diff(a, c);
  CHECK_FALSE(d.comparable);
  CHECK(d.not_comparable.at(0) == "steps come from nvtx:train_step in BASE and inferred:collectives in NEW");

  json m = Doc();
  m["job"]["steps"]["source"] = "mixed";
  CHECK_THAT(Diff(m, m).not_comparable.at(0), Catch::Contains("BASE's ranks found their steps in different ways"));
}

TEST_CASE("collector: diff GPU figures need a device timeline in both runs") {
  json a = Doc(), b = Doc();
  b["job"]["gpu"]["source"] = "events";
  const SummaryDiff d = Diff(a, b);
  CHECK(d.comparable);
  CHECK_FALSE(d.gpu_comparable);
  CHECK_FALSE(d.gpu_busy_pct.after);
  CHECK(d.kernels.empty());
  CHECK_THAT(d.notes.at(0), Catch::Contains("gpu.source: BASE cupti, NEW events"));
}

TEST_CASE("collector: diff tables: pageable copies, busbw that fell, kernels, call sites") {
  json a = Doc(), b = Doc();
  for (json& r : b["ranks"]) {
    r["memcpy"]["h2d"]["pageable_count"] = 50;
    r["memcpy"]["h2d"]["pageable_bytes"] = r["memcpy"]["h2d"]["bytes"];
    r["memcpy"]["h2d"]["total_s"] = 0.3;  // 6 ms/step of host time
    r["collectives"]["allreduce"]["total_s"] = 0.2;
    r["sync"]["by_api"]["cudaDeviceSynchronize"] = {{"count", 50}, {"total_s", 0.1}};
    const json site = {{"python", "train.py:88 in step"}, {"frames", json::array()}, {"calls", 50},
                       {"blocked_s", 0.1}};
    r["findings"] = json::array({{{"id", "sync_stall"}, {"evidence", {{"call_site", site}}}}});
  }
  b["job"]["memcpy"]["h2d"]["pageable_bytes"] = b["job"]["memcpy"]["h2d"]["bytes"];
  b["job"]["collectives"]["allreduce"]["busbw_gbps"] = 40.0;
  b["job"]["gpu"]["kernels"]["top"][0]["total_s"] = 0.036 * 50;  // fwd: 12 -> 18 ms/step
  b["job"]["gpu"]["kernels"]["top"].push_back({{"name", "<new>&kernel"}, {"count", 50}, {"total_s", 0.05}});
  const SummaryDiff d = Diff(a, b);

  const CopyDelta& h2d = d.copies.at(0);
  CHECK(h2d.direction == "h2d");
  CHECK(h2d.became_pageable);
  CHECK(h2d.trend == Trend::kGrown);
  CHECK(*h2d.host_ms_per_step.after == Approx(6.0));
  CHECK(*h2d.pageable_share.after == 1.0);

  const CollectiveDelta& ar = d.collectives.at(0);
  CHECK(ar.busbw_fell);
  CHECK(ar.trend == Trend::kGrown);
  CHECK(*ar.gpu_ms_per_step.after == Approx(4.0));

  REQUIRE(d.kernels.size() == 2);
  CHECK(d.kernels[0].name == "fwd");
  CHECK(d.kernels[0].trend == Trend::kGrown);
  CHECK(*d.kernels[0].gpu_ms_per_step.Delta() == Approx(6.0));
  CHECK(d.kernels[1].trend == Trend::kNew);

  REQUIRE(d.sync.size() == 2);
  CHECK(d.sync[0].api == "cudaDeviceSynchronize");
  CHECK(d.sync[0].trend == Trend::kNew);

  REQUIRE(d.call_sites.size() == 1);
  CHECK(d.call_sites[0].site == "train.py:88 in step");
  CHECK(d.call_sites[0].trend == Trend::kNew);
  CHECK(*d.call_sites[0].blocked_ms_per_step.after == Approx(2.0));

  // No finding moved: the headline is the largest table change (the kernel, +6 ms/step,
  // ties the copy's +5.9: the kernel is first by its larger change).
  CHECK(d.headline.kind == "kernel");
  CHECK_THAT(d.headline.text, Catch::Contains("biggest change: kernel fwd grown, 12.00 -> 18.00 ms/step"));
}

TEST_CASE("collector: diff lists environment differences") {
  json a = Doc(), b = Doc();
  for (json& r : b["ranks"]) {
    r["environment"]["nccl"] = "2.21.5";
    r["environment"]["settings"]["NCCL_P2P_DISABLE"] = "1";
  }
  b["ranks"][1]["device"] = 3;
  const SummaryDiff d = Diff(a, b);
  std::map<std::string, std::pair<std::string, std::string>> env;
  for (const EnvDifference& e : d.environment) env[e.what] = {e.before, e.after};
  CHECK(env.at("NCCL") == std::pair<std::string, std::string>{"2.28.0", "2.21.5"});
  CHECK(env.at("NCCL_P2P_DISABLE") == std::pair<std::string, std::string>{"unset", "1"});
  CHECK(env.at("devices") == std::pair<std::string, std::string>{"node1: 0,1", "node1: 0,3"});
  CHECK(env.count("CUDA runtime") == 0);
  CHECK(d.headline.kind == "none");
}

TEST_CASE("collector: diff noise floor is a share of the base step, at least 0.05 ms") {
  json a = Doc(), b = Doc();
  AddFinding(a, "launch_bound", "low", 1.0);
  AddFinding(b, "launch_bound", "low", 1.5);
  CHECK(Diff(a, b, 3.0).headline.kind == "none");         // 0.5 < 0.6
  CHECK(Diff(a, b, 2.0).headline.key == "launch_bound");  // 0.5 >= 0.4
  CHECK(Diff(a, b, 0.0).noise_ms == kMinNoiseMs);
}

TEST_CASE("collector: diff step parts grow or shrink, they do not come or go") {
  json a = Doc(), b = Doc();
  for (json& r : b["ranks"]) {
    r["steps"]["per_step_ms"]["gpu_idle_in_syncs"] = 0.01;     // 0 -> 0.01: noise
    r["steps"]["per_step_ms"]["host_blocked_in_syncs"] = 5.0;  // 0 -> 5
  }
  const SummaryDiff d = Diff(a, b);
  REQUIRE(!d.step_parts.empty());
  CHECK(d.step_parts[0].part == "host_blocked_in_syncs");
  CHECK(d.step_parts[0].trend == Trend::kGrown);
  for (const StepPartDelta& p : d.step_parts)
    if (p.part == "gpu_idle_in_syncs") CHECK(p.trend == Trend::kUnchanged);
  // No finding moved: the step part is the headline.
  CHECK(d.headline.kind == "step_part");
  CHECK_THAT(d.headline.text, Catch::Contains("biggest change: host_blocked_in_syncs grown, 0.00 -> 5.00 ms/step (+5.00)"));
}
