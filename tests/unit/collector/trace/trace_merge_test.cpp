// Merging chosen ranks of several collectors' traces into one (collector/trace/trace_merge.h):
// two files written the same way number their sequences, tracks and flows alike, so a plain
// concatenation would mix their ranks up; the merge must keep each rank whole and apart, on
// the timeline its offset gives, and read by the independent validator.
#include <catch2/catch.hpp>

#include "test_trace_validator.h"
#include "trace/trace_feed.h"
#include "report_ranks.h"
#include "trace/trace_merge.h"

using namespace gwtest;

namespace {

// A collector's trace of `ranks` ranks numbered from `first`, fed the same way.
std::string HostTrace(const std::string& dir, int first, int ranks, int steps, std::vector<Fed>* fed) {
  const std::string path = dir + "/trace.perfetto-trace";
  col::JobTable jobs = TracedJobs(path);
  for (int r = first; r < first + ranks; ++r) fed->push_back(FeedRank(jobs, r, steps));
  jobs.Find("job")->trace()->Flush();
  return path;
}

const gwtrace::RankCounts& Process(const gwtrace::TraceReport& rep, int rank) {
  for (const auto& [name, counts] : rep.processes)
    if (name.rfind("rank " + std::to_string(rank) + " · ", 0) == 0) return counts;
  FAIL("rank " << rank << " is not in the merged trace");
  static gwtrace::RankCounts none;
  return none;
}

}  // namespace

TEST_CASE("collector: chosen ranks of two collectors' traces merge into one, apart and moved") {
  const std::string dir = TempDir("merge");
  std::vector<Fed> fed;
  const std::string a = HostTrace(TempDir("merge-a"), 0, 2, 8, &fed);  // ranks 0, 1
  const std::string b = HostTrace(TempDir("merge-b"), 2, 2, 8, &fed);  // ranks 2, 3: same ids
  const auto ra = gwtrace::ValidateTrace(Slurp(a), false), rb = gwtrace::ValidateTrace(Slurp(b), false);
  REQUIRE(ra.errors.empty());
  REQUIRE(rb.errors.empty());

  constexpr int64_t kMove = 1'500'000'000;
  col::MergeStats stats;
  std::string error;
  const std::string out = dir + "/merged.perfetto-trace";
  REQUIRE(col::MergeTraces({{a, {{0, 0}, {1, -kMove}}, false}, {b, {{2, kMove}, {3, 0}}, false}}, out,
                           &stats, &error));
  INFO(error);
  const auto rep = gwtrace::ValidateTrace(Slurp(out), false);
  INFO(rep.First());
  CHECK(rep.errors.empty());  // no flow started twice, every track described once
  REQUIRE(rep.processes.size() == 4);
  // Every packet of the chosen ranks; not each host's "trace detail" track (its
  // descriptor and a BEGIN and END per span), which is no rank's.
  const auto detail_packets = [](const gwtrace::TraceReport& r) { return 1 + 2 * r.detail_spans.size(); };
  CHECK(stats.packets_written == stats.packets_read - detail_packets(ra) - detail_packets(rb));
  CHECK(rep.detail_spans.empty());
  CHECK(rep.flows == ra.flows + rb.flows);
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    const gwtrace::RankCounts& m = Process(rep, r);
    const gwtrace::RankCounts& orig = Process(r < 2 ? ra : rb, r);
    CHECK(m.kernels == fed[r].kernels);
    CHECK(m.gpu_h2d == fed[r].gpu_h2d);
    CHECK(m.host_h2d == fed[r].host_h2d);
    CHECK(m.syncs == fed[r].syncs);
    CHECK(m.collectives.at("allreduce") == fed[r].allreduce);
    CHECK(m.counters == orig.counters);
    const int64_t move = r == 1 ? -kMove : r == 2 ? kMove : 0;
    CHECK(static_cast<int64_t>(m.first_ns - orig.first_ns) == move);
    CHECK(static_cast<int64_t>(m.last_ns - orig.last_ns) == move);
  }

  SECTION("only the chosen ranks") {
    col::MergeStats some;
    REQUIRE(col::MergeTraces({{a, {{1, 0}}, false}, {b, {{2, 0}}, false}}, out, &some, &error));
    const auto two = gwtrace::ValidateTrace(Slurp(out), false);
    INFO(two.First());
    CHECK(two.errors.empty());
    CHECK(two.processes.size() == 2);
    CHECK(Process(two, 1).kernels == fed[1].kernels);
    CHECK(Process(two, 2).kernels == fed[2].kernels);
    CHECK(some.packets_by_rank.size() == 2);
    CHECK(some.packets_written < stats.packets_written / 2 + 10);
  }
  SECTION("a trace cut inside a packet is merged up to its last whole one") {
    const std::string cut = dir + "/cut.perfetto-trace";
    const std::string data = Slurp(b);
    std::ofstream(cut, std::ios::binary) << data.substr(0, data.size() * 2 / 3 + 1);
    col::MergeStats part;
    REQUIRE(col::MergeTraces({{a, {}, true}, {cut, {}, true}}, out, &part, &error));
    CHECK(part.truncated);
    const auto rep2 = gwtrace::ValidateTrace(Slurp(out), true);
    INFO(rep2.First());
    CHECK(rep2.errors.empty());
    CHECK(rep2.processes.size() == 4);
  }
  SECTION("a file that is not a trace, or not there: one line") {
    const std::string junk = dir + "/junk";
    std::ofstream(junk) << "not a trace at all";
    col::MergeStats none;
    CHECK_FALSE(col::MergeTraces({{junk, {{0, 0}}, false}}, out, &none, &error));
    CHECK(error == junk + ": not a Perfetto trace (or damaged after packet 0)");
    CHECK_FALSE(col::MergeTraces({{dir + "/nothing", {{0, 0}}, false}}, out, &none, &error));
    CHECK(error == "cannot read " + dir + "/nothing: No such file or directory");
  }
}

TEST_CASE("gpuwatch report --ranks: a list of ranks and ranges") {
  std::set<int> ranks;
  bool all = true;
  std::string error;
  CHECK(gpuwatch::cli::ParseRankList("3,5-7,0", &ranks, &all, &error));
  CHECK(ranks == std::set<int>{0, 3, 5, 6, 7});
  CHECK_FALSE(all);
  ranks.clear();
  CHECK(gpuwatch::cli::ParseRankList("all", &ranks, &all, &error));
  CHECK(all);
  CHECK(ranks.empty());
  for (const char* bad : {"", "3,", "x", "7-5", "-1", "0-", "1,,2", "2-3-4"}) {
    INFO(bad);
    ranks.clear();
    CHECK_FALSE(gpuwatch::cli::ParseRankList(bad, &ranks, &all, &error));
    CHECK(error.rfind("--ranks: ", 0) == 0);
  }
}
