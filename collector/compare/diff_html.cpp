// The diff as a page, in report.html's look (its CSS, its stacked-bar chart): one
// self-contained file, no script, nothing fetched; every string from a run is escaped.
#include <string>

#include "common/format.h"
#include "compare/diff_views.h"
#include "report/html_critical_path.h"
#include "report/html_page.h"
#include "report/svg_chart.h"

namespace gpuwatch::collector::compare {
namespace {

using html::Attr;
using html::Esc;

// One bar per run (base, new): each part's value from `parts_of` (a run's map by `key_of`
// the part's key), the tick at `marker`.
template <typename Parts, typename Marker>
std::vector<html::StackRow> BaseNewRows(const SummaryDiff& d, const std::vector<html::StackPart>& parts, Parts parts_of,
                                        std::string (*key_of)(const std::string&), Marker marker) {
  std::vector<html::StackRow> rows;
  int i = 0;
  for (const RunFigures* r : {&d.base, &d.now}) {
    html::StackRow row;
    row.label = i == 0 ? "base" : "new";
    row.rank = i++;
    const std::map<std::string, double>& m = parts_of(*r);
    for (const auto& p : parts) {
      auto it = m.find(key_of(p.key));
      row.values.push_back(it == m.end() ? 0.0 : it->second);
    }
    row.marker = marker(*r);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string SameKey(const std::string& k) { return k; }
// PathParts' keys end in "_ms"; RunFigures keeps the part's name.
std::string PartName(const std::string& k) { return k.substr(0, k.size() - 3); }

void StepBars(const SummaryDiff& d, std::string& out) {
  if (!d.comparable || (d.base.step_parts.empty() && d.now.step_parts.empty())) return;
  const std::vector<html::StackRow> rows =
      BaseNewRows(d, html::StepParts(), [](const RunFigures& r) -> const auto& { return r.step_parts; }, SameKey,
                  [](const RunFigures& r) { return r.step_median_ms; });
  out += "<section id=\"step-bars\"><h2>Where the step goes, base and new</h2>\n"
         "<p class=\"note\">Mean milliseconds per step of the median rank; the black tick is "
         "the median step time. The parts are measured separately and need not add up to "
         "the step.</p>\n" +
         html::LegendHtml(html::StepParts()) + html::StackedBarsSvg(html::StepParts(), rows, "ms") +
         "\n</section>\n";
}

// The critical path of each run as a bar of its parts, as report.html draws it.
void PathBars(const SummaryDiff& d, std::string& out) {
  if (!d.comparable || (d.base.path_parts.empty() && d.now.path_parts.empty())) return;
  const std::vector<html::StackRow> rows =
      BaseNewRows(d, html::PathParts(), [](const RunFigures& r) -> const auto& { return r.path_parts; }, PartName,
                  [](const RunFigures& r) { return r.path_step_ms.value_or(-1); });
  const std::string largest = LargestPathChange(d);
  out += "<section id=\"path-bars\"><h2>What paced the step, base and new</h2>\n"
         "<p class=\"note\">The step's critical path of the median rank, milliseconds per step by "
         "part; the black tick is the measured step." +
         Esc(largest.empty() ? std::string() : " Largest change: " + largest + ".") + "</p>\n" +
         html::LegendHtml(html::PathParts()) +
         html::StackedBarsSvg(html::PathParts(), rows, "ms", "measured", "path",
                              "What paced the step, base and new") + "\n</section>\n";
}

void Section(const DiffSection& s, std::string& out) {
  out += "<section" + Attr("id", s.id) + "><h2>" + Esc(s.title) + "</h2>\n";
  if (!s.note.empty()) out += "<p class=\"note\">" + Esc(s.note) + "</p>\n";
  if (s.rows.empty()) {
    out += "</section>\n";
    return;
  }
  out += "<table><tr>";
  for (size_t c = 0; c < s.columns.size(); ++c)
    out += std::string(c >= 2 ? "<th class=\"n\">" : "<th>") + Esc(s.columns[c]) + "</th>";
  out += "</tr>\n";
  for (const auto& row : s.rows) {
    const std::string trend = row.size() > 1 ? row[1] : "";
    out += "<tr data-row" + Attr("data-name", row[0]) + Attr("data-trend", trend) + ">";
    for (size_t c = 0; c < row.size(); ++c) {
      if (c == 1)
        out += trend.empty() ? "<td></td>"
                             : "<td><span class=\"trend trend-" + Esc(trend) + "\">" + Esc(trend) +
                                   "</span></td>";
      else
        out += std::string(c == 0 ? "<td class=\"name\">" : "<td class=\"n\">") + Esc(row[c]) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table></section>\n";
}

}  // namespace

std::string DiffHtml(const SummaryDiff& d, const std::vector<RuleResult>& gate) {
  bool tripped = false;
  for (const RuleResult& r : gate) tripped |= r.tripped;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n<title>gpuwatch diff: " +
      Esc(d.base.job_id) + " vs " + Esc(d.now.job_id) + "</title>\n<style>" + html::PageCss() +
      "</style></head><body>\n";
  out += "<h1>gpuwatch diff</h1>\n";
  for (const auto& [name, r] : {std::pair{"base", &d.base}, std::pair{"new", &d.now}})
    out += "<p class=\"meta\"><b>" + std::string(name) + "</b> " + Esc(r->path) + " &middot; job " +
           Esc(r->job_id) +
           Esc(Printf(", %d rank(s), %llu steps (", r->ranks, static_cast<unsigned long long>(r->steps))) +
           Esc(r->steps_source) + ") &middot; generated " + Esc(r->generated_at) + "</p>\n";
  const bool bad = !d.comparable || (d.headline.kind != "none" && d.headline.trend != Trend::kShrunk &&
                                     d.headline.trend != Trend::kGone);
  out += "<div class=\"verdict" + std::string(bad ? " bad" : "") + "\" id=\"headline\"" +
         Attr("data-kind", d.headline.kind) + Attr("data-key", d.headline.key) + ">" +
         Esc(d.headline.text) + "</div>\n";
  for (const std::string& n : d.notes) out += "<p class=\"note\">" + Esc(n) + "</p>\n";
  if (!gate.empty()) {
    out += "<section id=\"gate\"><h2>Gate</h2>\n<table>\n";
    for (const RuleResult& r : gate) {
      const char* t = r.tripped ? "tripped" : "ok";
      out += "<tr data-rule" + Attr("data-trend", t) + "><td><span class=\"trend trend-" + t + "\">" + t +
             "</span></td><td class=\"name\">" + Esc(r.message) + "</td></tr>\n";
    }
    out += "</table>" + std::string(tripped ? "<p class=\"note\">A rule tripped: exit status 3.</p>" : "") +
           "</section>\n";
  }
  StepBars(d, out);
  PathBars(d, out);
  for (const DiffSection& s : DiffSections(d)) Section(s, out);
  out += "<p class=\"note\">Written by gpuwatch diff (" + std::string(kDiffSchema) +
         ") from two summary.json files; every figure is described in docs/diff.md.</p>\n"
         "</body></html>\n";
  return out;
}

}  // namespace gpuwatch::collector::compare
