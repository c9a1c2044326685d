// What happens when a job ends, shared by gpuwatch-collector, `gpuwatch collector` and
// `gpuwatch run` so all three write the same files the same way: summary files through
// writer.h, the trace flushed, one log line each.
#pragma once
#include <string>

#include "aggregate/job.h"
#include "trace/job_trace.h"

namespace gpuwatch::collector {

// The trace factory of a collector whose jobs go to `out_override` (or, if empty, to
// each job's first out_dir): OUT/trace.perfetto-trace at `options`' level.
TraceFactory MakeTraceFactory(std::string out_override, TraceOptions options);

// Writes the summary of `job` (to ChooseOutDir(out_override, ...)) and flushes its trace.
// Returns summary.txt's text; `written` false when the files could not be saved (logged).
std::string FinishJob(Job& job, const std::string& out_override, bool* written);

}  // namespace gpuwatch::collector
