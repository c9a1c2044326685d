// See html_evidence.h.
#include "report/html_evidence.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>
#include <vector>

#include "common/format.h"
#include "report/evidence_labels.h"
#include "report/html_page.h"
#include "report/svg_chart.h"

namespace gpuwatch::collector {
namespace {

using html::Esc;
using nlohmann::json;

constexpr size_t kMaxItems = 8;  // of a per-rank map or a list, shown; the rest counted

bool Hidden(const std::string& key) {
  return key == "host_frames" || key == "call_site" || LabelOfEvidence(key).unit == EvidenceUnit::kHidden;
}

// A list of one object that only repeats the evidence's own figures (a finding about one
// host of a list of hosts) adds nothing.
bool RepeatsParent(const json& v, const json& parent) {
  if (!v.is_array() || v.size() != 1 || !v.front().is_object()) return false;
  for (auto it = v.front().begin(); it != v.front().end(); ++it)
    if (!parent.contains(it.key()) || parent[it.key()] != it.value()) return false;
  return true;
}

bool IsRankMap(const json& o) {
  if (!o.is_object() || o.empty()) return false;
  for (auto it = o.begin(); it != o.end(); ++it)
    if (it.key().empty() || !std::all_of(it.key().begin(), it.key().end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return false;
  return true;
}

std::string More(size_t total) {
  return total > kMaxItems ? Esc(Printf(" and %zu more", total - kMaxItems)) : std::string();
}

std::string Value(const json& v, const EvidenceLabel& l, int depth);

// {"0": 1.2, "3": 0.4}: "rank 0 1.2 s, rank 3 400 ms", in rank order.
std::string RankMap(const json& o, const EvidenceLabel& l) {
  std::vector<std::pair<long, const json*>> items;
  for (auto it = o.begin(); it != o.end(); ++it) items.emplace_back(std::strtol(it.key().c_str(), nullptr, 10), &it.value());
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (size_t i = 0; i < items.size() && i < kMaxItems; ++i)
    out += (i ? ", " : "") + Esc(Printf("rank %ld ", items[i].first)) + Value(*items[i].second, l, 1);
  return out + More(items.size());
}

// {"power": 3, "thermal": 0}: "power cap 3 · temperature 0".
std::string Inline(const json& o, int depth) {
  std::string out;
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (Hidden(it.key())) continue;
    const EvidenceLabel l = LabelOfEvidence(it.key());
    out += (out.empty() ? "" : " \xc2\xb7 ") + Esc(l.label) + " " + Value(it.value(), l, depth + 1);
  }
  return out;
}

// [{...}, {...}]: a table, columns from the first object's keys.
std::string ObjectList(const json& a, int depth) {
  std::vector<std::string> keys;
  for (auto it = a.front().begin(); it != a.front().end(); ++it)
    if (!Hidden(it.key())) keys.push_back(it.key());
  std::string out = "<div class=\"evl\"><table class=\"evl\"><tr>";
  for (const std::string& k : keys) out += "<th>" + Esc(LabelOfEvidence(k).label) + "</th>";
  out += "</tr>";
  for (size_t i = 0; i < a.size() && i < kMaxItems; ++i) {
    out += "<tr>";
    for (const std::string& k : keys)
      out += "<td>" + (a[i].is_object() && a[i].contains(k) ? Value(a[i][k], LabelOfEvidence(k), depth + 1) : "-") + "</td>";
    out += "</tr>";
  }
  out += "</table></div>";
  if (a.size() > kMaxItems) out += "<div class=\"note\">" + Esc(Printf("%zu more", a.size() - kMaxItems)) + "</div>";
  return out;
}

std::string Value(const json& v, const EvidenceLabel& l, int depth) {
  if (v.is_string() && l.unit == EvidenceUnit::kName) return html::NameHtml(v.get<std::string>());
  if (!v.is_object() && !v.is_array()) return Esc(EvidenceValueText(v, l.unit));
  if (v.empty()) return "none";
  if (IsRankMap(v)) return RankMap(v, l);
  // Tables inside tables squeeze each other to a word a line: one level is shown.
  if (depth > 0 && (v.is_object() || v.front().is_structured())) return "<span class=\"note\">(in summary.json)</span>";
  if (v.is_object()) return Inline(v, depth);
  if (v.size() == 1 && v.front().is_object()) return Inline(v.front(), depth);  // a list of one: as its object
  if (v.front().is_object()) return ObjectList(v, depth);
  std::string out;
  for (size_t i = 0; i < v.size() && i < kMaxItems; ++i) out += (i ? ", " : "") + Value(v[i], l, depth + 1);
  return out + More(v.size());
}

// One labelled row per figure of `o`.
std::string Rows(const json& o, int depth) {
  std::string rows;
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (Hidden(it.key()) || RepeatsParent(it.value(), o)) continue;
    const EvidenceLabel l = LabelOfEvidence(it.key());
    rows += "<tr><th>" + Esc(l.label) + "</th><td>" + Value(it.value(), l, depth) + "</td></tr>";
  }
  return rows;
}

}  // namespace

std::string EvidenceHtml(const json& ev) {
  if (!ev.is_object()) return {};
  const std::string rows = Rows(ev, 0);
  return rows.empty() ? std::string() : "<table class=\"ev\">" + rows + "</table>\n";
}

}  // namespace gpuwatch::collector
