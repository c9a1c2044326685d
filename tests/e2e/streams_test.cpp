// Cross-stream waits end to end on the simulated GPU (stream_wait scenario): the compute
// stream waits for a side stream's kernels every step (cudaEventRecord + cudaStreamWaitEvent),
// and the side stream for the compute stream's. Per stream, the summary's `stream_wait`
// must match the simulator's per-stream truth, and the GPU's own idle breakdown must not
// take the wait for idle time (the side stream ran meanwhile).
#include <catch2/catch.hpp>

#include "scenario_run.h"

using namespace gpuwatch::e2e;

namespace {

double D(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; }
uint64_t U(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<uint64_t>() : 0; }

const json* ById(const json& streams, uint64_t id) {
  for (const json& s : streams)
    if (U(s, "stream") == id) return &s;
  return nullptr;
}

}  // namespace

TEST_CASE("streams: a stream waiting for another stream's work is stream_wait, per stream, as the device truth") {
  const JobRun r = RunScenario("stream-wait", "stream_wait", {.truth = true});
  INFO("driver stderr:\n" << r.job.err);
  const json& rank = r.summary["ranks"][0];
  const json dev = r.Device(rank["rank"].get<int>());
  const json& streams = rank["gpu"]["streams"];
  INFO("summary streams: " << streams.dump() << "\ntruth streams: " << dev["streams"].dump());
  constexpr int kSteps = 30;
  // Every step: side waits for compute (before the side kernels), compute waits for side
  // (after them); the end-of-step join waits on the comm stream, which never runs work.
  CHECK(U(rank["gpu"]["stream_waits"], "count") == 3 * kSteps);

  int checked = 0;
  double compute_wait = 0;
  for (const json& truth : dev["streams"]) {
    const uint64_t id = U(truth, "stream");
    const json* got = ById(streams, id);
    REQUIRE(got);
    INFO("stream " << id);
    CHECK(U(*got, "work") == U(truth, "ops"));
    CHECK(D(*got, "busy_s") == Approx(D(truth, "busy_s")).epsilon(0.05));
    const double want = D(truth, "stream_wait_s");
    const double wait = D((*got)["idle_breakdown_s"], "stream_wait");
    CHECK(wait == Approx(want).epsilon(0.05));
    if (want > 0) ++checked;
    // The compute stream (20 kernels a step) waited for the side kernels: 4 x 250 us a step.
    if (U(truth, "ops") == 20 * kSteps) {
      compute_wait = wait;
      CHECK(want == Approx(kSteps * 4 * 250e-6).epsilon(0.05));
    }
  }
  CHECK(checked == 2);  // both streams waited for the other
  REQUIRE(compute_wait > 0);
  // The GPU ran the side kernels while the compute stream waited: none of that wait is idle
  // device time, so the device's idle breakdown stays what the host and syncs made it.
  const json& idle = rank["gpu"]["idle_breakdown_s"];
  const double gaps = D(rank["gpu"]["gaps"], "total_s");
  CHECK(gaps == Approx(D(dev["gaps"], "total_s")).epsilon(0.05).margin(0.0005));
  CHECK(D(idle, "other") < 0.1 * compute_wait);
  // The host's 0.5 ms a step shows as host_wait on the device and on the compute stream alike.
  CHECK(D(idle, "host_wait") >= kSteps * 0.5e-3 * 0.9);
}
