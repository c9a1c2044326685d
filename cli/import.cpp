// See import.h.
#include "import.h"

#include <cstdio>
#include <set>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "common/out_dir.h"
#include "import/rank_import.h"
#include "jobs/job_end.h"
#include "jobs/job_table.h"
#include "report/summary.h"
#include "report/writer.h"
#include "trace/job_trace.h"
#include "trace/trace_file.h"

namespace gpuwatch::cli {

using namespace gpuwatch::collector;

CLI::App* AddImportCommand(CLI::App& app, ImportArgs& args) {
  CLI::App* cmd = app.add_subcommand("import", "Diagnose torch.profiler (Kineto) traces as gpuwatch would a run");
  cmd->footer(
      "Reads Chrome-trace JSON as torch.profiler writes it (plain or .gz), one file per\n"
      "rank (the rank from the trace's distributedInfo, else the order given), and writes\n"
      "what a run writes: DIR/summary.json, summary.txt, report.html and\n"
      "trace.perfetto-trace, and prints what a run prints (-v: summary.txt whole; -q: only\n"
      "where the files are). docs/import.md says what is read and what a trace cannot say.\n\n"
      "Examples:\n"
      "  gpuwatch import trace.json.gz -o out\n"
      "  gpuwatch import rank0.pt.trace.json rank1.pt.trace.json -o out\n\n"
      "Exit status: 0 written, 2 a trace could not be imported, 1 not written.");
  cmd->add_option("TRACE", args.traces, "torch.profiler trace files, one per rank")->required();
  cmd->add_option("-o,--out", args.out, "Output directory")->required();
  cmd->add_option("--job", args.job, "Job id to give the imported run (default: import)");
  AddDetailFlags(*cmd, args.print);
  return cmd;
}

int RunImport(const ImportArgs& args) {
  std::string error;
  if (!MakeDirs(args.out, &error)) {
    spdlog::error("{}", error);
    return 1;
  }
  // Everything to the job table ends when the last file has been fed: no lingering.
  JobTable jobs(JobTiming{std::chrono::milliseconds(0), std::chrono::milliseconds(0), 300});
  TraceOptions trace;
  if (!TraceOptionsFromEnv(&trace, &error)) spdlog::warn("{}", error);
  if (trace.level != TraceLevel::kOff)
    jobs.set_trace_factory([&](const gpuwatch::wire::Hello&) -> std::unique_ptr<JobTrace> {
      std::string e;
      auto t = JobTrace::Open(args.out + "/" + kTraceFileName, trace, &e);
      if (!t) spdlog::warn("no trace: {}", e);
      return t;
    });
  std::set<int> ranks;
  for (size_t i = 0; i < args.traces.size(); ++i) {
    RankImportOptions o;
    o.job_id = args.job;
    o.fallback_rank = static_cast<int>(i);
    o.fallback_world_size = static_cast<int>(args.traces.size());
    o.out_dir = args.out;
    RankImportStats stats;
    if (!ImportRankTrace(args.traces[i], o, jobs, &stats, &error)) {
      spdlog::error("{}", error);
      return kImportBadInput;
    }
    if (!ranks.insert(stats.rank).second) {
      spdlog::error("{}: rank {} again: each file must be a different rank of one job", args.traces[i], stats.rank);
      return kImportBadInput;
    }
    spdlog::info("{}: rank {}: {} events, {} kernels, {} copies, {} memsets, {} calls, {} steps{}", args.traces[i],
                 stats.rank, stats.events, stats.kernels, stats.memcpys, stats.memsets, stats.calls, stats.steps,
                 stats.sorted_runs ? ", sorted in " + std::to_string(stats.sorted_runs) + " runs on disk" : "");
    for (const std::string& n : stats.notes) spdlog::info("{}: {}", args.traces[i], n);
  }
  std::vector<Job*> all = jobs.Unwritten();
  if (all.size() != 1) {
    spdlog::error("expected one job from {} trace(s), got {}", args.traces.size(), all.size());
    return kImportBadInput;
  }
  Job* job = all.front();
  const RenderedSummary rendered = SummarizeJob(*job);
  int code = 0;
  if (WriteSummaryFiles(args.out, rendered, &error)) {
    spdlog::info("summary of {} rank(s) written to {}", job->ranks().size(), args.out);
  } else {
    spdlog::error("summary not saved: {} (printed below)", error);
    code = 1;
  }
  std::string trace_path;
  if (JobTrace* t = job->trace()) {
    t->Flush();
    spdlog::info("trace {}", t->Describe());
    trace_path = t->file().path();
  }
  PrintSummary(rendered, args.print.detail(), code == 0);
  PrintFiles(args.out, code == 0, trace_path);
  return code;
}

}  // namespace gpuwatch::cli
