// See verdict.h. The order answers a newcomer's questions in turn: what costs most and what to
// do (the top finding), how busy the GPU was, and what its curve looks like. The curve's reading
// is the usual triage guide's (utilization_shape.h), a guess from the shape alone: given where
// it names the measured cause, else with the measured cause that overrules it.
#include "analyze/verdict.h"

#include "analyze/findings.h"
#include "analyze/utilization_shape.h"
#include "common/format.h"

namespace gpuwatch::collector {
namespace {

// "GPU busy 41% of the time, 38% on compute and copies (NCCL kernels left out)."
std::string BusySentence(const RankList& ranks) {
  uint64_t busy = 0, compute = 0, covered = 0, active_ns = 0, windows = 0;
  double active = 0;
  bool cupti = false, sampled = false;
  for (const auto& r : ranks)
    if (r.cupti()) {
      cupti = true;
      busy += r.gpu.run.busy;
      compute += std::min(r.gpu.run.noncomm_busy, r.gpu.run.busy);
      active += r.ActiveS();
      sampled = sampled || r.gpu.coverage.sampled;
      covered += r.gpu.coverage.sampled ? r.gpu.coverage.covered_ns : r.gpu.active_ns;
      active_ns += r.gpu.active_ns;
      windows += r.gpu.coverage.windows;
    }
  if (!cupti) return "No GPU timeline (CUPTI unavailable).";
  const auto pct = [&](uint64_t ns) { return active > 0 ? 100 * Seconds(ns) / active : 0.0; };
  std::string v = Printf("GPU busy %.0f%% of the time, %.0f%% on compute and copies (NCCL kernels left out)",
                         pct(busy), pct(compute));
  if (sampled && active_ns && covered < active_ns)  // the overhead budget recorded windows of it
    v += Printf(" (GPU timeline sampled over %.1f%% of the run, %llu window%s)", 100.0 * covered / active_ns,
                static_cast<unsigned long long>(windows), windows == 1 ? "" : "s");
  return v + ".";
}

// The utilization curve's shape, as most ranks have it (the first rank's on a tie).
UtilizationShape CommonShape(const RankList& ranks) {
  int shapes[UtilizationShape::kSteadyHigh + 1] = {}, shape = UtilizationShape::kUnknown;
  for (const auto& r : ranks)
    if (r.gpu_shape.kind != UtilizationShape::kUnknown && ++shapes[r.gpu_shape.kind] > shapes[shape])
      shape = r.gpu_shape.kind;
  return UtilizationShape{static_cast<UtilizationShape::Kind>(shape)};
}

// The shape's reading where it agrees with the top loss (`top`: null when no loss is
// significant), else the form with why its usual reading does not hold here.
std::string ShapeSentence(const UtilizationShape& s, const Finding* top) {
  if (s.kind == UtilizationShape::kUnknown) return "";
  const std::string cause = s.cause();
  if (!top) {
    // Nothing measured confirms a cause: a steady high curve is the healthy one.
    if (cause.empty()) return Printf(" Compute curve: %s.", s.form());
    return Printf(" Compute curve: %s, which the guide reads as %s; no measured loss confirms it.", s.form(),
                  cause.c_str());
  }
  if (s.Names(top->id)) return Printf(" Compute curve: %s.", s.reading());
  if (s.Agrees(top->id)) return Printf(" Compute curve: %s, the shape %s makes.", s.form(), top->title.c_str());
  if (cause.empty()) return Printf(" Compute curve: %s; the loss is inside that busy time.", s.form());
  return Printf(" Compute curve: %s, which the guide reads as %s; here the measured cause is %s.", s.form(),
                cause.c_str(), top->title.c_str());
}

}  // namespace

std::string Verdict(const RankList& ranks, const std::vector<Finding>& f) {
  // The biggest measured loss; `environment` (no measured time) is added after it, and a
  // finding that explains it (`input_io`: which kind of data loading it was) gives its cause
  // and fix.
  const Finding *top = nullptr, *env = nullptr, *host = nullptr;
  for (const auto& x : f) {
    if (x.id == "environment")
      env = &x;
    else if (!top && ExplainedFinding(x.id).empty())
      top = &x;
    if (x.id == "cpu_oversubscribed") host = &x;
  }
  const Finding* io = top ? ExplanationOf(f, *top) : nullptr;
  std::string v;
  const bool significant = top && top->severity != "low";
  if (!significant) {
    v = "No significant loss found";
    if (top) v += Printf(" (largest: %s, %.0f%%)", top->title.c_str(), 100 * top->share);
    v += ".";
  } else {
    const Finding& t = *top;
    const bool explained = io != nullptr;
    v = "Biggest loss: " + t.title;
    if (explained) v += " (" + io->title + ")";
    if (t.id == "straggler" && !t.ranks.empty()) v += Printf(" (rank %d)", t.ranks[0]);
    const double steps = JobSteps(ranks);
    if (steps > 0)
      v += Printf(", %s per step (%.0f%%).", FmtDuration(t.time_lost_s / steps).c_str(), 100 * t.share);
    else
      v += Printf(", %s (%.0f%%).", FmtDuration(t.time_lost_s).c_str(), 100 * t.share);
    v += " Fix: " + (explained ? io->fix : t.fix) + ".";
    // What the fix buys, replayed on the step's critical path (what_if.h).
    if (t.what_if.known()) {
      v += Printf(" Fixed, a step would take %s ms instead of %s (%s faster)", FmtStepMs(t.what_if.step_ms).c_str(),
                  FmtStepMs(t.what_if.step_ms * t.what_if.speedup).c_str(), FmtSpeedup(t.what_if.speedup).c_str());
      const std::string then = ThenPacedText(t.what_if.then_paced_by);
      v += then.empty() ? "." : "; " + then + ".";
    }
    // Threads waiting for a core slow every host-side loss: named beside the top one.
    if (host && host != top && host->severity != "low")
      v += Printf(" Behind it: %s (%.0f%%).", host->title.c_str(), 100 * host->share);
  }
  v += " " + BusySentence(ranks);
  v += ShapeSentence(CommonShape(ranks), significant ? top : nullptr);
  if (env && env->severity != "low") v += " Also: " + env->summary + ".";
  return v;
}

}  // namespace gpuwatch::collector
