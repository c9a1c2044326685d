// What each fix buys (issue 52), checked against the fixed run: each bundled cause is played,
// its finding's `what_if.step_ms` (the step predicted with the cause's fix, from the step's
// critical path) is read, then the same scenario with the cause removed from its JSON is
// played, and the prediction must be within 10% of the step that run measured. A scenario with
// two causes checks the job's `what_if_all` (every fix at once) against its fully fixed run
// within 15%.
//
// Each fixed variant is made here by editing the bundled file's JSON, not kept as a file of its
// own, so that it cannot drift from the scenario it fixes. The edits are the fixes
// analyze/what_if.h models: host work shortened to what the loop needs to launch the step,
// the .item() removed, the copy pinned, the step's launches in one CUDA graph, the small
// all-reduces in one bucket, the slow rank at the others' pace, the stages' work balanced, the
// all-reduce overlapped with the compute before it, the clocks and the GPU given back.
//
// The measured step is `job.steps.median_ms`: the job's median step as the job paced it, the
// figure `gpuwatch diff` compares.
//
// Not here: checkpoint_stall (its stall is one step in ten, which the median step does not
// see, and periodic_stall's fix is not modelled) and small_batch (the simulator's kernels take
// their time whatever their grid, so a larger batch would not run faster on it).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "scenario_run.h"

using namespace gpuwatch::e2e;

namespace {

// The tolerances the issue sets: one fix, and two fixes combined (their errors add).
constexpr double kOneFixTolerance = 0.10;
constexpr double kCombinedTolerance = 0.15;

// What the loop needs to launch a step once its input is ready: the fixed host op's time.
constexpr double kLaunchHostMs = 0.1;

json Bundled(const std::string& name) {
  return json::parse(ReadFile(std::string(GPUWATCH_SCENARIOS_DIR) + "/" + name + ".json"));
}

// Work folders are named short ("wi-"): the collector's socket lives in one, and a path
// over 107 bytes (sun_path) cannot be bound.
JobRun Play(const std::string& work_name, const json& scenario) {
  JobRun r = RunScenario("wi-" + work_name, scenario.dump(1));
  INFO("driver stderr:\n" << r.job.err);
  REQUIRE(r.summary.is_object());
  return r;
}

json Find(const json& findings, const std::string& id) {
  for (const json& f : findings)
    if (f["id"] == id) return f;
  return json();
}

double MeasuredStepMs(const JobRun& r) { return r.summary["job"]["steps"]["median_ms"].get<double>(); }

std::string FindingsText(const JobRun& r) {
  std::string text;
  for (const json& f : r.summary["job"]["findings"])
    text += f["id"].get<std::string>() + " (" + f["time_lost_s"].dump() + " s lost) what_if " +
            f.value("what_if", json()).dump() + "\n";
  return text;
}

// Plays `original`, reads finding `id`'s predicted step, plays `fixed`, and checks the
// prediction within kOneFixTolerance of the step the fixed run measured.
void CheckPrediction(const std::string& name, const json& original, const std::string& id,
                     const json& fixed) {
  const JobRun before = Play(name, original);
  const double original_ms = MeasuredStepMs(before);
  INFO(name << ": original step " << original_ms << " ms; findings:\n" << FindingsText(before));
  const json finding = Find(before.summary["job"]["findings"], id);
  REQUIRE(finding.is_object());
  REQUIRE(finding.contains("what_if"));
  REQUIRE(finding["what_if"].is_object());
  const double predicted_ms = finding["what_if"]["step_ms"].get<double>();
  INFO("predicted with the fix (" << finding["what_if"].value("assumes", "") << "): " << predicted_ms << " ms");

  const JobRun after = Play(name + "-fix", fixed);
  const double fixed_ms = MeasuredStepMs(after);
  INFO("fixed run measured " << fixed_ms << " ms; its findings:\n" << FindingsText(after));
  CHECK(std::abs(predicted_ms - fixed_ms) <= kOneFixTolerance * fixed_ms);
}

json Edited(const json& scenario, const std::function<void(json&)>& fix) {
  json fixed = scenario;
  fix(fixed);
  return fixed;
}

// Removes every op of the step whose "op" is `op`.
void RemoveOps(json& scenario, const std::string& op) {
  json kept = json::array();
  for (const json& o : scenario["step"])
    if (o["op"] != op) kept.push_back(o);
  scenario["step"] = kept;
}

}  // namespace

TEST_CASE("what-if: dataloader_bound predicts its fixed run", "[what_if]") {
  // The 40 ms of input work per step shortened to what the loop needs to launch the step.
  const json original = Bundled("dataloader_bound");
  CheckPrediction("dataloader_bound", original, "data_loading",
                  Edited(original, [](json& s) { s["step"][0]["ms"] = kLaunchHostMs; }));
}

TEST_CASE("what-if: sync_stall predicts its fixed run", "[what_if]") {
  // Both .item() calls removed (the value read a step later); the device and event syncs that
  // end the step stay: they are no sync_stall.
  const json original = Bundled("sync_stall");
  CheckPrediction("sync_stall", original, "sync_stall",
                  Edited(original, [](json& s) { RemoveOps(s, "item"); }));
}

TEST_CASE("what-if: pageable_h2d predicts its fixed run", "[what_if]") {
  // The 16 MiB input copied from pinned memory (24 GB/s), asynchronously as before.
  const json original = Bundled("pageable_h2d");
  CheckPrediction("pageable_h2d", original, "pageable_copy", Edited(original, [](json& s) {
                    for (json& o : s["step"])
                      if (o["op"] == "h2d") o["pinned"] = true;
                  }));
}

TEST_CASE("what-if: launch_bound predicts its fixed run", "[what_if]") {
  // The step's 200 launches captured once and replayed as one CUDA graph per step. Played with
  // one rank: two ranks and the collector on the 2-core machine preempt each other inside the
  // 200-launch loop, and each preemption is a host gap of 100 us or more between launches that
  // the prediction keeps (host work, as far as the path can tell), while the graph-replayed
  // run, asleep in its sync most of the step, hardly has any. The prediction is per rank.
  json original = Bundled("launch_bound");
  original["ranks"] = 1;
  CheckPrediction("launch_bound", original, "launch_bound", Edited(original, [](json& s) {
                    for (json& o : s["step"])
                      if (o["op"] == "kernels")
                        o = {{"op", "graph"}, {"kernels", o["count"]}, {"us", o["us"]}, {"replays", 1}};
                  }));
}

TEST_CASE("what-if: small_collectives predicts its fixed run", "[what_if]") {
  // The 48 all-reduces of 64 KiB (3 MiB in all) in buckets of 25 MiB: one all-reduce of 3 MiB
  // where the first one was, the step still waiting for it.
  const json original = Bundled("small_collectives");
  CheckPrediction("small_collectives", original, "small_collectives", Edited(original, [](json& s) {
                    uint64_t bytes = 0;
                    json step = json::array();
                    for (const json& o : s["step"]) {
                      if (o["op"] != "allreduce") {
                        step.push_back(o);
                        continue;
                      }
                      if (bytes == 0) step.push_back(o);  // the bucket's place
                      bytes += o["bytes"].get<uint64_t>();
                    }
                    for (json& o : step)
                      if (o["op"] == "allreduce") o["bytes"] = bytes;
                    REQUIRE(bytes <= 25u * 1048576);  // one bucket holds them all
                    s["step"] = step;
                  }));
}

TEST_CASE("what-if: straggler predicts its fixed run", "[what_if]") {
  // Rank 2 at the others' pace: its doubled host time removed.
  const json original = Bundled("straggler");
  CheckPrediction("straggler", original, "straggler", Edited(original, [](json& s) { s.erase("rank_scale"); }));
}

// Stages balanced: the same work in all (each stage's kernels scaled to the stages' mean), not
// removed from the slow stage, so the fixed run does what the original did.
void BalanceStages(json& s) {
  const int ranks = s["ranks"];
  double total = 0;
  for (int r = 0; r < ranks; ++r) total += s["rank_scale"].value(std::to_string(r), json::object()).value("kernels", 1.0);
  json scale = json::object();
  for (int r = 0; r < ranks; ++r) scale[std::to_string(r)] = {{"kernels", total / ranks}};
  s["rank_scale"] = scale;
}

TEST_CASE("what-if: pipeline_bubble predicts its fixed run", "[what_if]") {
  const json original = Bundled("pipeline_bubble");
  CheckPrediction("pipeline_bubble", original, "pipeline_bubble", Edited(original, BalanceStages));
}

TEST_CASE("what-if: pipeline_slow_stage predicts its fixed run", "[what_if]") {
  const json original = Bundled("pipeline_slow_stage");
  CheckPrediction("pipeline_slow_stage", original, "pipeline_bubble", Edited(original, BalanceStages));
}

TEST_CASE("what-if: comm_bound predicts its fixed run", "[what_if]") {
  // The 64 MiB gradient all-reduce overlapped with the compute before it, as DDP's buckets
  // are: split in one bucket per kernel, each started once its kernel (its gradients) ended.
  const json original = Bundled("comm_bound");
  CheckPrediction("comm_bound", original, "communication", Edited(original, [](json& s) {
                    json step = json::array(), kernels, allreduce;
                    for (const json& o : s["step"]) {
                      if (o["op"] == "kernels") kernels = o;
                      else if (o["op"] == "allreduce") allreduce = o;
                    }
                    REQUIRE(kernels.is_object());
                    REQUIRE(allreduce.is_object());
                    const int buckets = kernels["count"];
                    const uint64_t bucket_bytes = allreduce["bytes"].get<uint64_t>() / buckets / 4 * 4;
                    for (const json& o : s["step"]) {
                      if (o["op"] == "allreduce") continue;
                      if (o["op"] != "kernels") {
                        step.push_back(o);
                        continue;
                      }
                      for (int b = 0; b < buckets; ++b) {
                        step.push_back({{"op", "kernels"}, {"count", 1}, {"us", o["us"]}, {"name", o["name"]}});
                        step.push_back({{"op", "allreduce"}, {"bytes", bucket_bytes}, {"overlap", true}});
                      }
                    }
                    s["step"] = step;
                  }));
}

TEST_CASE("what-if: clocks_throttled predicts its fixed run", "[what_if]") {
  const json original = Bundled("clocks_throttled");
  CheckPrediction("clocks_throttled", original, "clocks_throttled",
                  Edited(original, [](json& s) { s["gpu"].erase("throttle"); }));
}

TEST_CASE("what-if: gpu_shared predicts its fixed run", "[what_if]") {
  const json original = Bundled("gpu_shared");
  CheckPrediction("gpu_shared", original, "gpu_shared",
                  Edited(original, [](json& s) { s["gpu"].erase("other_processes"); }));
}

TEST_CASE("what-if: loader_and_item predicts its fixed run from every fix at once", "[what_if]") {
  // One rank (two spinning loaders on two cores would delay each other): 10 ms of CPU-bound
  // input work, the forward pass, an .item() read by 3 ms of host work (logging the loss),
  // the backward pass: 21.5 ms a step. One fix leaves the other cause on the path (11.6 ms with
  // the loader fixed, 18.8 ms with the .item() removed); both leave the GPU's 8.5 ms.
  const json original = json::parse(R"({
    "name": "loader_and_item", "ranks": 1, "steps": 20,
    "gpu": {"h2d_pinned_gbps": 24, "d2h_gbps": 24},
    "step": [{"op": "host", "ms": 10, "wait": "cpu"}, {"op": "h2d", "bytes": 8388608},
             {"op": "kernels", "count": 10, "us": 400, "name": "fwd"}, {"op": "item"},
             {"op": "host", "ms": 3}, {"op": "kernels", "count": 10, "us": 400, "name": "bwd"},
             {"op": "sync"}]})");
  const JobRun before = Play("loader_and_item", original);
  const double original_ms = MeasuredStepMs(before);
  INFO("original step " << original_ms << " ms; findings:\n" << FindingsText(before));
  const json& findings = before.summary["job"]["findings"];
  CHECK(Find(findings, "data_loading").is_object());
  CHECK(Find(findings, "sync_stall").is_object());
  const json& job = before.summary["job"];
  REQUIRE(job.contains("what_if_all"));
  REQUIRE(job["what_if_all"].is_object());
  const double predicted_ms = job["what_if_all"]["step_ms"].get<double>();
  INFO("predicted with every fix: " << predicted_ms << " ms");

  const JobRun after = Play("loader_and_item-fix", Edited(original, [](json& s) {
                              s["step"][0]["ms"] = kLaunchHostMs;
                              RemoveOps(s, "item");
                            }));
  const double fixed_ms = MeasuredStepMs(after);
  INFO("fully fixed run measured " << fixed_ms << " ms; its findings:\n" << FindingsText(after));
  CHECK(std::abs(predicted_ms - fixed_ms) <= kCombinedTolerance * fixed_ms);
}
