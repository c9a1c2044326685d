// The console's short form (report/console_text.h) and its ranks that stand out
// (report/standout_ranks.h), on jobs built by hand; a finding that explains another shown
// inside it, in the console and in summary.txt alike. The short form of real runs: e2e
// console_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>

#include "analyze/findings.h"
#include "report/console_text.h"
#include "report/figures_text.h"
#include "report/standout_ranks.h"

namespace col = gpuwatch::collector;
namespace wire = gpuwatch::wire;

namespace {

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }
bool Has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

// `n` ranks, each with its hello and an empty result; the job's findings as given.
struct Job {
  explicit Job(size_t n) : hellos(n), results(n), storage(n) {
    for (size_t i = 0; i < n; ++i) {
      hellos[i].set_rank(static_cast<int>(i));
      hellos[i].set_world_size(static_cast<int>(n));
      hellos[i].set_host("node");
      results[i].rank = static_cast<int>(i);
    }
  }
  col::JobView View() {
    result.ranks = col::RankList(results);
    col::JobView v;
    v.id = "j";
    v.world_size = static_cast<int>(hellos.size());
    for (size_t i = 0; i < hellos.size(); ++i)
      v.ranks.push_back(col::RankView{&hellos[i], ended[i], &storage[i], &results[i]});
    v.hangs = &hangs;
    v.result = &result;
    return v;
  }
  std::vector<wire::Hello> hellos;
  std::vector<col::RankResult> results;
  std::vector<col::RankStorage> storage;
  std::vector<bool> ended = std::vector<bool>(hellos.size(), true);
  std::vector<col::Hang> hangs;
  col::JobResult result;
};

col::Finding On(col::Finding f, std::vector<int> ranks) {
  f.ranks = std::move(ranks);
  return f;
}

}  // namespace

TEST_CASE("collector: input_io is shown inside data_loading, as its cause, not as another loss") {
  col::JobResult j;
  j.verdict = "Biggest loss: data loading.";
  col::Finding loading = On(col::MakeFinding("data_loading", 0.6, 1.0), {0});
  loading.summary = "GPU idle waiting for the host";
  col::Finding io = loading;
  io.id = "input_io";
  io.title = "input pipeline CPU-bound";
  io.summary = "the host kept 1.2 cores busy";
  io.fix = "more DataLoader workers";
  j.findings = {loading, io, On(col::MakeFinding("sync_stall", 0.2, 1.0), {0})};

  const std::string full = col::FindingsText(j);
  INFO(full);
  CHECK(Has(full, "1. [high] data loading (input pipeline CPU-bound): 600.000 ms"));
  CHECK(Has(full, "cause: the host kept 1.2 cores busy"));
  CHECK(Has(full, "fix: more DataLoader workers"));
  CHECK(Has(full, "2. [high] host waiting on the GPU (syncs)"));
  CHECK_FALSE(Has(full, "3."));  // two losses, not three
  CHECK_FALSE(Has(full, "] input pipeline"));

  // The console's form: the first `shown`, no evidence, the rest counted.
  const std::string brief = col::FindingsText(j, 1, false);
  INFO(brief);
  CHECK(Has(brief, "1. [high] data loading (input pipeline CPU-bound)"));
  CHECK(Has(brief, "fix: more DataLoader workers"));
  CHECK_FALSE(Has(brief, "GPU idle waiting"));
  CHECK_FALSE(Has(brief, "cause:"));
  CHECK(Has(brief, "(1 more finding in summary.txt)"));
}

TEST_CASE("collector: ranks stand out by an abnormal end, a hang, or a finding only some of them have") {
  Job job(8);
  job.ended[2] = false;
  col::Hang h;
  h.rank = 6;
  h.api = "ncclAllReduce";
  job.hangs.push_back(h);
  // A straggler names one rank; a finding of every rank names none; a low one is no reason.
  job.result.findings = {On(col::MakeFinding("straggler", 0.3, 1.0), {5}),
                         On(col::MakeFinding("communication", 0.3, 1.0), {0, 1, 2, 3, 4, 5, 6, 7}),
                         On(col::MakeFinding("sync_stall", 0.02, 1.0), {1})};
  const col::JobView view = job.View();
  const std::vector<col::StandOut> s = col::RanksThatStandOut(view);
  // Most telling first: an abnormal end and a hang, then a finding.
  REQUIRE(s.size() == 3);
  CHECK(s[0].index == 2);
  CHECK(s[0].why == std::vector<std::string>{"ended abnormally"});
  CHECK(s[1].index == 6);
  CHECK(s[1].why == std::vector<std::string>{"hung in ncclAllReduce"});
  CHECK(s[2].index == 5);
  CHECK(s[2].why == std::vector<std::string>{"straggler"});

  const std::string text = col::BuildConsoleText(view);
  INFO(text);
  CHECK(Has(text, "gpuwatch summary: job j: 8 ranks of 8, 1 host"));
  CHECK(Has(text, "ranks that stand out: 3 of 8 (every rank: summary.txt, or -v)"));
  CHECK(Has(text, "  rank 5: straggler\n"));
  CHECK(Has(text, "  the other 5 ranks: no steps found, no GPU timeline\n"));
  CHECK(text.rfind("job: 8 ranks (1 abnormal)", std::string::npos) != std::string::npos);
  // Half the ranks is not "some": a finding on 4 of 8 names them, on 5 of 8 it does not.
  job.result.findings = {On(col::MakeFinding("pipeline_bubble", 0.3, 1.0), {0, 1, 2, 3}),
                         On(col::MakeFinding("data_loading", 0.3, 1.0), {0, 1, 3, 4, 5})};
  job.ended[2] = true;
  job.hangs.clear();
  CHECK(col::RanksThatStandOut(job.View()).size() == 4);
}

TEST_CASE("collector: the short form stays within its lines however many ranks stand out") {
  Job job(64);
  for (size_t i = 0; i < 64; ++i) job.ended[i] = false;  // every rank killed
  job.result.verdict = "Biggest loss: something.";
  const std::string text = col::BuildConsoleText(job.View());
  INFO(text);
  CHECK(Lines(text) + 1 <= col::kConsoleLines);  // + the files line
  CHECK(Has(text, "ranks that stand out: 64 of 64"));
  CHECK(Has(text, "more (summary.txt)"));
  CHECK_FALSE(Has(text, "the other"));

  // One rank, nothing abnormal: its figures on one line.
  Job one(1);
  const std::string single = col::BuildConsoleText(one.View());
  INFO(single);
  CHECK(Has(single, "\nrank 0: no steps found, no GPU timeline\n"));
}

TEST_CASE("collector: the files line names summary.txt, report.html and the trace") {
  CHECK(col::FilesLine("/o", true, "/o/trace.perfetto-trace") ==
        "files: /o/summary.txt (every rank), /o/report.html, /o/trace.perfetto-trace\n");
  CHECK(col::FilesLine("/o", true, "") == "files: /o/summary.txt (every rank), /o/report.html, no trace\n");
  CHECK(col::FilesLine("/o", false, "/o/t") == "files: the summary was not saved in /o (the error is above), /o/t\n");
}
