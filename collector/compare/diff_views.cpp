// See diff_views.h: the tables both views print, the text and the JSON. The page is
// diff_html.cpp.
#include "compare/diff_views.h"

#include <algorithm>
#include <cmath>

#include "common/format.h"

namespace gpuwatch::collector::compare {
namespace {

using nlohmann::json;

std::string Val(const std::optional<double>& v, const char* fmt = "%.2f") {
  return v ? Printf(fmt, *v) : "-";
}
// NEW - BASE, a side without the figure reading 0 (a sync API that appeared).
std::string Change(const Figure& f, const char* fmt = "%+.2f") {
  auto d = f.Delta();
  return d ? Printf(fmt, *d) : "-";
}
std::string Pct(const Figure& f) {
  auto p = f.DeltaPct();
  return p ? Printf("%+.1f%%", *p) : "-";
}
bool Present(const Figure& f) { return f.before.value_or(0) != 0 || f.after.value_or(0) != 0; }
std::string TrendCell(Trend t) { return t == Trend::kUnchanged ? "same" : TrendName(t); }
std::string Arrow(const std::string& a, const std::string& b) {
  return a == b ? a : a + " -> " + b;
}
std::string RunLine(const RunFigures& r) {
  return Printf("job %s, %d rank(s), %llu steps (%s), GPU %s", Clip(r.job_id, 40).c_str(), r.ranks,
                static_cast<unsigned long long>(r.steps), r.steps_source.c_str(), r.gpu_source.c_str());
}

json FigureJson(const Figure& f) {
  json j;
  j["before"] = f.before ? json(*f.before) : json(nullptr);
  j["after"] = f.after ? json(*f.after) : json(nullptr);
  auto d = f.Delta();
  j["delta"] = d && f.before && f.after ? json(*d) : json(nullptr);
  auto p = f.DeltaPct();
  j["delta_pct"] = p ? json(*p) : json(nullptr);
  return j;
}

json RunJson(const RunFigures& r) {
  return {{"path", r.path},          {"job_id", r.job_id},
          {"generated_at", r.generated_at}, {"ranks", r.ranks},
          {"world_size", r.world_size},     {"hosts", r.hosts},
          {"steps", r.steps},               {"steps_source", r.steps_source},
          {"step_median_ms", r.step_median_ms}, {"gpu_source", r.gpu_source}};
}

// Columns to `width`: the first takes what the others leave, numbers right-aligned.
std::string TextTable(const DiffSection& s) {
  std::vector<size_t> w(s.columns.size(), 0);
  for (size_t c = 0; c < s.columns.size(); ++c) w[c] = s.columns[c].size();
  for (const auto& row : s.rows)
    for (size_t c = 1; c < row.size() && c < w.size(); ++c) w[c] = std::max(w[c], row[c].size());
  size_t others = 2;  // indent
  for (size_t c = 1; c < w.size(); ++c) others += w[c] + 2;
  const size_t first = others + 12 < kTextWidth ? kTextWidth - others : 12;
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l = "  ";
    const std::string name = Clip(cells[0], first);
    l += name + std::string(first - std::min(first, name.size()), ' ');
    for (size_t c = 1; c < w.size(); ++c) {
      const std::string v = c < cells.size() ? Clip(cells[c], w[c]) : "";
      l += "  ";
      if (c == 1) l += v + std::string(w[c] - std::min(w[c], v.size()), ' ');  // the trend: left
      else l += std::string(w[c] - std::min(w[c], v.size()), ' ') + v;
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(s.columns);
  for (const auto& row : s.rows) line(row);
  return out;
}

}  // namespace

std::string LargestPathChange(const SummaryDiff& d) {
  // path_parts is ranked by |change|: the first, when beyond noise.
  if (d.path_parts.empty() || !d.path_parts.front().beyond_noise) return {};
  const StepPartDelta& p = d.path_parts.front();
  return p.part + Printf(" %+.2f ms per step", p.ms.Delta().value_or(0));
}

std::vector<DiffSection> DiffSections(const SummaryDiff& d) {
  std::vector<DiffSection> out;
  const std::string noise = Printf("changes under %.2f ms/step are noise", d.noise_ms);
  {
    DiffSection s{"overview", "step time and GPU busy", "", {"", "", "base", "new", "change", "%"}, {}};
    auto trend = [&](const Figure& f) {
      const double x = f.Delta().value_or(0);
      return std::abs(x) >= d.noise_ms && f.before && f.after ? (x > 0 ? "grown" : "shrunk") : "same";
    };
    if (d.comparable) {
      s.rows.push_back({"step time median, ms", trend(d.step_median_ms), Val(d.step_median_ms.before),
                        Val(d.step_median_ms.after), Change(d.step_median_ms), Pct(d.step_median_ms)});
      s.rows.push_back({"step time p90, ms", trend(d.step_p90_ms), Val(d.step_p90_ms.before),
                        Val(d.step_p90_ms.after), Change(d.step_p90_ms), Pct(d.step_p90_ms)});
    }
    if (d.gpu_comparable) {
      const double x = d.gpu_busy_pct.Delta().value_or(0);
      // Up or down, not grown or shrunk: more GPU busy is good news.
      s.rows.push_back({"GPU busy, %", std::abs(x) >= 1 ? (x > 0 ? "up" : "down") : "same",
                        Val(d.gpu_busy_pct.before, "%.1f"), Val(d.gpu_busy_pct.after, "%.1f"),
                        Change(d.gpu_busy_pct, "%+.1f"), "points"});
    }
    if (d.comparable)
      s.rows.push_back({"kernel launches per step", "", Val(d.launches_per_step.before, "%.1f"),
                        Val(d.launches_per_step.after, "%.1f"), Change(d.launches_per_step, "%+.1f"),
                        Pct(d.launches_per_step)});
    if (!s.rows.empty()) out.push_back(s);
  }
  {
    DiffSection s{"findings", "findings, ms per step", noise, {}, {}};
    if (d.comparable) {
      s.columns = {"finding", "", "base", "new", "change", "severity"};
      for (const FindingDelta& f : d.findings)
        s.rows.push_back({f.id, TrendCell(f.trend), Val(f.ms_per_step.before),
                          Val(f.ms_per_step.after), Change(f.ms_per_step),
                          Arrow(f.severity_before.empty() ? "-" : f.severity_before,
                                f.severity_after.empty() ? "-" : f.severity_after)});
    } else {
      s.title = "findings, share of the time";
      s.note = "no time per step: the runs are not comparable";
      s.columns = {"finding", "", "base %", "new %", "severity"};
      for (const FindingDelta& f : d.findings)
        s.rows.push_back({f.id, TrendCell(f.trend),
                          f.severity_before.empty() ? "-" : Val(*f.share.before * 100, "%.1f"),
                          f.severity_after.empty() ? "-" : Val(*f.share.after * 100, "%.1f"),
                          Arrow(f.severity_before.empty() ? "-" : f.severity_before,
                                f.severity_after.empty() ? "-" : f.severity_after)});
    }
    if (s.rows.empty()) s.note = "no finding in either run";
    out.push_back(s);
  }
  if (!d.comparable) {
    // Only what needs no steps.
  } else {
    DiffSection parts{"step_parts", "where the step goes, ms per step (median rank)", "", {"part", "", "base", "new", "change"}, {}};
    for (const StepPartDelta& p : d.step_parts)
      parts.rows.push_back({p.part, TrendCell(p.trend), Val(p.ms.before), Val(p.ms.after), Change(p.ms)});
    if (!parts.rows.empty()) out.push_back(parts);

    // The critical path: what paced the step before and after, and what every fix would buy.
    if (d.path_step_ms.before || d.path_step_ms.after) {
      DiffSection path{"critical_path", "critical path, ms per step (the job's path)", "", {"part", "", "base", "new", "change"}, {}};
      const std::string largest = LargestPathChange(d);
      path.note = !d.path_step_ms.before ? "not known in the base run"
                  : !d.path_step_ms.after ? "not known in the new run"
                  : largest.empty()       ? "no part changed beyond noise"
                                          : "largest change: " + largest;
      path.rows.push_back({"step (measured)", "", Val(d.path_step_ms.before), Val(d.path_step_ms.after),
                           Change(d.path_step_ms)});
      for (const StepPartDelta& p : d.path_parts)
        path.rows.push_back({p.part, TrendCell(p.trend), Val(p.ms.before), Val(p.ms.after), Change(p.ms)});
      if (Present(d.all_fixed_step_ms))
        path.rows.push_back({"step with every fix", "", Val(d.all_fixed_step_ms.before), Val(d.all_fixed_step_ms.after),
                             Change(d.all_fixed_step_ms)});
      out.push_back(path);
    }

    DiffSection sync{"sync", "syncs: host blocked, ms per step", "", {"API", "", "base", "new", "change", "calls/step"}, {}};
    for (const SyncDelta& s : d.sync)
      sync.rows.push_back({s.api, TrendCell(s.trend), Val(s.blocked_ms_per_step.before),
                           Val(s.blocked_ms_per_step.after), Change(s.blocked_ms_per_step),
                           Arrow(Val(s.calls_per_step.before, "%.1f"), Val(s.calls_per_step.after, "%.1f"))});
    if (!sync.rows.empty()) out.push_back(sync);

    DiffSection copies{"copies", "copies: host time, ms per step", "", {"copy", "", "base", "new", "change", "pageable", "MB/step"}, {}};
    for (const CopyDelta& c : d.copies) {
      if (!Present(c.calls_per_step)) continue;
      std::string name = c.direction;
      if (c.became_pageable) name += " (became pageable)";
      copies.rows.push_back({name, TrendCell(c.trend), Val(c.host_ms_per_step.before),
                             Val(c.host_ms_per_step.after), Change(c.host_ms_per_step),
                             Arrow(Val(c.pageable_share.before ? *c.pageable_share.before * 100 : std::optional<double>(), "%.0f%%"),
                                   Val(c.pageable_share.after ? *c.pageable_share.after * 100 : std::optional<double>(), "%.0f%%")),
                             Arrow(Val(c.mb_per_step.before, "%.1f"), Val(c.mb_per_step.after, "%.1f"))});
    }
    if (!copies.rows.empty()) out.push_back(copies);

    DiffSection coll{"collectives", "collectives: GPU time, ms per step", "", {"op", "", "base", "new", "change", "busbw GB/s"}, {}};
    for (const CollectiveDelta& c : d.collectives)
      coll.rows.push_back({c.op + (c.busbw_fell ? " (busbw fell)" : ""), TrendCell(c.trend),
                           Val(c.gpu_ms_per_step.before), Val(c.gpu_ms_per_step.after), Change(c.gpu_ms_per_step),
                           Arrow(Val(c.busbw_gbps.before, "%.1f"), Val(c.busbw_gbps.after, "%.1f"))});
    if (!coll.rows.empty()) out.push_back(coll);

    DiffSection k{"kernels", "kernels: GPU time, ms per step (top by GPU time)", "", {"kernel", "", "base", "new", "change", "count/step"}, {}};
    for (const KernelDelta& x : d.kernels) {
      if (k.rows.size() >= 10) break;
      k.rows.push_back({x.name, TrendCell(x.trend), Val(x.gpu_ms_per_step.before), Val(x.gpu_ms_per_step.after),
                        Change(x.gpu_ms_per_step),
                        Arrow(Val(x.count_per_step.before, "%.1f"), Val(x.count_per_step.after, "%.1f"))});
    }
    if (!k.rows.empty()) out.push_back(k);

    DiffSection sites{"call_sites", "where sync stalls were called from: blocked, ms per step", "", {"call site", "", "base", "new", "change", "calls/step"}, {}};
    for (const CallSiteDelta& c : d.call_sites)
      sites.rows.push_back({c.site, TrendCell(c.trend), Val(c.blocked_ms_per_step.before),
                            Val(c.blocked_ms_per_step.after), Change(c.blocked_ms_per_step),
                            Arrow(Val(c.calls_per_step.before, "%.1f"), Val(c.calls_per_step.after, "%.1f"))});
    if (!sites.rows.empty()) out.push_back(sites);
  }
  DiffSection env{"environment", "environment", "", {"what", "", "base", "new"}, {}};
  for (const EnvDifference& e : d.environment) env.rows.push_back({e.what, "changed", e.before, e.after});
  if (env.rows.empty()) env.note = "the same versions, settings, world size and devices";
  out.push_back(env);
  return out;
}

std::string DiffText(const SummaryDiff& d, const std::vector<RuleResult>& gate) {
  std::string out = Clip(d.headline.text, 4096) + "\n";
  out += "base: " + Clip(d.base.path, 70) + "\n      " + RunLine(d.base) + "\n";
  out += "new:  " + Clip(d.now.path, 70) + "\n      " + RunLine(d.now) + "\n";
  for (const std::string& n : d.notes) out += "note: " + Clip(n, kTextWidth - 6) + "\n";
  for (const DiffSection& s : DiffSections(d)) {
    if (s.rows.empty()) {
      out += "\n" + s.title + ": " + s.note + "\n";
      continue;
    }
    out += "\n" + s.title + (s.note.empty() ? "" : " (" + s.note + ")") + ":\n" + TextTable(s);
  }
  if (!gate.empty()) {
    out += "\ngate:\n";
    for (const RuleResult& r : gate) out += "  " + Clip(r.message, 4096) + "\n";
  }
  return out;
}

json DiffJson(const SummaryDiff& d, const std::vector<RuleResult>& gate) {
  json j;
  j["schema"] = kDiffSchema;
  j["base"] = RunJson(d.base);
  j["new"] = RunJson(d.now);
  j["comparable"] = d.comparable;
  j["not_comparable"] = d.not_comparable;
  j["gpu_comparable"] = d.gpu_comparable;
  j["notes"] = d.notes;
  j["noise_ms_per_step"] = d.noise_ms;
  j["headline"] = {{"text", d.headline.text},
                   {"kind", d.headline.kind},
                   {"key", d.headline.key},
                   {"trend", TrendName(d.headline.trend)},
                   {"ms_per_step", FigureJson(d.headline.ms_per_step)}};
  j["step_time"] = {{"median_ms", FigureJson(d.step_median_ms)}, {"p90_ms", FigureJson(d.step_p90_ms)}};
  j["gpu_busy_pct"] = FigureJson(d.gpu_busy_pct);
  j["launches_per_step"] = FigureJson(d.launches_per_step);
  json parts = json::array();
  for (const StepPartDelta& p : d.step_parts)
    parts.push_back({{"part", p.part}, {"trend", TrendName(p.trend)}, {"beyond_noise", p.beyond_noise},
                     {"ms", FigureJson(p.ms)}});
  j["step_parts_ms"] = parts;
  json path_parts = json::array();
  for (const StepPartDelta& p : d.path_parts)
    path_parts.push_back({{"part", p.part}, {"trend", TrendName(p.trend)}, {"beyond_noise", p.beyond_noise},
                          {"ms", FigureJson(p.ms)}});
  const bool largest = !d.path_parts.empty() && d.path_parts.front().beyond_noise;
  j["critical_path"] = {{"step_ms", FigureJson(d.path_step_ms)},
                        {"parts_ms", path_parts},
                        {"largest_change", largest ? json(d.path_parts.front().part) : json(nullptr)},
                        {"what_if_all_step_ms", FigureJson(d.all_fixed_step_ms)}};
  json findings = json::array();
  for (const FindingDelta& f : d.findings)
    findings.push_back({{"id", f.id},
                        {"title", f.title},
                        {"trend", TrendName(f.trend)},
                        {"beyond_noise", f.beyond_noise},
                        {"severity_before", f.severity_before.empty() ? json(nullptr) : json(f.severity_before)},
                        {"severity_after", f.severity_after.empty() ? json(nullptr) : json(f.severity_after)},
                        {"ms_per_step", FigureJson(f.ms_per_step)},
                        {"share", FigureJson(f.share)},
                        {"ranks", f.ranks_after},
                        {"fix", f.fix}});
  j["findings"] = findings;
  json sync = json::array();
  for (const SyncDelta& s : d.sync)
    sync.push_back({{"api", s.api}, {"trend", TrendName(s.trend)}, {"beyond_noise", s.beyond_noise},
                    {"calls_per_step", FigureJson(s.calls_per_step)},
                    {"blocked_ms_per_step", FigureJson(s.blocked_ms_per_step)}});
  j["sync"] = sync;
  json copies = json::array();
  for (const CopyDelta& c : d.copies)
    copies.push_back({{"direction", c.direction}, {"trend", TrendName(c.trend)},
                      {"beyond_noise", c.beyond_noise}, {"became_pageable", c.became_pageable},
                      {"calls_per_step", FigureJson(c.calls_per_step)},
                      {"mb_per_step", FigureJson(c.mb_per_step)},
                      {"host_ms_per_step", FigureJson(c.host_ms_per_step)},
                      {"pageable_per_step", FigureJson(c.pageable_per_step)},
                      {"blocking_per_step", FigureJson(c.blocking_per_step)},
                      {"pageable_share", FigureJson(c.pageable_share)},
                      {"device_gbps", FigureJson(c.device_gbps)}});
  j["copies"] = copies;
  json coll = json::array();
  for (const CollectiveDelta& c : d.collectives)
    coll.push_back({{"op", c.op}, {"trend", TrendName(c.trend)}, {"beyond_noise", c.beyond_noise},
                    {"busbw_fell", c.busbw_fell}, {"calls_per_step", FigureJson(c.calls_per_step)},
                    {"gpu_ms_per_step", FigureJson(c.gpu_ms_per_step)},
                    {"busbw_gbps", FigureJson(c.busbw_gbps)}});
  j["collectives"] = coll;
  json kernels = json::array();
  for (const KernelDelta& k : d.kernels)
    kernels.push_back({{"name", k.name}, {"trend", TrendName(k.trend)}, {"beyond_noise", k.beyond_noise},
                       {"gpu_ms_per_step", FigureJson(k.gpu_ms_per_step)},
                       {"count_per_step", FigureJson(k.count_per_step)}});
  j["kernels"] = kernels;
  json sites = json::array();
  for (const CallSiteDelta& c : d.call_sites)
    sites.push_back({{"site", c.site}, {"python", c.python.empty() ? json(nullptr) : json(c.python)},
                     {"frames", c.frames}, {"trend", TrendName(c.trend)}, {"beyond_noise", c.beyond_noise},
                     {"blocked_ms_per_step", FigureJson(c.blocked_ms_per_step)},
                     {"calls_per_step", FigureJson(c.calls_per_step)}});
  j["call_sites"] = sites;
  json env = json::array();
  for (const EnvDifference& e : d.environment)
    env.push_back({{"what", e.what}, {"before", e.before}, {"after", e.after}});
  j["environment"] = env;
  json g = json::array();
  for (const RuleResult& r : gate)
    g.push_back({{"rule", r.rule}, {"tripped", r.tripped}, {"checked", r.checked}, {"message", r.message}});
  j["gate"] = g;
  return j;
}

}  // namespace gpuwatch::collector::compare
