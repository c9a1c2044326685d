// The shape of a rank's useful utilization curve (gpu.utilization_series.compute_busy: all work
// but NCCL kernels, which keep a GPU "busy" while they wait for peers), read as the usual
// triage guide reads nvidia-smi's: a sawtooth is the GPU waiting for input every step, a
// steady low line is work too small for the device (batch, launches), periodic drops are
// checkpoints or evaluation every N steps, a falling line is something degrading (memory
// fragmentation, a leak, thermal throttling). Read over the steps' span when steps are known.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/busy_series.h"

namespace gpuwatch::collector {

struct UtilizationShape {
  enum Kind { kUnknown, kSawtooth, kSteadyLow, kPeriodicDrops, kDegrading, kSteadyHigh };
  Kind kind = kUnknown;
  size_t windows = 0;        // windows read
  double mean = 0;           // their mean busy share
  double high = 0;           // the 90th percentile of the windows' busy shares
  double idle_share = 0;     // share of windows below kIdleBusy
  size_t idle_runs = 0;      // runs of consecutive idle windows (not touching either end)
  size_t drops = 0;          // of those, runs of at least kDropWindows
  double first_third = 0, last_third = 0;  // mean busy share of the first and last third

  // summary.json's `utilization_shape`; null (nullptr here) when unknown.
  const char* key() const;
  // How the guide reads it, one clause for the verdict ("a sawtooth: the GPU waits for input
  // every step (data loading)"): the curve's form ("a sawtooth") and the cause the guide
  // reads in it ("the GPU waits for input every step (data loading)"; empty for steady_high).
  const char* reading() const;
  const char* form() const;
  const char* cause() const;
  // Whether the reading names the cause a finding measured (`id`: a finding id): a sawtooth
  // and host-side waits (data loading, host work, syncs, the CPU), a steady low line and work
  // too small for the GPU (launches, batch), drops and periodic stalls, a falling line and
  // throttled clocks, a steady high line and losses inside busy kernels (precision, a shared
  // or throttled GPU). The verdict gives the reading only where it agrees.
  bool Agrees(const std::string& id) const;
  // Whether the reading's own words name that finding's cause (a sawtooth reads as data
  // loading; host overhead or a sync makes the same shape under another name).
  bool Names(const std::string& id) const;
};

inline constexpr double kIdleBusy = 0.10;        // a window under 10% busy is idle (or under high / 4)
inline constexpr double kMinHighBusy = 0.05;     // a curve whose high level is under 5%: steady_low
inline constexpr size_t kDropWindows = 3;        // a drop: at least 3 idle windows in a row
inline constexpr size_t kMinShapeWindows = 10;   // fewer windows: no shape
inline constexpr double kSteadyHighMean = 0.80;  // steady at or above: steady_high
inline constexpr double kDegradingFall = 0.25;   // first third minus last third, at least

// `busy`: the windows' busy shares in time order; `steps`: steps in them (0: unknown).
UtilizationShape ClassifyUtilization(const std::vector<double>& busy, size_t steps);

// The windows of `series` at least half inside [from_ns, to_ns) (all of them when to_ns is 0): busy
// shares of all work, or of useful work (`compute`).
std::vector<double> SeriesWindows(const BusySeries& series, uint64_t from_ns, uint64_t to_ns, bool compute = false);

}  // namespace gpuwatch::collector
