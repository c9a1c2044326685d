// See job_end.h.
#include "jobs/job_end.h"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/format.h"
#include "common/out_dir.h"
#include "jobs/trace_index.h"
#include "report/console_text.h"
#include "report/writer.h"

namespace gpuwatch::collector {
namespace {

// Each rank's steps on its "steps" track, and each finding as an instant on the ranks it
// names, where their steps begin (the findings are totals over the run, not events).
void MarkTrace(JobTrace& trace, const JobResult& j) {
  trace.set_run_wide(true);
  for (const RankResult& r : j.ranks) {
    trace.Steps(r.rank, r.host, r);
    const uint64_t at = !r.steps.steps.empty() ? r.steps.steps.front().start : r.host_first_ns;
    for (const Finding& f : j.findings)
      if (std::find(f.ranks.begin(), f.ranks.end(), r.rank) != f.ranks.end())
        trace.Instant(r.rank, r.host, f.id, at,
                      Printf("finding: %s (%s, %s lost): %s", f.title.c_str(), f.severity.c_str(),
                             FmtDuration(f.time_lost_s).c_str(), f.summary.c_str()));
  }
  trace.set_run_wide(false);
}

TraceView TraceViewOf(const JobTrace& t) {
  TraceView v;
  v.file = t.file().path();
  v.keep = TraceKeepName(t.file().options());
  std::error_code ec;  // the file as assembled; what is being written when it is not there
  const uintmax_t size = std::filesystem::file_size(v.file, ec);
  v.bytes = ec ? t.file().bytes() : static_cast<uint64_t>(size);
  for (const TraceDetailSpan& s : t.DetailSpans())
    v.detail_spans.push_back({static_cast<double>(s.from_ns - t.start_ns()) * 1e-9,
                              static_cast<double>(s.to_ns - t.start_ns()) * 1e-9, SpanDetailName(s.level)});
  return v;
}

}  // namespace

TraceFactory MakeTraceFactory(std::string out_override, TraceOptions options) {
  return [out_override = std::move(out_override), options](const wire::Hello& first) -> std::unique_ptr<JobTrace> {
    std::string error;
    const std::string path = ChooseOutDir(out_override, first.out_dir()) + "/" + kTraceFileName;
    auto t = JobTrace::Open(path, options, &error);
    if (!t) spdlog::warn("job {}: no trace: {}", first.job_id(), error);
    return t;
  };
}

JobView ViewOf(const Job& job, const JobResult& result) {
  JobView v;
  v.id = job.id();
  v.world_size = job.world_size();
  for (const auto& [key, rank] : job.ranks())
    v.ranks.push_back(RankView{&rank->hello(), rank->ended_normally(), &rank->storage(), &rank->result()});
  v.hangs = &job.hangs();
  v.result = &result;
  return v;
}

RenderedSummary SummarizeJob(const Job& job) {
  const JobResult result = MergeRanks(job.Results());
  // The trace is complete (steps, findings) before summary.json appears: whoever waits for
  // the summary may read the trace.
  TraceView trace;
  if (JobTrace* t = job.trace()) {
    MarkTrace(*t, result);
    t->Flush();
    trace = TraceViewOf(*t);
  }
  JobView view = ViewOf(job, result);
  if (job.trace()) view.trace = &trace;
  RenderedSummary rendered = RenderSummary(view);
  rendered.console = BuildConsoleText(view);
  return rendered;
}

FinishedJob FinishJob(Job& job, const std::string& out_override) {
  FinishedJob done;
  done.summary = SummarizeJob(job);
  const RenderedSummary& rendered = done.summary;
  if (JobTrace* t = job.trace()) {
    spdlog::info("job {}: trace {}", job.id(), t->Describe());
    done.trace = t->file().path();
  }
  const std::string dir = done.dir = job.OutDir(out_override);
  std::string error;
  // Ranks traced on their hosts: where each trace is, in place before summary.json (the
  // sign that everything is written).
  if (const std::string index = TraceIndexJson(job); !index.empty()) {
    if (!MakeDirs(dir, &error) || !WriteAtomically(dir + "/" + kTraceIndexFileName, index, &error))
      spdlog::warn("job {}: no trace index: {}", job.id(), error);
  }
  done.written = WriteSummaryFiles(dir, rendered, &error);
  if (done.written) {
    spdlog::info("job {}: summary of {} rank(s) written to {}", job.id(), job.ranks().size(), dir);
  } else {
    spdlog::error("job {}: summary not saved: {} (printed below)", job.id(), error);
  }
  return done;
}

}  // namespace gpuwatch::collector
