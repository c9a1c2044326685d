// The blocks of summary.txt, one per figure struct, 80 columns, deterministic (golden
// tests compare them): a rank's block and the job's use the same functions.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "analyze/job_result.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

// A rank's tables, in the order they are printed.
// `job`: the rank's job, whose analysis gives the rank's waits and corrected findings.
void AppendRankText(const RankResult& r, std::string& out, const JobResult* job = nullptr);
// "GPU timeline sampled over 4.1% of the run (23 windows)"; empty when recorded whole.
std::string SampledNote(const GpuFigures& g);
// "sync 1.234 s", "H2D 1.0 GB, D2H 8 B", ... for the job line.
std::vector<std::string> JobHeadlines(const JobResult& j);
// The verdict and the ranked findings with their fixes: for the top of summary.txt every
// finding with what was measured (`evidence`), for the console's short form the first
// `shown` without it. A finding that explains another (common/explains.h) is shown inside
// it, as its cause, with its fix.
std::string FindingsText(const JobResult& j, size_t shown = SIZE_MAX, bool evidence = true);

}  // namespace gpuwatch::collector
