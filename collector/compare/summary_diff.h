// `gpuwatch diff`: what changed between two runs, computed once into a plain SummaryDiff
// that the text, JSON and HTML views print and the gate rules read (docs/diff.md).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "compare/run_figures.h"

namespace gpuwatch::collector::compare {

// One figure before and after; absent on a side where it did not occur (or cannot be
// known: a run without steps has no per-step figure).
struct Figure {
  std::optional<double> before, after;
  // after - before, absent sides read 0; nothing when neither side has the figure.
  std::optional<double> Delta() const;
  // Relative change in percent; nothing when before is absent or 0.
  std::optional<double> DeltaPct() const;
};

enum class Trend { kUnchanged, kNew, kGone, kGrown, kShrunk };
const char* TrendName(Trend t);

struct FindingDelta {
  std::string id, title, fix;
  std::string severity_before, severity_after;  // empty on the side without it
  Trend trend = Trend::kUnchanged;
  bool beyond_noise = false;  // |delta ms/step| at least the noise floor
  Figure ms_per_step, share;
  std::vector<int> ranks_after;
};

struct SyncDelta {
  std::string api;
  Trend trend = Trend::kUnchanged;
  bool beyond_noise = false;
  Figure calls_per_step, blocked_ms_per_step;
};

struct CopyDelta {
  std::string direction;  // h2d, d2h
  Trend trend = Trend::kUnchanged;
  bool beyond_noise = false;
  bool became_pageable = false;  // more of its bytes from/to pageable memory than before
  Figure calls_per_step, mb_per_step, host_ms_per_step, pageable_per_step,
      blocking_per_step, pageable_share, device_gbps;
};

struct CollectiveDelta {
  std::string op;
  Trend trend = Trend::kUnchanged;
  bool beyond_noise = false;
  bool busbw_fell = false;  // by more than kBusbwFallPct
  Figure calls_per_step, gpu_ms_per_step, busbw_gbps;
};

struct KernelDelta {
  std::string name;
  Trend trend = Trend::kUnchanged;
  bool beyond_noise = false;
  Figure gpu_ms_per_step, count_per_step;
};

struct StepPartDelta {  // one part of steps.per_step_ms, or of critical_path.parts
  std::string part;
  Trend trend = Trend::kUnchanged;
  bool beyond_noise = false;
  Figure ms;
};

struct CallSiteDelta {
  std::string site;  // CallSiteKey
  std::string python;
  std::vector<std::string> frames;  // of the newer side that has it
  Trend trend = Trend::kUnchanged;
  bool beyond_noise = false;
  Figure blocked_ms_per_step, calls_per_step;
};

struct EnvDifference {
  std::string what, before, after;
};

// The first line of the diff: the biggest change beyond noise, findings first (they are
// causes; the tables are their evidence), then the tables.
struct Headline {
  std::string kind;  // finding, step_part, sync, copy, collective, kernel; none; not_comparable
  std::string key;   // the finding id, API, op, kernel name...
  Trend trend = Trend::kUnchanged;
  Figure ms_per_step;
  std::string text;  // the whole first line
};

struct SummaryDiff {
  RunFigures base, now;
  // Per-step figures mean nothing when the runs found steps differently or not at all.
  bool comparable = true;
  std::vector<std::string> not_comparable;  // why, one reason each
  bool gpu_comparable = true;               // both runs have a device timeline
  std::vector<std::string> notes;           // caveats that do not stop the comparison
  double noise_ms = 0;                      // per step: smaller changes are within noise
  Figure step_median_ms, step_p90_ms, gpu_busy_pct;
  std::vector<StepPartDelta> step_parts;      // every list: largest |delta| first
  // The critical path (job.critical_path, the median rank's): its measured step, its parts
  // (only when both runs have one; the first changed most), and the step with every fix.
  Figure path_step_ms, all_fixed_step_ms;
  std::vector<StepPartDelta> path_parts;
  std::vector<FindingDelta> findings;
  std::vector<SyncDelta> sync;
  std::vector<CopyDelta> copies;
  std::vector<CollectiveDelta> collectives;
  std::vector<KernelDelta> kernels;
  Figure launches_per_step;
  std::vector<CallSiteDelta> call_sites;
  std::vector<EnvDifference> environment;  // only what differs
  Headline headline;
};

struct DiffOptions {
  // Noise floor, in percent of BASE's median step (at least kMinNoiseMs per step).
  double noise_pct = 3.0;
};
inline constexpr double kMinNoiseMs = 0.05;
// A collective's bus bandwidth "fell" when it is this much lower (percent).
inline constexpr double kBusbwFallPct = 10.0;

SummaryDiff CompareRuns(RunFigures base, RunFigures now, const DiffOptions& options = {});

}  // namespace gpuwatch::collector::compare
