// See cupti_budget.h. What a cycle costs: every hooked call pays the hook's own time; while
// a window is open, every call that enqueues device work also pays CUPTI's instrumentation,
// measured apart for kernel launches and for graph launches (a graph launch runs many nodes,
// and what CUPTI adds to it is not a launch's times its nodes: the simulator's adds one
// call's cost, NVIDIA's has per-node work; docs/simulator.md).
// CUPTI is detached between windows (enrich/cupti_reader.h), and the detaches' own time on
// the job's threads is CUPTI's cost too, as is what CUPTI still adds to the calls made between
// a window's close and the detach (or, where it stays attached, the next window): measured as
// those launch calls against the ones made with CUPTI detached, a share of a window's cost
// per call until then.
// Spent = hooks + CUPTI + the host sampler's cost (its CPU, its signals' handlers), all
// measured here (the library's start-up is reported beside them, not spent), as the job's
// wall time where its cores are busy (proto/contention.h: stretched by its threads' waits
// for a core, and the CPU of gpuwatch's threads beside it added); the allowance
// grows with the wall time, planned on Options::plan_share of the budget (PlannedNs). A
// window closes when spent reaches the allowance less the tail it will leave (TailNs), and
// opens again once the credit covers min_window_ns at the recent rate of calls and that tail:
// a phase with few launches gets long windows, a launch-heavy one short, spaced ones. While
// spent is past the allowance the sampler takes no sample (spent()).
#include "enrich/cupti_budget.h"

#include <algorithm>

#include "contention.h"

namespace gpuwatch::inject {

CuptiBudget::CuptiBudget(const Options& o, uint64_t start_ns)
    : o_(o), start_ns_(start_ns), last_ns_(start_ns), hook_ns_(o.hook_ns) {
  if (o_.mode != Mode::kOff) Open(start_ns);  // credit for the allowance: record from the start
}

bool CuptiBudget::Enough(const CuptiCost& c) const {
  const LaunchTimes &in = c.in(), &out = c.out();
  return in.count() >= o_.min_samples && out.count() >= o_.min_samples && in.cycles() >= o_.min_sample_cycles &&
         out.cycles() >= o_.min_sample_cycles && c.paired() > 0;
}

// The calls in windows against the lingering ones stand in only where CUPTI never detached:
// where it does, its lingering calls are the few made between a close and the detach, as the
// window's last records are handled, and a GPU-bound job's read a recording CUPTI at 0 set
// against them on the 2-core VM (the windows' calls 12 us, the lingering ones 10-16).
bool CuptiBudget::AttachedMeasured() const { return detaches_ == 0 && Enough(attached_cost_); }

bool CuptiBudget::Measured() const { return Enough(launch_cost_) || AttachedMeasured(); }

double CuptiBudget::CuptiNs() const {
  if (Enough(launch_cost_)) return std::max(0.0, launch_cost_.Ns());
  // CUPTI never detached (GPUWATCH_CUPTI_DETACH=0, or a CUPTI that cannot call back): the
  // calls in windows against those made while it lingered, which paid kLingerShare of it.
  if (AttachedMeasured()) return std::max(0.0, attached_cost_.Ns()) / (1 - kLingerShare);
  return o_.prior_cupti_ns;
}

bool CuptiBudget::GraphMeasured() const {
  // timed(): graph launches that all waited (a full queue) say nothing of CUPTI's cost.
  const LaunchTimes &in = graph_cost_.in(), &out = graph_cost_.out();
  return in.timed() >= o_.min_graph_samples && out.timed() >= o_.min_graph_samples &&
         in.cycles() >= o_.min_sample_cycles && out.cycles() >= o_.min_sample_cycles && graph_cost_.paired() > 0;
}

double CuptiBudget::LingerNs() const {
  if (!Enough(linger_cost_)) return kLingerShare * CuptiNs();
  // A disabled CUPTI costs a call less than a recording one; measured as more, the lingering
  // calls were slowed by something else: they run while the sender and the collector handle
  // the window's last records, and on the 2-core VM beside another test read 2-9 us a launch
  // (0.6 configured) where a recording CUPTI read 2.2-2.8.
  return std::clamp(linger_cost_.Ns(), 0.0, CuptiNs());
}

double CuptiBudget::TailNs() const {
  if (detaches_ == 0) return 0;
  return (linger_calls_ * LingerNs() + static_cast<double>(detach_ns_)) / static_cast<double>(detaches_);
}

double CuptiBudget::CuptiGraphNs() const {
  if (GraphMeasured()) return std::max(0.0, graph_cost_.Ns());
  // Until measured, every node as dear as a launch: the most it is likely to cost, so that
  // the first windows of a graph-heavy job do not overspend before the figure is known.
  const double nodes = recorded_graph_launches_ ? static_cast<double>(graph_records_) /
                                                      static_cast<double>(recorded_graph_launches_)
                                                : 1.0;
  return std::max(1.0, nodes) * CuptiNs();
}

double CuptiBudget::RecordsPerCall() const {
  const uint64_t calls = recorded_enqueues_ - recorded_graph_launches_;
  if (calls == 0 || device_records_ < graph_records_) return 1.0;
  return std::max(1.0, static_cast<double>(device_records_ - graph_records_) / static_cast<double>(calls));
}

void CuptiBudget::Open(uint64_t now) {
  open_ = true;
  window_start_ = now;
}

void CuptiBudget::Close(uint64_t now) {
  open_ = false;
  closed_.emplace_back(window_start_, now);
  ++windows_;
  window_ns_ += now - window_start_;
}

bool CuptiBudget::Update(const Cycle& c) {
  const uint64_t now = std::max(c.now_ns, last_ns_);
  const uint64_t span = now - last_ns_;
  last_ns_ = now;
  hook_calls_ += c.hook_calls;
  if (c.hook_samples >= kMinHookSamples) {  // every call so far charged at the in-place mean
    hook_ns_ = c.hook_ns;
    hook_samples_ = c.hook_samples;
  }
  device_records_ += c.device_records;
  graph_records_ += c.graph_records;
  recorded_enqueues_ += c.recorded_enqueues;
  recorded_graph_launches_ += c.recorded_graph_launches;
  startup_ns_ = std::max(startup_ns_, c.startup_ns);
  detaches_ = std::max(detaches_, c.cupti_detaches);
  detach_ns_ = std::max(detach_ns_, c.cupti_detach_ns);
  // The host sampler runs beside the job, not inside its calls (but for its signals'
  // handlers); its CPU is counted anyway.
  sampler_ns_ = std::max(sampler_ns_, c.sampler_ns);
  if (o_.contended) {
    stretch_ = std::max(1.0, c.stretch);
    busy_share_ = c.busy_share;
    beside_ns_ = std::max(beside_ns_, c.beside_ns);
    cpus_ = c.cpus;
  }
  // A window CUPTI does not record in costs nothing: closed before this cycle is charged.
  // (The calls of a cycle in which a profiler took CUPTI over go uncharged: the profiler
  // pays for them.)
  gone_ = gone_ || c.cupti_gone;
  if (gone_ && open_) {
    if (device_records_ == 0) open_ = false;  // CUPTI never recorded: there was no window
    else Close(c.cupti_ended_ns > window_start_ ? std::min(c.cupti_ended_ns, now) : now);
  }
  const uint64_t graphs = c.graph_launches.count();
  const uint64_t others = c.enqueues > graphs ? c.enqueues - graphs : 0;
  // The cycle after a window opened or closed ran partly each way: CUPTI is enabled or
  // disabled (and its buffers flushed) after the update that decided it, during this cycle.
  // Its calls are charged as the window stood, but timed neither in nor out: under load, the
  // first cycle after a close once took a replay 313 us against 63 in the ones after, put
  // the calls outside windows at 110 us, and CUPTI's cost at 6 us a replay instead of ~100.
  const bool mixed = switched_;
  const bool ran_open = open_;
  const auto decided = [&] {
    switched_ = open_ != ran_open;
    return open_;
  };
  if (!mixed) {
    launch_cost_.Add(now, open_, c.launches);
    graph_cost_.Add(now, open_, c.graph_launches);
    if (open_) attached_cost_.Add(now, true, c.launches);
    else linger_cost_.Add(now, false, c.launches);  // made with CUPTI detached
  }
  if (c.linger_launches.count() > 0) {
    linger_cost_.Add(now, true, c.linger_launches);
    attached_cost_.Add(now, false, c.linger_launches);
  }
  if (open_) {
    in_graph_calls_ += graphs;
    // Work the hooks do not see enqueued is instrumented too (NCCL launches its kernels
    // through the driver it loaded itself): CUPTI's device records per hooked enqueueing
    // call scale them in. A graph's nodes are in its launch's own cost.
    const double calls = static_cast<double>(others) * RecordsPerCall();
    cupti_calls_ += calls;
    Charge(now, calls, graphs);
  } else {  // (in a window's cycle its lingering calls paid the window's price above)
    linger_calls_ += static_cast<double>(c.linger_enqueues) * RecordsPerCall();
  }
  if (span > 0) {  // the recent rates of enqueueing calls, over about a second
    const double w = std::min(1.0, static_cast<double>(span) / 1e9);
    const auto follow = [&](double& rate, uint64_t n) {
      const double r = static_cast<double>(n) / static_cast<double>(span);
      rate = rate == 0 ? r : rate + w * (r - rate);
    };
    follow(rate_, others);
    follow(graph_rate_, graphs);
  }
  if (o_.mode != Mode::kBudget) return decided();
  if (!gone_ && now >= o_.record_from_ns && now < o_.record_to_ns) {  // asked for: its cost counts all the same
    if (!open_) Open(now);
    return decided();
  }
  const Figures f = figures();
  // The library's start-up is reported with the added time but not spent from here: it is
  // paid before the first window whatever the windows do, and spent here it would take
  // CUPTI's start (10 ms with the simulator's, more with NVIDIA's) out of the allowance
  // that keeps short runs recorded whole.
  // Where the job's cores are busy, what runs on its threads costs it their stretch on the
  // wall, and gpuwatch's threads beside it take their CPU from it: the budget is of the job's
  // wall time, so it spends that (beside two busy threads a core, the default's windows had
  // cost the job 3x what they spent).
  const double spent = SpentNs(f);
  const double allowance = PlannedNs(now - start_ns_);
  spent_ = spent >= allowance;
  // Each window is paid for after its close too, until CUPTI is detached: it closes that much
  // early, and opens only with credit for it. Charged only once it is paid, a tail overspent
  // the budget at every close by what it cost: up to the detach's wait (1 s) of calls paying
  // a lingering CUPTI, on a job that never syncs.
  const double tail = OnJobNs(TailNs());
  if (open_ && spent + tail >= allowance) {
    Close(now);
  } else if (!open_ && !gone_ &&
             allowance - spent >= OnJobNs((CuptiNs() * rate_ * RecordsPerCall() + CuptiGraphNs() * graph_rate_) *
                                          static_cast<double>(o_.min_window_ns)) +
                                      tail) {
    Open(now);
  }
  return decided();
}

double CuptiBudget::SpentNs(const Figures& f) const {
  return wire::ContendedWall(static_cast<double>(f.hooks_added_ns + f.cupti_added_ns + f.sampler_ns),
                             static_cast<double>(beside_ns_), stretch_, busy_share_, cpus_);
}

void CuptiBudget::Charge(uint64_t now, double calls, uint64_t graphs) {
  const uint64_t second = now / 1'000'000'000;
  if (recent_.empty() || recent_.back().second != second) recent_.push_back({second, 0, 0});
  recent_.back().calls += calls;
  recent_.back().graphs += graphs;
  recent_calls_ += calls;
  recent_graphs_ += graphs;
  // Calls older than the figure's memory keep the price it had when they left it (until it
  // is measured at all: the prior's price is no one's).
  while (recent_.front().second + kRepriceS < second) {
    const Recent& r = recent_.front();
    if (Measured()) priced_ns_ += r.calls * CuptiNs();
    else unpriced_calls_ += r.calls;
    if (GraphMeasured()) priced_graph_ns_ += static_cast<double>(r.graphs) * CuptiGraphNs();
    else unpriced_graph_calls_ += r.graphs;
    recent_calls_ -= r.calls;
    recent_graphs_ -= r.graphs;
    recent_.pop_front();
  }
}

std::vector<std::pair<uint64_t, uint64_t>> CuptiBudget::TakeClosedWindows() {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  out.swap(closed_);
  return out;
}

CuptiBudget::Figures CuptiBudget::figures() const {
  Figures f;
  f.mode = o_.mode;
  f.budget = o_.budget;
  f.hook_ns = hook_ns_;
  f.hook_samples = hook_samples_;
  f.cupti_ns = CuptiNs();
  f.cupti_ns_measured = Measured();
  f.cupti_graph_ns = CuptiGraphNs();
  f.cupti_graph_ns_measured = GraphMeasured();
  f.hook_calls = hook_calls_;
  f.cupti_calls = static_cast<uint64_t>(cupti_calls_);
  f.cupti_graph_launches = in_graph_calls_;
  f.hooks_added_ns = static_cast<uint64_t>(hook_ns_ * static_cast<double>(hook_calls_));
  f.cupti_added_ns =
      static_cast<uint64_t>(priced_ns_ + f.cupti_ns * (unpriced_calls_ + recent_calls_) + priced_graph_ns_ +
                            f.cupti_graph_ns * static_cast<double>(unpriced_graph_calls_ + recent_graphs_) +
                            linger_calls_ * LingerNs()) +
      detach_ns_;
  f.cupti_detaches = detaches_;
  f.cupti_detach_ns = detach_ns_;
  f.cupti_linger_calls = static_cast<uint64_t>(linger_calls_);
  f.cupti_linger_ns = LingerNs();
  f.cupti_linger_ns_measured = Enough(linger_cost_);
  f.sampler_ns = sampler_ns_;
  f.startup_ns = startup_ns_;
  f.windows = windows_ + (open_ ? 1 : 0);
  f.window_ns = window_ns_ + (open_ ? last_ns_ - window_start_ : 0);
  f.elapsed_ns = last_ns_ - start_ns_;
  f.spent_ns = static_cast<uint64_t>(SpentNs(f));
  return f;
}

}  // namespace gpuwatch::inject
