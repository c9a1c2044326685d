// See utilization_shape.h. A window is idle under kIdleBusy, or under a quarter of the
// curve's high level (its 90th percentile) when that is lower; idle runs that touch the
// first or last window (set-up, teardown) are not counted as runs or drops. A curve whose
// high level is under kMinHighBusy is steady_low outright. Then the rules, first that applies:
//   periodic_drops  at least two drops (kDropWindows idle windows in a row), and at most one
//                   drop per three steps (without steps: busy stretches between drops of at
//                   least 5 windows on average): idle now and then, not every step;
//   degrading       the mean falls by kDegradingFall from the first third to the last, and
//                   no sixth's mean rises by more than 5 points over the one before;
//   sawtooth        idle windows are 20-90% of the curve and come in many runs: at least
//                   one per two steps (without steps: one per 20 windows, at least 3);
//   steady_high     mean at least kSteadyHighMean;
//   steady_low      the rest.
#include "analyze/utilization_shape.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace gpuwatch::collector {
namespace {

double Mean(const std::vector<double>& v, size_t a, size_t b) {
  if (b <= a) return 0;
  return std::accumulate(v.begin() + static_cast<long>(a), v.begin() + static_cast<long>(b), 0.0) /
         static_cast<double>(b - a);
}

bool Degrading(const std::vector<double>& v, const UtilizationShape& s) {
  if (s.first_third - s.last_third < kDegradingFall) return false;
  const size_t n = v.size();
  int rises = 0;
  double prev = Mean(v, 0, n / 6);
  for (size_t i = 1; i < 6; ++i) {
    const double m = Mean(v, i * n / 6, (i + 1) * n / 6);
    if (m > prev + 0.05) ++rises;
    prev = m;
  }
  return rises == 0;
}

}  // namespace

const char* UtilizationShape::key() const {
  switch (kind) {
    case kSawtooth: return "sawtooth";
    case kSteadyLow: return "steady_low";
    case kPeriodicDrops: return "periodic_drops";
    case kDegrading: return "degrading";
    case kSteadyHigh: return "steady_high";
    default: return nullptr;
  }
}

const char* UtilizationShape::reading() const {
  switch (kind) {
    case kSawtooth: return "a sawtooth: the GPU waits for input every step (data loading)";
    case kSteadyLow: return "steady and low: the work is too small for the GPU (batch size, launches, compute graph)";
    case kPeriodicDrops: return "periodic drops: the GPU idles every few steps (checkpoints, evaluation)";
    case kDegrading: return "degrading: utilization falls as the run goes on (a leak, fragmentation, throttling)";
    case kSteadyHigh: return "steady and high";
    default: return "";
  }
}

const char* UtilizationShape::form() const {
  switch (kind) {
    case kSawtooth: return "a sawtooth";
    case kSteadyLow: return "steady and low";
    case kPeriodicDrops: return "periodic drops";
    case kDegrading: return "degrading";
    case kSteadyHigh: return "steady and high";
    default: return "";
  }
}

const char* UtilizationShape::cause() const {
  const char* r = reading();
  const char* colon = std::strchr(r, ':');
  return colon ? colon + 2 : "";
}

bool UtilizationShape::Agrees(const std::string& id) const {
  switch (kind) {
    case kSawtooth:
      return id == "data_loading" || id == "host_overhead" || id == "sync_stall" || id == "cpu_throttled" ||
             id == "cpu_affinity" || id == "cpu_oversubscribed" || id == "pageable_copy" || id == "blocking_copy";
    case kSteadyLow: return id == "launch_bound" || id == "small_batch";
    case kPeriodicDrops: return id == "periodic_stall";
    case kDegrading: return id == "clocks_throttled";
    case kSteadyHigh:
      return id == "mixed_precision" || id == "small_batch" || id == "gpu_shared" || id == "clocks_throttled" ||
             id == "pcie_link";
    default: return false;
  }
}

bool UtilizationShape::Names(const std::string& id) const {
  return kind == kSawtooth ? id == "data_loading" : Agrees(id);
}

UtilizationShape ClassifyUtilization(const std::vector<double>& v, size_t steps) {
  UtilizationShape s;
  const size_t n = v.size();
  s.windows = n;
  if (n < kMinShapeWindows) return s;
  s.mean = Mean(v, 0, n);
  s.first_third = Mean(v, 0, n / 3);
  s.last_third = Mean(v, n - n / 3, n);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  s.high = sorted[std::min(n - 1, n * 9 / 10)];
  if (s.high < kMinHighBusy) {
    s.kind = UtilizationShape::kSteadyLow;
    return s;
  }
  const double idle_below = std::min(kIdleBusy, s.high / 4);
  size_t idle = 0, run = 0, run_start = 0, busy_run_total = 0, busy_runs = 0, busy_run = 0;
  auto close_run = [&](size_t end) {
    if (run == 0) return;
    if (run_start > 0 && end < n) {  // not set-up or teardown
      s.idle_runs++;
      if (run >= kDropWindows) s.drops++;
    }
    run = 0;
  };
  for (size_t i = 0; i < n; ++i) {
    if (v[i] < idle_below) {
      if (run++ == 0) run_start = i;
      ++idle;
      if (busy_run) busy_run_total += busy_run, ++busy_runs, busy_run = 0;
    } else {
      close_run(i);
      ++busy_run;
    }
  }
  close_run(n);
  if (busy_run) busy_run_total += busy_run, ++busy_runs;
  s.idle_share = static_cast<double>(idle) / static_cast<double>(n);

  const bool rare_drops = steps > 0 ? s.drops * 3 <= steps
                                    : busy_runs > 0 && busy_run_total >= 5 * busy_runs;
  const bool many_runs = steps > 0 ? s.idle_runs * 2 >= steps : s.idle_runs >= std::max<size_t>(3, n / 20);
  if (s.drops >= 2 && rare_drops) {
    s.kind = UtilizationShape::kPeriodicDrops;
  } else if (Degrading(v, s)) {
    s.kind = UtilizationShape::kDegrading;
  } else if (s.idle_share >= 0.2 && s.idle_share <= 0.9 && many_runs) {
    s.kind = UtilizationShape::kSawtooth;
  } else {
    s.kind = s.mean >= kSteadyHighMean ? UtilizationShape::kSteadyHigh : UtilizationShape::kSteadyLow;
  }
  return s;
}

std::vector<double> SeriesWindows(const BusySeries& series, uint64_t from_ns, uint64_t to_ns, bool compute) {
  std::vector<double> out;
  for (size_t i = 0; i < series.size(); ++i) {
    const uint64_t a = series.origin_ns() + i * series.window_ns(), b = a + series.window_ns();
    // A window at an end of the span counts only if most of it lies inside: one that holds a
    // sliver of the first or last step reads as idle, and in a short run (launch_bound's 15
    // windows) one such window in the last third moved its mean by 0.05-0.1 towards degrading.
    const uint64_t lo = std::max(a, from_ns), hi = std::min(b, to_ns);
    if (to_ns != 0 && 2 * (hi > lo ? hi - lo : 0) < b - a) continue;
    out.push_back(series.Fraction(i, compute));
  }
  return out;
}

}  // namespace gpuwatch::collector
