// The overhead budget end to end (issue 15): a launch-heavy run longer than the allowance
// is sampled in windows under the default GPUWATCH_OVERHEAD, and its device figures,
// estimated from them, match the simulator's device truth; GPUWATCH_CUPTI=full records it
// whole, off not at all. The simulated CUPTI costs what NVIDIA's does (docs/simulator.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "scenario_run.h"
#include "test_trace_validator.h"

using namespace gpuwatch::e2e;

namespace {

// 5 s of launch-bound steps, 125k launches/s: recording it whole would add ~50% (4 us of
// CUPTI per 8 us launch), far past 1% x 5 s + 50 ms. The GPU is busy 4 of every 8 us
// outside windows but 4 of 12 inside them: an estimate scaled by the windows' share of
// time would fall short by about a third. 5 s, not 4: the first window spends the 50 ms,
// and the 1% (less the hooks' share) takes ~3 s to buy the next one at CUPTI's real cost.
const char* kLaunchHeavy = R"({
  "name": "budget_launch_heavy", "description": "launch-bound, longer than the allowance",
  "ranks": 1, "steps": 500, "nvtx": true,
  "gpu": {"launch_us": 8},
  "step": [{"op": "kernels", "count": 1250, "us": 4, "name": "small_op"}, {"op": "sync"}]
})";

// 0.6 s of the same launch-bound steps: within the allowance, recorded whole by default.
const char* kShortHeavy = R"({
  "name": "budget_short", "description": "launch-bound, 0.6 s",
  "ranks": 1, "steps": 60, "gpu": {"launch_us": 8},
  "step": [{"op": "kernels", "count": 1250, "us": 4}, {"op": "sync"}]
})";

// 4 s of GPU-bound steps: each enqueues 100 ms of kernels in 16 ms and waits for them at its
// end, so the queue runs up to ~85 ms (1700 launches) deep. 20k launches/s: sampled. A window
// that closes mid-step leaves most of that queue to run after it; a CUPTI detached 5 ms after
// the close handed it back without times (a third of the windows' kernels lost, GPU busy 65%
// instead of 100% in the first runs).
const char* kGpuBound = R"({
  "name": "budget_gpu_bound", "description": "GPU-bound with a deep queue, longer than the allowance",
  "ranks": 1, "steps": 40, "nvtx": true,
  "gpu": {"launch_us": 8},
  "step": [{"op": "kernels", "count": 2000, "us": 50, "name": "big_op"}, {"op": "sync"}]
})";

// The same queue, never synchronized: the host sleeps while the device works (a pipeline
// that lets the device run ahead), so only the records' own lag tells when a window's work
// is done.
const char* kGpuBoundNoSync = R"({
  "name": "budget_gpu_bound_nosync", "description": "GPU-bound with a deep queue, no sync",
  "ranks": 1, "steps": 40, "nvtx": true,
  "gpu": {"launch_us": 8},
  "step": [{"op": "kernels", "count": 2000, "us": 50, "name": "big_op"}, {"op": "host", "ms": 92}]
})";

// 5 s on 2 ranks: launch-bound steps with an 8 MB all-reduce on the compute stream. The
// first window records the start, where the ranks wait for each other in their first
// all-reduces; the windows after it hold too few calls to stand apart (analyze/gpu.h).
const char* kAllReduce = R"({
  "name": "budget_allreduce", "description": "2 ranks, launch-bound with an all-reduce a step, sampled",
  "ranks": 2, "steps": 400, "nvtx": true,
  "gpu": {"launch_us": 8},
  "step": [{"op": "kernels", "count": 400, "us": 20, "name": "fwd"}, {"op": "allreduce", "bytes": 8388608},
           {"op": "kernels", "count": 200, "us": 20, "name": "opt"}, {"op": "item"}]
})";

// The same with a DDP-like all-reduce: on its own stream, hidden under backward; the step's
// end waits for it. One rank waits for the other in each all-reduce, under its backward.
const char* kAllReduceOverlapped = R"({
  "name": "budget_allreduce_overlapped", "description": "2 ranks, an all-reduce under backward, sampled",
  "ranks": 2, "steps": 300, "nvtx": true,
  "gpu": {"launch_us": 8},
  "step": [{"op": "kernels", "count": 300, "us": 20, "name": "fwd"},
           {"op": "allreduce", "bytes": 8388608, "overlap": true},
           {"op": "kernels", "count": 300, "us": 20, "name": "bwd"}, {"op": "item"}]
})";

double Num(const json& j) { return j.get<double>(); }

// The least share of a rank's time a finding reports (common/thresholds.h).
constexpr double kReportShare = 0.01;

// The most the library may report spent: its budget (1% of the wall time and 50 ms), a
// 10 ms sender cycle of overshoot, the spread of its hooks' cost and one window. The hooks'
// cost is the in-place probe's estimate (alternate 7 ms halves, docs/recording.md), charged
// to every call once measured: between runs of one launch-heavy scenario on the 2-core VM it
// ranged 105-135 ns a call, a quarter of their charge, on an idle machine. A window opened on the earlier,
// lower figure is spent whole: that is the library's known overshoot on a slow machine
// (0.157 s spent against a 0.118 s budget, hooks 85 ms of it), which this bound tolerates
// and the summary reports (`overhead.added_s`).
// The probe's figure moves further when the machine is loaded (the suite's own collector and
// ranks share its 2 cores): a run 1.8 ms over the quarter was seen; half the hooks' charge is
// the bound. A library that ignored its budget would record this run whole: ~50% of the wall.
double MostSpent(const json& own) {
  const double window = own["windows"].get<int>() > 0 ? Num(own["cupti_s"]) / own["windows"].get<double>() : 0.0;
  return 0.01 * Num(own["elapsed_s"]) + 0.05 + 0.01 + 0.5 * Num(own["hooks_s"]) + window;
}

// A sampled GPU-bound run's device figures against the device's own account, and the work
// its windows lost to the detach.
void CheckGpuBoundWindows(const JobRun& r) {
  const json& rank = r.summary["ranks"][0];
  const json& gpu = rank["gpu"];
  const json& own = rank["overhead"];
  const json device = r.Device(0);
  INFO("coverage " << gpu["coverage"].dump() << "\noverhead " << own.dump() << "\ndropped " << rank["dropped"].dump()
                   << "\nCUPTI's truth " << device["cupti"].dump());
  REQUIRE(gpu["coverage"]["sampled"] == true);
  CHECK(own["cupti_detaches"].get<int>() >= 2);
  const double kernels = device["kinds"]["kernel"]["count"].get<double>();
  const double lost = rank["dropped"].value("gpu_records_incomplete", 0.0);
  CHECK(lost <= 0.01 * kernels);
  const double busy = Num(device["busy_s"]);
  CHECK(std::abs(Num(gpu["busy_s"]) - busy) <= 0.05 * busy);
  CHECK(std::abs(gpu["kernels"]["count"].get<double>() - kernels) <= 0.05 * kernels);
  // The wait leaves CUPTI's leftover cost on for up to a queue's length after each window:
  // on a GPU-bound job, where it does not show in the run's time.
  const double spent = Num(own["hooks_s"]) + Num(own["cupti_s"]);
  CHECK(spent <= MostSpent(own));
}

}  // namespace

TEST_CASE("budget: a launch-heavy run is sampled in windows, and its device figures match the truth") {
  // The host sampler off: at the default 100 Hz it may spend up to half the budget (native
  // frames of this C++ driver cost 30-60 us a sample here), and with the hooks' 4 ms/s that
  // leaves a second window no credit within 4.7 s. The windows are what this test is about.
  // Under `gpuwatch run`, whose collector is up before the job: one the library autostarts
  // spends its start-up (~100 ms of CPU) beside the run's first window, which opens at the
  // start, and on the 2-core VM the window's calls then ran ~1.4 us slower than CUPTI makes
  // them. The first window's figure is provisional (cupti_cost.h), and alone it read CUPTI's
  // cost 1.3-1.5x the simulator's, with no credit left for a second window to correct it
  // (four runs each way: 1.0-1.06x with the collector started first).
  const JobRun r = RunScenario("budget-default", kLaunchHeavy,
                               {.truth = true, .env = {{"GPUWATCH_SAMPLE_HZ", "0"}}, .timeout_s = 180, .under_run = true});
  const json& rank = r.summary["ranks"][0];
  const json& gpu = rank["gpu"];
  const json& cov = gpu["coverage"];
  const json& own = rank["overhead"];
  const json device = r.Device(0);
  INFO("coverage " << cov.dump() << "\noverhead " << own.dump());

  // Sampled, in the windows the library reported.
  CHECK(cov["sampled"] == true);
  CHECK(Num(cov["share"]) > 0.005);
  CHECK(Num(cov["share"]) < 0.5);
  // A second window whenever the budget had room for one: the hooks' in-place charge moves
  // from run to run (25-90 ns a call here; at 90 it is the whole 1% of this loop's 111k
  // calls a second), and what it leaves is what buys windows.
  if (cov["windows"].get<int>() < 2) {
    const double window = Num(own["cupti_s"]) / std::max(1, own["windows"].get<int>());
    CHECK(Num(own["hooks_s"]) + Num(own["cupti_s"]) + 0.5 * window > 0.01 * Num(own["elapsed_s"]) + 0.05);
  }
  CHECK(cov["windows"].get<int>() >= 1);
  CHECK(cov["windows"] == own["windows"]);
  CHECK(Num(cov["covered_s"]) == Approx(Num(own["window_s"])).epsilon(0.1));
  CHECK(Num(cov["enqueue_share"]) > 0);
  CHECK(Num(cov["enqueue_share"]) < Num(cov["share"]));  // windows hold fewer launches per second

  // Device figures estimated from the windows: within 5% of the device's own account.
  const double busy = Num(device["busy_s"]);
  CHECK(std::abs(Num(gpu["busy_s"]) - busy) <= 0.05 * busy);
  const double kernels = device["kinds"]["kernel"]["count"].get<double>();
  CHECK(std::abs(gpu["kernels"]["count"].get<double>() - kernels) <= 0.05 * kernels);
  CHECK(std::abs(Num(gpu["kernels"]["total_s"]) - busy) <= 0.05 * busy);
  // Host figures stay exact: the hooks see every launch.
  CHECK(rank["kernels"]["launches"] == r.Truth(0)["ops"]["kernels"]["count"]);

  // The library's own cost: within the budget, CUPTI's measured here.
  CHECK(own["cupti_mode"] == "budget");
  CHECK(own["cupti_cost_measured"] == true);
  CHECK(Num(own["cupti_us_per_call"]) > 1.5);  // the simulator's: 2.2 us configured, ~4 on average
  CHECK(Num(own["cupti_us_per_call"]) < 8.0);
  // What the windows spend (the start-up is reported beside it, not spent: cupti_budget.cpp).
  CHECK(Num(own["sampler_s"]) == 0.0);  // the sampler is off here
  const double spent = Num(own["hooks_s"]) + Num(own["cupti_s"]);
  CHECK(spent <= MostSpent(own));
  CHECK(spent >= 0.5 * (0.01 * Num(own["elapsed_s"]) + 0.05));  // and the budget is used
  CHECK(Num(own["startup_s"]) > 0);  // the library's load: timed, and in the added time
  CHECK(Num(own["startup_s"]) < 0.05);
  CHECK(Num(own["added_s"]) == Approx(spent + Num(own["startup_s"])).margin(1e-6));

  // CUPTI detached after every closed window (a disabled CUPTI still costs each launch part of
  // what it cost recording, SIMGPU_CUPTI_LINGER_COST_NS: without the detach that leftover
  // cost was ~0.35 s here, five times the windows' own, and the summary could not see it).
  const json& cupti_truth = device["cupti"];
  INFO("CUPTI's truth " << cupti_truth.dump());
  CHECK(own["cupti_detaches"].get<int>() >= own["windows"].get<int>() - 1);
  CHECK(own["cupti_detaches"] == cupti_truth["finalizes"]);
  CHECK(Num(own["cupti_detach_s"]) > 0);
  CHECK(Num(own["cupti_detach_s"]) < 0.01);
  // What is left between a window's end and its detach (one sender cycle, ~10 ms a window),
  // charged: the calls made there counted apart and their cost measured against calls made
  // with CUPTI detached (0.81-0.88 us a call against the simulator's 0.6 on this VM, the
  // sender handling the window's records beside them).
  const double cupti_added = Num(cupti_truth["added_s"]);
  const double lingering = Num(cupti_truth["lingering_s"]);
  CHECK(lingering <= 0.2 * (cupti_added - lingering));
  REQUIRE(own["cupti_linger_calls"].get<uint64_t>() > 0);
  const double linger_charged = own["cupti_linger_calls"].get<double>() * Num(own["cupti_linger_us_per_call"]) * 1e-6;
  CHECK(linger_charged >= lingering / 2.5);
  CHECK(linger_charged <= 2.5 * lingering);
  // And the summary's figure for CUPTI is what the simulated CUPTI added (within 1.5x).
  CHECK(Num(own["cupti_s"]) <= 1.5 * cupti_added);
  CHECK(Num(own["cupti_s"]) >= cupti_added / 1.5);

  // Said where a reader looks.
  CHECK(r.SummaryText().find("GPU timeline sampled over") != std::string::npos);
  CHECK(r.SummaryText().find("of CUPTI's assumed, not measured") == std::string::npos);
  CHECK(r.SummaryText().find("(budget 1% + 50 ms)") != std::string::npos);  // the allowance too
  CHECK(r.summary["job"]["overhead"]["budget"] == 0.01);
  // Per-step device figures come from the steps a window held whole.
  CHECK(rank["steps"]["per_step_recorded"].get<int>() >= 1);
  // The finding charges what the steps table shows, and no more than the device idled: the
  // windows' steps ran slower by CUPTI's cost (a finding once scaled their inflated idle
  // time to every step and claimed 151% of the run).
  const json* launch_bound = nullptr;
  for (const json& f : rank["findings"])
    if (f["id"] == "launch_bound") launch_bound = &f;
  REQUIRE(launch_bound != nullptr);
  const double lost = Num((*launch_bound)["time_lost_s"]);
  const double idle_truth = Num(gpu["active_s"]) - busy;
  INFO("launch_bound " << launch_bound->dump() << "\nsteps " << rank["steps"].dump());
  CHECK(lost <= 1.02 * idle_truth);
  CHECK(lost >= 0.7 * idle_truth);
  const double table = Num(rank["steps"]["per_step_ms"]["gpu_idle_waiting_for_launches"]) * 1e-3 *
                       rank["steps"]["count"].get<double>();
  CHECK(lost == Approx(table).epsilon(0.05));

  // The trace draws launches one by one inside the windows, as bursts outside them: every
  // launch is in one or the other, and the bursts are far fewer than the launches they hold.
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(ReadFile(r.out + "/trace.perfetto-trace"), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.processes.size() == 1);
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  INFO("launch slices " << c.launches << ", bursts " << c.launch_bursts << " holding " << c.burst_launches);
  CHECK(c.launches + c.burst_launches == r.Truth(0)["ops"]["kernels"]["count"].get<uint64_t>());
  CHECK(c.launches > 0);
  CHECK(c.launch_bursts > 0);
  CHECK(c.launch_bursts * 100 < c.burst_launches);
  // Steps carry device figures only where a window held them whole (the others once showed
  // zeros: no compute, no idle).
  CHECK(c.steps == rank["steps"]["count"].get<uint64_t>());
  CHECK(c.step_arg_steps.at("gpu_compute_ms") == rank["steps"]["per_step_recorded"].get<uint64_t>());
}

TEST_CASE("budget: a sampled multi-rank run's communication is its collectives' GPU time, not the windows' kernels") {
  // The windows' NCCL kernels scaled with the launches read the communication of 600 such
  // steps at 2-3x the device's (0.475 and 0.28 s for 0.146 and 0.135), busy over 100% of the
  // run and a "communication not hidden" of 705 us a step for 243; of these 400, 0.064-0.276 s
  // for 0.091-0.106 (docs/PERFORMANCE.md). The collectives' own GPU times (CUPTI's kernels in
  // windows, event pairs outside) cover every call.
  const JobRun r = RunScenario("budget-allreduce", kAllReduce,
                               {.truth = true, .env = {{"GPUWATCH_SAMPLE_HZ", "0"}}, .timeout_s = 240});
  double comm_truth_job = 0, untimed_job = 0;
  for (int rank = 0; rank < 2; ++rank) {
    const json& rs = r.summary["ranks"][rank];
    const json& gpu = rs["gpu"];
    const json device = r.Device(rs["rank"].get<int>());
    const double comm = Num(device["kinds"]["allreduce"]["device_s"]);
    const double busy = Num(device["busy_s"]);
    comm_truth_job += comm;
    INFO("rank " << rs["rank"] << " coverage " << gpu["coverage"].dump() << "\ntruth " << device.dump()
                 << "\nsteps " << rs["steps"].dump());
    REQUIRE(gpu["coverage"]["sampled"] == true);
    // A call whose GPU time did not come back (FLAG_NO_GPU_TIME: its event pair gave none) is
    // priced at the timed calls' mean; its own time may hold a wait for the peer of up to a
    // step (the ranks meet at every step's .item()): a fresh clone's run read 6.3% short
    // with one such call at the start.
    const double untimed = rs["collectives"]["allreduce"]["no_gpu_time_count"].get<double>();
    const double untimed_s = untimed * Num(rs["steps"]["max_ms"]) * 1e-3;
    untimed_job += untimed_s;
    CHECK(std::abs(Num(gpu["comm_kernels"]["total_s"]) - comm) <= 0.05 * comm + untimed_s);
    CHECK(std::abs(Num(gpu["busy_s"]) - busy) <= 0.05 * busy + untimed_s);
    CHECK(Num(gpu["utilization"]) <= 1.0);
    // One stream: all of it exposed, in the steps table and in the finding.
    const double per_step = Num(rs["steps"]["per_step_ms"]["comm_not_overlapped"]) * 1e-3 * Num(rs["steps"]["count"]);
    CHECK(std::abs(per_step - comm) <= 0.1 * comm + untimed_s);
    // The finding measures the same; on a loaded machine one rank can fall behind, and the
    // other's wait for it is then the straggler's (its communication keeps the transfer,
    // which can fall under the 1% a finding needs), or, where the scheduler held the peer
    // back (this VM's 2 cores run both ranks, their collector and the tests' own work),
    // cpu_oversubscribed's: the wait charged to its cause.
    const json *found = nullptr, *waited = nullptr, *held_back = nullptr;
    for (const json& f : rs["findings"]) {
      if (f["id"] == "communication") found = &f;
      if (f["id"] == "straggler") waited = &f;
      if (f["id"] == "cpu_oversubscribed") held_back = &f;
    }
    // None of them where the transfer and the wait are each about the 1% of the run a finding
    // needs (0.054 s of transfer in 6 s, once the load stretched the steps).
    if (!found && !waited && !held_back) {
      const double wait = Num(device["collective_wait_s"]), run = Num(rs["steps"]["total_s"]);
      CHECK(comm - wait <= 1.5 * kReportShare * run);
      CHECK(wait <= 1.5 * kReportShare * run);
    }
    else if (found) CHECK(std::abs(Num((*found)["evidence"]["exposed_comm_s"]) - comm) <= 0.1 * comm + untimed_s);
    else if (waited) CHECK((*waited)["ranks"] == json::array({1 - rs["rank"].get<int>()}));
    else CHECK(Num((*held_back)["evidence"]["wait_s"]) >= 0.5 * Num(device["collective_wait_s"]));
    // The per-step overlap spread: over the steps a window held whole, not the zeros of the
    // others (its median read 0).
    const json& per_step_overlap = rs["comm_overlap"]["per_step"];
    CHECK(per_step_overlap["steps"] == rs["steps"]["per_step_recorded"]);
    CHECK(Num(per_step_overlap["exposed_ms"]["median"]) > 0);
  }
  // The job's communicator: every call's GPU time, exposed as the windows saw it.
  const json& comms = r.summary["job"]["collectives"]["by_comm"];
  REQUIRE(comms.size() == 1);
  CHECK(std::abs(Num(comms[0]["kernel_s"]) - comm_truth_job) <= 0.05 * comm_truth_job + untimed_job);
  CHECK(std::abs(Num(comms[0]["exposed_s"]) - comm_truth_job) <= 0.1 * comm_truth_job + untimed_job);
}

TEST_CASE("budget: a sampled run's hidden communication stays hidden: exposed time within the span, one figure everywhere") {
  // Before, on 400 such steps: comm_overlap held the windows' own kernels (0.013-0.020 s
  // exposed on the rank that waits, whose device exposed 0.04-0.08 s), the finding the windows'
  // steps scaled (0.13-0.31 s). Every call's time at the windows' share would read 0.26-0.50 s;
  // held within the active span, 0.085-0.10 s, the same in every view (docs/PERFORMANCE.md).
  const JobRun r = RunScenario("budget-allreduce-overlapped", kAllReduceOverlapped,
                               {.truth = true, .env = {{"GPUWATCH_SAMPLE_HZ", "0"}}, .timeout_s = 240});
  for (int rank = 0; rank < 2; ++rank) {
    const json& rs = r.summary["ranks"][rank];
    const json& gpu = rs["gpu"];
    const json device = r.Device(rs["rank"].get<int>());
    const double comm = Num(device["kinds"]["allreduce"]["device_s"]);
    const double exposed_truth = Num(device["comm_overlap"]["exposed_s"]);
    const json& overlap = rs["comm_overlap"];
    INFO("rank " << rs["rank"] << " coverage " << gpu["coverage"].dump() << "\ntruth " << device.dump()
                 << "\ncomm_overlap " << overlap.dump());
    REQUIRE(gpu["coverage"]["sampled"] == true);
    CHECK(Num(gpu["comm_kernels"]["total_s"]) == Approx(comm).epsilon(0.05));
    CHECK(Num(overlap["nccl_kernel_s"]) == Approx(comm).epsilon(0.05));
    const double busy = Num(device["busy_s"]);
    CHECK(std::abs(Num(gpu["busy_s"]) - busy) <= 0.05 * busy);
    // Mostly hidden, as on the device (the views agree: the communicator's, the rank's).
    CHECK(Num(overlap["exposed_s"]) <= 0.01 + std::max(0.25 * comm, 3 * exposed_truth));
    CHECK(Num(overlap["overlapped_s"]) >= 0.5 * (comm - exposed_truth));
    const json& comms = rs["collectives"]["by_comm"];
    REQUIRE(comms.size() == 1);
    CHECK(Num(comms[0]["exposed_s"]) == Approx(Num(overlap["exposed_s"])).epsilon(0.1).margin(1e-3));
  }
}

TEST_CASE("budget: a GPU-bound run's windows keep their queued work: CUPTI detaches after the step's sync") {
  const JobRun r = RunScenario("budget-gpu-bound", kGpuBound,
                               {.truth = true, .env = {{"GPUWATCH_SAMPLE_HZ", "0"}}, .timeout_s = 180});
  CheckGpuBoundWindows(r);
}

TEST_CASE("budget: a GPU-bound run that never syncs: CUPTI detaches after the queue's lag") {
  const JobRun r = RunScenario("budget-gpu-bound-nosync", kGpuBoundNoSync,
                               {.truth = true, .env = {{"GPUWATCH_SAMPLE_HZ", "0"}}, .timeout_s = 180});
  CheckGpuBoundWindows(r);
}

TEST_CASE("budget: with GPUWATCH_CUPTI_DETACH=0, a disabled CUPTI keeps costing between windows, and is charged") {
  // The counterpart of the check above, and the switch for a CUPTI that misbehaves when
  // detached: CUPTI stays attached and its leftover cost runs for the whole run. The summary
  // used to measure CUPTI as calls in windows minus calls outside, and read 0.17 of its cost
  // (windows kept opening); now every call outside windows is a lingering one, charged at the
  // budget's share of CUPTI's cost per call (the windows' calls against the lingering ones),
  // and the leftover, more than the budget here, keeps further windows shut.
  const JobRun r = RunScenario("budget-attached", kLaunchHeavy,
                               {.truth = true, .env = {{"GPUWATCH_SAMPLE_HZ", "0"}, {"GPUWATCH_CUPTI_DETACH", "0"}},
                                .timeout_s = 180});
  const json& own = r.summary["ranks"][0]["overhead"];
  const json device = r.Device(0);
  const json& cupti_truth = device["cupti"];
  INFO("overhead " << own.dump() << "\nCUPTI's truth " << cupti_truth.dump());
  CHECK(own["cupti_detaches"] == 0);
  CHECK(cupti_truth["finalizes"] == 0);
  const double lingering = Num(cupti_truth["lingering_s"]);
  CHECK(lingering > Num(cupti_truth["added_s"]) - lingering);  // more than the windows cost
  // Every launch was made in a window or with CUPTI lingering (the cycles a window opened
  // in: charged at the window's price).
  const double launches = r.Truth(0)["ops"]["kernels"]["count"].get<double>();
  CHECK(own["cupti_linger_calls"].get<double>() + own["cupti_calls"].get<double>() == Approx(launches).epsilon(0.05));
  CHECK(own["cupti_linger_cost_measured"] == false);  // no call was made with CUPTI detached
  // The summary's CUPTI cost: 1.60-1.65x the truth alone, 2.06x beside another e2e test (the
  // share is NVIDIA's, 0.3; the windows' calls read slower on this VM than CUPTI alone makes
  // them, the more so when its two cores are shared). It read 0.17x before.
  CHECK(Num(own["cupti_s"]) >= 0.5 * Num(cupti_truth["added_s"]));
  CHECK(Num(own["cupti_s"]) <= 2.5 * Num(cupti_truth["added_s"]));
  CHECK(own["windows"].get<int>() <= 2);  // the leftover alone is over the budget
  CHECK(r.SummaryText().find("CUPTI left lingering: ") != std::string::npos);
}

TEST_CASE("budget: hardware event tracing (Blackwell) is enabled again each time CUPTI is attached again") {
  // SIMGPU_CUPTI_HWTRACE=1 plays a device that has it: the device kinds cost 200 ns a launch
  // instead of 1700. Each window after the first attaches a detached CUPTI, which forgot the
  // setting: were it not enabled again, those windows' launches would pay the full cost.
  const JobRun r = RunScenario("budget-hwtrace", kLaunchHeavy,
                               {.truth = true, .env = {{"GPUWATCH_SAMPLE_HZ", "0"}, {"SIMGPU_CUPTI_HWTRACE", "1"}},
                                .timeout_s = 180});
  const json& own = r.summary["ranks"][0]["overhead"];
  const json device = r.Device(0);
  const json& cupti_truth = device["cupti"];
  INFO("overhead " << own.dump() << "\nCUPTI's truth " << cupti_truth.dump());
  CHECK(own["cupti_hw_trace"] == true);
  REQUIRE(own["cupti_detaches"].get<int>() >= 2);  // windows after an attach
  // What CUPTI added per call it instrumented: the hardware-traced cost (~0.7 us configured,
  // ~1.3 us with the simulator's handling here) in every window, not the full 2.2 us (~3).
  const double per_call_us = Num(cupti_truth["added_s"]) / own["cupti_calls"].get<double>() * 1e6;
  CHECK(per_call_us < 1.9);
  CHECK(Num(own["cupti_us_per_call"]) < 1.9);
}

TEST_CASE("budget: kernels launched through the driver (Triton, cuBLAS) are charged and sampled too") {
  // torch.compile's kernels are Triton's, launched with cuLaunchKernelEx; cuBLAS takes
  // cuLaunchKernel from the runtime's entry point. Neither passes cudaLaunchKernel's hooks:
  // the budget once counted only those (and copies), charged CUPTI nothing for this run and
  // traced it whole, +47% here. 2 s of launch-bound steps, every launch through the driver.
  const char* kDriverHeavy = R"({
    "name": "budget_driver_launches", "description": "launch-bound, launched as Triton and cuBLAS do",
    "ranks": 1, "steps": 250, "gpu": {"launch_us": 8},
    "step": [{"op": "kernels", "count": 600, "us": 4, "via": "triton"},
             {"op": "kernels", "count": 400, "us": 4, "via": "library"}, {"op": "sync"}]
  })";
  const JobRun r = RunScenario("budget-driver", kDriverHeavy,
                               {.truth = true, .env = {{"GPUWATCH_SAMPLE_HZ", "0"}}, .timeout_s = 120});
  const json& rank = r.summary["ranks"][0];
  const json& cov = rank["gpu"]["coverage"];
  const json& own = rank["overhead"];
  INFO("coverage " << cov.dump() << "\noverhead " << own.dump());
  REQUIRE(rank["kernels"]["driver_launches"] == 250 * 1000);  // the hooks saw them all
  CHECK(cov["sampled"] == true);
  CHECK(Num(cov["share"]) < 0.5);
  // CUPTI's cost measured on these launches, and charged for each one inside a window.
  CHECK(own["cupti_cost_measured"] == true);
  CHECK(Num(own["cupti_us_per_call"]) > 1.5);
  CHECK(Num(own["cupti_us_per_call"]) < 8.0);
  CHECK(own["cupti_calls"].get<double>() >= 0.9 * Num(cov["enqueue_share"]) * 250 * 1000);
  const double spent = Num(own["hooks_s"]) + Num(own["cupti_s"]);
  CHECK(spent <= MostSpent(own));
  // And the device figures, estimated from the window, still match the device's account.
  const double busy = Num(r.Device(0)["busy_s"]);
  CHECK(std::abs(Num(rank["gpu"]["busy_s"]) - busy) <= 0.05 * busy);
}

TEST_CASE("budget: the host sampler shares the budget: hooks, CUPTI and the sampler stay within it together") {
  // A budget of 0.4%: the hooks alone (~4 ms/s here) take about all of its share of the
  // wall time, CUPTI's first window the allowance, and the sampler (this C++ driver's native
  // frames, ~0.1 ms a sample, up to half the budget on its own terms) has to wait for credit:
  // with only its own half-share bound it would take ~16 ms (measured 2.5-9 ms with it).
  const JobRun r = RunScenario("budget-sampler", kLaunchHeavy,
                               {.env = {{"GPUWATCH_OVERHEAD", "0.4%"}}, .timeout_s = 180});
  const json& own = r.summary["ranks"][0]["overhead"];
  const json& sampler = own["host_sampler"];
  INFO("overhead " << own.dump());
  REQUIRE(sampler.is_object());
  CHECK(sampler["samples"].get<int>() > 0);  // it sampled while there was credit
  CHECK(Num(own["sampler_s"]) > 0);
  // Its cost: its thread's CPU and its timer's handlers on the job's thread.
  CHECK(Num(own["sampler_s"]) == Approx(Num(sampler["cpu_s"]) + Num(sampler["handler_s"])).margin(2e-3));
  CHECK(Num(sampler["handler_s"]) >= 0);
  // The sampler had only what the hooks and CUPTI left of the budget (a 10 ms cycle of
  // overshoot, and 5 ms for its last ticks before the sender said the budget was spent).
  // Not the whole against the budget: the hooks' in-place figure, which reprices every call
  // so far, moved 32 -> 49 ns from run to run here, and alone took the whole over.
  const double allowance = 0.004 * Num(own["elapsed_s"]) + 0.05;
  const double left = std::max(0.0, allowance + 0.01 - Num(own["hooks_s"]) - Num(own["cupti_s"]));
  CHECK(Num(own["sampler_s"]) <= left + 0.005);
  // So it stopped short of its own bound: what the others left, 3-9 ms over five runs
  // here, as the hooks' and CUPTI's shares moved (it took ~16 ms with only its own bound).
  CHECK(Num(own["sampler_s"]) < 0.002 * Num(own["elapsed_s"]) + 0.005);
  // In the added time: only what ran on the job's threads (the handlers); the sampler's
  // thread is beside the job, as the sender's.
  CHECK(Num(own["sampler_signals_s"]) == Approx(Num(sampler["handler_s"])).margin(2e-3));
  CHECK(Num(own["sampler_signals_s"]) <= Num(own["sampler_s"]));
  CHECK(Num(own["added_s"]) == Approx(Num(own["hooks_s"]) + Num(own["cupti_s"]) + Num(own["startup_s"]) +
                                      Num(own["sampler_signals_s"]))
                                   .margin(1e-6));
  CHECK(Num(r.summary["job"]["overhead"]["sampler_s"]) == Approx(Num(own["sampler_s"])).margin(1e-6));
  CHECK(r.SummaryText().find("sampler signals") != std::string::npos);
  CHECK(r.SummaryText().find("beside the job: sender") != std::string::npos);
}

TEST_CASE("budget: GPUWATCH_CUPTI=full records the same run whole, off records no device work") {
  const JobRun full = RunScenario("budget-full", kShortHeavy, {.truth = true, .env = {{"GPUWATCH_CUPTI", "full"}}});
  const json& g = full.summary["ranks"][0]["gpu"];
  CHECK(g["coverage"]["sampled"] == false);
  CHECK(g["coverage"]["share"] == 1.0);
  CHECK(g["kernels"]["count"] == full.Device(0)["kinds"]["kernel"]["count"]);
  CHECK(full.summary["ranks"][0]["overhead"]["cupti_mode"] == "full");
  CHECK(full.SummaryText().find("GPU timeline sampled") == std::string::npos);
  // Nothing ran outside a window to measure CUPTI's cost against: the figure says so.
  CHECK(full.SummaryText().find("of CUPTI's assumed, not measured") != std::string::npos);

  const JobRun off = RunScenario("budget-off", kShortHeavy, {.env = {{"GPUWATCH_CUPTI", "off"}}});
  const json& rank = off.summary["ranks"][0];
  CHECK(rank["overhead"]["cupti_mode"] == "off");
  CHECK(rank["overhead"]["cupti_s"] == 0.0);
  CHECK(rank["gpu"]["source"] != "cupti");
  CHECK(rank["kernels"]["launches"] == 60 * 1250);
  // With no device records to go with them, the trace draws every launch in bursts.
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(ReadFile(off.out + "/trace.perfetto-trace"), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.processes.size() == 1);
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  CHECK(c.launches == 0);
  CHECK(c.burst_launches == 60 * 1250);
}

TEST_CASE("budget: with CUPTI held by another profiler, the summary charges it nothing") {
  // Nsight Systems or a profiler the job started holds CUPTI's one subscriber: gpuwatch
  // records no device work, and so pays nothing for it. The budget once charged the calls
  // made in its "windows" at the 4 us prior: 107 ms, half the wall time, for a short loop.
  const JobRun r = RunScenario("budget-taken", kShortHeavy, {.env = {{"SIMGPU_CUPTI_TAKEN", "1"}}});
  const json& rank = r.summary["ranks"][0];
  const json& own = rank["overhead"];
  INFO("overhead " << own.dump() << "\ngpu " << rank["gpu"].dump().substr(0, 300));
  REQUIRE(rank["gpu"]["source"] == "events");
  CHECK(own["cupti_mode"] == "budget");
  CHECK(own["cupti_calls"] == 0);
  CHECK(Num(own["cupti_s"]) == 0.0);
  CHECK(own["windows"] == 0);
  CHECK(Num(own["added_s"]) == Approx(Num(own["hooks_s"]) + Num(own["startup_s"]) + Num(own["sampler_signals_s"])).margin(1e-6));
  // The hooks' charge on 75k calls (25-85 ns each by the probe, more on a loaded machine), the
  // start-up and the sampler's handlers: ~1.2% of this 1 s run. The bug this guards against
  // charged half the wall time.
  CHECK(Num(own["share_of_wall"]) < 0.1);
  CHECK(r.SummaryText().find("GPU timeline sampled") == std::string::npos);
}

TEST_CASE("budget: what CUPTI adds to a graph replay is measured per launch, and the windows follow it") {
  // 3 s of replays of 200 kernels (torch.compile's reduce-overhead, torch.cuda.graphs), once
  // with CUPTI's work on each node costing 1 us more, once not (the simulator's own handling
  // of the 200 records only). The budget once charged every node as a launch (4 us at the
  // prior: 800 us a replay) whatever a replay cost, and traced either run over ~5% of it.
  const char* kGraphHeavy = R"({
    "name": "budget_graphs", "description": "graph replays, longer than the allowance",
    "ranks": 1, "steps": 2400, "gpu": {"launch_us": 7},
    "step": [{"op": "host", "ms": 0.2}, {"op": "graph", "kernels": 200, "us": 5, "replays": 1}, {"op": "sync"}]
  })";
  const auto run = [&](const char* node_cost) {
    return RunScenario(std::string("budget-graphs-") + node_cost, kGraphHeavy,
                       {.truth = true,
                        .env = {{"GPUWATCH_SAMPLE_HZ", "0"}, {"SIMGPU_CUPTI_GRAPH_NODE_COST_NS", node_cost}},
                        .timeout_s = 120});
  };
  const JobRun dear = run("1000"), cheap = run("0");
  double share[2], per_replay[2];
  int i = 0;
  for (const JobRun* r : {&dear, &cheap}) {
    const json& rank = r->summary["ranks"][0];
    const json& cov = rank["gpu"]["coverage"];
    const json& own = rank["overhead"];
    INFO(r->out << "\ncoverage " << cov.dump() << "\noverhead " << own.dump());
    REQUIRE(own["cupti_graph_cost_measured"] == true);
    per_replay[i] = Num(own["cupti_us_per_graph_launch"]);
    share[i++] = Num(cov["share"]);
    CHECK(cov["sampled"] == true);
    CHECK(cov["windows"].get<int>() >= 2);
    CHECK(own["cupti_calls"] == 0);  // no call but the replays enqueued work
    CHECK(own["cupti_graph_launches"].get<double>() > 0);
    CHECK(own["cupti_graph_launches"].get<double>() < 2400);
    // Spent within the budget, and used. The replays made before CUPTI's cost was measured
    // are priced at the latest figure, which moved by up to 10% over a run here (58 -> 64
    // us): the spending the windows were planned on moves with it.
    const double spent = Num(own["hooks_s"]) + Num(own["cupti_s"]);
    const double allowance = 0.01 * Num(own["elapsed_s"]) + 0.05;
    CHECK(spent <= 1.15 * allowance + 0.01);
    CHECK(spent >= 0.5 * allowance);
    // The host's figures exact, the device's estimated from the windows within 5%.
    CHECK(rank["graphs"]["launches"] == 2400);
    const double busy = Num(r->Device(0)["busy_s"]);
    CHECK(std::abs(Num(rank["gpu"]["busy_s"]) - busy) <= 0.05 * busy);
  }
  INFO("per replay " << per_replay[0] << " / " << per_replay[1] << " us, coverage " << share[0] << " / " << share[1]);
  // 200 nodes at 1 us: 200 us and the launch's own 2.2 us.
  CHECK(per_replay[0] == Approx(202).epsilon(0.25));
  // Without that, what the simulator's handling of the records took: less (it is real CPU
  // time, 40-52% of the recorded replay's on the 2-core VM, by the machine's speed), and the
  // windows cover that much more of the run.
  CHECK(per_replay[1] < 0.65 * per_replay[0]);
  // The windows follow the measured cost: the same budget buys coverage in inverse proportion
  // to a replay's price (2.2x the price read 2.25x the coverage here). A fixed factor sat on
  // its edge: the price ratio moves with the machine's speed.
  CHECK(share[1] / share[0] >= 0.75 * per_replay[0] / per_replay[1]);
  CHECK(share[0] < 0.2);  // 1% of 16% (a replay's 200 us of 1.25 ms), and the allowance
}
