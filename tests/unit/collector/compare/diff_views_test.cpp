// The diff's views: the text opens with the headline and keeps to 80 columns below it, the
// JSON has every documented key (docs/diff.md), the page is self-contained and escapes
// what runs send.
#include <catch2/catch.hpp>

#include <sstream>

#include "compare/diff_views.h"
#include "summaries.h"

using namespace gpuwatch::collector::compare;
using gwdiff::AddFinding;
using gwdiff::Doc;
using nlohmann::json;

namespace {

const char* kHostile = "<script>alert(\"x\")</script>&'\x1b";

SummaryDiff Changed() {
  json a = Doc(), b = Doc();
  AddFinding(a, "communication", "medium", 2.0);
  AddFinding(b, "communication", "medium", 2.0);
  AddFinding(b, "sync_stall", "high", 8.5, "host waiting on the GPU (syncs)");
  gwdiff::SetStepMedian(b, 26.0);
  b["job"]["gpu"]["kernels"]["top"].push_back({{"name", kHostile}, {"count", 50}, {"total_s", 0.05}});
  for (json& r : b["ranks"]) r["environment"]["settings"]["NCCL_ALGO"] = kHostile;
  return CompareRuns(ExtractFigures(a, "runs/base"), ExtractFigures(b, "runs/new"));
}

std::vector<RuleResult> Gate(const SummaryDiff& d) {
  GateRule r;
  std::string e;
  REQUIRE(ParseRule("step_time>+5%", &r, &e));
  return CheckRules(d, {r});
}

}  // namespace

TEST_CASE("collector: diff text opens with the headline, then fits 80 columns") {
  const SummaryDiff d = Changed();
  const std::string text = DiffText(d, Gate(d));
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  CHECK(line == d.headline.text);
  CHECK_THAT(line, Catch::Contains("sync_stall new, 8.50 ms/step"));
  bool in_gate = false;
  while (std::getline(in, line)) {
    if (line == "gate:") in_gate = true;
    if (!in_gate) CHECK(line.size() <= 80);
    CHECK(line.find('\x1b') == std::string::npos);
  }
  for (const char* section : {"findings, ms per step", "where the step goes", "syncs:", "copies:",
                              "collectives:", "kernels:", "environment:", "gate:"})
    CHECK_THAT(text, Catch::Contains(section));
  CHECK_THAT(text, Catch::Contains("step_time>+5%: tripped: step time median 20.00 -> 26.00 ms, +30.0%"));
}

TEST_CASE("collector: diff JSON has the documented keys") {
  const SummaryDiff d = Changed();
  const json j = DiffJson(d, Gate(d));
  CHECK(j["schema"] == "gpuwatch.diff.v1");
  for (const char* k : {"base", "new", "comparable", "not_comparable", "gpu_comparable", "notes",
                        "noise_ms_per_step", "headline", "step_time", "gpu_busy_pct", "launches_per_step",
                        "step_parts_ms", "findings", "sync", "copies", "collectives", "kernels",
                        "call_sites", "environment", "gate"})
    CHECK(j.contains(k));
  CHECK(j["base"]["path"] == "runs/base");
  CHECK(j["headline"]["kind"] == "finding");
  CHECK(j["headline"]["key"] == "sync_stall");
  CHECK(j["headline"]["ms_per_step"]["after"] == 8.5);
  CHECK(j["step_time"]["median_ms"]["delta_pct"] == Approx(30.0));
  const json& f = j["findings"][0];
  CHECK(f["id"] == "sync_stall");
  CHECK(f["trend"] == "new");
  CHECK(f["severity_before"].is_null());
  CHECK(f["ms_per_step"]["before"] == 0.0);
  CHECK(j["gate"][0]["tripped"] == true);
  CHECK(j["gate"][0]["rule"] == "step_time>+5%");
}

TEST_CASE("collector: diff JSON of runs that do not compare has no per-step numbers") {
  json a = Doc(), b = Doc();
  b["job"]["steps"] = {{"count", 0}, {"source", "none"}, {"median_ms", 0}};
  const SummaryDiff d = CompareRuns(ExtractFigures(a, "a"), ExtractFigures(b, "b"));
  const json j = DiffJson(d, {});
  CHECK(j["comparable"] == false);
  CHECK(j["not_comparable"].size() == 1);
  CHECK(j["step_time"]["median_ms"]["before"].is_null());
  CHECK(j["step_time"]["median_ms"]["delta"].is_null());
  CHECK(j["sync"].empty());
  const std::string text = DiffText(d, {});
  CHECK(text.rfind("gpuwatch diff: not comparable: NEW has no steps", 0) == 0);
  CHECK(text.find("step time median") == std::string::npos);
}

TEST_CASE("collector: diff page is self-contained and escapes what runs send") {
  const SummaryDiff d = Changed();
  const std::string page = DiffHtml(d, Gate(d));
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("src=") == std::string::npos);
  // The only address is the SVG namespace, which names and fetches nothing.
  size_t http = 0, svg = 0;
  for (size_t p = page.find("://"); p != std::string::npos; p = page.find("://", p + 1)) ++http;
  for (size_t p = page.find("http://www.w3.org/2000/svg"); p != std::string::npos;
       p = page.find("http://www.w3.org/2000/svg", p + 1))
    ++svg;
  CHECK(http == svg);
  CHECK(page.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;?") != std::string::npos);
  CHECK(page.find("id=\"headline\" data-kind=\"finding\" data-key=\"sync_stall\"") != std::string::npos);
  CHECK(page.find("data-name=\"sync_stall\" data-trend=\"new\"") != std::string::npos);
  CHECK(page.find("data-rule data-trend=\"tripped\"") != std::string::npos);
  for (const char* id : {"step-bars", "findings", "step_parts", "kernels", "environment", "gate"})
    CHECK(page.find(std::string("id=\"") + id + "\"") != std::string::npos);
  CHECK(page.find("data-chart=\"steps\"") != std::string::npos);  // report.html's stacked bars
}

namespace {

// The job's critical path (the median rank's): `host` ms of host work and 10 of GPU compute
// a step, and the step predicted with every fix.
void SetPath(json& doc, double host, double all_fixed) {
  json parts = {{"host_compute_ms", host}, {"launch_overhead_ms", 0.0}, {"sync_ms", 0.0}, {"gpu_compute_ms", 10.0},
                {"copies_ms", 0.0}, {"communication_ms", 0.0}, {"peer_wait_ms", 0.0}};
  doc["job"]["critical_path"] = {{"steps", 50}, {"step_ms", host + 10}, {"path_ms", host + 10}, {"alone_ms", host + 10},
                                 {"parts", parts}, {"gpu_streams", json::array()}};
  doc["job"]["what_if_all"] = {{"step_ms", all_fixed}, {"speedup", (host + 10) / all_fixed}, {"assumes", "every fix"},
                               {"then_paced_by", "gpu_compute"}};
}

}  // namespace

TEST_CASE("collector: the diff reports the critical path's change, part by part, and the largest") {
  json a = Doc(), b = Doc();
  SetPath(a, 30, 12);
  SetPath(b, 8, 11);
  const SummaryDiff d = CompareRuns(ExtractFigures(a, "a"), ExtractFigures(b, "b"));
  REQUIRE(d.path_parts.size() == 7);
  CHECK(d.path_parts.front().part == "host_compute");
  CHECK(*d.path_parts.front().ms.Delta() == Approx(-22));
  CHECK(d.path_parts.front().trend == Trend::kShrunk);
  CHECK(*d.path_step_ms.before == Approx(40));
  CHECK(*d.path_step_ms.after == Approx(18));
  CHECK(LargestPathChange(d) == "host_compute -22.00 ms per step");

  const std::string text = DiffText(d, {});
  INFO(text);
  CHECK(text.find("critical path, ms per step (the job's path) (largest change: host_compute -22.00 ms per step):") !=
        std::string::npos);
  CHECK(text.find("step with every fix") != std::string::npos);
  const json j = DiffJson(d, {});
  CHECK(j["critical_path"]["largest_change"] == "host_compute");
  CHECK(j["critical_path"]["step_ms"]["delta"].get<double>() == Approx(-22));
  CHECK(j["critical_path"]["parts_ms"][0]["part"] == "host_compute");
  CHECK(j["critical_path"]["parts_ms"][0]["ms"]["before"].get<double>() == Approx(30));
  CHECK(j["critical_path"]["what_if_all_step_ms"]["after"].get<double>() == Approx(11));
  const std::string page = DiffHtml(d, {});
  CHECK(page.find("data-chart=\"path\" data-rank=\"1\" data-part=\"host_compute_ms\" data-value=\"8\"") !=
        std::string::npos);
  CHECK(page.find("Largest change: host_compute -22.00 ms per step.") != std::string::npos);

  // A run without a critical path: its side is absent, no part is compared, none is largest.
  json c = Doc();
  const SummaryDiff e = CompareRuns(ExtractFigures(c, "c"), ExtractFigures(b, "b"));
  CHECK(e.path_parts.empty());
  CHECK_FALSE(e.path_step_ms.before);
  const json je = DiffJson(e, {});
  CHECK(je["critical_path"]["largest_change"].is_null());
  CHECK(je["critical_path"]["parts_ms"].empty());
  CHECK(DiffText(e, {}).find("critical path, ms per step (the job's path) (not known in the base run):") != std::string::npos);
  // Neither has one: no section at all.
  CHECK(DiffText(CompareRuns(ExtractFigures(c, "c"), ExtractFigures(Doc(), "d")), {}).find("critical path") ==
        std::string::npos);
}
