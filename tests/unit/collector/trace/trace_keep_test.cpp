// What the trace's size control keeps (--trace-keep, trace_file.h): the detail segments'
// rotation and deletion, each segment's own incremental state, and the assembled trace
// of a run past its cap, checked with the independent validator (test_trace_validator.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "test_trace_validator.h"
#include "trace/detail_segments.h"
#include "trace/trace_feed.h"

namespace fs = std::filesystem;
using namespace gwtest;

namespace {

constexpr uint64_t kS = 1'000'000'000;

std::vector<std::string> DetailFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("detail-", 0) == 0) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The fed kernels of FeedRank's steps that start at or after `from` (rank clock).
uint64_t FedKernelsFrom(int steps, uint64_t from) {
  uint64_t n = 0;
  for (int i = 0; i < steps; ++i) {
    const uint64_t t = kT0 + static_cast<uint64_t>(i) * 20 * kMs;
    n += (t + 50000 >= from) + (t + 4 * kMs >= from) + (i == 3 && t + 60000 >= from);
  }
  return n;
}

// The kernels in the trace that start at or after `from`.
uint64_t TraceKernelsFrom(const gwtrace::RankCounts& c, uint64_t from) {
  return static_cast<uint64_t>(
      std::count_if(c.kernel_starts.begin(), c.kernel_starts.end(), [&](uint64_t t) { return t >= from; }));
}

// The assembled trace: within the hard stop, valid, one rank.
gwtrace::TraceReport AssembledWithinCap(const std::string& path, const col::TraceOptions& opt) {
  const std::string data = Slurp(path);
  CHECK(data.size() <= opt.max_bytes + opt.max_bytes / 8);
  auto rep = gwtrace::ValidateTrace(data, false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.processes.size() == 1);
  return rep;
}

// The spans cover the run in order, without gaps, alternating kinds.
void CheckSpansTile(const std::vector<gwtrace::TraceReport::Span>& spans) {
  REQUIRE(!spans.empty());
  for (size_t i = 1; i < spans.size(); ++i) {
    CHECK(spans[i].from_ns == spans[i - 1].to_ns);
    CHECK(spans[i].name != spans[i - 1].name);
  }
}

// A run of days past the summary level's share: some syncs of it kept, its start at the
// summary level, its middle given up, its end at `end` ("full detail", "summary only").
void CheckStartAndEndKept(const gwtrace::TraceReport& rep, const Fed& fed, const char* end) {
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  CHECK(c.syncs < fed.syncs);
  CHECK(c.syncs > fed.syncs / 4);
  CheckSpansTile(rep.detail_spans);
  REQUIRE(rep.detail_spans.size() == 3);
  CHECK(rep.detail_spans[0].name == "summary only");
  CHECK(rep.detail_spans[1].name == "nothing kept");
  CHECK(rep.detail_spans[2].name == end);
}

}  // namespace

TEST_CASE("collector: --trace-keep values") {
  col::TraceOptions o;
  CHECK(o.keep == col::TraceKeep::kLast);  // the default keeps the end
  CHECK(col::TraceKeepName(o) == "last");
  REQUIRE(col::ParseTraceKeep("last:0.1", &o));
  CHECK(o.keep_last_min == Approx(0.1));
  CHECK(col::TraceKeepName(o) == "last:0.1");
  REQUIRE(col::ParseTraceKeep("first", &o));
  CHECK(o.keep == col::TraceKeep::kFirst);
  CHECK(col::TraceKeepName(o) == "first");
  for (const char* bad : {"", "last:", "last:0", "last:-1", "last:x", "middle", "first:3"}) {
    INFO(bad);
    CHECK_FALSE(col::ParseTraceKeep(bad, &o));
  }
  CHECK(o.keep == col::TraceKeep::kFirst);  // a bad value changes nothing
  setenv("GPUWATCH_TRACE_KEEP", "last:2", 1);
  std::string error;
  CHECK(col::TraceOptionsFromEnv(&o, &error));
  CHECK(o.keep == col::TraceKeep::kLast);
  CHECK(o.keep_last_min == 2);
  setenv("GPUWATCH_TRACE_KEEP", "sometimes", 1);
  CHECK_FALSE(col::TraceOptionsFromEnv(&o, &error));
  CHECK(error.find("GPUWATCH_TRACE_KEEP") != std::string::npos);
  unsetenv("GPUWATCH_TRACE_KEEP");
}

TEST_CASE("collector: detail segments rotate by age and keep the last N, and what a hang pins") {
  const std::string dir = TempDir("segments");
  col::DetailSegments segs(dir, {10 * kS, 2 * kS, 0});
  auto write_until = [&](uint64_t from, uint64_t to) {
    for (uint64_t t = from; t <= to; t += kS / 2) {
      REQUIRE(segs.Current());
      segs.Current()->Append("event");
      segs.NoteTime(t);
      segs.Rotate(UINT64_MAX, UINT64_MAX);
    }
  };
  write_until(0, 30 * kS);
  CHECK(segs.opened() >= 10);
  CHECK(segs.kept() < segs.opened());
  CHECK(segs.kept() <= 10 / 2 + 2);  // N over the segment's age, and the two at the ends
  CHECK(DetailFiles(dir).size() == segs.kept());
  // Nothing of the last 10 s is gone.
  const auto gone = segs.DroppedSpans();
  REQUIRE(!gone.empty());
  CHECK(gone.front().first == 0);
  CHECK(gone.back().second < 20 * kS);

  // A hang that began at 26 s: what is around it stays, however old it gets.
  segs.Pin(25 * kS);
  write_until(30 * kS + kS / 2, 60 * kS);
  for (const auto& [from, to] : segs.DroppedSpans()) {
    INFO(from << " " << to);
    CHECK((to < 25 * kS || from > 30 * kS));
  }
  // Without room, the oldest go first, the pinned ones last.
  const size_t before = segs.kept();
  segs.Rotate(segs.bytes() - 1, UINT64_MAX);
  CHECK(segs.kept() == before - 1);
  for (const auto& [from, to] : segs.DroppedSpans()) CHECK((to < 25 * kS || from > 30 * kS));
  segs.Rotate(0, 0);
  CHECK(segs.kept() == 0);
  CHECK(DetailFiles(dir).empty());
}

TEST_CASE("collector: trace keep last: the last N minutes whole, every part a valid trace") {
  const std::string dir = TempDir("keep-last");
  const std::string path = dir + "/trace.perfetto-trace";
  col::TraceOptions opt;
  REQUIRE(col::ParseTraceKeep("last:0.002", &opt));  // 120 ms: 6 of the 20 ms steps
  constexpr int kSteps = 200;
  std::string parts;
  {
    col::JobTable jobs = TracedJobs(path, opt);
    const Fed fed = FeedRank(jobs, 0, kSteps);
    col::JobTrace* trace = jobs.Find("job")->trace();
    trace->Flush();
    parts = trace->file().parts_dir();
    REQUIRE(fs::is_directory(parts));
    CHECK(trace->file().segments_opened() > 10);
    CHECK(trace->file().segments_kept() < trace->file().segments_opened());

    // Each part on disk is a trace alone: the summary stream, and every kept segment (its
    // sequences start over: state cleared, tracks described and names interned again).
    const auto summary_rep = gwtrace::ValidateTrace(Slurp(parts + "/summary.perfetto-trace"), false);
    INFO(summary_rep.First());
    CHECK(summary_rep.errors.empty());
    const std::vector<std::string> segments = DetailFiles(parts);
    CHECK(segments.size() == trace->file().segments_kept());
    for (const std::string& s : segments) {
      const auto rep = gwtrace::ValidateTrace(Slurp(s), false);
      INFO(s << ": " << rep.First());
      CHECK(rep.errors.empty());
      CHECK(rep.processes.size() == 1);
  }

  const auto rep = gwtrace::ValidateTrace(Slurp(path), false);
  INFO(rep.First());
  REQUIRE(rep.errors.empty());
  REQUIRE(rep.processes.size() == 1);
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  // The summary level for the whole run.
  CHECK(c.syncs == fed.syncs);
  CHECK(c.host_h2d == fed.host_h2d);
  CHECK(c.collectives.at("allreduce") == fed.allreduce);
  // Detail: not all of it, but every kernel from where the full detail span begins.
  CHECK(c.kernels < fed.kernels);
  CheckSpansTile(rep.detail_spans);
  REQUIRE(rep.detail_spans.size() >= 2);
  CHECK(rep.detail_spans.front().name == "summary only");
  CHECK(rep.detail_spans.back().name == "full detail");
  const uint64_t full_from = rep.detail_spans.back().from_ns, end = rep.detail_spans.back().to_ns;
  // At least N; more by up to a segment, and by the 2 s device records are held back
  // (they come out together at the rank's end).
  CHECK(end - full_from >= 120 * kMs);
  CHECK(end - full_from <= 2500 * kMs);
  const uint64_t in_trace = TraceKernelsFrom(c, full_from);
  CHECK(in_trace == FedKernelsFrom(kSteps, full_from));
  CHECK(in_trace >= 6);
  }
  // The parts go once the trace is assembled and the job let go of.
  CHECK_FALSE(fs::exists(parts));
  CHECK(gwtrace::ValidateTrace(Slurp(path), false).errors.empty());
}

TEST_CASE("collector: trace keep last under a small cap: the end in detail, the file bounded") {
  const std::string path = TempDir("keep-last-cap") + "/trace.perfetto-trace";
  col::TraceOptions opt;
  // The summary level of 1000 steps (20 s) takes about half; the segments (an eighth of
  // the cap) span seconds, more than device records are held back (2 s).
  opt.max_bytes = 384 << 10;
  constexpr int kSteps = 1000;
  col::JobTable jobs = TracedJobs(path, opt);
  const Fed fed = FeedRank(jobs, 0, kSteps);
  jobs.Find("job")->trace()->Flush();
  const auto rep = AssembledWithinCap(path, opt);
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  CHECK(c.syncs == fed.syncs);
  CHECK(c.kernels < fed.kernels);
  CheckSpansTile(rep.detail_spans);
  REQUIRE(rep.detail_spans.back().name == "full detail");
  const uint64_t full_from = rep.detail_spans.back().from_ns;
  const uint64_t in_trace = TraceKernelsFrom(c, full_from);
  CHECK(in_trace == FedKernelsFrom(kSteps, full_from));
  CHECK(in_trace > 200);
  CHECK(rep.detail_spans.size() == 2);
}

TEST_CASE("collector: trace keep first and a run that fits: the spans say so") {
  SECTION("first: full detail to the cap, then summary only") {
    const std::string path = TempDir("keep-first") + "/trace.perfetto-trace";
    col::TraceOptions opt;
    opt.keep = col::TraceKeep::kFirst;
    opt.max_bytes = 16 << 10;
    col::JobTable jobs = TracedJobs(path, opt);
    FeedRank(jobs, 0, 200);
    jobs.Find("job")->trace()->Flush();
    CHECK(jobs.Find("job")->trace()->file().parts_dir().empty());
    const auto rep = gwtrace::ValidateTrace(Slurp(path), false);
    INFO(rep.First());
    REQUIRE(rep.errors.empty());
    REQUIRE(rep.detail_spans.size() == 2);
    CHECK(rep.detail_spans[0].name == "full detail");
    CHECK(rep.detail_spans[1].name == "summary only");
    const auto& c = rep.processes.begin()->second;
    CHECK(*std::max_element(c.kernel_starts.begin(), c.kernel_starts.end()) <= rep.detail_spans[1].from_ns);
  }
  SECTION("last, under the cap: one span of full detail, every kernel") {
    const std::string path = TempDir("keep-fits") + "/trace.perfetto-trace";
    col::JobTable jobs = TracedJobs(path);
    const Fed fed = FeedRank(jobs, 0, 50);
    jobs.Find("job")->trace()->Flush();
    const auto rep = gwtrace::ValidateTrace(Slurp(path), false);
    INFO(rep.First());
    REQUIRE(rep.errors.empty());
    REQUIRE(rep.detail_spans.size() == 1);
    CHECK(rep.detail_spans[0].name == "full detail");
    CHECK(rep.processes.begin()->second.kernels == fed.kernels);
  }
}

TEST_CASE("collector: trace keep last past the summary level's share: its start and the end kept, the middle given up") {
  // A run of days in small: the summary level of 4000 steps (80 s) is twice this cap's three
  // quarters. Before, the summary stream filled the cap and the trace stopped there, the end
  // of the run (where a hang is) lost with everything else after it.
  const std::string path = TempDir("keep-last-days") + "/trace.perfetto-trace";
  col::TraceOptions opt;
  REQUIRE(col::ParseTraceKeep("last:0.002", &opt));
  opt.max_bytes = 512 << 10;
  constexpr int kSteps = 4000;
  col::JobTable jobs = TracedJobs(path, opt);
  const Fed fed = FeedRank(jobs, 0, kSteps);
  col::JobTrace* trace = jobs.Find("job")->trace();
  trace->Flush();
  const std::string parts = trace->file().parts_dir();
  // The summary stream stopped near its share (a batch over at most).
  CHECK(fs::file_size(parts + "/summary.perfetto-trace") <= opt.max_bytes / 4 * 3 + (8 << 10));
  for (const std::string& s : DetailFiles(parts)) {
    const auto rep = gwtrace::ValidateTrace(Slurp(s), false);
    INFO(s << ": " << rep.First());
    CHECK(rep.errors.empty());
  }
  const auto rep = AssembledWithinCap(path, opt);
  const gwtrace::RankCounts& c = rep.processes.begin()->second;
  // Spans: the start at the summary level, the middle gone, the end whole.
  CheckStartAndEndKept(rep, fed, "full detail");
  const uint64_t full_from = rep.detail_spans[2].from_ns;
  INFO("full detail for the last " << (rep.detail_spans[2].to_ns - full_from) / kMs << " ms, summary from "
                                    << (rep.detail_spans[1].to_ns - rep.detail_spans[0].from_ns) / kMs << " ms");
  CHECK(rep.detail_spans[2].to_ns - full_from >= 120 * kMs);
  const uint64_t in_trace = TraceKernelsFrom(c, full_from);
  CHECK(in_trace == FedKernelsFrom(kSteps, full_from));
  // The summary.json view says the same.
  const auto spans = trace->DetailSpans();
  REQUIRE(spans.size() == 3);
  CHECK(std::string(col::SpanDetailName(spans[1].level)) == "none");

  // What describes the whole run, written at its end (a finding marked at its start), goes to
  // the summary stream: in a segment its old time would date the segment back to the start,
  // and the segment's loss would read as the whole run's.
  const auto summary_bytes = fs::file_size(parts + "/summary.perfetto-trace");
  trace->set_run_wide(true);
  trace->Instant(0, "node1", "finding", kT0 + kMs, "finding: at the start");
  trace->set_run_wide(false);
  CHECK(fs::file_size(parts + "/summary.perfetto-trace") > summary_bytes);
  const auto after = trace->DetailSpans();
  REQUIRE(after.size() == 3);
  CHECK(after[1].from_ns == spans[1].from_ns);
  trace->Flush();
  const auto marked = AssembledWithinCap(path, opt);
  CHECK(marked.processes.begin()->second.instants == c.instants + 1);
}

TEST_CASE("collector: trace keep last at the summary level: past its share the run's end is kept, not its middle") {
  // GPUWATCH_TRACE=summary for days: before, the summary stream filled the cap and stopped,
  // and the run's end was lost.
  const std::string path = TempDir("keep-last-summary") + "/trace.perfetto-trace";
  col::TraceOptions opt;
  opt.level = col::TraceLevel::kSummary;
  opt.max_bytes = 256 << 10;
  constexpr int kSteps = 4000;
  col::JobTable jobs = TracedJobs(path, opt);
  const Fed fed = FeedRank(jobs, 0, kSteps);
  col::JobTrace* trace = jobs.Find("job")->trace();
  trace->Flush();
  const auto rep = AssembledWithinCap(path, opt);
  CHECK(rep.processes.begin()->second.kernels == 0);  // no detail at this level
  CheckStartAndEndKept(rep, fed, "summary only");
  // The end: the last seconds, up to the last step.
  CHECK(rep.detail_spans[2].to_ns - rep.detail_spans[2].from_ns >= 1000 * kMs);
  CHECK(rep.detail_spans[2].to_ns >= kT0 + static_cast<uint64_t>(kSteps - 1) * 20 * kMs);
  const auto spans = trace->DetailSpans();
  REQUIRE(spans.size() == 3);
  CHECK(std::string(col::SpanDetailName(spans[2].level)) == "summary");
}
