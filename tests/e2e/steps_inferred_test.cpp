// Issue 16, "steps with no code change": a PyTorch-shaped loop without NVTX (load a batch,
// copy it, forward/backward/optimizer kernels; optionally DDP's all-reduce or a .item()) gets
// per-step figures -- steps found from the loop's own repeating calls while the run goes
// on, each charged its device time like an NVTX step -- checked against the truth files.
#include <catch2/catch.hpp>

#include <cmath>

#include "scenario_run.h"

using namespace gpuwatch::e2e;

namespace {

// One rank's steps block against the scenario's truth: the count within one step (an
// inferred step opens at its first call, so the run's first or last may be cut), the median
// no longer than the driver's mean step (a loaded machine makes a few steps much longer,
// never shorter) and no shorter than the host work a step sleeps, per-step device figures
// from most steps, the compute kernels' time per step within 5%, and the step's parts
// (compute, exposed communication, idle, copies) adding up to the mean step within 10%:
// device time charged to the right steps, none lost.
void CheckInferredSteps(const JobRun& run, int rank, const std::string& source, double kernel_ms, double host_ms) {
  const json& r = run.summary["ranks"][rank];
  const json& st = r["steps"];
  const json truth = run.Truth(rank);
  const int steps = truth["steps"];
  const double wall_ms = truth["wall_s"].get<double>() * 1e3;
  INFO("rank " << rank << " steps: " << st.dump());
  CHECK(st["source"] == source);
  CHECK(std::abs(st["count"].get<int>() - steps) <= 1);
  const double median = st["median_ms"], mean = wall_ms / steps;
  CHECK(median >= host_ms);
  CHECK(median <= 1.1 * mean);
  REQUIRE(st["per_step_source"] == "per step");
  // The steps before the pattern was found were charged to no step; the rest were.
  const int recorded = st.value("per_step_recorded", st["count"].get<int>());
  CHECK(recorded >= steps / 2);
  const json& per = st["per_step_ms"];
  const double compute = per["gpu_compute"];
  CHECK(std::abs(compute - kernel_ms) <= 0.05 * kernel_ms);
  const double parts = compute + per["comm_not_overlapped"].get<double>() + per["gpu_idle_waiting_for_host"].get<double>() +
                       per["gpu_idle_waiting_for_launches"].get<double>() + per["gpu_idle_in_syncs"].get<double>() +
                       per["gpu_idle_other"].get<double>() + per["copies"].get<double>();
  CHECK(std::abs(parts - mean) <= 0.1 * mean);
}

}  // namespace

TEST_CASE("steps: a loop without NVTX, syncs or collectives gets per-step figures from its launches") {
  // 6 ms of data loading, the batch's copy, 24 forward/backward kernels and 8 optimizer
  // kernels (4.0 ms of kernels per step): the GPU waits for the host every step (a loop the
  // GPU bounds would let the device fall behind the host's steps, nothing syncing them).
  const JobRun run = RunScenario("steps-launches", R"({"name": "loop_no_nvtx", "ranks": 1, "steps": 40, "nvtx": false,
    "gpu": {"h2d_pinned_gbps": 24},
    "step": [{"op": "host", "ms": 6}, {"op": "h2d", "bytes": 1048576},
             {"op": "kernels", "count": 24, "us": 150}, {"op": "kernels", "count": 8, "us": 50}]})",
                                 {.truth = true});
  CheckInferredSteps(run, 0, "inferred:launches", 24 * 0.150 + 8 * 0.050, 6.0);
}

TEST_CASE("steps: a DDP loop without NVTX gets per-step figures from its all-reduces") {
  const JobRun run = RunScenario("steps-ddp", R"({"name": "ddp_no_nvtx", "ranks": 2, "steps": 30, "nvtx": false,
    "gpu": {"h2d_pinned_gbps": 24, "busbw_gbps": 80, "coll_latency_us": 30},
    "step": [{"op": "host", "ms": 6}, {"op": "h2d", "bytes": 1048576},
             {"op": "kernels", "count": 20, "us": 100}, {"op": "allreduce", "bytes": 4194304},
             {"op": "kernels", "count": 5, "us": 40}]})",
                                 {.truth = true});
  for (int rank = 0; rank < 2; ++rank) CheckInferredSteps(run, rank, "inferred:collectives", 20 * 0.100 + 5 * 0.040, 6.0);
}

TEST_CASE("steps: inferred steps count the graph launches and graph kernels of each step") {
  // A loop without NVTX that replays a 50-kernel graph twice and waits for it every step:
  // steps inferred from the syncs, each holding both replays and their 100 kernels.
  const JobRun run = RunScenario("steps-graphs", R"({"name": "graphs_no_nvtx", "ranks": 1, "steps": 24, "nvtx": false,
    "step": [{"op": "host", "ms": 2}, {"op": "graph", "kernels": 50, "us": 20, "replays": 2}, {"op": "sync"}]})",
                                 {.truth = true});
  INFO("driver stderr:\n" << run.job.err);
  const json& st = run.summary["ranks"][0]["steps"];
  INFO(st.dump());
  CHECK(st["source"] == "inferred:syncs");
  REQUIRE(st["per_step_source"] == "per step");
  CHECK(st["per_step_graphs"]["launches"].get<double>() == Approx(2.0).epsilon(1e-9));
  CHECK(st["per_step_graphs"]["kernels"].get<double>() == Approx(100.0).epsilon(1e-9));
}
