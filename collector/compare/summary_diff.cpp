// See summary_diff.h. Every list is the union of both runs' keys, each entry classified
// once (new, gone, grown, shrunk, unchanged) against the noise floor, then ranked by the
// size of its change per step.
#include "compare/summary_diff.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/explains.h"
#include "common/format.h"

namespace gpuwatch::collector::compare {
namespace {

template <class Map>
std::set<std::string> Keys(const Map& a, const Map& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  return keys;
}

// The figure `get` reads from each side's entry `key` (absent where the side has none).
template <class Map, class Get>
Figure FigureOf(const Map& a, const Map& b, const std::string& key, Get get) {
  Figure f;
  if (auto it = a.find(key); it != a.end()) f.before = get(it->second);
  if (auto it = b.find(key); it != b.end()) f.after = get(it->second);
  return f;
}

bool Present(const std::optional<double>& v) { return v && *v != 0; }

// new/gone by presence of the figure; else grown/shrunk when the change reaches the noise
// floor.
Trend TrendOf(const Figure& f, double noise, bool* beyond) {
  const double d = f.Delta().value_or(0);
  *beyond = std::abs(d) >= noise && std::abs(d) > 0;
  if (!Present(f.before) && Present(f.after)) return Trend::kNew;
  if (Present(f.before) && !Present(f.after)) return Trend::kGone;
  if (!*beyond) return Trend::kUnchanged;
  return d > 0 ? Trend::kGrown : Trend::kShrunk;
}

template <class T, class Key>
void RankByChange(std::vector<T>& v, Key key) {
  std::stable_sort(v.begin(), v.end(), [&](const T& a, const T& b) {
    const double da = std::abs(key(a).Delta().value_or(0)), db = std::abs(key(b).Delta().value_or(0));
    return da > db;
  });
}

std::string Ms(double v) { return Printf("%.2f", v); }

// "sync_stall new, 8.86 ms/step" / "... grown, 4.70 -> 9.10 ms/step (+4.40)".
std::string ChangeText(const std::string& what, Trend trend, const Figure& f, const char* unit) {
  const double b = f.before.value_or(0), a = f.after.value_or(0);
  switch (trend) {
    case Trend::kNew:
      return what + " new, " + Ms(a) + " " + unit;
    case Trend::kGone:
      return what + " gone, was " + Ms(b) + " " + unit;
    default:
      return what + " " + TrendName(trend) + ", " + Ms(b) + " -> " + Ms(a) + " " + unit + " (" +
             Printf("%+.2f", a - b) + ")";
  }
}

std::string StepTimeText(const SummaryDiff& d) {
  const Figure& m = d.step_median_ms;
  std::string t = "step time " + Ms(m.before.value_or(0)) + " -> " + Ms(m.after.value_or(0)) + " ms";
  if (auto pct = m.DeltaPct()) t += Printf(" (%+.1f%%)", *pct);
  return t;
}

void ChooseHeadline(SummaryDiff& d) {
  Headline& h = d.headline;
  if (!d.comparable) {
    h.kind = "not_comparable";
    std::string why;
    for (const std::string& r : d.not_comparable) why += (why.empty() ? "" : "; ") + r;
    h.text = "gpuwatch diff: not comparable: " + why;
    if (d.gpu_busy_pct.before && d.gpu_busy_pct.after)
      h.text += Printf("; GPU busy %.0f%% -> %.0f%%", *d.gpu_busy_pct.before, *d.gpu_busy_pct.after);
    return;
  }
  const std::string lead = "gpuwatch diff: " + StepTimeText(d) + "; ";
  // Findings are the causes: the first one beyond noise, unless it only explains another
  // (input_io is data_loading's time) or has no measured time (environment).
  for (const FindingDelta& f : d.findings) {
    if (!f.beyond_noise || !ExplainedFinding(f.id).empty() || f.id == "environment") continue;
    h.kind = "finding";
    h.key = f.id;
    h.trend = f.trend;
    h.ms_per_step = f.ms_per_step;
    h.text = lead + "biggest change: " + ChangeText(f.id, f.trend, f.ms_per_step, "ms/step") +
             " (" + f.title + ")";
    return;
  }
  // No finding moved: the largest other change.
  struct Candidate {
    std::string kind, key, what;
    Trend trend;
    Figure f;
    const char* unit;
  };
  std::vector<Candidate> c;
  for (const StepPartDelta& p : d.step_parts)
    if (p.beyond_noise) c.push_back({"step_part", p.part, p.part, p.trend, p.ms, "ms/step"});
  for (const SyncDelta& s : d.sync)
    if (s.beyond_noise)
      c.push_back({"sync", s.api, "sync " + s.api, s.trend, s.blocked_ms_per_step, "ms/step blocked"});
  for (const CopyDelta& x : d.copies)
    if (x.beyond_noise)
      c.push_back({"copy", x.direction, "copies " + x.direction, x.trend, x.host_ms_per_step,
                   "ms/step of host time"});
  for (const CollectiveDelta& x : d.collectives)
    if (x.beyond_noise)
      c.push_back({"collective", x.op, x.op, x.trend, x.gpu_ms_per_step, "ms/step of GPU time"});
  for (const KernelDelta& k : d.kernels)
    if (k.beyond_noise)
      c.push_back({"kernel", k.name, "kernel " + Clip(k.name, 40), k.trend, k.gpu_ms_per_step,
                   "ms/step of GPU time"});
  RankByChange(c, [](const Candidate& x) -> const Figure& { return x.f; });
  if (c.empty()) {
    h.kind = "none";
    h.text = lead + "no change beyond noise (" + Ms(d.noise_ms) + " ms/step)";
    return;
  }
  h.kind = c[0].kind;
  h.key = c[0].key;
  h.trend = c[0].trend;
  h.ms_per_step = c[0].f;
  h.text = lead + "biggest change: " + ChangeText(c[0].what, c[0].trend, c[0].f, c[0].unit);
}

void CompareEnvironment(SummaryDiff& d) {
  for (const std::string& k : Keys(d.base.environment, d.now.environment)) {
    auto b = d.base.environment.find(k), a = d.now.environment.find(k);
    const std::string before = b == d.base.environment.end() ? "unset" : b->second;
    const std::string after = a == d.now.environment.end() ? "unset" : a->second;
    if (before != after) d.environment.push_back({k, before, after});
  }
}

}  // namespace

std::optional<double> Figure::Delta() const {
  if (!before && !after) return std::nullopt;
  return after.value_or(0) - before.value_or(0);
}

std::optional<double> Figure::DeltaPct() const {
  if (!before || *before == 0 || !after) return std::nullopt;
  return (*after - *before) / *before * 100;
}

const char* TrendName(Trend t) {
  switch (t) {
    case Trend::kNew: return "new";
    case Trend::kGone: return "gone";
    case Trend::kGrown: return "grown";
    case Trend::kShrunk: return "shrunk";
    case Trend::kUnchanged: break;
  }
  return "unchanged";
}

SummaryDiff CompareRuns(RunFigures base, RunFigures now, const DiffOptions& options) {
  SummaryDiff d;
  d.base = std::move(base);
  d.now = std::move(now);
  const RunFigures& b = d.base;
  const RunFigures& n = d.now;

  // Can per-step figures be compared at all?
  for (const auto& [run, name] : {std::pair{&b, "BASE"}, std::pair{&n, "NEW"}}) {
    if (run->steps == 0 || run->steps_source == "none")
      d.not_comparable.push_back(std::string(name) + " has no steps (steps.source " +
                                 run->steps_source + ", count " + std::to_string(run->steps) + ")");
    else if (run->steps_source == "mixed")
      d.not_comparable.push_back(std::string(name) + "'s ranks found their steps in different ways "
                                                     "(steps.source mixed)");
  }
  if (d.not_comparable.empty() && b.steps_source != n.steps_source)
    d.not_comparable.push_back("steps come from " + b.steps_source + " in BASE and " +
                               n.steps_source + " in NEW");
  d.comparable = d.not_comparable.empty();
  d.gpu_comparable = b.gpu_busy.has_value() && n.gpu_busy.has_value();
  if (!d.gpu_comparable)
    d.notes.push_back("GPU figures need a device timeline in both runs (gpu.source: BASE " +
                      b.gpu_source + ", NEW " + n.gpu_source + ")");
  if (d.comparable && b.steps != n.steps)
    d.notes.push_back(Printf("BASE has %llu steps, NEW %llu: compared per step",
                             static_cast<unsigned long long>(b.steps),
                             static_cast<unsigned long long>(n.steps)));
  if (b.ranks != n.ranks || b.world_size != n.world_size)
    d.notes.push_back(Printf("BASE has %d rank(s), NEW %d: compared per rank (the median rank)",
                             b.ranks, n.ranks));
  for (const auto& [run, name] : {std::pair{&b, "BASE"}, std::pair{&n, "NEW"}})
    if (!run->abnormal_ranks.empty()) {
      std::string list;
      for (int r : run->abnormal_ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
      d.notes.push_back(std::string(name) + ": rank(s) " + list + " ended abnormally");
    }

  d.noise_ms = std::max(kMinNoiseMs, options.noise_pct / 100 * b.step_median_ms);
  if (d.gpu_comparable) d.gpu_busy_pct = {*b.gpu_busy * 100, *n.gpu_busy * 100};
  CompareEnvironment(d);

  // Findings: presence, severity and share compare whatever the steps; time per step only
  // when the steps compare.
  // Keep the order the runs gave (NEW first), for ties.
  std::vector<std::string> order;
  for (const auto* run : {&n, &b})
    for (const FindingFigures& f : run->findings)
      if (std::find(order.begin(), order.end(), f.id) == order.end()) order.push_back(f.id);
  for (const std::string& id : order) {
    FindingDelta fd;
    fd.id = id;
    const FindingFigures* fb = nullptr;
    const FindingFigures* fn = nullptr;
    for (const FindingFigures& f : b.findings)
      if (f.id == id) fb = &f;
    for (const FindingFigures& f : n.findings)
      if (f.id == id) fn = &f;
    const FindingFigures& any = fn ? *fn : *fb;
    fd.title = any.title;
    fd.fix = any.fix;
    if (fn) fd.ranks_after = fn->ranks;
    fd.severity_before = fb ? fb->severity : "";
    fd.severity_after = fn ? fn->severity : "";
    // A finding that is absent lost nothing (it was under 1% of the time).
    fd.share = {fb ? fb->share : 0.0, fn ? fn->share : 0.0};
    if (d.comparable) fd.ms_per_step = {fb ? fb->ms_per_step : 0.0, fn ? fn->ms_per_step : 0.0};
    bool beyond = false;
    TrendOf(fd.ms_per_step, d.noise_ms, &beyond);
    fd.beyond_noise = d.comparable && beyond;
    if (!fb) fd.trend = Trend::kNew;
    else if (!fn) fd.trend = Trend::kGone;
    else if (fd.beyond_noise) fd.trend = *fd.ms_per_step.Delta() > 0 ? Trend::kGrown : Trend::kShrunk;
    d.findings.push_back(std::move(fd));
  }
  RankByChange(d.findings, [](const FindingDelta& f) -> const Figure& { return f.ms_per_step; });

  if (d.comparable) {
    d.step_median_ms = {b.step_median_ms, n.step_median_ms};
    d.step_p90_ms = {b.step_p90_ms, n.step_p90_ms};
    for (const std::string& part : Keys(b.step_parts, n.step_parts)) {
      StepPartDelta p;
      p.part = part;
      p.ms = FigureOf(b.step_parts, n.step_parts, part, [](double v) { return v; });
      p.trend = TrendOf(p.ms, d.noise_ms, &p.beyond_noise);
      // Every step has every part: it grows or shrinks, it does not come or go.
      if (p.trend == Trend::kNew || p.trend == Trend::kGone)
        p.trend = !p.beyond_noise ? Trend::kUnchanged : p.trend == Trend::kNew ? Trend::kGrown : Trend::kShrunk;
      d.step_parts.push_back(p);
    }
    RankByChange(d.step_parts, [](const StepPartDelta& p) -> const Figure& { return p.ms; });

    d.path_step_ms = {b.path_step_ms, n.path_step_ms};
    d.all_fixed_step_ms = {b.all_fixed_step_ms, n.all_fixed_step_ms};
    // A part missing on one side is not a part that came or went: that run's path is not known.
    if (b.path_step_ms && n.path_step_ms) {
      for (const std::string& part : Keys(b.path_parts, n.path_parts)) {
        StepPartDelta p;
        p.part = part;
        p.ms = FigureOf(b.path_parts, n.path_parts, part, [](double v) { return v; });
        p.trend = TrendOf(p.ms, d.noise_ms, &p.beyond_noise);
        d.path_parts.push_back(p);
      }
      RankByChange(d.path_parts, [](const StepPartDelta& p) -> const Figure& { return p.ms; });
    }

    for (const std::string& api : Keys(b.sync, n.sync)) {
      SyncDelta s;
      s.api = api;
      s.calls_per_step = FigureOf(b.sync, n.sync, api, [](const SyncFigures& x) { return x.calls_per_step; });
      s.blocked_ms_per_step =
          FigureOf(b.sync, n.sync, api, [](const SyncFigures& x) { return x.blocked_ms_per_step; });
      s.trend = TrendOf(s.blocked_ms_per_step, d.noise_ms, &s.beyond_noise);
      if (s.trend == Trend::kUnchanged && Present(s.calls_per_step.after) && !Present(s.calls_per_step.before))
        s.trend = Trend::kNew;
      d.sync.push_back(s);
    }
    RankByChange(d.sync, [](const SyncDelta& s) -> const Figure& { return s.blocked_ms_per_step; });

    for (const std::string& dir : Keys(b.copies, n.copies)) {
      CopyDelta c;
      c.direction = dir;
      auto fig = [&](auto get) { return FigureOf(b.copies, n.copies, dir, get); };
      c.calls_per_step = fig([](const CopyFigures& x) { return x.calls_per_step; });
      c.mb_per_step = fig([](const CopyFigures& x) { return x.mb_per_step; });
      c.host_ms_per_step = fig([](const CopyFigures& x) { return x.host_ms_per_step; });
      c.pageable_per_step = fig([](const CopyFigures& x) { return x.pageable_per_step; });
      c.blocking_per_step = fig([](const CopyFigures& x) { return x.blocking_per_step; });
      c.pageable_share = fig([](const CopyFigures& x) { return x.pageable_share; });
      auto ib = b.copies.find(dir), in = n.copies.find(dir);
      if (ib != b.copies.end()) c.device_gbps.before = ib->second.device_gbps;
      if (in != n.copies.end()) c.device_gbps.after = in->second.device_gbps;
      c.trend = TrendOf(c.host_ms_per_step, d.noise_ms, &c.beyond_noise);
      if (!Present(c.calls_per_step.before) && Present(c.calls_per_step.after)) c.trend = Trend::kNew;
      if (Present(c.calls_per_step.before) && !Present(c.calls_per_step.after)) c.trend = Trend::kGone;
      // A tenth more of the bytes pageable, or pageable copies where there were none.
      c.became_pageable = c.pageable_share.after.value_or(0) >= c.pageable_share.before.value_or(0) + 0.1 ||
                          (!Present(c.pageable_per_step.before) && Present(c.pageable_per_step.after));
      d.copies.push_back(c);
    }
    RankByChange(d.copies, [](const CopyDelta& c) -> const Figure& { return c.host_ms_per_step; });

    for (const std::string& op : Keys(b.collectives, n.collectives)) {
      CollectiveDelta c;
      c.op = op;
      auto fig = [&](auto get) { return FigureOf(b.collectives, n.collectives, op, get); };
      c.calls_per_step = fig([](const CollectiveFigures& x) { return x.calls_per_step; });
      c.gpu_ms_per_step = fig([](const CollectiveFigures& x) { return x.gpu_ms_per_step; });
      c.busbw_gbps = fig([](const CollectiveFigures& x) { return x.busbw_gbps; });
      c.trend = TrendOf(c.gpu_ms_per_step, d.noise_ms, &c.beyond_noise);
      if (!Present(c.calls_per_step.before) && Present(c.calls_per_step.after)) c.trend = Trend::kNew;
      if (Present(c.calls_per_step.before) && !Present(c.calls_per_step.after)) c.trend = Trend::kGone;
      const double bb = c.busbw_gbps.before.value_or(0), ba = c.busbw_gbps.after.value_or(0);
      c.busbw_fell = bb > 0 && ba > 0 && ba < bb * (1 - kBusbwFallPct / 100);
      d.collectives.push_back(c);
    }
    RankByChange(d.collectives, [](const CollectiveDelta& c) -> const Figure& { return c.gpu_ms_per_step; });

    if (d.gpu_comparable) {
      for (const std::string& name : Keys(b.kernels, n.kernels)) {
        KernelDelta k;
        k.name = name;
        k.gpu_ms_per_step = FigureOf(b.kernels, n.kernels, name, [](const KernelFigures& x) { return x.gpu_ms_per_step; });
        k.count_per_step = FigureOf(b.kernels, n.kernels, name, [](const KernelFigures& x) { return x.count_per_step; });
        k.trend = TrendOf(k.gpu_ms_per_step, d.noise_ms, &k.beyond_noise);
        // Off a full top-10 list is not gone (or new): it is below the list's last.
        if ((k.trend == Trend::kNew && b.kernels_cut) || (k.trend == Trend::kGone && n.kernels_cut)) {
          k.trend = Trend::kUnchanged;
          k.beyond_noise = false;
        }
        d.kernels.push_back(k);
      }
      RankByChange(d.kernels, [](const KernelDelta& k) -> const Figure& { return k.gpu_ms_per_step; });
    }
    d.launches_per_step = {b.launches_per_step, n.launches_per_step};

    for (const std::string& site : Keys(b.call_sites, n.call_sites)) {
      CallSiteDelta c;
      c.site = site;
      const auto& src = n.call_sites.count(site) ? n.call_sites.at(site) : b.call_sites.at(site);
      c.python = src.python;
      c.frames = src.frames;
      c.blocked_ms_per_step = FigureOf(b.call_sites, n.call_sites, site,
                                       [](const CallSiteFigures& x) { return x.blocked_ms_per_step; });
      c.calls_per_step =
          FigureOf(b.call_sites, n.call_sites, site, [](const CallSiteFigures& x) { return x.calls_per_step; });
      c.trend = TrendOf(c.blocked_ms_per_step, d.noise_ms, &c.beyond_noise);
      d.call_sites.push_back(c);
    }
    RankByChange(d.call_sites, [](const CallSiteDelta& c) -> const Figure& { return c.blocked_ms_per_step; });
  }
  ChooseHeadline(d);
  return d;
}

}  // namespace gpuwatch::collector::compare
