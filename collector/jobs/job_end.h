// What happens when a job ends, shared by gpuwatch-collector, `gpuwatch collector`,
// `gpuwatch run` and `gpuwatch report` so all write the same files the same way: the
// ranks' results merged once (JobResult), every view rendered from them, steps and
// findings marked on the trace, one log line each.
#pragma once
#include <string>

#include "analyze/job_result.h"
#include "jobs/job_table.h"
#include "report/job_view.h"
#include "report/summary.h"
#include "trace/job_trace.h"

namespace gpuwatch::collector {

// The trace factory of a collector whose jobs go to `out_override` (or, if empty, to
// each job's first out_dir): OUT/trace.perfetto-trace at `options`' level.
TraceFactory MakeTraceFactory(std::string out_override, TraceOptions options);

// What the views read of `job` (pointers into it and into `result`).
JobView ViewOf(const Job& job, const JobResult& result);
// The summary of `job` in every form, and the trace's marks (steps, findings) when it has
// a trace.
RenderedSummary SummarizeJob(const Job& job);

// What FinishJob did: the summary in every form, the folder it went to, whether it was
// saved there (false: logged), and the trace's path ("" when the job has none).
struct FinishedJob {
  RenderedSummary summary;
  std::string dir;
  bool written = false;
  std::string trace;
};
// Writes the summary of `job` (to job.OutDir(out_override)) and flushes its trace.
FinishedJob FinishJob(Job& job, const std::string& out_override);

}  // namespace gpuwatch::collector
