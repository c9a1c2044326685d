// summary.txt's communicators table (the job's) and a rank's comm-compute overlap line.
#pragma once
#include <string>

#include "analyze/job_result.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

// "communicators:" with one row per communicator (members, kind, calls, GPU time, exposed
// and overlapped NCCL kernel time); nothing when the job made no collective.
void AppendCommsText(const JobResult& j, std::string& out);
// "  comm/compute overlap: ..." when the rank's timeline has NCCL kernels.
void AppendOverlapText(const RankResult& r, std::string& out);

}  // namespace gpuwatch::collector
