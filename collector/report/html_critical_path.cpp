// See html_critical_path.h. Lookups go through common/json_read.h: an older summary (no
// critical_path) renders a note, never throws.
#include "report/html_critical_path.h"

#include <algorithm>

#include "analyze/critical_path.h"
#include "common/format.h"
#include "common/json_read.h"
#include "report/critical_path_text.h"
#include "report/html_report.h"

namespace gpuwatch::collector {
namespace {

using html::Attr;
using html::Esc;
using json_read::Arr;
using json_read::Get;
using json_read::Num;
using json_read::Str;
using nlohmann::json;

// One finding's (or every fix's) prediction, as summary.txt says it, with its assumption.
struct Prediction {
  std::string id, title, assumes, then;
  double step_ms = 0, speedup = 0;
};

std::string PredictionHtml(const Prediction& p) {
  std::string s = Printf("fix %s: %s \xe2\x86\x92 %s ms a step, %s faster", p.title.c_str(),
                         FmtStepMs(p.step_ms * p.speedup).c_str(), FmtStepMs(p.step_ms).c_str(),
                         FmtSpeedup(p.speedup).c_str());
  if (const std::string then = ThenPacedText(PathPartIndex(p.then)); !then.empty()) s += "; " + then;
  return "<li" + Attr("data-what-if", p.id) + Attr("data-value", Printf("%.9g", p.step_ms)) + ">" + Esc(s) +
         (p.assumes.empty() ? "" : "<br><span class=\"note\">Assumes: " + Esc(p.assumes) + "</span>") + "</li>\n";
}

// The job's bar per part: a row per part, its ms per step, its share, a bar.
void PartsTable(const json& cp, std::string& out) {
  const json& parts = Get(cp, "parts");
  const double path = Num(cp, "path_ms");
  double max = 0;
  for (const auto& p : html::PathParts()) max = std::max(max, Num(parts, p.key.c_str()));
  std::vector<const html::StackPart*> order;
  for (const auto& p : html::PathParts()) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [&parts](const html::StackPart* a, const html::StackPart* b) {
    return Num(parts, a->key.c_str()) > Num(parts, b->key.c_str());
  });
  out += "<table><tr><th>on the path (job)</th><th class=\"n\">ms per step</th><th class=\"n\">share</th>"
         "<th style=\"width:30%\"></th></tr>\n";
  for (const html::StackPart* p : order) {
    const double v = Num(parts, p->key.c_str());
    out += "<tr><td>" + Esc(p->label) + "</td><td class=\"n\"" + Attr("data-path-part", p->key) +
           Attr("data-value", Printf("%.9g", v)) + ">" + Esc(FmtStepMs(v)) + "</td><td class=\"n\">" +
           (path > 0 ? Printf("%.1f%%", 100 * v / path) : "-") + "</td><td><div class=\"bar\"" +
           Attr("style", Printf("width:%.1f%%;background:%s", max > 0 ? 100 * v / max : 0, p->color.c_str())) +
           "></div></td></tr>\n";
  }
  out += "</table>\n";
}

}  // namespace

namespace html {
const std::vector<StackPart>& PathParts() {
  static const std::vector<StackPart> kParts = [] {
    static const char* const kColors[kPathParts] = {"#e15759", "#ff9da7", "#b07aa1", "#4e79a7",
                                                    "#59a14f", "#f28e2b", "#bab0ac"};
    std::vector<StackPart> v;
    for (int p = 0; p < kPathParts; ++p) v.push_back({std::string(PathPartKey(p)) + "_ms", PathPartWords(p), kColors[p]});
    return v;
  }();
  return kParts;
}
}  // namespace html

int PathPartIndex(const std::string& key) {
  for (int p = 0; p < kPathParts; ++p)
    if (key == PathPartKey(p)) return p;
  return -1;
}

void CriticalPathSection(const json& s, std::string& out) {
  out += "<section id=\"critical-path\"><h2>What paces a step, and what each fix buys</h2>\n";
  const json& job = Get(s, "job");
  const json& cp = Get(job, "critical_path");
  if (!cp.is_object()) {
    out += "<p class=\"note\">No critical path: no step was recorded whole on the device timeline.</p></section>\n";
    return;
  }
  // The ranks' graphs joined at their collectives (`ranks`: those the path went through), else
  // the median rank's path.
  std::string whose = "the median rank's";
  if (const json& through = Get(cp, "ranks"); through.is_array() && !through.empty()) {
    whose = "the ranks replayed together, joined at their collectives, through rank";
    for (size_t k = 0; k < through.size() && k < 4; ++k)
      whose += Printf("%s%d", k ? ", " : " ", static_cast<int>(json_read::Int(through[k], "rank")));
  }
  out += "<p class=\"note\">" +
         Esc(Printf("The step's critical path: the longest chain of host work, launches, GPU work, copies, "
                    "communication and waits that the step had to run one after another (%s, "
                    "over %.0f steps: %s ms measured, %s ms replayed). Milliseconds per step on that path.",
                    whose.c_str(), Num(cp, "steps"), FmtStepMs(Num(cp, "step_ms")).c_str(), FmtStepMs(Num(cp, "path_ms")).c_str())) +
         "</p>\n";
  PartsTable(cp, out);
  // One stacked bar per rank: the same parts, the measured step ticked.
  std::vector<html::StackRow> rows;
  size_t with_path = 0;
  for (const json& r : Arr(s, "ranks")) {
    const json& rc = Get(r, "critical_path");
    if (!rc.is_object()) continue;
    ++with_path;
    if (rows.size() >= kHtmlMaxChartRanks) continue;
    html::StackRow row;
    row.rank = json_read::Int(r, "rank");
    row.label = RankLabel(r);
    for (const auto& p : html::PathParts()) row.values.push_back(Num(Get(rc, "parts"), p.key.c_str()));
    row.marker = Num(rc, "step_ms", -1);
    rows.push_back(std::move(row));
  }
  if (!rows.empty())
    out += html::LegendHtml(html::PathParts()) + html::StackedBarsSvg(html::PathParts(), rows, "ms", "measured", "path",
                                                                    "What paces each rank's step: its critical path") +
           "\n" + (with_path > rows.size() ? Printf("<p class=\"note\">%zu more ranks not drawn.</p>\n", with_path - rows.size())
                                            : std::string());
  // The what-if list: each finding's fix alone, fastest predicted step first.
  std::vector<Prediction> list;
  for (const json& f : Arr(job, "findings")) {
    const json& w = Get(f, "what_if");
    if (!w.is_object() || Num(w, "step_ms") <= 0) continue;
    list.push_back({Str(f, "id"), Str(f, "title", Str(f, "id")), Str(w, "assumes"), Str(w, "then_paced_by"),
                    Num(w, "step_ms"), Num(w, "speedup")});
  }
  std::stable_sort(list.begin(), list.end(), [](const Prediction& a, const Prediction& b) { return a.step_ms < b.step_ms; });
  if (!list.empty()) {
    out += "<h3>If one cause were fixed</h3>\n<ol class=\"what-if\">\n";
    for (const Prediction& p : list) out += PredictionHtml(p);
    out += "</ol>\n";
  }
  const json& all = Get(job, "what_if_all");
  if (all.is_object() && Num(all, "step_ms") > 0) {
    std::string s2 = Printf("With every fix: %s \xe2\x86\x92 %s ms a step (%s faster)",
                            FmtStepMs(Num(all, "step_ms") * Num(all, "speedup")).c_str(),
                            FmtStepMs(Num(all, "step_ms")).c_str(), FmtSpeedup(Num(all, "speedup")).c_str());
    if (const std::string then = ThenPacedText(PathPartIndex(Str(all, "then_paced_by"))); !then.empty()) s2 += "; " + then;
    out += "<p" + Attr("data-what-if", "all") + Attr("data-value", Printf("%.9g", Num(all, "step_ms"))) + ">" + Esc(s2) +
           (Str(all, "assumes").empty() ? "" : "<br><span class=\"note\">Assumes: " + Esc(Str(all, "assumes")) + "</span>") +
           "</p>\n";
  }
  out += "</section>\n";
}

}  // namespace gpuwatch::collector
