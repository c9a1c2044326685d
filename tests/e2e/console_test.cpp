// What `gpuwatch run` and `gpuwatch report` print: the short form (the verdict, the top
// findings with their fixes, the ranks that stand out) in at most 30 lines whatever the rank
// count, summary.txt whole with -v, and last the line that says where the files are (alone
// with -q); a command that is not found leaves nothing behind (docs/console.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "subprocess.h"

namespace fs = std::filesystem;
using namespace gpuwatch::e2e;
using nlohmann::json;

namespace {

const std::string kGpuwatch = GPUWATCH_BIN_DIR "/gpuwatch";
const std::string kScenario = GPUWATCH_BIN_DIR "/gpuwatch-scenario";

std::vector<std::string> LinesOf(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

bool Has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

std::string FilesLine(const std::string& out) {
  return "files: " + out + "/summary.txt (every rank), " + out + "/report.html, " + out + "/trace.perfetto-trace";
}

// 8 ranks, a short loop; rank 5's host work takes three times the others', so they wait for
// it in every all-reduce: it stands out (a straggler, its GPU idle while theirs wait).
std::string EightRanks(const std::string& dir) {
  const std::string path = dir + "/eight.json";
  std::ofstream(path) << R"({"name": "eight", "ranks": 8, "steps": 12,
    "step": [{"op": "host", "ms": 3}, {"op": "kernels", "count": 2, "us": 500},
             {"op": "allreduce", "bytes": 1048576}, {"op": "sync"}],
    "rank_scale": {"5": {"host": 4}}})";
  return path;
}

RunResult RunJob(const std::string& out, const std::string& scenario, const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {kGpuwatch, "run", "-o", out};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", kScenario, "--sim", scenario});
  return Run(argv, {}, 180);
}

}  // namespace

TEST_CASE("console: 8 ranks print at most 30 lines, the ranks that stand out, the files last, -v every rank") {
  const std::string work = FreshDir("console-eight");
  const std::string out = work + "/out";
  const RunResult r = RunJob(out, EightRanks(work), {});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> lines = LinesOf(r.out);
  CHECK(lines.size() <= 30);
  REQUIRE(!lines.empty());
  CHECK(lines.front().rfind("gpuwatch summary: job ", 0) == 0);
  CHECK(lines.back() == FilesLine(out));
  const json summary = json::parse(ReadFile(out + "/summary.json"));
  REQUIRE(summary["ranks"].size() == 8);
  // The verdict as summary.json has it (its first words: the text wraps it).
  const std::string verdict = summary["job"]["verdict"];
  CHECK(Has(r.out, verdict.substr(0, std::min<size_t>(40, verdict.size()))));
  // Rank 5 stands out; the others are one line; no rank's tables.
  CHECK(Has(r.out, "ranks that stand out: "));
  CHECK(std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("  rank 5: ", 0) == 0; }));
  CHECK(Has(r.out, "  the other "));
  CHECK_FALSE(Has(r.out, "rank 0 of 8"));
  CHECK_FALSE(Has(r.out, "sync (host blocked on the GPU)"));

  // gpuwatch report prints the same short form of the same job, and the files it wrote.
  const RunResult again = Run({kGpuwatch, "report", out, "-o", work + "/again"}, {}, 60);
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(LinesOf(again.out).size() <= 30);
  CHECK(LinesOf(again.out).back() == FilesLine(work + "/again"));
  CHECK(again.out.rfind("gpuwatch summary: job " + summary["job_id"].get<std::string>() + ": 8 ranks of 8", 0) == 0);

  // -v: summary.txt whole, every rank's block, then the files line.
  const RunResult full = Run({kGpuwatch, "report", "-v", out, "-o", work + "/full"}, {}, 60);
  REQUIRE(full.exit_code == 0);
  CHECK(full.out == ReadFile(work + "/full/summary.txt") + FilesLine(work + "/full") + "\n");
  for (int k = 0; k < 8; ++k) CHECK(Has(full.out, "rank " + std::to_string(k) + " of 8"));
}

TEST_CASE("console: one rank shows the verdict and the top finding's fix, -v is summary.txt, -q the files line") {
  const std::string work = FreshDir("console-one");
  // One rank whose data loading starves the GPU (input_io, when measured, says why).
  const std::string scenario = GPUWATCH_SCENARIOS_DIR "/dataloader_bound.json";
  const RunResult r = RunJob(work + "/short", scenario, {});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json summary = json::parse(ReadFile(work + "/short/summary.json"));
  REQUIRE(summary["ranks"].size() == 1);
  const json& findings = summary["job"]["findings"];
  REQUIRE(!findings.empty());
  const json& top = findings[0];
  CHECK(Has(r.out, "Biggest loss: "));
  CHECK(Has(r.out, "1. [" + top["severity"].get<std::string>() + "] " + top["title"].get<std::string>()));
  // The fix shown is the top finding's, or that of the finding that explains it (input_io,
  // shown inside it: never a loss of its own).
  std::string fix = top["fix"];
  for (const json& f : findings)
    if (f["id"] == "input_io" && top["id"] == "data_loading") fix = f["fix"];
  CHECK_FALSE(Has(r.out, "] input pipeline"));
  CHECK(Has(r.out, "fix: " + fix.substr(0, std::min<size_t>(30, fix.find(' ', 20)))));
  CHECK(LinesOf(r.out).back() == FilesLine(work + "/short"));

  const RunResult full = RunJob(work + "/full", scenario, {"-v"});
  REQUIRE(full.exit_code == 0);
  CHECK(full.out == ReadFile(work + "/full/summary.txt") + FilesLine(work + "/full") + "\n");

  const RunResult quiet = RunJob(work + "/quiet", scenario, {"-q"});
  REQUIRE(quiet.exit_code == 0);
  CHECK(quiet.out == FilesLine(work + "/quiet") + "\n");
  for (const char* f : {"summary.txt", "report.html", "trace.perfetto-trace"})
    CHECK(fs::exists(work + "/quiet/" + f));
}

TEST_CASE("console: a command that is not found is one line, 127, and leaves no output folder") {
  const std::string work = FreshDir("console-not-found");
  for (const std::string& cmd : {std::string("/no/such/program"), std::string("gpuwatch-no-such-command")}) {
    const RunResult r = Run({kGpuwatch, "run", "-o", work + "/a/b/out", "--", cmd, "arg"}, {}, 30);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 127);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(Has(r.err, "cannot run " + cmd));
    CHECK_FALSE(fs::exists(work + "/a"));
  }
  // A folder that was there stays, with what it held.
  fs::create_directories(work + "/kept");
  std::ofstream(work + "/kept/note") << "mine";
  CHECK(Run({kGpuwatch, "run", "-o", work + "/kept", "--", "/no/such/program"}, {}, 30).exit_code == 127);
  CHECK(ReadFile(work + "/kept/note") == "mine");
}
