// report.html: drawn from a known summary document (every section, every chart's marks,
// hostile strings escaped, nothing fetched), from odd documents (no throw), and from a
// real job fed through the collector; the utilization series it draws (BusySeries).
#include <catch2/catch.hpp>
#include <string>

#include "analyze/busy_series.h"
#include "analyze/job_result.h"
#include "analyze/rank_model.h"
#include "fixtures.h"
#include "report/html_report.h"
#include "report/summary.h"
#include "report/svg_chart.h"

using namespace gwtest;
using nlohmann::json;

namespace {

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

const char* kHostile = "<script>alert(\"x\")</script>&'\x1b";

json Rank(int rank, const std::string& host) {
  json per = {{"gpu_compute", 5.0}, {"comm_not_overlapped", 1.0},
              {"gpu_idle_waiting_for_host", 3.0}, {"gpu_idle_waiting_for_launches", 0.5},
              {"gpu_idle_in_syncs", 0.25}, {"gpu_idle_other", 0.25},
              {"host_blocked_in_syncs", 0.5}, {"copies", 0.75}};
  return {{"rank", rank},
          {"host", host},
          {"pid", 100 + rank},
          {"device", rank},
          {"ended", "normal"},
          {"wall_s", 2.5},
          {"dropped_total", 0},
          {"gpu",
           {{"source", "cupti"},
            {"utilization", 0.5},
            {"utilization_series",
             {{"start_ns", 1'000'000'000 + int64_t{rank} * 20'000'000},
              {"window_s", 0.01},
              {"busy", {0.2, 0.9, 0.5}}}}}},
          {"steps",
           {{"count", 10}, {"source", "nvtx:train_step"}, {"median_ms", 10.5},
            {"per_step_ms", per}}},
          {"collectives",
           {{"all_reduce", {{"count", 10}, {"bytes", 1000}, {"total_s", 0.1},
                            {"algbw_gbps", 5.0}, {"busbw_gbps", 10.0 + rank}}},
            {"broadcast", {{"count", 1}, {"bytes", 8}, {"total_s", 0.0},
                           {"algbw_gbps", 0.0}, {"busbw_gbps", 0.0}}}}}};
}

json KnownSummary() {
  json f1 = {{"id", "data_loading"}, {"title", "data loading"}, {"severity", "high"},
             {"ranks", {0, 1}}, {"time_lost_s", 1.5}, {"share", 0.4},
             {"summary", "GPU idle waiting for the host"},
             {"evidence", {{"gpu_idle_waiting_for_host_s", 1.5}, {"note", kHostile}}},
             {"fix", "use DataLoader(num_workers=...)"}};
  json f2 = {{"id", "sync_stall"}, {"title", "sync stall"}, {"severity", "medium"},
             {"ranks", {1}}, {"time_lost_s", 0.3}, {"share", 0.1},
             {"summary", "host blocked"}, {"evidence", json::object()}, {"fix", "drop .item()"}};
  json job = {{"ranks", 2}, {"world_size", 2}, {"hosts", 2}, {"wall_s", 2.5},
              {"abnormal_ranks", json::array()},
              {"verdict", "GPU busy 50% of the time. Biggest loss: data loading."},
              {"findings", {f1, f2}},
              {"collectives", {{"all_reduce", {{"count", 20}, {"bytes", 2000}, {"total_s", 0.2},
                                               {"algbw_gbps", 5.0}, {"busbw_gbps", 10.5}}}}},
              {"gpu", {{"kernels", {{"count", 30}, {"total_s", 1.0},
                                    {"top", {{{"name", "gemm_kernel"}, {"count", 20}, {"total_s", 0.7}},
                                             {{"name", kHostile}, {"count", 10}, {"total_s", 0.3}}}}}},
                       {"comm_kernels", {{"count", 20}, {"total_s", 0.2}}}}}};
  return {{"schema", "gpuwatch.summary.v1"},
          {"job_id", "job<1>"},
          {"generated_at", "2000-01-01T00:00:00Z"},
          {"ranks", {Rank(0, "node-a"), Rank(1, kHostile)}},
          {"job", job},
          {"hangs", json::array()}};
}

}  // namespace

TEST_CASE("collector: report.html shows every section of a known summary") {
  const std::string h = col::BuildHtmlReport(KnownSummary());
  for (const char* id : {"findings", "verdict", "utilization", "steps", "collectives", "kernels",
                         "ranks"})
    CHECK(Count(h, std::string("id=\"") + id + "\"") == 1);
  CHECK(h.find("GPU busy 50% of the time. Biggest loss: data loading.") != std::string::npos);
  // Findings in the summary's order, with evidence and fix.
  const size_t a = h.find("data-id=\"data_loading\""), b = h.find("data-id=\"sync_stall\"");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  CHECK(a < b);
  CHECK(h.find("GPU idle waiting for the host") != std::string::npos);  // the key's label
  CHECK(h.find("gpu_idle_waiting_for_host_s") == std::string::npos);
  CHECK(h.find("Fix:</b> Use DataLoader(num_workers=...).") != std::string::npos);
  // Charts: one utilization line per rank with its three windows; eight step parts per
  // rank and a median tick; busbw for the timed op only (broadcast had no GPU time).
  CHECK(Count(h, "data-chart=\"util\"") == 2);
  CHECK(Count(h, "data-points=\"3\"") == 2);
  CHECK(Count(h, "data-chart=\"steps\" data-rank=\"0\"") == 8);
  CHECK(Count(h, "data-chart=\"steps\" data-rank=\"1\"") == 8);
  CHECK(Count(h, "data-chart=\"steps-marker\"") == 2);
  CHECK(Count(h, "data-chart=\"busbw\"") == 2);
  CHECK(h.find("data-op=\"all_reduce\" data-rank=\"1\" data-value=\"11\"") != std::string::npos);
  CHECK(h.find("data-op=\"broadcast\"") == std::string::npos);
  CHECK(Count(h, "<tr data-kernel>") == 2);
  CHECK(h.find("<code class=\"name\" title=\"gemm_kernel\">gemm_kernel</code>") != std::string::npos);
  // The step bars' figure is the median the tick marks; the device the ranks' ordinal.
  CHECK(Count(h, ">median 10.5 ms</text>") == 2);
  CHECK(h.find("<td class=\"n\" data-device>1</td>") != std::string::npos);
}

namespace {

// The findings section's text outside tags and outside names (<code>), as a reader sees it.
std::string FindingsText(const std::string& h) {
  const size_t a = h.find("<section id=\"findings\">"), b = h.find("</section>", a);
  std::string text;
  bool in_tag = false;
  int in_code = 0;
  for (size_t i = a; i < b; ++i) {
    if (h.compare(i, 5, "<code") == 0) ++in_code;
    if (h.compare(i, 7, "</code>") == 0) --in_code;
    if (h[i] == '<') in_tag = true;
    if (!in_tag && !in_code) text += h[i];
    if (h[i] == '>') in_tag = false;
  }
  return text;
}

}  // namespace

TEST_CASE("collector: report.html tells findings in sentences, explained ones inside their loss") {
  json s = KnownSummary();
  json& f = s["job"]["findings"];
  f[0]["evidence"] = {{"gpu_idle_waiting_for_host_s", 1.5},
                      {"per_step_ms", 150.0},
                      {"time_lost_s_by_rank", {{"0", 1.5}, {"1", 1.25}}},
                      {"throttled_samples", {{"power", 3}, {"thermal", 0}}},
                      {"brand_new_key_s", 0.25},
                      {"time_lost", "time_lost_s over ranks"},
                      {"host_frames", {{{"where", "proj/train.py:9 in load_batch"}, {"share", 0.75}},
                                       {{"where", "(no frame)"}, {"share", 0.25}}}}};
  f.push_back({{"id", "input_io"}, {"title", "input pipeline CPU-bound"}, {"severity", "high"},
               {"ranks", {0, 1}}, {"time_lost_s", 1.5}, {"share", 0.4},
               {"summary", "while the GPU waited, the host kept 1.00 cores busy"},
               {"evidence", {{"verdict", "cpu_bound"}, {"cpu_cores_busy_in_gaps", 1.0}}},
               {"fix", "more DataLoader workers"}});
  const std::string h = col::BuildHtmlReport(s);
  // One loss, told once: input_io inside data_loading, no second "cost" sentence.
  CHECK(Count(h, "data-finding") == 2);
  const size_t dl = h.find("data-id=\"data_loading\""), why = h.find("data-explains data-id=\"input_io\"");
  REQUIRE(why != std::string::npos);
  CHECK(dl < why);
  CHECK(why < h.find("data-id=\"sync_stall\""));
  CHECK(Count(h, " cost ") == 2);
  CHECK(h.find("Data loading cost 1.500 s, 40% of the time measured (150.000 ms per step), on ranks 0, 1.") !=
        std::string::npos);
  CHECK(h.find("Why: input pipeline CPU-bound") != std::string::npos);
  // Evidence in labels and units: a per-rank map on one line, a nested object inline, an
  // unknown key readable, a note about JSON keys left out, the unnamed frame in words.
  CHECK(h.find("rank 0 1.500 s, rank 1 1.250 s") != std::string::npos);
  CHECK(h.find("power cap 3 \xc2\xb7 temperature 0") != std::string::npos);
  CHECK(h.find("<th>brand new key</th><td>250.000 ms</td>") != std::string::npos);
  CHECK(h.find("cpu bound") != std::string::npos);
  CHECK(h.find("code gpuwatch could not name") != std::string::npos);
  const std::string text = FindingsText(h);
  INFO(text);
  CHECK(text.find('{') == std::string::npos);
  for (const json& x : f)
    for (auto it = x["evidence"].begin(); it != x["evidence"].end(); ++it)
      if (it.key().find('_') != std::string::npos) {  // "verdict" is a word as well as a key
        INFO(it.key());
        CHECK(text.find(it.key()) == std::string::npos);
      }
  CHECK(text.find("(no frame)") == std::string::npos);
}

TEST_CASE("collector: report.html shortens a 4 KiB kernel name, full name on hover") {
  namespace html = gpuwatch::collector::html;
  json s = KnownSummary();
  const std::string name = "void cutlass::Kernel<" + std::string(4096, 'x') + ">(Params)";
  s["job"]["gpu"]["kernels"]["top"][0]["name"] = name;
  s["ranks"][0]["device"] = {{"samples", 3}};  // NVML's figures where the ordinal was: no ordinal
  s["ranks"][1]["device_state"] = {{"samples", 2}, {"utilization", 0.06}};  // NVML's figures by their name
  const std::string h = col::BuildHtmlReport(s);
  CHECK(h.find("<td class=\"n\">6%</td>") != std::string::npos);
  CHECK(h.find("title=\"" + html::Esc(name) + "\">cutlass::Kernel&lt;\xe2\x80\xa6&gt;(\xe2\x80\xa6)</code>") !=
        std::string::npos);
  CHECK(h.find("<td class=\"n\" data-device>-</td>") != std::string::npos);
  // Every chart comes with its legend just before it.
  size_t charts = 0;
  for (size_t p = h.find("<svg"); p != std::string::npos; p = h.find("<svg", p + 1), ++charts) {
    const size_t legend = h.rfind("<div class=\"legend\">", p);
    REQUIRE(legend != std::string::npos);
    CHECK(h.find("</div>", legend) + 6 == p);
  }
  CHECK(charts >= 3);
}

TEST_CASE("collector: report.html escapes what ranks send and fetches nothing") {
  const std::string h = col::BuildHtmlReport(KnownSummary());
  CHECK(h.find("<script") == std::string::npos);
  CHECK(h.find("\x1b") == std::string::npos);
  CHECK(h.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;?") !=
        std::string::npos);
  CHECK(h.find("job&lt;1&gt;") != std::string::npos);
  // No external resource: the only URL is the SVG namespace name, which is never fetched.
  for (const char* bad : {"src=", "href=", "@import", "url(", "<link", "<img", "<iframe"})
    CHECK(h.find(bad) == std::string::npos);
  CHECK(Count(h, "http") == Count(h, "http://www.w3.org/2000/svg") + 1);  // + the CSP meta
  CHECK(h.find("default-src 'none'") != std::string::npos);
}

TEST_CASE("collector: report.html draws what an odd summary has, without throwing") {
  for (const json& doc :
       {json::object(), json(nullptr), json::array(),
        json{{"ranks", 5}, {"job", "x"}, {"hangs", {1, 2}}},
        json{{"ranks", {{{"rank", "zero"}, {"gpu", {{"utilization_series", {{"busy", "x"}}}}},
                         {"steps", {{"per_step_ms", {{"gpu_compute", "a"}}}}},
                         {"collectives", {{"all_reduce", 3}}}}}},
             {"job", {{"findings", {1, "x", {{"evidence", 4}}}}}}}}) {
    INFO(doc.dump());
    std::string h;
    REQUIRE_NOTHROW(h = col::BuildHtmlReport(doc));
    CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(h.find("</html>") != std::string::npos);
  }
  const std::string empty = col::BuildHtmlReport(json::object());
  CHECK(empty.find("No device timeline") != std::string::npos);
  CHECK(empty.find("No steps found") != std::string::npos);
}

TEST_CASE("collector: report.html draws at most kHtmlMaxChartRanks ranks per chart") {
  json s = KnownSummary();
  s["ranks"] = json::array();
  for (int r = 0; r < 70; ++r) s["ranks"].push_back(Rank(r, "h"));
  const std::string h = col::BuildHtmlReport(s);
  CHECK(Count(h, "data-chart=\"util\"") == col::kHtmlMaxChartRanks);
  CHECK(Count(h, "data-chart=\"steps-marker\"") == col::kHtmlMaxChartRanks);
  CHECK(Count(h, "data-chart=\"busbw\"") == col::kHtmlMaxChartRanks);
  CHECK(Count(h, "6 more ranks not drawn") == 2);  // utilization and steps
}

TEST_CASE("collector: Esc escapes markup and control characters") {
  namespace html = gpuwatch::collector::html;
  CHECK(html::Esc("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&#39;");
  CHECK(html::Esc(std::string("x\0y\x7f\tz", 6)) == "x?y?\tz");
  CHECK(html::Attr("data-x", "<") == " data-x=\"&lt;\"");
}

TEST_CASE("collector: BusySeries windows busy time and folds windows past its bound") {
  constexpr uint64_t kMs = 1'000'000;
  col::BusySeries s;
  CHECK(s.empty());
  CHECK(s.size() == 0);
  s.Add(100 * kMs, 105 * kMs);  // half of window 0
  s.Add(108 * kMs, 125 * kMs);  // 2 ms of window 0, all of 1, half of 2
  CHECK(s.origin_ns() == 100 * kMs);
  CHECK(s.window_ns() == 10 * kMs);
  REQUIRE(s.size() == 3);
  CHECK(s.Fraction(0) == Approx(0.7));
  CHECK(s.Fraction(1) == Approx(1.0));
  CHECK(s.Fraction(2) == Approx(1.0));  // the last window counts up to the end only
  s.Add(50 * kMs, 101 * kMs);           // before the origin (a late record): clipped
  CHECK(s.Fraction(0) == Approx(0.8));

  // Past 512 windows the width doubles; total busy time is kept.
  col::BusySeries l;
  for (uint64_t t = 0; t < 20'000; ++t) l.Add(t * 10 * kMs, t * 10 * kMs + 5 * kMs);  // 200 s
  CHECK(l.size() <= col::BusySeries::kMaxWindows);
  CHECK(l.window_ns() == 640 * kMs);
  double busy = 0;
  for (size_t i = 0; i < l.size(); ++i) busy += l.Fraction(i) * static_cast<double>(l.window_ns());
  CHECK(busy == Approx(20'000 * 5.0 * kMs).epsilon(0.01));
  for (size_t i = 0; i + 1 < l.size(); ++i) CHECK(l.Fraction(i) == Approx(0.5));
}

TEST_CASE("collector: the device timeline gives report.html its utilization series") {
  constexpr uint64_t kMs = 1'000'000;
  col::RankModel t;
  wire::Batch b;
  for (uint64_t i = 0; i < 10; ++i) {  // 10 ms busy out of every 20, for 200 ms
    auto* a = b.add_activities();
    a->set_kind(wire::ACTIVITY_KERNEL);
    a->set_start_ns(1000 * kMs + i * 20 * kMs);
    a->set_end_ns(1000 * kMs + i * 20 * kMs + 10 * kMs);
  }
  t.OnBatch(b);
  const col::GpuFigures& st = t.Result().gpu;
  REQUIRE(st.series.size() == 19);
  CHECK(st.series.origin_ns() == 1000 * kMs);
  for (size_t i = 0; i < st.series.size(); ++i) CHECK(st.series.Fraction(i) == (i % 2 ? 0 : 1));
  // Job totals merge ranks on different clocks: no series there.
  col::GpuFigures job;
  job.Merge(st);
  CHECK(job.series.empty());
}

TEST_CASE("collector: a job fed through the collector renders report.html") {
  col::JobTable jobs(col::JobTiming{});
  constexpr uint64_t kMs = 1'000'000;
  for (int rank = 0; rank < 2; ++rank) {
    FakeRank r(jobs, Hello("html-job", rank, 2));
    wire::Batch b;
    auto* k = b.add_kernel_names();
    k->set_id(1);
    k->set_name("_Z6kernelPf");
    for (uint64_t i = 0; i < 30; ++i) {
      auto* a = b.add_activities();
      a->set_kind(wire::ACTIVITY_KERNEL);
      a->set_name_id(1);
      a->set_start_ns(5000 * kMs + i * 10 * kMs);
      a->set_end_ns(5000 * kMs + i * 10 * kMs + 4 * kMs);
    }
    REQUIRE(r.SendBatch(b));
    r.Goodbye();
    r.Close();
  }
  const col::Job* job = jobs.Find("html-job");
  REQUIRE(job);
  const json doc = SummaryJson(*job, "2000-01-01T00:00:00Z");
  for (const json& r : doc["ranks"]) {
    const json& ser = r["gpu"]["utilization_series"];
    REQUIRE(ser.is_object());
    CHECK(ser["window_s"] == 0.01);
    CHECK(ser["busy"].size() == 30);
    CHECK(ser["busy"][0] == 0.4);
  }
  CHECK(doc["job"]["gpu"]["utilization_series"].is_null());
  const col::RenderedSummary rs = col::SummarizeJob(*job);
  CHECK(Count(rs.html, "data-chart=\"util\"") == 2);
  CHECK(rs.html.find("title=\"kernel(float*)\">kernel(\xe2\x80\xa6)</code>") != std::string::npos);
}
