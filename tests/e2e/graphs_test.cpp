// CUDA graphs and the wider CUDA surface end to end on the simulated GPU: a launch-bound
// step captured in a graph is no longer called launch-bound and its work is attributed to
// its graph launches; a step that mixes graphs and eager launches splits them; a program
// that calls every newly hooked API gets host figures equal to the calls it made; the
// trace of a graph run holds every graph kernel and a flow from each graph launch.
#include <catch2/catch.hpp>

#include <cmath>

#include "scenario_model.h"
#include "scenario_run.h"
#include "test_trace_validator.h"
#include "truth_check.h"

using namespace gpuwatch::e2e;

namespace {

uint64_t U(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<uint64_t>() : 0; }
double D(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; }
const json& Sub(const json& j, const char* key) {
  static const json empty = json::object();
  return j.is_object() && j.contains(key) && !j[key].is_null() ? j[key] : empty;
}
bool HasFinding(const json& findings, const std::string& id) {
  for (const json& f : findings)
    if (f["id"] == id) return true;
  return false;
}

}  // namespace

TEST_CASE("graphs: a launch-bound step captured in a graph is attributed to its launches, not launch-bound") {
  const JobRun r = RunScenario("graphs-only", "graphs", {.truth = true});
  INFO("driver stderr:\n" << r.job.err);
  const json& rank = r.summary["ranks"][0];
  const json dev = r.Device(rank["rank"].get<int>());
  const json& g = rank["graphs"];
  CHECK(U(g, "launches") == 60);
  CHECK(U(g, "kernels") == 60 * 200);
  CHECK(U(g, "device_launches") == 60);
  REQUIRE(g["per_graph"].size() == 1);
  CHECK(U(g["per_graph"][0], "launches") == 60);
  CHECK(U(g["per_graph"][0], "kernels") == 60 * 200);
  // Nothing was launched one by one: the 200 captured launches ran nothing.
  CHECK(U(rank["kernels"], "launches") == 0);
  CHECK(U(g, "captured_calls") == 200);
  CHECK(U(rank["gpu"]["kernels"], "in_graphs") == U(rank["gpu"]["kernels"], "count"));
  CHECK(D(rank["gpu"], "busy_s") == Approx(D(dev, "busy_s")).epsilon(0.03));
  CHECK(D(rank["gpu"]["kernels"], "total_s") == Approx(D(dev["kinds"]["kernel"], "device_s")).epsilon(0.03));
  // The same step launched kernel by kernel is launch-bound (diagnosis_test); in a graph it is not.
  CHECK_FALSE(HasFinding(rank["findings"], "launch_bound"));
  CHECK_FALSE(HasFinding(r.summary["job"]["findings"], "launch_bound"));
  CHECK(r.SummaryText().find("CUDA graphs: 60 launches") != std::string::npos);
  // Per NVTX step: the one replay and its 200 kernels.
  const json& per = rank["steps"]["per_step_graphs"];
  INFO(rank["steps"].dump());
  CHECK(rank["steps"]["per_step_source"] == "per step");
  CHECK(D(per, "launches") == Approx(1.0).epsilon(1e-9));
  CHECK(D(per, "kernels") == Approx(200.0).epsilon(1e-9));
}

TEST_CASE("graphs: a step mixing graph replays and eager launches splits them") {
  const JobRun r = RunScenario("graphs-mixed", "graphs_mixed", {.truth = true});
  INFO("driver stderr:\n" << r.job.err);
  const json& rank = r.summary["ranks"][0];
  const json dev = r.Device(rank["rank"].get<int>());
  const json& g = rank["graphs"];
  CHECK(U(g, "launches") == 40 * 2);
  CHECK(U(g, "kernels") == 40 * 2 * 20);
  CHECK(U(rank["kernels"], "launches") == 40 * 30);
  const json& k = rank["gpu"]["kernels"];
  CHECK(U(k, "count") == 40 * (2 * 20 + 30));
  CHECK(U(k, "in_graphs") == 40 * 2 * 20);
  // The kernel table says which kernels ran inside graphs: the graph's spin kernel and the
  // eager one share a name, so its row counts both and says how many were in graphs.
  uint64_t in_graphs = 0;
  for (const json& row : k["top"]) in_graphs += U(row, "in_graphs");
  CHECK(in_graphs == 40 * 2 * 20);
  CHECK(D(g, "device_s") == Approx(D(dev["graphs"], "device_s")).epsilon(0.03));
  CHECK(D(g, "device_s") == Approx(40 * 2 * 20 * 50e-6).epsilon(0.03));
  CHECK(U(rank["memset"], "count") == 40);
  CHECK(U(rank["memset"], "bytes") == 40ull * 1048576);
  // Per NVTX step: two replays of 20 kernels; the eager kernels are not graph kernels.
  const json& per = rank["steps"]["per_step_graphs"];
  INFO(rank["steps"].dump());
  CHECK(D(per, "launches") == Approx(2.0).epsilon(1e-9));
  CHECK(D(per, "kernels") == Approx(40.0).epsilon(1e-9));
}

TEST_CASE("graphs: Triton's launches (cuLaunchKernelEx from libcuda.so.1 by dlsym) are driver launches on the timeline") {
  const JobRun run = RunScenario("triton-launches", R"({"name": "triton", "ranks": 1, "steps": 12,
    "step": [{"op": "host", "ms": 1}, {"op": "kernels", "count": 6, "us": 80, "name": "aten"},
             {"op": "kernels", "count": 4, "us": 120, "name": "triton_fused", "via": "triton"}, {"op": "sync"}]})",
                                 {.truth = true});
  INFO("driver stderr:\n" << run.job.err);
  // Every count and time against the truth (driver_launches = the dlsym'd launches).
  CheckSummaryAgainstTruth(gpuwatch::scenario::load_scenario(run.file), run.summary, run.truth_dir);
  const json& rank = run.summary["ranks"][0];
  CHECK(U(rank["kernels"], "launches") == 12 * 6);
  CHECK(U(rank["kernels"], "driver_launches") == 12 * 4);
  CHECK(U(rank["gpu"]["kernels"], "count") == 12 * 10);
}

TEST_CASE("graphs: every newly hooked CUDA API is counted exactly on the host") {
  const JobRun run = RunJob("graphs-api-surface", {std::string(GPUWATCH_BIN_DIR) + "/gw_api_app"});
  INFO(run.job.out << run.job.err);
  REQUIRE(run.job.exit_code == 0);
  const json want = json::parse(run.job.out.substr(run.job.out.find('{')));
  const json& rank = run.summary["ranks"][0];
  const json& mc = rank["memcpy"];
  CHECK(U(mc["h2d"], "count") == U(want, "h2d"));
  CHECK(U(mc["h2d"], "bytes") == U(want, "h2d_bytes"));
  CHECK(U(mc["d2h"], "count") == U(want, "d2h"));
  CHECK(U(mc["d2h"], "bytes") == U(want, "d2h_bytes"));
  CHECK(U(mc["d2d"], "count") == U(want, "d2d"));
  CHECK(U(mc["d2d"], "bytes") == U(want, "d2d_bytes"));
  CHECK(U(rank["memset"], "count") == U(want, "memsets"));
  CHECK(U(rank["memset"], "bytes") == U(want, "memset_bytes"));
  CHECK(U(rank["kernels"], "launches") == U(want, "launches"));
  // cuLaunchKernel(Ex) taken from libcuda.so.1 with dlsym (Triton's launcher).
  CHECK(U(rank["kernels"], "driver_launches") == U(want, "driver_launches"));
  const json& by_api = rank["sync"]["by_api"];
  CHECK(U(Sub(by_api, "cudaMemcpy"), "count") == U(want, "blocking_copies"));
  // The driver's cuStreamSynchronize, cuCtxSynchronize and cuEventSynchronize count with the runtime's.
  CHECK(U(Sub(by_api, "cudaStreamSynchronize"), "count") == U(want, "stream_syncs"));
  CHECK(U(Sub(by_api, "cudaDeviceSynchronize"), "count") == U(want, "device_syncs"));
  CHECK(U(Sub(by_api, "cudaEventSynchronize"), "count") == U(want, "event_syncs"));
  // Polling loops: one sync each, as long as the program's own stopwatch says (5% or 0.5 ms).
  for (const char* api : {"cudaStreamQuery", "cudaEventQuery"}) {
    INFO(api);
    const std::string key = std::string(api) == "cudaStreamQuery" ? "stream_poll" : "event_poll";
    CHECK(U(Sub(by_api, api), "count") == U(want, (key + "s").c_str()));
    const double got = D(Sub(by_api, api), "total_s"), truth = D(want, (key + "_s").c_str());
    CHECK(std::abs(got - truth) <= std::max(0.05 * truth, 0.0005));
    CHECK(U(Sub(rank["api_calls"], api), "not_ready") > 0);
  }
  const json& calls = rank["api_calls"];
  CHECK(U(Sub(calls, "cudaStreamWaitEvent"), "count") == U(want, "stream_waits"));
  CHECK(U(Sub(calls, "cudaLaunchHostFunc"), "count") == U(want, "host_funcs"));
  CHECK(U(Sub(calls, "cudaStreamBeginCapture"), "count") == U(want, "captures"));
  CHECK(U(Sub(calls, "cudaStreamEndCapture"), "count") == U(want, "captures"));
  CHECK(U(Sub(calls, "cudaGraphInstantiate"), "count") == U(want, "instantiations"));
  CHECK(U(Sub(calls, "cudaGraphLaunch"), "count") == U(want, "graph_launches"));
  const json& g = rank["graphs"];
  CHECK(U(g, "launches") == U(want, "graph_launches"));
  CHECK(U(g, "captured_calls") == U(want, "captured_calls"));
  CHECK(U(g, "kernels") == U(want, "graph_kernels"));
  CHECK(U(g, "device_launches") == U(want, "graph_launches"));
  // The captured memset and copy ran at each launch: 3 graph ops more than its kernels.
  CHECK(U(g, "ops") == U(want, "graph_kernels") + 2 * U(want, "graph_launches"));
  // An all-reduce enqueued during the capture ran nothing then: captured, not executed.
  CHECK(U(Sub(calls, "ncclAllReduce"), "count") == U(want, "allreduces"));
  CHECK(U(Sub(calls, "ncclAllReduce"), "captured") == U(want, "captured_allreduces"));
  CHECK(U(Sub(rank["collectives"], "allreduce"), "count") == U(want, "allreduces") - U(want, "captured_allreduces"));
}

TEST_CASE("graphs: the trace holds every graph kernel, annotated, with a flow from each launch") {
  const JobRun run = RunScenario("graphs-trace", "graphs", {.env = {{"GPUWATCH_TRACE", "full"}}});
  INFO("driver stderr:\n" << run.job.err);
  const std::string data = ReadFile(run.out + "/trace.perfetto-trace");
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(data, false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.processes.size() == run.summary["ranks"].size());
  uint64_t kernels = 0, trace_kernels = 0, launches = 0;
  for (const json& r : run.summary["ranks"]) {
    kernels += U(r["gpu"]["kernels"], "count") + U(r["gpu"]["comm_kernels"], "count");
    launches += U(r["graphs"], "launches");
  }
  for (const auto& [name, c] : rep.processes) trace_kernels += c.kernels;
  CHECK(trace_kernels == kernels);
  CHECK(launches > 0);
  CHECK(rep.flows >= launches);
  CHECK(data.find("graph_id") != std::string::npos);
  CHECK(data.find("cudaGraphLaunch") != std::string::npos);
}
