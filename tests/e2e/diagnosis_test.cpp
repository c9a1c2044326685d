// Diagnosis end to end (issue 6): every bundled scenario runs on the simulated GPU under
// LD_PRELOAD; the finding the scenario was designed to show must rank first in the job's
// findings, with evidence that matches the driver's and the simulator's truth files; the
// straggler scenario must name the rank its rank_scale slows down; healthy must have no
// high-severity finding. Steps must come from the driver's NVTX `train_step` ranges.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

#include "scenario_run.h"

using namespace gpuwatch::e2e;

namespace {

// A bundled scenario with its truth files, or `scenario_json` (a file's text) when given;
// `env` adds variables to the job's environment. The checks read summary.txt too.
JobRun Diagnose(const std::string& name, const std::string& scenario_json = "",
                const std::map<std::string, std::string>& env = {}) {
  JobRun r = RunScenario("diagnosis-" + name, scenario_json.empty() ? name : scenario_json,
                         {.truth = true, .env = env});
  INFO("driver stderr:\n" << r.job.err);
  REQUIRE(WaitForFile(r.out + "/summary.txt", 5));
  return r;
}

const json& Top(const JobRun& r) {
  const json& f = r.summary["job"]["findings"];
  REQUIRE(f.is_array());
  REQUIRE(!f.empty());
  return f[0];
}

// The rank's own finding with that id (rank-level evidence).
json RankFinding(const json& rank, const std::string& id) {
  for (const auto& f : rank["findings"])
    if (f["id"] == id) return f;
  return json();
}

void CommonChecks(const JobRun& r, const std::string& nccl = "2.28.0") {
  const json& job = r.summary["job"];
  INFO("verdict: " << job.value("verdict", ""));
  // The text opens with the verdict, right after the title line, and the verdict with the top
  // finding (or that none is significant): the busy figures and the curve follow it.
  const std::string text = r.SummaryText();
  const auto nl = text.find('\n');
  REQUIRE(nl != std::string::npos);
  const bool loss_first = text.compare(nl + 1, 14, "Biggest loss: ") == 0 ||
                          text.compare(nl + 1, 25, "No significant loss found") == 0;
  CHECK(loss_first);
  const std::string verdict = job.value("verdict", "");
  CHECK(verdict.find("GPU busy") != std::string::npos);
  CHECK(verdict.find("on compute and copies") != std::string::npos);
  for (const json& rank : r.summary["ranks"]) {
    // The simulator's versions unless a test configures others (docs/simulator.md).
    const json& env = rank["environment"];
    REQUIRE(env.is_object());
    CHECK(env["cuda_runtime"] == "13.0");
    CHECK(env["cuda_driver"] == "13.0");
    CHECK(env["nccl"] == nccl);
    const json& st = rank["steps"];
    CHECK(st["source"] == "nvtx:train_step");
    CHECK(st["count"] == r.scenario["steps"]);
    CHECK(st["median_ms"].get<double>() > 0);
    // The steps' times add up to the span of the driver's loop, to the end of its last work
    // (the final sync waits for it): the time they take the job, whatever their host ranges.
    if (!r.truth_dir.empty()) {
      const json t = r.Truth(rank["rank"]);
      const double loop = t["wall_s"].get<double>() + t["final_sync_s"].get<double>();
      INFO("rank " << rank["rank"] << ": steps' total " << st["total_s"] << " s, driver's loop " << loop << " s");
      CHECK(std::abs(st["total_s"].get<double>() - loop) <= 0.03 * loop);
      CHECK(st["host_period_ms"].get<double>() > 0);
      CHECK((st["paced_by"] == "host" || st["paced_by"] == "device"));
    }
  }
}

void Near(const std::string& what, double got, double want, double rel) {
  INFO(what << ": got " << got << ", want " << want << " (±" << rel * 100 << "%)");
  CHECK(std::abs(got - want) <= rel * want);
}

}  // namespace

namespace {

// GPU idle waiting for the host vs the driver's host stopwatch: every step's host work but
// the first (before any GPU work) leaves the GPU idle. The ranks' hosts are not aligned by
// the step (the stream sync does not wait for the all-reduce), so while the rank ahead does
// its host work its GPU partly waits in the all-reduce for the other rank (exposed
// communication) instead: the two together make the host time, idle alone at least half.
void HostWaitMatchesTruth(const json& rank, const json& data_loading, const json& truth) {
  REQUIRE(data_loading.is_object());
  const double host = truth["ops"]["host"]["total_s"];
  const int steps = truth["steps"];
  const double want = host * (steps - 1) / steps;
  const double idle = data_loading["evidence"]["gpu_idle_waiting_for_host_s"];
  const double comm = rank["steps"]["per_step_ms"]["comm_not_overlapped"].get<double>() * 1e-3 * steps;
  INFO("idle waiting for host " << idle << " s, exposed comm " << comm << " s");
  Near("idle waiting for host + exposed comm", idle + comm, want, 0.08);
  CHECK(idle >= 0.5 * want);
}

// The finding that follows data_loading and says what the host side was doing.
json InputIo(const json& findings) {
  for (size_t i = 0; i < findings.size(); ++i)
    if (findings[i]["id"] == "input_io") {
      CHECK(i >= 1);
      CHECK(findings[i - 1]["id"] == "data_loading");
      return findings[i];
    }
  return json();
}

}  // namespace

TEST_CASE("diagnosis: dataloader_bound -> data_loading, input_io cpu_bound") {
  const JobRun r = Diagnose("dataloader_bound");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "data_loading");
  CHECK(t["severity"] == "high");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "data_loading");
    REQUIRE(f.is_object());
    HostWaitMatchesTruth(rank, f, r.Truth(k));
  }
  // The host op spins ("wait": "cpu"): input_io says CPU-bound.
  const json io = InputIo(r.summary["job"]["findings"]);
  REQUIRE(io.is_object());
  INFO(io.dump());
  CHECK(io["evidence"]["verdict"] == "cpu_bound");
  CHECK(r.summary["job"]["verdict"].get<std::string>().find("CPU-bound") != std::string::npos);
  for (const json& rank : r.summary["ranks"]) {
    const json f = InputIo(rank["findings"]);
    REQUIRE(f.is_object());
    INFO(f.dump());
    CHECK(f["evidence"]["verdict"] == "cpu_bound");
    // The rank spins through its host op: about one core, busy or waiting for one.
    const double cores = f["evidence"]["cpu_cores_busy_in_gaps"].get<double>() +
                         f["evidence"]["cpu_cores_waiting_in_gaps"].get<double>();
    CHECK(cores >= 0.7);
    CHECK(cores <= 1.5);
    CHECK(f["evidence"]["read_mbps_in_gaps"].get<double>() < 1.0);
  }
}

TEST_CASE("diagnosis: dataloader_io -> data_loading, input_io io_wait") {
  const JobRun r = Diagnose("dataloader_io");
  CommonChecks(r);
  CHECK(Top(r)["id"] == "data_loading");
  const json io = InputIo(r.summary["job"]["findings"]);
  REQUIRE(io.is_object());
  INFO(io.dump());
  CHECK(io["evidence"]["verdict"] == "io_wait");
  CHECK(r.summary["job"]["verdict"].get<std::string>().find("waiting on reads") != std::string::npos);
  const double mbps = r.scenario["step"][0]["read_mbps"];
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = InputIo(rank["findings"]);
    REQUIRE(f.is_object());
    INFO(f.dump());
    CHECK(f["evidence"]["verdict"] == "io_wait");
    CHECK(f["evidence"]["cpu_cores_busy_in_gaps"].get<double>() < 0.5);
    // The pipe delivers read_mbps while the host op runs. Samples come every ~100 ms, about
    // two steps, so the rate in the gaps is blurred towards the run's average (reads / step).
    const double got = f["evidence"]["read_mbps_in_gaps"];
    CHECK(got >= 0.3 * mbps);
    CHECK(got <= 1.2 * mbps);
    CHECK(f["evidence"]["processes"] == 1);  // the collector a rank starts is not its tree
    HostWaitMatchesTruth(rank, RankFinding(rank, "data_loading"), r.Truth(k));
  }
}

// A small job whose environment disables NCCL's P2P transport and whose NCCL is old.
TEST_CASE("diagnosis: environment names NCCL_P2P_DISABLE and an old NCCL, after the losses") {
  const std::string scenario = R"({"name": "env_p2p", "ranks": 2, "steps": 10,
    "step": [{"op": "host", "ms": 2}, {"op": "kernels", "count": 10, "us": 500, "name": "fwd_bwd"},
             {"op": "allreduce", "bytes": 1048576}, {"op": "sync"}]})";
  const JobRun r = Diagnose("env_p2p", scenario,
                            {{"NCCL_P2P_DISABLE", "1"}, {"SIMGPU_CONFIG", "nccl_version=21704"}});
  CommonChecks(r, "2.17.4");
  for (const json& rank : r.summary["ranks"]) {
    CHECK(rank["environment"]["nccl"] == "2.17.4");
    CHECK(rank["environment"]["nccl_version"] == 21704);
    CHECK(rank["environment"]["settings"]["NCCL_P2P_DISABLE"] == "1");
  }
  const json& f = r.summary["job"]["findings"];
  REQUIRE(!f.empty());
  const json& env = f.back();
  INFO(f.dump(1));
  REQUIRE(env["id"] == "environment");
  CHECK(env["time_lost_s"] == 0.0);
  CHECK(env["severity"] != "low");  // the ranks ran collectives
  CHECK(env["ranks"] == json::array({0, 1}));
  REQUIRE(env["evidence"]["issues"].size() == 2);
  CHECK(env["evidence"]["issues"][0]["setting"] == "NCCL_P2P_DISABLE=1");
  CHECK(env["evidence"]["issues"][1]["setting"] == "NCCL 2.17.4");
  CHECK(env["evidence"]["nccl"] == "2.17.4");
  // Measured losses come first; the environment never is "the biggest loss".
  for (size_t i = 0; i + 1 < f.size(); ++i) CHECK(f[i]["time_lost_s"].get<double>() > 0);
  CHECK(r.summary["job"]["verdict"].get<std::string>().find("Biggest loss: environment") == std::string::npos);
  CHECK(r.SummaryText().find("environment settings") != std::string::npos);
}

TEST_CASE("diagnosis: launch_bound -> launch_bound") {
  const JobRun r = Diagnose("launch_bound");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "launch_bound");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "launch_bound");
    REQUIRE(f.is_object());
    CHECK(f["evidence"]["launches"] == r.Truth(k)["ops"]["kernels"]["count"]);
    CHECK(f["evidence"]["kernels"] == r.Device(k)["kinds"]["kernel"]["count"]);
    CHECK(f["evidence"]["short_kernel_fraction"].get<double>() >= 0.5);
    // The GPU waits at least launch cost - kernel time per launch (7 - 5 µs).
    CHECK(f["evidence"]["gpu_idle_waiting_for_launches_s"].get<double>() >=
          0.9 * 2e-6 * f["evidence"]["kernels"].get<double>());
  }
}

TEST_CASE("diagnosis: sync_stall -> sync_stall") {
  const JobRun r = Diagnose("sync_stall");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "sync_stall");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "sync_stall");
    REQUIRE(f.is_object());
    // Both .item() calls of every step are inside the step; the device/event syncs at the
    // end of the step are not counted.
    Near("blocked in .item()", f["evidence"]["blocked_s"], r.Truth(k)["ops"]["item"]["total_s"], 0.10);
    CHECK(f["evidence"]["count"] == 2 * r.Truth(k)["ops"]["item"]["count"].get<int>());
  }
}

TEST_CASE("diagnosis: pageable_h2d -> pageable_copy") {
  const JobRun r = Diagnose("pageable_h2d");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "pageable_copy");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "pageable_copy");
    REQUIRE(f.is_object());
    const json h2d = r.Truth(k)["ops"]["h2d"];
    CHECK(f["evidence"]["bytes"] == h2d["bytes"]);
    CHECK(f["evidence"]["count"] == h2d["count"]);
    Near("pageable host time", f["evidence"]["host_s"], h2d["total_s"], 0.05);
  }
}

TEST_CASE("diagnosis: comm_bound -> communication") {
  const JobRun r = Diagnose("comm_bound");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "communication");
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    const json f = RankFinding(rank, "communication");
    REQUIRE(f.is_object());
    Near("exposed comm", f["evidence"]["exposed_comm_s"], r.Device(k)["kinds"]["allreduce"]["device_s"], 0.05);
    Near("busbw", f["evidence"]["busbw_gbps"], r.scenario["gpu"]["busbw_gbps"], 0.10);
    // The NCCL kernels keep the GPU busy, not usefully: the useful share is the kernels' and
    // copies' (the device model's account), and the curve read is that one, not steady_high.
    const json& g = rank["gpu"];
    INFO("gpu " << g.dump().substr(0, 600));
    CHECK(g["utilization"].get<double>() >= 0.9);
    const json dev = r.Device(k)["kinds"];
    const double useful = dev["kernel"]["device_s"].get<double>() + dev["h2d"]["device_s"].get<double>();
    Near("compute busy", g["compute_busy_s"], useful, 0.05);
    CHECK(g["compute_busy"].get<double>() < 0.5);
    CHECK(g["utilization_shape"] != "steady_high");
  }
  // The verdict's curve does not contradict the top finding without saying so.
  const std::string v = r.summary["job"]["verdict"];
  CHECK(v.rfind("Biggest loss: communication not hidden by compute", 0) == 0);
  CHECK(v.find("Compute curve: steady and high.") == std::string::npos);
}

TEST_CASE("diagnosis: straggler -> straggler, naming the slowed rank") {
  const JobRun r = Diagnose("straggler");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "straggler");
  const json& scale = r.scenario["rank_scale"];
  REQUIRE(scale.size() == 1);
  const int slow = std::stoi(scale.begin().key());
  CHECK(t["ranks"] == json::array({slow}));
  CHECK(t["evidence"]["rank"] == slow);
  CHECK(t["evidence"]["last_share"].get<double>() >= 0.9);
  // The others' wait matches the simulator's collective wait.
  double waits = 0, truth_waits = 0;
  for (const json& rank : r.summary["ranks"]) {
    const int k = rank["rank"];
    truth_waits += r.Device(k)["collective_wait_s"].get<double>();
    INFO("rank " << k << " findings " << rank["findings"].dump(1));
    // A wait is charged to what it waits for, in the rank's own findings too: no rank's
    // communication is above low, and a rank that waited names the straggler.
    const json comm = RankFinding(rank, "communication");
    if (comm.is_object()) CHECK(comm["severity"] == "low");
    if (k == slow) continue;
    Near("wait for the straggler", t["evidence"]["wait_s_by_rank"][std::to_string(k)],
         r.Device(k)["collective_wait_s"], 0.05);
    const json mine = RankFinding(rank, "straggler");
    REQUIRE(mine.is_object());
    CHECK(mine["ranks"] == json::array({slow}));
    CHECK(rank["findings"][0]["id"] == "straggler");
    // busbw from the transfer after the last arrival: the simulated link's.
    const json& ar = rank["collectives"]["allreduce"];
    Near("busbw after the last arrival", ar["busbw_gbps"], r.scenario["gpu"]["busbw_gbps"], 0.10);
    Near("allreduce wait", ar["wait_s"], r.Device(k)["collective_wait_s"], 0.05);
  }
  // The waits sum to the straggler's time lost (its mean per rank), as the simulator's do.
  for (const auto& w : t["evidence"]["all_waits_s_by_rank"]) waits += w.get<double>();
  const double n = r.summary["ranks"].size();
  Near("waits / ranks vs time lost", waits / n, t["time_lost_s"], 1e-6);
  Near("time lost vs the simulator's waits", t["time_lost_s"], truth_waits / n, 0.05);
  for (const json& f : r.summary["job"]["findings"])
    if (f["id"] == "communication") CHECK(f["severity"] == "low");
  CHECK(r.summary["job"]["verdict"].get<std::string>().find("rank " + std::to_string(slow)) != std::string::npos);
}

TEST_CASE("diagnosis: checkpoint_stall -> periodic_stall") {
  const JobRun r = Diagnose("checkpoint_stall");
  CommonChecks(r);
  const json& t = Top(r);
  CHECK(t["id"] == "periodic_stall");
  const json& every = r.scenario["every"][0];
  const int period = every["period"];
  double extra_host_s = 0;
  for (const auto& op : every["ops"])
    if (op["op"] == "host") extra_host_s += op["ms"].get<double>() * 1e-3;
  for (const json& rank : r.summary["ranks"]) {
    const json f = RankFinding(rank, "periodic_stall");
    REQUIRE(f.is_object());
    CHECK(f["evidence"]["period_steps"] == period);
    CHECK(f["evidence"]["stalls"] == r.scenario["steps"].get<int>() / period);
    CHECK(f["evidence"]["first_stall_step"] == period - 1);
    const double ex = f["evidence"]["median_excess_s"];
    CHECK(ex >= 0.95 * extra_host_s);
    CHECK(ex <= 1.25 * extra_host_s);
  }
}

TEST_CASE("diagnosis: healthy has no high-severity finding") {
  const JobRun r = Diagnose("healthy");
  CommonChecks(r);
  // The host enqueues each step and runs ahead (no per-step sync): its ranges last ~4 ms,
  // the GPU needs 26 ms a step, and the step time is the GPU's, within 3% of the loop's
  // wall time per step.
  for (const json& rank : r.summary["ranks"]) {
    const json& st = rank["steps"];
    const json t = r.Truth(rank["rank"]);
    const double per_step = (t["wall_s"].get<double>() + t["final_sync_s"].get<double>()) / t["steps"].get<double>();
    Near("step time, s", st["median_ms"].get<double>() * 1e-3, per_step, 0.03);
    CHECK(st["paced_by"] == "device");
    Near("device period, s", st["device_period_ms"].get<double>() * 1e-3, per_step, 0.03);
    CHECK(st["host_period_ms"].get<double>() < 0.5 * st["device_period_ms"].get<double>());
    CHECK(st["host_range_ms"].get<double>() < 0.5 * st["median_ms"].get<double>());
    // Its parts add up to the step they divide.
    CHECK(std::abs(st["unattributed_ms"].get<double>()) <= 0.03 * st["mean_ms"].get<double>());
  }
  for (const auto& f : r.summary["job"]["findings"]) {
    INFO(f.dump());
    CHECK(f["severity"] != "high");
  }
  for (const json& rank : r.summary["ranks"])
    for (const auto& f : rank["findings"]) {
      INFO(f.dump());
      CHECK(f["severity"] != "high");
    }
}

// The call site of a stall (issue 6): a CPython loop's .item()-like read-back must be named
// by its file:line, and the native frames must be there too.
TEST_CASE("diagnosis: a stall called from Python names its file and line") {
  const JobRun run = RunJob("diagnosis-python-item",
                            {"python3", std::string(GPUWATCH_SOURCE_DIR) + "/tests/e2e/python_item.py"},
                            {.env = {{"SIMGPU_CONFIG", "h2d_pinned_gbps=8"}}});
  INFO(run.job.out << run.job.err);
  const json& s = run.summary;
  const json* stall = nullptr;
  for (const json& f : s["ranks"][0]["findings"])
    if (f["id"] == "sync_stall") stall = &f;
  REQUIRE(stall != nullptr);
  const json& site = (*stall)["evidence"]["call_site"];
  REQUIRE(site.is_object());
  CHECK(site["python"].get<std::string>().find("python_item.py:19 in read_back") != std::string::npos);
  CHECK(site["calls"].get<int>() >= 15);
  CHECK(!site["frames"].empty());
  CHECK((*stall)["summary"].get<std::string>().find("python_item.py:19") != std::string::npos);
}

// Issue 16: the Python stack is read without the GIL. The loop's CUDA calls go through
// ctypes.CDLL, which releases the GIL (as torch does inside .item()): the stall must still
// be named by its line, with the whole stack in the evidence.
namespace {
// python_nogil.py played with `mode`: its sync_stall finding's call site.
json PythonCallSite(const std::string& work, const std::string& mode) {
  const JobRun run = RunJob(work, {"python3", std::string(GPUWATCH_SOURCE_DIR) + "/tests/e2e/python_frames/python_nogil.py", mode},
                            {.env = {{"SIMGPU_CONFIG", "h2d_pinned_gbps=8"}}});
  INFO(run.job.out << run.job.err);
  const json stall = RankFinding(run.summary["ranks"][0], "sync_stall");
  REQUIRE(stall.is_object());
  json site = stall["evidence"]["call_site"];
  REQUIRE(site.is_object());
  site["finding_summary"] = stall["summary"];
  return site;
}
}  // namespace

TEST_CASE("diagnosis: a stall called from Python without the GIL names its line") {
  const json site = PythonCallSite("diagnosis-python-nogil", "direct");
  INFO(site.dump());
  CHECK(site["python"].get<std::string>().ends_with("python_nogil.py:22 in read_back"));
  const json& stack = site["python_stack"];
  REQUIRE(stack.size() >= 3);
  CHECK(stack[0].get<std::string>().ends_with("python_nogil.py:22 in read_back"));
  CHECK(stack[1].get<std::string>().ends_with("python_nogil.py:28 in train"));
  CHECK(stack[2].get<std::string>().ends_with("python_nogil.py:32 in <module>"));
  CHECK(site["finding_summary"].get<std::string>().find("python_nogil.py:22 in read_back") != std::string::npos);
}

TEST_CASE("diagnosis: a framework frame between the user's code and the stall is skipped") {
  const json site = PythonCallSite("diagnosis-python-framework", "framework");
  INFO(site.dump());
  CHECK(site["python"].get<std::string>().ends_with("python_nogil.py:21 in read_back"));
  const json& stack = site["python_stack"];
  REQUIRE(stack.size() >= 2);
  CHECK(stack[0].get<std::string>().ends_with("site-packages/torch/fake_item.py:7 in item"));
  CHECK(stack[1].get<std::string>().ends_with("python_nogil.py:21 in read_back"));
}

// Issue 16: what the host was doing while the GPU waited for it. The library samples the
// training thread's Python stack (100 Hz by default); the collector joins the samples with
// the GPU's host-wait gaps.
namespace {

// tests/e2e/python_frames/host_frames.py in `mode`. A sample costs ~40 us of CPU on the
// 2-core VM (slow syscalls): room for every one of them (the sampler may use half of the
// budget).
JobRun RunHostFrames(const std::string& work, const std::string& mode) {
  return RunJob(work, {"python3", std::string(GPUWATCH_SOURCE_DIR) + "/tests/e2e/python_frames/host_frames.py", mode},
                {.env = {{"SIMGPU_CONFIG", "h2d_pinned_gbps=8"}, {"GPUWATCH_OVERHEAD", "10%"}}});
}

}  // namespace

TEST_CASE("diagnosis: host frames name the host function the GPU waited for most, first") {
  const JobRun run = RunHostFrames("diagnosis-host-frames", "functions");
  INFO(run.job.out << run.job.err);
  INFO(run.summary["ranks"][0]["findings"].dump());
  const json& rank = run.summary["ranks"][0];
  CHECK(RankFinding(rank, "data_loading").is_null());  // no DataLoader in the frames
  const json f = RankFinding(rank, "host_overhead");
  REQUIRE(f.is_object());
  const json& frames = f["evidence"]["host_frames"];
  REQUIRE(frames.size() >= 2);
  CHECK(frames[0]["where"].get<std::string>().ends_with("host_frames.py:21 in log_metrics"));
  CHECK(frames[1]["where"].get<std::string>().ends_with("host_frames.py:26 in compute_stats"));
  // 6 ms against 2 ms of every step's host time, the GPU busy with the step's copy for the
  // first ~1 ms of the 6: 5 to 2 of the GPU's wait, a ~0.71. With 100 steps a loaded run
  // read 0.66 (39 of 59 samples) and `a > 2 * b` failed: its margin was one standard
  // deviation of the sampling. 200 steps now, and a margin of two or three.
  const double a = frames[0]["share"], b = frames[1]["share"];
  CHECK(a > 1.5 * b);
  CHECK(a + b > 0.8);
  CHECK(f["evidence"]["data_loading_share"].get<double>() < 0.1);
  CHECK(f["fix"].get<std::string>().find("log_metrics") != std::string::npos);
  CHECK(f["summary"].get<std::string>().find("log_metrics") != std::string::npos);
  // The sampler's cost is reported with the library's.
  const json& sampler = rank["overhead"]["host_sampler"];
  REQUIRE(sampler.is_object());
  CHECK(sampler["hz"] == 100);
  CHECK(sampler["samples"].get<int>() >= 50);
  // report.html names the frames in the finding.
  const std::string html = ReadFile(run.out + "/report.html");
  CHECK(html.find("data-host-frames") != std::string::npos);
  CHECK(html.find("in log_metrics") != std::string::npos);
}

// A thread waiting in a sync longer than the sampler's period cannot run Python until the
// call returns: its samples there take the previous sample's stack (held_samples), and
// nothing of the job's memory is read for them.
TEST_CASE("diagnosis: a Python thread waiting in a long sync is sampled without reading its stack again") {
  const JobRun run = RunHostFrames("diagnosis-host-frames-gpu-bound", "gpu_bound");
  INFO(run.job.out << run.job.err);
  const json& sampler = run.summary["ranks"][0]["overhead"]["host_sampler"];
  INFO(sampler.dump());
  REQUIRE(sampler.is_object());
  // ~50 steps of a ~40 ms sync and 2 ms of host code, 100 samples a second: ~200 samples,
  // nearly all in a sync, and each sync's first (of ~4) the only one read (159 of 222 held
  // in one run).
  const int samples = sampler["samples"].get<int>(), held = sampler["held_samples"].get<int>();
  CHECK(samples >= 100);
  CHECK(held > samples / 2);
  CHECK(held < samples);
}

TEST_CASE("diagnosis: host frames inside a DataLoader make the GPU's wait data loading") {
  const JobRun run = RunHostFrames("diagnosis-host-frames-loader", "dataloader");
  INFO(run.job.out << run.job.err);
  INFO(run.summary["ranks"][0]["findings"].dump());
  const json& rank = run.summary["ranks"][0];
  CHECK(RankFinding(rank, "host_overhead").is_null());
  const json f = RankFinding(rank, "data_loading");
  REQUIRE(f.is_object());
  const json& frames = f["evidence"]["host_frames"];
  REQUIRE(!frames.empty());
  CHECK(frames[0]["where"].get<std::string>().ends_with("host_frames.py:41 in train_dataloader"));
  CHECK(frames[0]["share"].get<double>() > 0.8);
  CHECK(f["evidence"]["data_loading_share"].get<double>() > 0.8);
}
