// report.html, section by section, from the summary.json document. Lookups go through
// common/json_read.h, so an older or partial summary never throws here.
#include "report/html_report.h"

#include <algorithm>
#include <map>

#include "common/format.h"
#include "common/json_read.h"
#include "report/html_comms.h"
#include "report/html_critical_path.h"
#include "report/html_device.h"
#include "report/html_findings.h"
#include "report/html_page.h"
#include "report/summary.h"
#include "report/svg_chart.h"

namespace gpuwatch::collector {
namespace {

using html::Attr;
using html::Esc;
using nlohmann::json;

using json_read::Arr;
using json_read::Get;
using json_read::Int;
using json_read::Num;
using json_read::Whole;
using json_read::Str;

void Header(const json& s, std::string& out) {
  const json& job = Get(s, "job");
  out += "<h1>gpuwatch report: job " + Esc(Str(s, "job_id", "?")) + "</h1>\n";
  const int ranks =
      Whole<int>(job, "ranks", static_cast<int>(Arr(s, "ranks").size()));
  const int hosts = Whole<int>(job, "hosts");
  out += "<p class=\"meta\">" +
         Esc(Printf("%d rank%s of %d, %d host%s, wall %s", ranks, ranks == 1 ? "" : "s",
                    Whole<int>(job, "world_size"), hosts, hosts == 1 ? "" : "s",
                    FmtDuration(Num(job, "wall_s")).c_str())) +
         " &middot; generated " + Esc(Str(s, "generated_at")) + "</p>\n";
  const json& abnormal = Arr(job, "abnormal_ranks");
  if (!abnormal.empty())
    out += "<p class=\"meta\">ended abnormally: " + Esc(RanksText(abnormal)) + "</p>\n";
}

// The CUDA device ordinal the rank used (`device`); "-" when not known (-1).
std::string DeviceOrdinal(const json& r) {
  const json& d = Get(r, "device");
  return d.is_number_integer() && d.get<long>() >= 0 ? std::to_string(d.get<long>()) : std::string("-");
}

void RankTable(const json& s, std::string& out) {
  out += "<section id=\"ranks\"><h2>Ranks</h2>\n<table><tr><th>rank</th><th>host</th>"
         "<th class=\"n\">pid</th><th class=\"n\">device</th><th>ended</th>"
         "<th class=\"n\">wall</th><th>GPU timeline</th><th class=\"n\">GPU busy (CUPTI)</th>"
         "<th class=\"n\">steps</th><th class=\"n\">median step</th>"
         "<th class=\"n\">dropped</th><th class=\"n\">gpuwatch's cost</th></tr>\n";
  for (const json& r : Arr(s, "ranks")) {
    const json& gpu = Get(r, "gpu");
    const json& steps = Get(r, "steps");
    const json& util = Get(gpu, "utilization");
    out += "<tr><td>" + std::to_string(Int(r, "rank")) + "</td><td>" + Esc(Str(r, "host")) +
           "</td><td class=\"n\">" + std::to_string(Int(r, "pid")) + "</td><td class=\"n\" data-device>" +
           DeviceOrdinal(r) + "</td><td>" + Esc(Str(r, "ended")) +
           "</td><td class=\"n\">" + FmtDuration(Num(r, "wall_s")) + "</td><td>" +
           Esc(Str(gpu, "source", "-")) + "</td><td class=\"n\">" +
           (util.is_number() ? Printf("%.1f%%", 100 * util.get<double>()) : "-") +
           "</td><td class=\"n\">" + Printf("%.0f", Num(steps, "count")) +
           "</td><td class=\"n\">" +
           (Num(steps, "count") > 0 ? Printf("%.3f ms", Num(steps, "median_ms")) : "-") +
           "</td><td class=\"n\">" + Printf("%.0f", Num(r, "dropped_total")) + "</td><td class=\"n\">" +
           (Get(r, "overhead").is_object() ? Printf("%.2f%%", 100 * Num(Get(r, "overhead"), "share_of_wall")) : "-") +
           "</td></tr>\n";
  }
  out += "</table><p class=\"note\">GPU busy: the share of the rank's active time during which a kernel, copy or "
         "memset ran, measured from every record CUPTI gave (not NVML's sampled utilization, which the "
         "Devices table shows).</p></section>\n";
}

std::string MoreRanks(size_t shown, size_t total) {
  if (total <= shown) return {};
  return Printf("<p class=\"note\">%zu more ranks not drawn; summary.json has them all.</p>\n",
                total - shown);
}

// Time axis: seconds from the first device work of the ranks on the same host (their
// monotonic clocks agree); ranks on other hosts start at their own first work.
void Utilization(const json& s, std::string& out) {
  out += "<section id=\"utilization\"><h2>GPU utilization over time</h2>\n";
  std::map<std::string, double> host_start;
  for (const json& r : Arr(s, "ranks")) {
    const json& ser = Get(Get(r, "gpu"), "utilization_series");
    if (!ser.is_object()) continue;
    const std::string h = Str(r, "host");
    const double st = Num(ser, "start_ns");
    auto [it, fresh] = host_start.emplace(h, st);
    if (!fresh) it->second = std::min(it->second, st);
  }
  std::vector<html::UtilRow> rows;
  size_t with_series = 0;
  double window = 0;
  for (const json& r : Arr(s, "ranks")) {
    const json& ser = Get(Get(r, "gpu"), "utilization_series");
    if (!ser.is_object()) continue;
    ++with_series;
    if (rows.size() >= kHtmlMaxChartRanks) continue;
    html::UtilRow row;
    row.rank = Int(r, "rank");
    row.window_s = Num(ser, "window_s");
    row.offset_s = (Num(ser, "start_ns") - host_start[Str(r, "host")]) * 1e-9;
    for (const json& v : Arr(ser, "busy"))
      row.busy.push_back(v.is_number() ? v.get<double>() : 0);
    const json& util = Get(Get(r, "gpu"), "utilization");
    row.label = RankLabel(r);
    const json& compute = Get(Get(r, "gpu"), "compute_busy");
    if (util.is_number()) row.note = Printf("busy %.0f%%", 100 * util.get<double>());
    if (compute.is_number()) row.note += Printf(", compute %.0f%%", 100 * compute.get<double>());
    window = std::max(window, row.window_s);
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    out += "<p class=\"note\">No device timeline: no rank had CUPTI activity records "
           "(gpu.source \"events\").</p></section>\n";
    return;
  }
  out += "<p class=\"note\">Share of each window during which any kernel, copy or memset ran, from CUPTI's "
         "records (windows of " + Esc(FmtDuration(window)) +
         " or less; longer runs get wider windows). Time from the first device work on each "
         "host. Under each rank: its busy time over its active time, and the same without NCCL's kernels "
         "(compute).</p>\n";
  out += html::LegendHtml({{"util", "GPU busy share of each window (0 to 100%)", "#4e79a7"}}) +
         html::UtilizationSvg(rows) + "\n" + MoreRanks(rows.size(), with_series) + "</section>\n";
}

// Busy and idle time per rank, idle split by why (the classification every view shows).
void Idle(const json& s, std::string& out) {
  static const char* const kKinds[] = {"host_wait", "launch_wait", "sync_wait", "other"};
  std::string rows;
  for (const json& r : Arr(s, "ranks")) {
    const json& gpu = Get(r, "gpu");
    const json& idle = Get(gpu, "idle_breakdown_s");
    if (!idle.is_object()) continue;
    const std::string rank = std::to_string(Int(r, "rank"));
    auto cell = [&](const char* what, double v) {
      return "<td class=\"n\"" + html::Attr("data-rank", rank) + html::Attr("data-gpu", what) +
             html::Attr("data-value", Printf("%.9g", v)) + ">" + Esc(FmtDuration(v)) + "</td>";
    };
    const json& cov = Get(gpu, "coverage");
    std::string label = RankLabel(r);
    if (Get(cov, "sampled").is_boolean() && cov["sampled"].get<bool>() && Num(cov, "share", 1) < 1)
      label += Printf(" (GPU timeline sampled over %.1f%% of the run, %.0f windows)", 100 * Num(cov, "share"),
                      Num(cov, "windows"));
    rows += "<tr><td>" + Esc(label) + "</td>" + cell("busy_s", Num(gpu, "busy_s"));
    for (const char* k : kKinds) rows += cell(k, Num(idle, k));
    rows += "</tr>\n";
  }
  if (rows.empty()) return;
  out += "<section id=\"idle\"><h2>Why the GPU was idle</h2>\n<p class=\"note\">Each gap between "
         "busy spans, counted once: <b>waiting for the host</b> the launch of the next work began after the "
         "GPU went idle (host work: data loading, Python); <b>waiting for launches</b> the GPU ran dry "
         "between launches; <b>in syncs</b> the host sat in a sync; <b>other</b> the rest "
         "(dependencies, stream waits).</p>\n<table><tr><th>rank</th><th class=\"n\">busy</th>"
         "<th class=\"n\">waiting for the host</th><th class=\"n\">waiting for launches</th><th class=\"n\">in syncs</th>"
         "<th class=\"n\">other</th></tr>\n" +
         rows + "</table></section>\n";
}

void Steps(const json& s, std::string& out) {
  const auto& kParts = html::StepParts();
  out += "<section id=\"steps\"><h2>Where each rank's step time goes</h2>\n";
  std::vector<html::StackRow> rows;
  size_t with_steps = 0;
  for (const json& r : Arr(s, "ranks")) {
    const json& st = Get(r, "steps");
    const json& per = Get(st, "per_step_ms");
    if (!per.is_object()) continue;
    ++with_steps;
    if (rows.size() >= kHtmlMaxChartRanks) continue;
    html::StackRow row;
    row.rank = Int(r, "rank");
    row.label = RankLabel(r);
    for (const auto& p : kParts) row.values.push_back(Num(per, p.key.c_str()));
    row.marker = Num(st, "median_ms", -1);
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    out += "<p class=\"note\">No steps found (no NVTX step range, no repeating pattern of "
           "collectives or syncs).</p></section>\n";
    return;
  }
  out += "<p class=\"note\">Mean milliseconds per step. The parts are measured separately: "
         "copies and host syncs can run alongside GPU work, so a bar need not add up to the "
         "step; the black tick and the figure at the bar's end are the median step time.</p>\n";
  out += html::LegendHtml(kParts) + html::StackedBarsSvg(kParts, rows, "ms") + "\n" +
         MoreRanks(rows.size(), with_steps) + "</section>\n";
}

// A bandwidth, or "-" where there is none (a one-member communicator: bandwidth_note).
std::string RateOrDash(const json& o, const char* key) {
  return Get(o, key).is_number() ? FmtRate(Num(o, key)) : std::string("-");
}

void Collectives(const json& s, std::string& out) {
  out += "<section id=\"collectives\"><h2>Collectives: bus bandwidth per operation and "
         "rank</h2>\n";
  std::vector<html::BarGroup> groups;
  std::map<std::string, size_t> index;
  for (const json& r : Arr(s, "ranks")) {
    const json& c = Get(r, "collectives");
    if (!c.is_object()) continue;
    for (auto it = c.begin(); it != c.end(); ++it) {
      // Never timed, or only on a one-member communicator: no bandwidth.
      if (it.key() == "by_comm" || Num(it.value(), "total_s") <= 0 || !Get(it.value(), "busbw_gbps").is_number()) continue;
      auto [pos, fresh] = index.emplace(it.key(), groups.size());
      if (fresh) groups.push_back({it.key(), {}});
      auto& bars = groups[pos->second].bars;
      if (bars.size() < kHtmlMaxChartRanks)
        bars.emplace_back(Int(r, "rank"), Num(it.value(), "busbw_gbps"));
    }
  }
  if (groups.empty()) {
    out += "<p class=\"note\">No timed collectives.</p></section>\n";
    return;
  }
  out += "<p class=\"note\">busbw = bytes \xc3\x97 the operation's bus factor / transfer time (the GPU "
         "time after the last member arrived, as nccl-tests times it; waiting is the late member's "
         "doing), comparable with nccl-tests; one bar per rank; none for a one-member communicator "
         "(nothing crosses a link).</p>\n";
  out += html::LegendHtml({{"busbw", "bus bandwidth of one rank, GB/s (rank number under its bar)", html::kBarColor}}) +
         html::GroupedBarsSvg(groups, "busbw", "GB/s") + "\n";
  out += "<table><tr><th>operation (job)</th><th class=\"n\">calls</th>"
         "<th class=\"n\">bytes</th><th class=\"n\">GPU time (all ranks)</th><th class=\"n\">waiting (all ranks)</th>"
         "<th class=\"n\">algbw GB/s</th>"
         "<th class=\"n\">busbw GB/s</th></tr>\n";
  const json& jc = Get(Get(s, "job"), "collectives");
  if (jc.is_object())
    for (auto it = jc.begin(); it != jc.end(); ++it) {
      if (it.key() == "by_comm") continue;  // the communicators' table follows
      const json& o = it.value();
      out += "<tr><td>" + Esc(it.key()) + "</td><td class=\"n\">" +
             Printf("%.0f", Num(o, "count")) + "</td><td class=\"n\">" +
             FmtBytes(Whole<uint64_t>(o, "bytes")) + "</td><td class=\"n\">" +
             FmtDuration(Num(o, "total_s")) + "</td><td class=\"n\">" + FmtDuration(Num(o, "wait_s")) +
             "</td><td class=\"n\">" + RateOrDash(o, "algbw_gbps") + "</td><td class=\"n\">" +
             RateOrDash(o, "busbw_gbps") + "</td></tr>\n";
    }
  out += "</table></section>\n";
}

void Kernels(const json& s, std::string& out) {
  out += "<section id=\"kernels\"><h2>Top kernels (all ranks, by GPU time)</h2>\n";
  const json& k = Get(Get(Get(s, "job"), "gpu"), "kernels");
  const json& top = Arr(k, "top");
  if (top.empty()) {
    out += "<p class=\"note\">No kernel times: no rank had CUPTI activity records.</p>"
           "</section>\n";
    return;
  }
  const double total = Num(k, "total_s");
  double max = 0;
  for (const json& t : top) max = std::max(max, Num(t, "total_s"));
  out += "<table><tr><th>kernel</th><th class=\"n\">count</th><th class=\"n\">total</th>"
         "<th class=\"n\">share</th><th style=\"width:20%\"></th></tr>\n";
  for (const json& t : top) {
    const double ts = Num(t, "total_s");
    out += "<tr data-kernel><td>" + html::NameHtml(Str(t, "name", "?")) + "</td>"
           "<td class=\"n\">" + Printf("%.0f", Num(t, "count")) + "</td><td class=\"n\">" +
           FmtDuration(ts) + "</td><td class=\"n\">" +
           (total > 0 ? Printf("%.1f%%", 100 * ts / total) : "-") +
           "</td><td><div class=\"bar\"" +
           Attr("style", Printf("width:%.1f%%", max > 0 ? 100 * ts / max : 0)) +
           "></div></td></tr>\n";
  }
  out += "</table>\n<p class=\"note\">" +
         Esc(Printf("%.0f computation kernels, %s in all; communication kernels: %.0f, %s.",
                    Num(k, "count"), FmtDuration(total).c_str(),
                    Num(Get(Get(Get(s, "job"), "gpu"), "comm_kernels"), "count"),
                    FmtDuration(Num(Get(Get(Get(s, "job"), "gpu"), "comm_kernels"), "total_s"))
                        .c_str())) +
         "</p></section>\n";
}

void Hangs(const json& s, std::string& out) {
  const json& hangs = Arr(s, "hangs");
  if (hangs.empty()) return;
  out += "<section id=\"hangs\"><h2>Hangs</h2>\n<ul>\n";
  for (const json& h : hangs)
    out += "<li>" + Esc(Printf("rank %d (host ", Int(h, "rank")) + Str(h, "host") + ") inside " +
                        Str(h, "api") + " for " + FmtDuration(Num(h, "inside_s"))) +
           "</li>\n";
  out += "</ul></section>\n";
}

}  // namespace

std::string RankLabel(const json& r) {
  return Printf("rank %d", Int(r, "rank")) + " \xc2\xb7 " + Clip(Str(r, "host", "?"), 18);
}

std::string BuildHtmlReport(const json& s) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // Nothing may be fetched: the report is opened from disk, often offline.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">\n<title>gpuwatch: " +
      Esc(Str(s, "job_id", "?")) + "</title>\n<style>" + html::PageCss() + "</style></head><body>\n";
  Header(s, out);
  FindingsSection(s, out);
  CriticalPathSection(s, out);
  Utilization(s, out);
  DeviceSections(s, out);
  Idle(s, out);
  Steps(s, out);
  Collectives(s, out);
  CommsSection(s, out);
  Kernels(s, out);
  RankTable(s, out);
  Hangs(s, out);
  out += "<p class=\"note\">Written by gpuwatch from summary.json (" +
         Esc(Str(s, "schema", kSummarySchema)) +
         "); every figure here is in that file, described in docs/summary-schema.md.</p>\n"
         "</body></html>\n";
  return out;
}

}  // namespace gpuwatch::collector
