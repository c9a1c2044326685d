// The job's verdict (summary.json's job.verdict, summary.txt's opening): a few sentences for a
// newcomer. The biggest measured loss comes first, with its fix; then the GPU's busy share
// beside its useful share; then the useful curve's shape, read only where it agrees with that loss.
#pragma once
#include <string>
#include <vector>

#include "analyze/finding.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

// "Biggest loss: data loading, 6.1 ms per step (47%). Fix: .... GPU busy 41% of the time, 38%
// on compute and copies (NCCL kernels left out). Compute curve: a sawtooth: ...". `f`: the
// job's findings, ranked (JobFindings).
std::string Verdict(const RankList& ranks, const std::vector<Finding>& f);

}  // namespace gpuwatch::collector
