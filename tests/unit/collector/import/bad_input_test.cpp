// What `gpuwatch import` does with input it cannot use: one line naming the file and why,
// exit status 2, nothing written.
#include <catch2/catch.hpp>

#include <fstream>

#include "import_fixture.h"
#include "procs.h"

using namespace gwtest;

namespace {

std::string WriteFile(const TempDir& tmp, const std::string& name, const std::string& bytes) {
  const std::string path = tmp.path + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The importer's verdict on one file: false and the error line, or true.
bool Import(const std::string& path, std::string* error) {
  col::JobTable jobs(col::JobTiming{});
  col::RankImportStats s;
  const bool ok = col::ImportRankTrace(path, col::RankImportOptions{}, jobs, &s, error);
  if (!ok) CHECK(jobs.empty());  // nothing reached the job table
  return ok;
}

}  // namespace

TEST_CASE("collector: import refuses bad input with one line naming the file and the cause") {
  TempDir tmp;
  const std::string gz = ReadBytes(KinetoTrace("alexnet_a100.json.gz"));
  struct Case {
    std::string name, bytes, says;
  };
  const Case cases[] = {
      {"cut.json.gz", gz.substr(0, gz.size() / 2), "truncated gzip"},
      {"notjson.json", "<html>not a trace</html>", "not valid JSON"},
      {"other.json", R"({"loss": [0.5, 0.4], "config": {"lr": 0.1}})", "no traceEvents"},
      {"cpu_only.json",
       R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2},
                           {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 1,
                            "args": {"correlation": 1}}]})",
       "no GPU events"},
      {"empty.json", "", "not valid JSON"},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::string path = WriteFile(tmp, c.name, c.bytes);
      std::string error;
      CHECK_FALSE(Import(path, &error));
      CHECK_THAT(error, Catch::StartsWith(path + ": ") && Catch::Contains(c.says));
      CHECK(error.find('\n') == std::string::npos);
    }
  }
  SECTION("missing file") {
    std::string error;
    CHECK_FALSE(Import(tmp.path + "/nope.json", &error));
    CHECK_THAT(error, Catch::Contains("cannot open") && Catch::Contains("nope.json"));
  }
}

TEST_CASE("collector: import keeps what it can of odd input: unknown categories, events out of order") {
  TempDir tmp;
  // A kernel before its launch in the file, the launch after the copy, an unknown category.
  const std::string path = WriteFile(tmp, "odd.json", R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k2", "ts": 30, "dur": 10, "args": {"correlation": 2, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k1", "ts": 5, "dur": 10, "args": {"correlation": 1, "stream": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 20, "dur": 2, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "mystery_cat", "name": "x", "ts": 3, "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "no_time", "args": {"correlation": 3}}
  ]})");
  const Imported got = ImportTraces({path});
  const auto& r = got.summary["ranks"][0];
  CHECK(r["kernels"]["launches"] == 2);
  CHECK(r["gpu"]["kernels"]["count"] == 2);
  CHECK(r["gpu"]["busy_s"].get<double>() == Approx(20e-6));
  CHECK(r["gpu"]["late_records"] == 0);
  CHECK(got.stats[0].untimed == 1);
  CHECK(got.stats[0].unknown_categories.at("mystery_cat") == 1);
  bool said = false;
  for (const std::string& n : got.stats[0].notes) said = said || n.find("\"mystery_cat\"") != std::string::npos;
  CHECK(said);
}

TEST_CASE("gpuwatch: import of a bad trace exits 2 with one line, a good one writes the files of a run") {
  TempDir tmp;
  const std::string bad = WriteFile(tmp, "other.json", R"({"metrics": 1})");
  CmdResult r = RunCmd({GW_GPUWATCH_BIN, "import", bad, "-o", tmp.path + "/out"}, tmp.path);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains(bad + ": not a torch.profiler"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(tmp.path + "/out/summary.json"));

  r = RunCmd({GW_GPUWATCH_BIN, "import", KinetoTrace("alexnet_a100.json.gz"), "-o", tmp.path + "/out"}, tmp.path);
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("gpuwatch summary: job import"));
  for (const char* f : {"summary.json", "summary.txt", "report.html", "trace.perfetto-trace"})
    CHECK(std::filesystem::exists(tmp.path + "/out/" + f));
}
