// What each finding's fix would buy (issue 52): the rank's step graphs (step_graphs.h)
// replayed with the fix, the predicted step the measured one scaled by the replay's change.
//
// The fixes modelled, by finding:
//   data_loading, host_overhead, input_io, periodic_stall: the host's long stretches between
//       calls (kLaunchGapNs and over) shortened to the loop's typical time between calls;
//   sync_stall: .item()-type syncs (small blocking copies, polling loops) no longer wait for
//       the GPU, else every blocking call but each step's last (the value read a step later);
//   pageable_copy: pageable copies at the pinned rate (measured on the rank's pinned copies,
//       else 80% of the PCIe link's), without holding the host;
//   blocking_copy: copies no longer hold the host;
//   launch_bound: each step's kernel launches as one CUDA graph launch (its measured cost,
//       else one launch's), the short host gaps between them gone;
//   small_collectives: each step's small collectives as 25 MiB buckets: one latency (the
//       shortest collective measured) a bucket, their own transfer time kept;
//   communication: NCCL kernels no longer wait on their stream for the compute before them;
//   clocks_throttled: kernels at the full clock; gpu_shared: kernels without the others' share.
// The job's view (ModelJobFixes) adds straggler (the late rank at the median rank's pace)
// and pipeline_bubble (stages balanced). Other findings have no what-if.
#pragma once
#include "analyze/job_graph.h"
#include "analyze/job_result.h"
#include "analyze/rank_result.h"
#include "analyze/step_graphs.h"

namespace gpuwatch::collector {

// Fills r.critical_path, each of r.findings' what_if and r.all_fixed (after RankFindings).
void ModelRankFixes(const StepGraphList& graphs, RankResult& r);

// The job's critical path (the median rank's), its findings' what-ifs (the median over the
// ranks that have the finding; straggler and pipeline_bubble from the ranks' paces) and the
// step with every fix; the ranks' findings as the job shows them get the same what-ifs.
void ModelJobFixes(JobResult& j);

}  // namespace gpuwatch::collector
