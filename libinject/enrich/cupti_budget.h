// When CUPTI's records run (the overhead budget, docs/PERFORMANCE.md): windows whose length
// and spacing keep what gpuwatch adds to the job within GPUWATCH_OVERHEAD of its wall time
// plus an allowance, from costs measured in this process. Plain logic, sender thread only.
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "enrich/cupti_cost.h"
#include "enrich/launch_times.h"
#include "overhead_settings.h"

namespace gpuwatch::inject {

class CuptiBudget {
 public:
  using Mode = wire::CuptiSetting;  // GPUWATCH_CUPTI: budget, full, off
  struct Options {
    Mode mode = Mode::kBudget;
    double budget = 0.01;                 // GPUWATCH_OVERHEAD, as a share of wall time
    uint64_t allowance_ns = wire::kOverheadAllowanceNs;  // on top of it: short runs are recorded whole
    // The share of budget x wall time the plan spends; the rest is held back for what the
    // measured costs miss, so that a run ends under the budget rather than at it: a window's
    // calls timed in place read 1.00-1.25x what the budget charged for them on the 2-core VM,
    // and the default's measured cost sat at 1% + 50 ms, its median over 13 runs 144 ms for a
    // 144 ms target (docs/PERFORMANCE.md). The allowance is planned whole: short runs stay
    // recorded whole.
    double plan_share = 0.8;
    // Where the job's cores are busy, spend what the work costs the job's wall time
    // (Cycle::stretch ... cpus); false: its own time (GPUWATCH_OVERHEAD_CONTENDED=0).
    bool contended = true;
    uint64_t min_window_ns = 25'000'000;  // a window opens only with credit for this long
    double hook_ns = 0;                   // what a hook adds to its call, timed at start: until
                                          // the hooks' own samples (Cycle) say better
    // What CUPTI adds to a call that enqueues device work, until measured here: NVIDIA's
    // with every record kind on, as a launch-bound PyTorch loop paid it on an H200 (134k ->
    // 87k launches/s: +4.0 us a launch; a bare cudaLaunchKernel +3.0 to 3.4 us;
    // docs/PERFORMANCE.md). Too low, the first window overspends before it is measured.
    double prior_cupti_ns = 4000;
    uint64_t min_samples = 500;           // launches in and out of windows before measuring
    uint64_t min_graph_samples = 50;      // graph launches, the same (one a step is common)
    // And from this many sender cycles each: one cycle can be unlike the rest (the first
    // after the first window ran while the collector started beside the job, and put a
    // replay's cost at 0 from 77 calls).
    uint64_t min_sample_cycles = 5;
    // A span recorded whole whatever it costs (GPUWATCH_TRACE_WINDOW); to <= from: none.
    uint64_t record_from_ns = 0, record_to_ns = 0;
  };
  // What one sender cycle saw: the hooks' records it drained, CUPTI's records it parsed.
  struct Cycle {
    uint64_t now_ns = 0;
    uint64_t hook_calls = 0;      // every call the hooks recorded
    LaunchTimes launches;         // kernel launch calls among them (runtime or driver): host times
    LaunchTimes graph_launches{LaunchTimes::kGraphStallNs};  // graph launch calls among them: host times
    uint64_t enqueues = 0;        // calls that ran device work (record.h: EnqueuesDeviceWork)
    // Of them, those made while CUPTI lingered after a window (attached, every kind off:
    // CuptiReader::LingerSpans), and the kernel launches among those (not in `launches`).
    uint64_t linger_enqueues = 0;
    LaunchTimes linger_launches;
    // Of `enqueues`, those made wholly while CUPTI's kinds were on (CuptiReader::recorded_span),
    // and the graph launches among them: what CUPTI's device records are per call of. (Cycles
    // say it only roughly: under load a window's last cycle ran long with CUPTI recording
    // part of it, and its records read a launch as 2.2 calls.)
    uint64_t recorded_enqueues = 0, recorded_graph_launches = 0;
    uint64_t device_records = 0;  // CUPTI kernels, copies, memsets parsed
    uint64_t graph_records = 0;   // of those, the work of graph launches (CUPTI's graphId set)
    // The latest start among the drained calls that returned only once the device had run
    // what was queued before them (stream and device syncs, blocking copies); 0: none. Not
    // the budget's: the CUPTI reader's sign that a closed window's work is done.
    uint64_t queue_drained_ns = 0;
    // The latest start among the drained enqueueing calls made wholly while CUPTI's kinds
    // were on (CuptiReader::recorded_span); 0: none. The CUPTI reader's too: the window's last
    // call, whose API record must be back before the window's work can be.
    uint64_t recorded_enqueue_ns = 0;
    uint64_t sampler_ns = 0;      // the host sampler's cost so far (enrich/host_sampler.h: Totals::cost_ns)
    uint64_t startup_ns = 0;      // the library's one-off work on the job's threads so far (reported, not spent)
    // CUPTI detached between windows so far (enrich/cupti_reader.h: DetachCounts): how often,
    // and what cuptiFinalize took on the job's threads (spent, as CUPTI's cost).
    uint64_t cupti_detaches = 0, cupti_detach_ns = 0;
    // CUPTI records nothing more (CuptiReader::gone: unusable, or handed over to the job's
    // profiler): no window costs anything from this cycle on. Since when, where it stopped
    // mid-run (CuptiReader::ended_ns; 0: not known): the open window ends there.
    bool cupti_gone = false;
    uint64_t cupti_ended_ns = 0;
    // The hooks' own cost timed in place so far (record/recorder.h: HookCostProbe), mean ns
    // over `hook_samples` samples; used from kMinHookSamples on.
    double hook_ns = 0;
    uint64_t hook_samples = 0;
    // Where the job's cores are busy (proto/contention.h), from its process tree's samples
    // so far: its threads' stretch, the share of the time every core was busy, the CPU of
    // gpuwatch's threads beside the job (the sender's, the collector's where it is the
    // rank's), and the cores the job may use (0: unknown).
    double stretch = 1;
    double busy_share = 0;
    uint64_t beside_ns = 0;
    size_t cpus = 0;
  };
  static constexpr uint64_t kMinHookSamples = 16;
  // What a lingering CUPTI adds to a call, as a share of what it adds recording, until the
  // lingering calls themselves measure it: NVIDIA's on an H200, 1.3-1.6 us a launch against
  // 5.3 recording (tests/device/cupti_linger.py, docs/PERFORMANCE.md); the upper end.
  static constexpr double kLingerShare = 0.3;
  struct Figures {
    Mode mode = Mode::kBudget;
    double budget = 0;
    double hook_ns = 0;           // per call
    uint64_t hook_samples = 0;    // 0: hook_ns is the figure timed at start
    double cupti_ns = 0;          // per enqueueing call CUPTI instrumented (but graph launches)
    bool cupti_ns_measured = false;
    double cupti_graph_ns = 0;    // per graph launch CUPTI instrumented, all its nodes
    bool cupti_graph_ns_measured = false;
    uint64_t hook_calls = 0;
    uint64_t cupti_calls = 0;     // enqueueing calls but graph launches made while a window was
                                  // open (all of them, the hooked ones scaled by CUPTI's device
                                  // records per hooked one)
    uint64_t cupti_graph_launches = 0;  // graph launches made while a window was open
    uint64_t hooks_added_ns = 0, cupti_added_ns = 0;  // cupti_added_ns: with the detaches and the lingering calls
    uint64_t cupti_detaches = 0, cupti_detach_ns = 0;
    // Enqueueing calls made while CUPTI lingered after a window (the hooked ones scaled as
    // cupti_calls are), what its leftover instrumentation added to each, and whether that was
    // measured here (else kLingerShare of cupti_ns). In cupti_added_ns.
    uint64_t cupti_linger_calls = 0;
    double cupti_linger_ns = 0;
    bool cupti_linger_ns_measured = false;
    uint64_t sampler_ns = 0;      // the host sampler's CPU and its signals' handlers, spent here too
    uint64_t startup_ns = 0;      // its load, and the rings its recording threads zeroed
    uint64_t windows = 0;         // closed, plus the open one
    uint64_t window_ns = 0;       // their length (the open one up to now)
    uint64_t elapsed_ns = 0;
    // What the budget spent: hooks, CUPTI and the sampler on the job's wall where its cores
    // were busy (wire::ContendedWall), else their time.
    uint64_t spent_ns = 0;
  };

  CuptiBudget(const Options& o, uint64_t start_ns);

  // Accounts for a cycle, which ran with the windows as they were after the previous one,
  // and says whether a window is open from now.
  bool Update(const Cycle& c);
  bool open() const { return open_; }
  // Hooks, CUPTI and the sampler had spent the whole allowance at the last update (budget
  // mode only): the sampler waits for credit (enrich/host_sampler.h: SetBudgetSpent).
  bool spent() const { return spent_; }
  // What the plan lets hooks, CUPTI and the sampler spend over a run's first `elapsed_ns`:
  // plan_share of budget x wall, and the allowance (the ceiling is the budget's whole share).
  double PlannedNs(uint64_t elapsed_ns) const {
    return o_.plan_share * o_.budget * static_cast<double>(elapsed_ns) + static_cast<double>(o_.allowance_ns);
  }
  // Since when the open window is open (0: none).
  uint64_t open_since_ns() const { return open_ ? window_start_ : 0; }
  // Windows closed since the last call, [start, end) on CLOCK_MONOTONIC.
  std::vector<std::pair<uint64_t, uint64_t>> TakeClosedWindows();
  Figures figures() const;
  // What CUPTI is taken to add per enqueueing call now (but a graph launch), and per graph
  // launch.
  double CuptiNs() const;
  double CuptiGraphNs() const;
  // ... and per enqueueing call made while it lingered after a window.
  double LingerNs() const;
  // What a window leaves to pay after it closes where CUPTI is detached between windows:
  // the calls made while it lingered and the detach, per detach so far (0 before the first,
  // and where it stays attached: its leftover is then a rate, spent as it runs).
  double TailNs() const;

 private:
  uint64_t sampler_ns_ = 0, startup_ns_ = 0, detaches_ = 0, detach_ns_ = 0;
  // The latest cycle's contention (Cycle: stretch ... cpus).
  double stretch_ = 1, busy_share_ = 0;
  uint64_t beside_ns_ = 0;
  size_t cpus_ = 0;
  // The wall time `cpu_ns` of work on the job's threads costs it, and what has been spent.
  double OnJobNs(double cpu_ns) const { return cpu_ns * std::max(1.0, stretch_); }
  double SpentNs(const Figures& f) const;
  // A launch-call cost that rests on enough calls each way, in enough cycles.
  bool Enough(const CuptiCost& c) const;
  bool Measured() const;  // CUPTI's cost per launch: against detached calls, or lingering ones
  bool AttachedMeasured() const;  // ... against lingering ones, where CUPTI never detached
  bool GraphMeasured() const;
  // CUPTI's device records per enqueueing call the hooks saw in windows, graph launches and
  // their work apart: at least 1.
  double RecordsPerCall() const;
  void Open(uint64_t now);
  void Close(uint64_t now);

  Options o_;
  uint64_t start_ns_, last_ns_;
  bool open_ = false, spent_ = false, gone_ = false;
  uint64_t window_start_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> closed_;
  uint64_t windows_ = 0, window_ns_ = 0;
  uint64_t hook_calls_ = 0;
  double hook_ns_;              // the start-up figure, then the in-place mean
  uint64_t hook_samples_ = 0;
  // Launch calls made with CUPTI on, and off, for its cost (but in the cycle after a switch,
  // which ran partly each way); graph launches apart.
  CuptiCost launch_cost_, graph_cost_{LaunchTimes::kGraphStallNs};
  // Launch calls made while CUPTI lingered, against those made with it detached (kept
  // attached, never: the share stands); and the calls in windows against the lingering ones,
  // CUPTI's cost per launch where it never detaches.
  CuptiCost linger_cost_, attached_cost_;
  double linger_calls_ = 0;  // priced at the latest figure: a few ms after each window
  // The window opened or closed at the last update (CUPTI starts the run being enabled).
  bool switched_ = true;
  uint64_t in_graph_calls_ = 0, device_records_ = 0, graph_records_ = 0;
  uint64_t recorded_enqueues_ = 0, recorded_graph_launches_ = 0;  // Cycle's, summed
  double cupti_calls_ = 0;
  // What CUPTI cost the calls made in windows. Those of the last kRepriceS seconds are priced
  // at the latest figure, which corrects the early ones (the first windows' figure is the
  // least sure: graph replays read 160 us a replay at 0.3 s into a run, 69 us by its end);
  // older ones keep the price they had then. All at the latest, a minute at 6 us a launch
  // followed by a minute at 3 us was repriced at 3, and the windows spent 20% over the budget.
  static constexpr uint64_t kRepriceS = static_cast<uint64_t>(CuptiCost::kFadeNs / 1e9);  // the figure's own memory
  struct Recent {
    uint64_t second;
    double calls;
    uint64_t graphs;
  };
  void Charge(uint64_t now, double calls, uint64_t graphs);
  std::deque<Recent> recent_;  // a bucket a second
  double recent_calls_ = 0;
  uint64_t recent_graphs_ = 0;
  double priced_ns_ = 0, priced_graph_ns_ = 0;
  double unpriced_calls_ = 0;  // left the recent ones before the figure was measured
  uint64_t unpriced_graph_calls_ = 0;
  double rate_ = 0, graph_rate_ = 0;  // enqueueing calls (but graph launches) and graph launches per ns, recent
};

}  // namespace gpuwatch::inject
