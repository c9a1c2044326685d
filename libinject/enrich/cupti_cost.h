// What CUPTI adds to one kind of call (kernel launches, or graph launches), from the calls'
// own host times in and out of CUPTI's windows (enrich/cupti_budget.h).
//
// Each sender cycle's calls in a window are set against the calls made just before the
// window; the cost is the mean of those differences over every call. Why not the mean of all
// calls in windows minus the mean of all calls outside: windows are long where the job
// launches little and short where it launches much, so the two means sample the job's phases
// in different proportions, and a phase whose calls are slower for reasons of its own (more
// arguments, a busier CPU) moves one mean and not the other. A run that launched little with
// 4 us calls and then much with 6 us calls had CUPTI's 3 us read as 2.2 us, and the windows
// spent 39% over the budget (tests/unit/inject/enrich/cupti_budget_test.cpp).
// Why not also the calls just after a window against those in it: they run while the sender
// and the collector handle the window's records, and where those share the job's cores they
// are slower than the job's usual calls, which would make a window look cheaper than it is
// (a unit test models it). On the 2-core VM's launch loop it did not show: with and without
// them the figure was within 1% of what the window's calls took more in place
// (docs/PERFORMANCE.md). Only until a window has had calls before it (the run's first opens
// at its start) is that the figure, provisionally: the calls since set against its last.
// A window's calls together weigh no more than the calls they are set against: they all lean
// on that one reference, and a long window would otherwise stand for many. One that opened at
// the end of a quiet phase (6 us calls) and ran 0.3 s into a launch-heavy one (4 us calls)
// set 45k calls against the quiet ones, outweighed the 29 short windows after it, and read
// CUPTI's 3 us as 2.6 (tests/unit/inject/enrich/cupti_budget_test.cpp, cupti_cost_test.cpp).
#pragma once
#include <cstdint>
#include <deque>

#include "enrich/launch_times.h"

namespace gpuwatch::inject {

class CuptiCost {
 public:
  // The calls just before: the last kRefCycles cycles of calls made outside windows, and
  // further back until they hold kRefCalls timed calls (a job that replays one graph a step
  // makes one every few cycles).
  static constexpr uint64_t kRefCycles = 15, kRefCalls = 64;
  // The differences fade with this time constant, so that the figure follows a change in
  // CUPTI's own cost (3 us doubled to 6: a minute later it read 5.5 us, where all calls in
  // windows minus all outside read 4.5), yet rests on a dozen or so windows of a
  // launch-heavy phase (one every ~2.5 s), not on the last one.
  static constexpr double kFadeNs = 30e9;

  explicit CuptiCost(uint64_t stall_ns = LaunchTimes::kStallNs) : in_(stall_ns), out_(stall_ns) {}

  // One sender cycle's calls, ending at now_ns, all made with CUPTI on (in_window) or all off.
  void Add(uint64_t now_ns, bool in_window, const LaunchTimes& cycle);

  // Every call so far, in windows and outside: how much the figure rests on.
  const LaunchTimes& in() const { return in_; }
  const LaunchTimes& out() const { return out_; }
  // Calls that were set against calls made the other way.
  uint64_t paired() const { return before_.calls + after_.calls; }
  // The mean difference per call in ns, the recent ones weighing most (may be negative:
  // noise); 0 before any pairing.
  double Ns() const { return before_.weight > 0 ? before_.Ns() : after_.Ns(); }

 private:
  // The recent calls made one way: a few cycles' timed calls and their mean.
  struct Recent {
    struct Part {
      uint64_t timed;
      double mean_ns;
    };
    std::deque<Part> parts;
    uint64_t timed = 0;
    double leaned = 0;  // the weight the window's calls have set against these so far
    void Push(const LaunchTimes& cycle);
    // The median of the cycles' means, so that a cycle or two unlike the rest does not move
    // it: the mean of the last 5 read a replay's cost at 33 us instead of ~50 in one loaded
    // run of eight (its window then never closed); the median of 15, 47-67 us in eight.
    double Median() const;
  };
  // Differences per call, faded: sums of differences x weights, and of weights (a cycle's
  // calls, or what is left of its reference's: above).
  struct Differences {
    double diff_ns = 0, weight = 0;
    uint64_t calls = 0, faded_at_ns = 0;
    void Add(uint64_t now_ns, double diff_ns, double weight, uint64_t calls);
    double Ns() const { return weight > 0 ? diff_ns / weight : 0; }
  };

  LaunchTimes in_, out_;
  Recent recent_in_, recent_out_;
  Differences before_;  // window calls against the calls just before the window
  Differences after_;   // the calls just after a window against the window's: provisional
};

}  // namespace gpuwatch::inject
