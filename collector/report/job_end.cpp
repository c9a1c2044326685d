#include "report/job_end.h"

#include <spdlog/spdlog.h>

#include "report/summary.h"
#include "report/writer.h"

namespace gpuwatch::collector {

TraceFactory MakeTraceFactory(std::string out_override, TraceOptions options) {
  return [out_override = std::move(out_override),
          options](const wire::Hello& first) -> std::unique_ptr<JobTrace> {
    std::string error;
    const std::string path = ChooseOutDir(out_override, first.out_dir()) + "/" + kTraceFileName;
    auto t = JobTrace::Open(path, options, &error);
    if (!t) spdlog::warn("job {}: no trace: {}", first.job_id(), error);
    return t;
  };
}

std::string FinishJob(Job& job, const std::string& out_override, bool* written) {
  const Analyses totals = job.Totals();
  const RenderedSummary rendered = RenderSummary(job, totals);
  // The trace is complete (steps, findings) before summary.json appears: whoever waits for
  // the summary may read the trace.
  if (JobTrace* t = job.trace()) {
    for (const auto& a : totals) a->MarkTrace(*t);
    t->Flush();
    spdlog::info("job {}: trace {}", job.id(), t->Describe());
  }
  const std::string dir = ChooseOutDir(out_override, job.first_out_dir());
  std::string error;
  *written = WriteSummaryFiles(dir, rendered, &error);
  if (*written) {
    spdlog::info("job {}: summary of {} rank(s) written to {}", job.id(), job.ranks().size(),
                 dir);
  } else {
    spdlog::error("job {}: summary not saved: {} (printed below)", job.id(), error);
  }
  return rendered.text;
}

}  // namespace gpuwatch::collector
