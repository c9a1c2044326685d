// The list of analyses a rank goes through, in the order their sections are printed.
// To add one: write analyze/<name>.cpp with a factory, declare it here, add it below.
#include "analysis.h"

namespace gpuwatch::collector {

std::unique_ptr<RankAnalysis> MakeSyncAnalysis();
std::unique_ptr<RankAnalysis> MakeMemcpyAnalysis();
std::unique_ptr<RankAnalysis> MakeCollectivesAnalysis();
std::unique_ptr<RankAnalysis> MakeKernelsAnalysis();
std::unique_ptr<RankAnalysis> MakeDroppedAnalysis();
std::unique_ptr<RankAnalysis> MakeGpuAnalysis();  // analyze/gpu.cpp
std::unique_ptr<RankAnalysis> MakeStepsAnalysis();  // analyze/steps_analysis.cpp (issue 6)

Analyses MakeRankAnalyses() {
  Analyses a;
  a.push_back(MakeSyncAnalysis());
  a.push_back(MakeMemcpyAnalysis());
  a.push_back(MakeCollectivesAnalysis());
  a.push_back(MakeKernelsAnalysis());
  a.push_back(MakeGpuAnalysis());
  a.push_back(MakeDroppedAnalysis());
  a.push_back(MakeStepsAnalysis());
  return a;
}

}  // namespace gpuwatch::collector
