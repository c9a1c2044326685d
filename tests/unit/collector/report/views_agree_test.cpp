// Every view of one rank shows the same figures: the idle breakdown (one classification),
// GPU busy time and the per-step figures, in summary.json, summary.txt, report.html,
// Prometheus /metrics and the Perfetto trace, all read from the rank's one RankResult; and
// the critical path and each fix's predicted step, filled by hand, in every view alike.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "analyze/findings.h"
#include "common/format.h"
#include "fixtures.h"
#include "report/console_text.h"
#include "report/critical_path_text.h"
#include "report/html_report.h"
#include "jobs/live_snapshot.h"
#include "live/prometheus.h"
#include "step_loop.h"
#include "test_trace_validator.h"

using namespace gwtest;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using gpuwatch::collector::test_loop::kMs;
using gpuwatch::collector::test_loop::kUs;
const char* const kKinds[] = {"host_wait", "launch_wait", "sync_wait", "other"};

void Api(wire::Batch& b, uint32_t corr, uint64_t t, uint64_t dur) { Work(&b, wire::ACTIVITY_API, t, t + dur, corr); }
void Kernel(wire::Batch& b, uint32_t corr, uint64_t start, uint64_t end) {
  Work(&b, wire::ACTIVITY_KERNEL, start, end, corr)->set_name_id(2);
}

// 30 NVTX steps of 3 ms, each with one gap of every kind: host work before the first
// kernel (host_wait), a launch that overlaps the GPU going idle (launch_wait), a sync the
// host sits in (sync_wait), work launched early that starts late (other).
wire::Batch Steps(uint64_t t0) {
  wire::Batch b;
  gpuwatch::collector::test_loop::StepNames(b);
  uint32_t corr = 0;
  for (uint64_t s = 0, t = t0; s < 30; ++s, t += 3 * kMs) {
    const uint64_t w = t + 1 * kMs;  // host work first
    Add(&b, wire::CUDA_LAUNCH_KERNEL, w, 10 * kUs)->set_name_id(2);
    Api(b, ++corr, w, 10 * kUs);
    Kernel(b, corr, w + 10 * kUs, w + 600 * kUs);
    Add(&b, wire::CUDA_LAUNCH_KERNEL, w + 590 * kUs, 40 * kUs)->set_name_id(2);
    Api(b, ++corr, w + 590 * kUs, 40 * kUs);
    Kernel(b, corr, w + 640 * kUs, w + 1000 * kUs);  // launch_wait 40 us
    Add(&b, wire::CUDA_LAUNCH_KERNEL, w + 20 * kUs, 5 * kUs)->set_name_id(2);
    Api(b, ++corr, w + 20 * kUs, 5 * kUs);
    Kernel(b, corr, w + 1300 * kUs, w + 1400 * kUs);  // sync_wait 300 us (below)
    Add(&b, wire::CUDA_STREAM_SYNCHRONIZE, w + 1000 * kUs, 300 * kUs);
    Add(&b, wire::CUDA_LAUNCH_KERNEL, w + 30 * kUs, 5 * kUs)->set_name_id(2);
    Api(b, ++corr, w + 30 * kUs, 5 * kUs);
    Kernel(b, corr, w + 1600 * kUs, w + 1900 * kUs);  // other 200 us
    Add(&b, wire::NVTX_RANGE, t, 3 * kMs)->set_name_id(1);
  }
  b.set_settled_ns(t0 + 100 * kMs);
  return b;
}

// The value of the one sample of `family` whose labels contain `label`.
double Metric(const std::string& text, const std::string& family, const std::string& label) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(family + "{", 0) == 0 && line.find(label) != std::string::npos)
      return std::stod(line.substr(line.rfind(' ') + 1));
  FAIL("no " << family << " sample with " << label);
  return 0;
}

// report.html's data-value of the cell or bar with these attributes.
double HtmlValue(const std::string& html, const std::string& attrs) {
  const size_t at = html.find(attrs);
  REQUIRE(at != std::string::npos);
  const size_t v = html.find("data-value=\"", at);
  REQUIRE(v != std::string::npos);
  return std::stod(html.substr(v + 12));
}

}  // namespace

TEST_CASE("collector: every view shows the same idle, busy and per-step figures") {
  const fs::path dir = fs::temp_directory_path() / ("gw-views-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string trace_path = (dir / "trace.perfetto-trace").string();
  col::JobTable jobs(col::JobTiming{});
  jobs.set_trace_factory([&](const wire::Hello&) {
    std::string error;
    return col::JobTrace::Open(trace_path, col::TraceOptions{}, &error);
  });
  {
    FakeRank r(jobs, Hello("views", 0, 1));
    REQUIRE(r.SendBatch(Steps(1000 * kMs)));
    r.Goodbye();
    r.Close();
  }
  const col::Job& job = *jobs.Find("views");
  const std::string metrics = col::FormatPrometheus(col::TakeSnapshot(jobs, col::Clock::now()));
  const col::RenderedSummary rs = col::SummarizeJob(job);
  const json doc = json::parse(rs.json);
  const json& rank = doc["ranks"][0];
  const json& gpu = rank["gpu"];
  const json& per = rank["steps"]["per_step_ms"];

  // The figures themselves, as designed: 30 steps, one gap of each kind per step.
  REQUIRE(rank["steps"]["count"] == 30);
  CHECK(gpu["idle_breakdown_s"]["launch_wait"].get<double>() == Approx(30 * 40e-6));
  CHECK(gpu["idle_breakdown_s"]["sync_wait"].get<double>() == Approx(30 * 300e-6));
  CHECK(gpu["idle_breakdown_s"]["other"].get<double>() == Approx(30 * 200e-6));
  CHECK(gpu["idle_breakdown_s"]["host_wait"].get<double>() == Approx(29 * 1.11e-3));  // between steps
  CHECK(gpu["busy_s"].get<double>() == Approx(30 * 1.35e-3));

  // summary.txt: the same numbers, formatted.
  CHECK(rs.text.find("busy " + col::FmtDuration(gpu["busy_s"].get<double>()) + " of") != std::string::npos);
  for (const char* k : kKinds) {
    INFO(k);
    CHECK(rs.text.find(col::FmtDuration(gpu["idle_breakdown_s"][k].get<double>())) != std::string::npos);
  }
  CHECK(rs.text.find("GPU idle: host_wait " + col::FmtDuration(per["gpu_idle_waiting_for_host"].get<double>() * 1e-3)) !=
        std::string::npos);
  CHECK(rs.text.find("compute " + col::FmtDuration(per["gpu_compute"].get<double>() * 1e-3)) != std::string::npos);

  // report.html: the idle table and the per-step bars.
  CHECK(HtmlValue(rs.html, "data-rank=\"0\" data-gpu=\"busy_s\"") == Approx(gpu["busy_s"].get<double>()));
  for (const char* k : kKinds) {
    INFO(k);
    CHECK(HtmlValue(rs.html, std::string("data-rank=\"0\" data-gpu=\"") + k + "\"") ==
          Approx(gpu["idle_breakdown_s"][k].get<double>()));
  }
  for (const auto& [part, v] : per.items()) {
    INFO(part);
    CHECK(HtmlValue(rs.html, "data-chart=\"steps\" data-rank=\"0\" data-part=\"" + part + "\"") ==
          Approx(v.get<double>()).epsilon(1e-5));
  }

  // Prometheus.
  CHECK(Metric(metrics, "gpuwatch_gpu_busy_seconds_total", "rank=\"0\"") == Approx(gpu["busy_s"].get<double>()));
  for (const char* k : kKinds) {
    INFO(k);
    CHECK(Metric(metrics, "gpuwatch_gpu_idle_seconds_total", std::string("kind=\"") + k + "\"") ==
          Approx(gpu["idle_breakdown_s"][k].get<double>()));
  }
  for (const auto& [part, v] : per.items()) {
    INFO(part);
    CHECK(Metric(metrics, "gpuwatch_step_part_seconds", "part=\"" + part + "\"") == Approx(v.get<double>() * 1e-3));
  }
  CHECK(Metric(metrics, "gpuwatch_step_seconds", "rank=\"0\"") == Approx(rank["steps"]["mean_ms"].get<double>() * 1e-3));

  // The trace: idle slices by kind, the busy counter, the steps' figures.
  std::ifstream in(trace_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const gwtrace::TraceReport rep = gwtrace::ValidateTrace(ss.str(), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  for (const char* k : kKinds) {
    INFO(k);
    const auto it = c.idle_ns.find(std::string("idle: ") + k);
    const double trace_s = it == c.idle_ns.end() ? 0.0 : it->second * 1e-9;
    CHECK(trace_s == Approx(gpu["idle_breakdown_s"][k].get<double>()));
  }
  // The counter is in whole percent of 10 ms windows: within half a percent of each.
  const auto& busy = c.counter_samples.at("GPU busy % (10 ms)");
  double busy_s = 0;
  for (size_t i = 0; i < busy.size(); ++i) {
    const uint64_t until = i + 1 < busy.size() ? busy[i + 1].first : busy[i].first + 10 * kMs;
    busy_s += busy[i].second / 100 * (until - busy[i].first) * 1e-9;
  }
  const double windows = (gpu["active_s"].get<double>() / 0.01) + 2;
  CHECK(std::abs(busy_s - gpu["busy_s"].get<double>()) <= windows * 0.005 * 0.01);
  REQUIRE(c.steps == 30);
  const std::pair<const char*, const char*> parts[] = {
      {"gpu_compute_ms", "gpu_compute"},
      {"comm_not_overlapped_ms", "comm_not_overlapped"},
      {"idle_host_wait_ms", "gpu_idle_waiting_for_host"},
      {"idle_launch_wait_ms", "gpu_idle_waiting_for_launches"},
      {"idle_sync_wait_ms", "gpu_idle_in_syncs"},
      {"idle_other_ms", "gpu_idle_other"},
      {"host_blocked_in_syncs_ms", "host_blocked_in_syncs"},
      {"copies_ms", "copies"}};
  for (const auto& [arg, part] : parts) {
    INFO(arg);
    const auto it = c.step_args.find(arg);
    CHECK((it == c.step_args.end() ? 0.0 : it->second) / 30 == Approx(per[part].get<double>()).margin(1e-9));
  }
  fs::remove_all(dir);
}

namespace {

// One rank whose critical path and findings' what-ifs are filled by hand (as the analysis
// would), its job with the same figures: a step of 48.6 ms paced by host work.
struct PathJob {
  PathJob() {
    hello.set_rank(0);
    hello.set_world_size(1);
    hello.set_host("node");
    col::RankResult& r = result;
    r.rank = 0;
    r.critical_path.steps = 30;
    r.critical_path.step_ms = 48.6;
    r.critical_path.path_ms = 48.2;
    r.critical_path.alone_ms = 48.2;
    r.critical_path.part_ms[col::kPathHostCompute] = 36.3;
    r.critical_path.part_ms[col::kPathGpuCompute] = 9.9;
    r.critical_path.part_ms[col::kPathHostSync] = 2.0;
    r.critical_path.gpu_streams = {{7, 9.9}};
    r.all_fixed = {9.1, 48.6 / 9.1, "every finding's fix at once", col::kPathGpuCompute};
    // In the findings' order (by time lost), not by what the fix buys.
    col::Finding sync = col::MakeFinding("sync_stall", 0.06, 1.458);
    sync.ranks = {0};
    sync.what_if = {46.6, 48.6 / 46.6, "the .item() sync returns at once", col::kPathHostCompute};
    col::Finding loading = col::MakeFinding("data_loading", 1.0, 1.458);
    loading.ranks = {0};
    loading.what_if = {12.3, 48.6 / 12.3, "the DataLoader keeps up", col::kPathHostSync};
    col::Finding launches = col::MakeFinding("launch_bound", 0.03, 1.458);  // not modelled
    launches.ranks = {0};
    r.findings = {loading, sync, launches};
    job.ranks = col::RankList(std::vector<col::RankResult>{});
    job.findings = r.findings;
    job.critical_path = r.critical_path;
    job.all_fixed = r.all_fixed;
    job.verdict = "Biggest loss: data loading.";
  }
  col::JobView View() {
    ranks = {result};
    job.ranks = col::RankList(ranks);
    col::JobView v;
    v.id = "path";
    v.world_size = 1;
    v.ranks.push_back(col::RankView{&hello, true, &storage, &ranks[0]});
    v.hangs = &hangs;
    v.result = &job;
    return v;
  }
  wire::Hello hello;
  col::RankResult result;
  std::vector<col::RankResult> ranks;
  col::RankStorage storage;
  std::vector<col::Hang> hangs;
  col::JobResult job;
};

// The page's text as a reader sees it (outside tags) between `from` and the section's end.
std::string VisibleText(const std::string& h, const std::string& from) {
  const size_t a = h.find(from), b = h.find("</section>", a);
  std::string text;
  bool in_tag = false;
  for (size_t i = a; i < b && i < h.size(); ++i) {
    if (h[i] == '<') in_tag = true;
    if (!in_tag) text += h[i];
    if (h[i] == '>') in_tag = false;
  }
  return text;
}

}  // namespace

TEST_CASE("collector: every view shows the same critical path and what each fix buys") {
  PathJob pj;
  const col::JobView view = pj.View();
  const json doc = col::BuildSummaryJson(view, "2000-01-01T00:00:00Z");
  const std::string text = col::BuildSummaryText(view);
  const std::string console = col::BuildConsoleText(view);
  const std::string html = col::BuildHtmlReport(doc);

  // summary.json: the rank's and the job's, every part, a what-if per modelled finding.
  for (const json* o : {&doc["job"], &doc["ranks"][0]}) {
    const json& cp = (*o)["critical_path"];
    REQUIRE(cp.is_object());
    CHECK(cp["steps"] == 30);
    CHECK(cp["step_ms"].get<double>() == Approx(48.6));
    CHECK(cp["path_ms"].get<double>() == Approx(48.2));
    CHECK(cp["parts"].size() == col::kPathParts);
    CHECK(cp["parts"]["host_compute_ms"].get<double>() == Approx(36.3));
    CHECK(cp["parts"]["peer_wait_ms"].get<double>() == 0);
    CHECK(cp["gpu_streams"] == json::array({{{"stream", 7}, {"ms", 9.9}}}));
    CHECK((*o)["what_if_all"]["step_ms"].get<double>() == Approx(9.1));
    CHECK((*o)["what_if_all"]["then_paced_by"] == "gpu_compute");
    const json& f = (*o)["findings"];
    REQUIRE(f.size() == 3);
    CHECK(f[0]["what_if"]["step_ms"].get<double>() == Approx(12.3));
    CHECK(f[0]["what_if"]["speedup"].get<double>() == Approx(48.6 / 12.3));
    CHECK(f[0]["what_if"]["assumes"] == "the DataLoader keeps up");
    CHECK(f[0]["what_if"]["then_paced_by"] == "sync");
    CHECK(f[0]["what_if"].count("alone_ms") == 0);  // internal
    CHECK(f[2]["what_if"].is_null());  // not modelled
  }

  // summary.txt: each modelled finding's what-if as a person says it, the path by part
  // (largest first), the stream, and the fixes combined; in the job's block and the rank's.
  INFO(text);
  // Sentences are wrapped at 80 columns: read with each line break and its indent as a space.
  const std::string joined = std::regex_replace(text, std::regex("\n +"), " ");
  CHECK(joined.find("fix data loading: 48.6 \xe2\x86\x92 12.3 ms a step, 4.0\xc3\x97 faster; then syncs pace the step") !=
        std::string::npos);
  CHECK(joined.find(col::WhatIfSentence(pj.result.findings[1].title, pj.result.findings[1].what_if)) !=
        std::string::npos);
  CHECK(joined.find(": 48.6 \xe2\x86\x92 46.6 ms a step, 1.04\xc3\x97 faster; then host work paces the step") !=
        std::string::npos);
  CHECK(text.find("\n  critical path of a step, median rank: 48.6 ms (replayed 48.2 ms, 30 steps)\n") != std::string::npos);
  CHECK(text.find("\n  critical path of a step: 48.6 ms (replayed 48.2 ms, 30 steps)\n") != std::string::npos);  // the rank's
  const size_t host = text.find("    host work "), gpu = text.find("    the GPU's own work "),
               syncs = text.find("    syncs ");
  REQUIRE(host != std::string::npos);
  CHECK(host < gpu);
  CHECK(gpu < syncs);
  CHECK(text.find("36.3 ms  75.3%") != std::string::npos);
  CHECK(text.find("      stream 7 ") != std::string::npos);
  CHECK(text.find("    with every fix: 48.6 \xe2\x86\x92 9.10 ms a step (5.3\xc3\x97 faster)\n"
                  "      then the GPU's own work paces the step\n") != std::string::npos);
  for (const std::string& line : [&] {
         std::vector<std::string> v;
         std::istringstream in(text);
         for (std::string l; std::getline(in, l);) v.push_back(l);
         return v;
       }())
    CHECK(line.size() <= col::kTextWidth);

  // The console: the what-if in the finding's own line, within its bound.
  INFO(console);
  CHECK(std::regex_replace(console, std::regex("\n +"), " ").find("; rank 0; fixed: 12.3 ms a step (4.0\xc3\x97 faster)") !=
        std::string::npos);
  CHECK(static_cast<size_t>(std::count(console.begin(), console.end(), '\n')) <= 30);

  // report.html: a bar per part with its value, each rank's stacked bar behind a legend, the
  // what-ifs fastest first with their assumptions, no raw keys in what a reader sees.
  CHECK(HtmlValue(html, "data-path-part=\"host_compute_ms\"") == Approx(36.3));
  CHECK(HtmlValue(html, "data-path-part=\"gpu_compute_ms\"") == Approx(9.9));
  CHECK(HtmlValue(html, "data-chart=\"path\" data-rank=\"0\" data-part=\"sync_ms\"") == Approx(2.0));
  CHECK(HtmlValue(html, "data-chart=\"path-marker\" data-rank=\"0\"") == Approx(48.6));
  const size_t section = html.find("<section id=\"critical-path\">");
  REQUIRE(section != std::string::npos);
  const size_t svg = html.find("<svg", section);
  REQUIRE(svg != std::string::npos);
  CHECK(html.rfind("<div class=\"legend\">", svg) > section);
  const size_t fast = html.find("data-what-if=\"data_loading\""), slow = html.find("data-what-if=\"sync_stall\"");
  REQUIRE(fast != std::string::npos);
  REQUIRE(slow != std::string::npos);
  CHECK(fast < slow);
  CHECK(html.find("data-what-if=\"launch_bound\"") == std::string::npos);
  CHECK(HtmlValue(html, "data-what-if=\"all\"") == Approx(9.1));
  const std::string seen = VisibleText(html, "<section id=\"critical-path\">");
  CHECK(seen.find("Assumes: the DataLoader keeps up") != std::string::npos);
  CHECK(seen.find("fix data loading: 48.6 \xe2\x86\x92 12.3 ms a step, 4.0\xc3\x97 faster; then syncs pace the step") !=
        std::string::npos);
  for (const char* raw : {"host_compute", "gpu_compute", "_ms", "then_paced_by", "peer_wait", "launch_overhead"}) {
    INFO(raw);
    CHECK(seen.find(raw) == std::string::npos);
  }

  // Prometheus: the parts in seconds per step, each modelled finding's predicted step.
  col::LiveSnapshot snap;
  col::RankSample sample = col::SampleOf(pj.result);
  sample.job = "path";
  sample.host = "node";
  sample.rank = 0;
  snap.ranks.push_back(sample);
  const std::string metrics = col::FormatPrometheus(snap);
  CHECK(Metric(metrics, "gpuwatch_critical_path_part_seconds", "part=\"host_compute\"") == Approx(0.0363));
  CHECK(Metric(metrics, "gpuwatch_critical_path_part_seconds", "part=\"peer_wait\"") == 0);
  CHECK(Metric(metrics, "gpuwatch_what_if_step_seconds", "finding=\"data_loading\"") == Approx(0.0123));
  CHECK(Metric(metrics, "gpuwatch_what_if_step_seconds", "finding=\"all\"") == Approx(0.0091));
  CHECK(metrics.find("finding=\"launch_bound\"") == std::string::npos);
}

TEST_CASE("collector: an unknown critical path is null in summary.json and absent from the other views") {
  PathJob pj;
  pj.result.critical_path = {};
  pj.result.all_fixed = {};
  for (col::Finding& f : pj.result.findings) f.what_if = {};
  pj.job.critical_path = {};
  pj.job.all_fixed = {};
  pj.job.findings = pj.result.findings;
  const col::JobView view = pj.View();
  const json doc = col::BuildSummaryJson(view, "2000-01-01T00:00:00Z");
  for (const json* o : {&doc["job"], &doc["ranks"][0]}) {
    CHECK((*o)["critical_path"].is_null());
    CHECK((*o)["what_if_all"].is_null());
    for (const json& f : (*o)["findings"]) CHECK(f["what_if"].is_null());
  }
  const std::string text = col::BuildSummaryText(view);
  CHECK(text.find("critical path") == std::string::npos);
  CHECK(text.find("with every fix") == std::string::npos);
  CHECK(text.find("ms a step") == std::string::npos);
  CHECK(col::BuildConsoleText(view).find("fixed:") == std::string::npos);
  const std::string html = col::BuildHtmlReport(doc);
  CHECK(html.find("No critical path") != std::string::npos);
  CHECK(html.find("data-what-if") == std::string::npos);
  col::LiveSnapshot snap;
  snap.ranks.push_back(col::SampleOf(pj.result));
  const std::string metrics = col::FormatPrometheus(snap);
  CHECK(metrics.find("gpuwatch_critical_path") == std::string::npos);
  CHECK(metrics.find("gpuwatch_what_if") == std::string::npos);
}
