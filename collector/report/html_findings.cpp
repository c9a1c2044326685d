// See html_findings.h. Lookups go through common/json_read.h: an older or partial summary
// renders what it has.
#include "report/html_findings.h"

#include <cctype>
#include <utility>
#include <vector>

#include "common/explains.h"
#include "common/format.h"
#include "common/json_read.h"
#include "interpret/python_frames.h"
#include "report/html_evidence.h"
#include "report/html_page.h"
#include "report/svg_chart.h"

namespace gpuwatch::collector {
namespace {

using html::Attr;
using html::Esc;
using nlohmann::json;
using json_read::Arr;
using json_read::Get;
using json_read::Num;
using json_read::Str;

std::string Capital(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// A phrase from the analysis as a sentence: capital first letter, a full stop.
std::string Sentence(std::string s) {
  if (s.empty()) return s;
  s = Capital(std::move(s));
  if (s.back() != '.' && s.back() != '!' && s.back() != '?') s += '.';
  return s;
}

std::string Title(const json& f) { return Str(f, "title", Str(f, "id", "finding")); }

// What the finding cost, in one sentence with its numbers.
std::string LossSentence(const json& f) {
  const double lost = Num(f, "time_lost_s");
  const std::string ranks = RanksText(Arr(f, "ranks"));
  const std::string on = ranks.empty() ? "" : ", on " + ranks;
  if (lost <= 0) return Sentence(Title(f) + " (no time measured" + on + ")");
  std::string s = Printf("%s cost %s, %.0f%% of the time measured", Title(f).c_str(), FmtDuration(lost).c_str(),
                         100 * Num(f, "share"));
  const json& per_step = Get(Get(f, "evidence"), "per_step_ms");
  if (per_step.is_number()) s += " (" + FmtDuration(per_step.get<double>() * 1e-3) + " per step)";
  return Sentence(s + on);
}

// Where the host was while the GPU waited (evidence.host_frames, by share) and where a
// stall was called from (evidence.call_site).
std::string Frames(const json& ev) {
  std::string out;
  const json& host = Arr(ev, "host_frames");
  if (!host.empty()) {
    out += "<div class=\"frames\" data-host-frames>While the GPU waited, the training thread was in:<ol>";
    for (const json& h : host) {
      const std::string where = Str(h, "where");
      out += "<li>" + (IsNoFrame(where) ? std::string("code gpuwatch could not name (no stack in the samples)")
                                                : html::NameHtml(where, ShortWhere(where)));
      if (!Str(h, "blocked_in").empty()) out += " blocked in " + html::NameHtml(Str(h, "blocked_in"));
      out += Esc(Printf(", %.0f%% of the samples", 100 * Num(h, "share"))) + "</li>";
    }
    out += "</ol></div>\n";
  }
  const json& site = Get(ev, "call_site");
  if (site.is_object() && !Str(site, "python").empty())
    out += "<div class=\"frames\" data-call-site>Called from " +
           html::NameHtml(Str(site, "python"), ShortWhere(Str(site, "python"))) + ".</div>\n";
  return out;
}

// What was measured, the evidence and the fix: the body of a finding and of one inside it.
std::string Body(const json& f) {
  std::string out = "<p>" + Esc(Sentence(Str(f, "summary"))) + "</p>\n";
  const json& ev = Get(f, "evidence");
  out += Frames(ev) + EvidenceHtml(ev);
  const std::string fix = Str(f, "fix");
  if (!fix.empty()) out += "<p class=\"fix\"><b>Fix:</b> " + Esc(Sentence(fix)) + "</p>\n";
  return out;
}

std::string Badge(const json& f) {
  const std::string sev = Str(f, "severity", "low");
  const std::string cls = sev == "high" || sev == "medium" ? sev : "low";
  return "<span class=\"sev sev-" + cls + "\">" + Esc(sev) + "</span>";
}

}  // namespace

std::string RanksText(const json& ranks) {
  std::vector<int> r;
  for (const json& x : ranks)
    if (x.is_number_integer()) r.push_back(x.get<int>());
  return collector::RanksText(r);
}

void FindingsSection(const json& s, std::string& out) {
  const json& job = Get(s, "job");
  out += "<section id=\"findings\"><h2>Verdict and findings</h2>\n";
  out += "<div class=\"verdict\" id=\"verdict\">" + Esc(Str(job, "verdict", "No verdict in this summary.")) + "</div>\n";
  const json& all = Arr(job, "findings");
  if (all.empty()) out += "<p class=\"note\">No finding cost a significant share of the time.</p>\n";
  auto shown_inside = [&](const json& f) {
    const std::string_view target = ExplainedFinding(Str(f, "id"));
    if (target.empty()) return false;
    for (const json& g : all)
      if (Str(g, "id") == target) return true;
    return false;
  };
  int n = 0;
  for (const json& f : all) {
    if (shown_inside(f)) continue;
    out += "<div class=\"finding\" data-finding" + Attr("data-id", Str(f, "id")) + "><h3>" + Printf("%d. ", ++n) +
           Badge(f) + Esc(Capital(Title(f))) + "</h3>\n<p class=\"what\">" +
           Esc(LossSentence(f)) + "</p>\n" + Body(f);
    for (const json& why : all)
      if (ExplainedFinding(Str(why, "id")) == Str(f, "id"))
        out += "<div class=\"why\" data-explains" + Attr("data-id", Str(why, "id")) + "><p class=\"what\">Why: " +
               Esc(Title(why)) + " (it explains the time above; not a loss of its own)</p>\n" + Body(why) + "</div>\n";
    out += "</div>\n";
  }
  out += "</section>\n";
}

}  // namespace gpuwatch::collector
