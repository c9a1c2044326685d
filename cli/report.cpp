#include "report.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "ingest/replay.h"
#include "report_ranks.h"
#include "jobs/job_end.h"
#include "jobs/job_table.h"
#include "report/summary.h"
#include "report/writer.h"
#include "trace/job_trace.h"
#include "trace/trace_parts.h"

namespace gpuwatch::cli {

using namespace gpuwatch::collector;

CLI::App* AddReportCommand(CLI::App& app, ReportArgs& args) {
  if (const char* env = std::getenv("GPUWATCH_HANG_S"); env && std::atof(env) > 0)
    args.hang_s = std::atof(env);
  CLI::App* cmd = app.add_subcommand(
      "report", "Rebuild the summary of a run from what was kept on disk");
  cmd->footer(
      "Reads DIR/.gpuwatch/rank-R-PID*.frames (what the collector received, from its\n"
      "last checkpoint rank-R-PID.checkpoint on) and\n"
      "DIR/.gpuwatch/spool-rank-R-PID.frames (what ranks could not send), replays them\n"
      "through the collector's own aggregation, writes DIR/summary.json, summary.txt,\n"
      "report.html and trace.perfetto-trace, and prints what `gpuwatch run` prints: the\n"
      "verdict, the top findings and the ranks that stand out (-v: summary.txt whole),\n"
      "then where the files are (-q: only that). Use it after the collector was killed,\n"
      "or to re-render a run.\n\n"
      "Examples:\n"
      "  gpuwatch report ./gpuwatch-out\n"
      "  gpuwatch report --out /tmp/again --quiet ./gpuwatch-out\n"
      "  gpuwatch report --ranks 3,5-7 ./root-out   (ranks 3, 5, 6, 7 in one trace)\n\n"
      "Exit status: 0 written, 1 nothing to rebuild, 2 rebuilt but not written.");
  cmd->add_option("DIR", args.dir, "Output directory of the run")->required();
  cmd->add_option("-o,--out", args.out, "Write the summary here instead of DIR");
  cmd->add_option("--job", args.job, "Job id to rebuild when DIR holds several");
  cmd->add_option("--hang-s", args.hang_s,
                  "Report ranks inside a collective or sync this long at their last "
                  "heartbeat (default: $GPUWATCH_HANG_S, else 300)")
      ->check(CLI::PositiveNumber);
  AddDetailFlags(*cmd, args.print);
  cmd->add_option("--ranks", args.ranks,
                  "Instead: merge these ranks' traces (e.g. 3,5-7, or all) into one file on one "
                  "timeline, DIR/trace-ranks-LIST.perfetto-trace (with --out: there). DIR is the "
                  "root collector's output; its trace-index.json says where each rank's trace is");
  return cmd;
}

int RunReport(const ReportArgs& args) {
  if (!args.ranks.empty()) return RunRankTraces(args);
  JobTable jobs(JobTiming{std::chrono::milliseconds(0), std::chrono::milliseconds(0), args.hang_s});
  ReplayResult result;
  std::string error;
  // The trace is rebuilt too (GPUWATCH_TRACE, GPUWATCH_TRACE_MAX_MIB), for the chosen job
  // only: the first one replayed unless --job names one.
  TraceOptions trace;
  if (!TraceOptionsFromEnv(&trace, &error)) spdlog::warn("{}", error);
  bool traced = false;
  // After a checkpoint the frames before it are gone: a rebuilt trace would start there. The
  // live collector's trace holds the run until it stopped; it is kept rather than replaced.
  const std::string trace_at = (args.out.empty() ? args.dir : args.out) + "/" + kTraceFileName;
  std::string trace_note, trace_path;
  if (trace.level != TraceLevel::kOff && HasCheckpoints(args.dir)) {
    struct stat st {};
    if (stat(trace_at.c_str(), &st) == 0 && st.st_size > 0) {
      trace.level = TraceLevel::kOff;
      trace_path = trace_at;
      trace_note = "trace: " + trace_at + " is kept as the collector wrote it (the run until it stopped); "
                   "the journal starts at a checkpoint, so a rebuilt one would hold less";
    } else if (std::string note; AssembleTraceParts(args.dir, trace_at, &note)) {
      // A `last` trace is in parts until the job ends: those the dead collector left.
      trace.level = TraceLevel::kOff;
      trace_path = trace_at;
      trace_note = note;
    } else {
      trace_note = "trace: rebuilt from the journal's last checkpoint on; the run before it is not in it";
    }
  }
  if (trace.level != TraceLevel::kOff)
    jobs.set_trace_factory([&](const gpuwatch::wire::Hello& first) -> std::unique_ptr<JobTrace> {
      if (traced || (!args.job.empty() && first.job_id() != args.job)) return nullptr;
      traced = true;
      std::string e;
      auto t = JobTrace::Open(trace_at, trace, &e);
      if (!t) spdlog::warn("no trace: {}", e);
      return t;
    });
  if (!ReplayDir(args.dir, jobs, &result, &error, [&] { return jobs.CheckHangs(Clock::now()); })) {
    spdlog::error("{}", error);
    return 1;
  }
  for (const std::string& note : result.notes) spdlog::warn("{}", note);
  if (!trace_note.empty()) spdlog::info("{}", trace_note);
  std::vector<Job*> all = jobs.Unwritten();
  if (all.empty()) {
    spdlog::error("nothing to rebuild in {}: no readable journal or spool ({} file(s))",
                  args.dir, result.files);
    return 1;
  }
  Job* job = nullptr;
  if (!args.job.empty()) {
    job = jobs.Find(args.job);
    if (!job) {
      spdlog::error("no job {} in {}", args.job, args.dir);
      return 1;
    }
  } else if (all.size() > 1) {
    std::string ids;
    for (Job* j : all) ids += " " + j->id();
    spdlog::error("{} holds {} jobs; choose one with --job:{}", args.dir, all.size(), ids);
    return 1;
  } else {
    job = all.front();
  }
  const RenderedSummary rendered = SummarizeJob(*job);
  const std::string dir = args.out.empty() ? args.dir : args.out;
  int code = 0;
  if (WriteSummaryFiles(dir, rendered, &error)) {
    spdlog::info("job {}: summary of {} rank(s) rebuilt from {} file(s){}, written to {}", job->id(),
                 job->ranks().size(), result.files,
                 result.checkpoints ? " and " + std::to_string(result.checkpoints) + " rank(s) from checkpoints" : "",
                 dir);
  } else {
    spdlog::error("job {}: summary not saved: {} (printed below)", job->id(), error);
    code = 2;
  }
  if (JobTrace* t = job->trace()) {
    t->Flush();
    spdlog::info("job {}: trace {}", job->id(), t->Describe());
    trace_path = t->file().path();
  }
  PrintSummary(rendered, args.print.detail(), code == 0);
  PrintFiles(dir, code == 0, trace_path);
  return code;
}

}  // namespace gpuwatch::cli
