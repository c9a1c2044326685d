// Reading a run for `gpuwatch diff`: what LoadSummary refuses (one line naming the file),
// and the per-step, per-rank figures ExtractFigures takes from a document, including one
// the collector itself wrote.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "compare/run_figures.h"
#include "compare/summary_diff.h"
#include "fixtures.h"
#include "step_loop.h"
#include "summaries.h"

namespace fs = std::filesystem;
using namespace gpuwatch::collector::compare;
using gwdiff::Doc;
using nlohmann::json;

namespace {

std::string TempDir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("gw-diff-unit-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// LoadSummary's error for `path`; the test fails if it loads.
std::string LoadError(const std::string& path) {
  json doc;
  std::string error;
  CHECK_FALSE(LoadSummary(path, &doc, &error));
  CHECK(error.find('\n') == std::string::npos);
  return error;
}

}  // namespace

TEST_CASE("collector: diff loads a summary from its folder or the file itself") {
  const std::string dir = TempDir("load");
  Write(dir + "/summary.json", Doc().dump());
  json doc;
  std::string error;
  CHECK(LoadSummary(dir, &doc, &error));
  CHECK(doc["job_id"] == "job-a");
  CHECK(LoadSummary(dir + "/summary.json", &doc, &error));
  fs::remove_all(dir);
}

TEST_CASE("collector: diff refuses bad input with one line naming the file") {
  const std::string dir = TempDir("bad");
  CHECK_THAT(LoadError(dir), Catch::Contains(dir + ": no summary.json in this folder"));
  CHECK_THAT(LoadError(dir + "/nothing"), Catch::Contains("no such file or folder"));

  json other = Doc();
  other["schema"] = "gpuwatch.summary.v2";
  Write(dir + "/v2.json", other.dump());
  CHECK_THAT(LoadError(dir + "/v2.json"),
             Catch::Contains("schema \"gpuwatch.summary.v2\", this gpuwatch reads \"gpuwatch.summary.v1\""));

  const std::string whole = Doc().dump(1);
  Write(dir + "/cut.json", whole.substr(0, whole.size() / 2));
  CHECK_THAT(LoadError(dir + "/cut.json"), Catch::Contains("cut.json: truncated (the JSON ends early"));

  Write(dir + "/garbage.json", "{\"schema\": oops}");
  CHECK_THAT(LoadError(dir + "/garbage.json"), Catch::Contains("not valid JSON"));
  Write(dir + "/empty.json", "\n");
  CHECK_THAT(LoadError(dir + "/empty.json"), Catch::Contains("empty file"));
  Write(dir + "/array.json", "[1, 2]");
  CHECK_THAT(LoadError(dir + "/array.json"), Catch::Contains("not a gpuwatch summary"));
  Write(dir + "/noschema.json", "{\"job\": {}}");
  CHECK_THAT(LoadError(dir + "/noschema.json"), Catch::Contains("no \"schema\" key"));
  json partial = Doc();
  partial.erase("ranks");
  Write(dir + "/partial.json", partial.dump());
  CHECK_THAT(LoadError(dir + "/partial.json"), Catch::Contains("incomplete summary"));
  fs::remove_all(dir);
}

TEST_CASE("collector: diff figures are per step and the median over ranks") {
  json doc = Doc(50);
  // Rank 1 has 100 steps (a rank that ran longer) and twice the sync time per step.
  doc["ranks"][1]["steps"]["count"] = 100;
  doc["ranks"][1]["sync"]["by_api"]["cudaStreamSynchronize"] = {{"count", 100}, {"total_s", 1.0}};
  doc["ranks"][0]["steps"]["p90_ms"] = 30.0;
  const RunFigures f = ExtractFigures(doc, "here");
  CHECK(f.path == "here");
  CHECK(f.steps == 50);
  CHECK(f.steps_source == "nvtx:train_step");
  CHECK(f.step_median_ms == 20.0);
  CHECK(f.step_p90_ms == 30.0);  // the upper median of 22 and 30, as the job's median step
  REQUIRE(f.sync.count("cudaStreamSynchronize"));
  // Rank 0: 5 ms/step, rank 1: 10 ms/step; the upper median of two.
  CHECK(f.sync.at("cudaStreamSynchronize").blocked_ms_per_step == Approx(10.0));
  CHECK(f.sync.at("cudaStreamSynchronize").calls_per_step == Approx(1.0));
  CHECK(f.copies.at("h2d").mb_per_step == Approx(4.0));
  CHECK(f.copies.at("h2d").pageable_share == 0.0);
  CHECK(f.collectives.at("allreduce").gpu_ms_per_step == Approx(2.0));
  CHECK(f.collectives.at("allreduce").busbw_gbps == 80.0);
  // The job's top kernels per step and per rank: 24 ms/step over 2 ranks.
  CHECK(f.kernels.at("fwd").gpu_ms_per_step == Approx(12.0));
  CHECK(f.step_parts.at("gpu_compute") == 12.0);
  CHECK(f.launches_per_step == Approx(10.0));
  REQUIRE(f.gpu_busy);
  CHECK(*f.gpu_busy == 0.8);
  CHECK(f.environment.at("CUDA runtime") == "13.0");
  CHECK(f.environment.at("world size") == "2");
  CHECK(f.environment.at("devices") == "node1: 0,1");
}

TEST_CASE("collector: diff names a call site by its Python line, else its frame without offset") {
  CHECK(CallSiteKey("train.py:42 in step", {"f+0x10 (a.so)"}) == "train.py:42 in step");
  CHECK(CallSiteKey("", {"play(int)+0x15a3 (app)", "main+0x9 (app)"}) == "play(int) (app)");
  CHECK(CallSiteKey("", {"libc.so.6+0x2724a"}) == "libc.so.6");
  // An innermost frame without a symbol (a static function) takes its first named caller.
  CHECK(CallSiteKey("", {"app+0x1a9df", "play(int)+0xb6f (app)", "main+0x9 (app)"}) ==
        "app, called from play(int) (app)");
  CHECK(CallSiteKey("", {"app+0x1a9df", "libc.so.6+0x2724a"}) == "app");
  CHECK(CallSiteKey("", {}) == "?");
}

TEST_CASE("collector: diff reads call sites and environment settings of the ranks") {
  json doc = Doc();
  for (int r = 0; r < 2; ++r)
    doc["ranks"][r]["findings"] = {
        {{"id", "sync_stall"},
         {"evidence",
          {{"call_site",
            {{"python", nullptr}, {"frames", {"step()+0x1" + std::to_string(r) + " (app)"}},
             {"calls", 50}, {"blocked_s", 0.1 * (r + 1)}}}}}}};
  doc["ranks"][1]["environment"]["settings"]["NCCL_P2P_DISABLE"] = "1";
  const RunFigures f = ExtractFigures(doc, "x");
  REQUIRE(f.call_sites.size() == 1);  // one site: the offsets differ, the function not
  const CallSiteFigures& c = f.call_sites.begin()->second;
  CHECK(f.call_sites.begin()->first == "step() (app)");
  CHECK(c.blocked_ms_per_step == Approx(4.0));  // the rank where it blocked most: 0.2 s / 50
  CHECK(c.calls_per_step == Approx(1.0));
  CHECK(f.environment.at("NCCL_P2P_DISABLE") == "1 (unset on some ranks)");
}

TEST_CASE("collector: diff reads what the collector writes") {
  // Two real jobs through the collector: 10 steps of 2 ms host work + a 5 ms kernel, and
  // the same with 8 ms of host work. The diff must see the steps and the data loading.
  using namespace gpuwatch::collector::test_loop;
  json docs[2];
  for (int i = 0; i < 2; ++i) {
    gwtest::col::JobTable jobs(gwtest::col::JobTiming{});
    const std::string id = "real-" + std::to_string(i);
    gwtest::FakeRank r(jobs, gwtest::Hello(id, 0, 1));
    REQUIRE(r.SendBatch(Loop(10, i == 0 ? 2 : 8, 5)));
    r.Goodbye();
    r.Close();
    const gwtest::col::Job* job = jobs.Find(id);
    REQUIRE(job);
    docs[i] = gwtest::SummaryJson(*job);
  }
  const RunFigures a = ExtractFigures(docs[0], "a"), b = ExtractFigures(docs[1], "b");
  CHECK(a.steps == 10);
  CHECK(a.steps_source == "nvtx:train_step");
  CHECK(a.step_median_ms == Approx(7.03).margin(0.1));
  CHECK(b.step_median_ms == Approx(13.03).margin(0.1));
  CHECK(a.sync.count("cudaStreamSynchronize") == 1);
  CHECK(a.step_parts.count("gpu_compute") == 1);
  const SummaryDiff d = CompareRuns(a, b);
  CHECK(d.comparable);
  CHECK(d.headline.kind == "finding");
  CHECK(d.headline.key == "data_loading");
  CHECK(*d.step_median_ms.Delta() == Approx(6.0).margin(0.1));
}
