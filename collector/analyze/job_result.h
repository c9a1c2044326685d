// The job's figures: every rank's RankResult merged (sums over ranks), the job's findings
// (the straggler among them) and its verdict. Computed once when a summary is made; every
// view of the job reads it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyze/communicators.h"
#include "analyze/findings.h"
#include "analyze/rank_result.h"

namespace gpuwatch::collector {

struct JobResult {
  RankList ranks;  // points at each rank's own result
  SyncFigures sync;
  CopyFigures copies;
  CollectiveFigures collectives;
  CollectiveSizeFigures coll_sizes;
  PipelineFigures pipeline;  // sums; links per rank
  JobPipeline pipeline_links;  // sends matched with recvs across ranks, stages
  std::vector<JobComm> by_comm;  // every communicator, joined across ranks (communicators.h)
  OverlapTally overlap;          // NCCL kernel time overlapped with compute, all ranks
  LaunchFigures launches;
  GraphFigures graphs;
  ApiCallFigures api_calls;
  GpuFigures gpu;  // sums; no utilization series (ranks' clocks differ)
  std::map<std::string, uint64_t> dropped;
  uint64_t dropped_total = 0;
  std::vector<Finding> findings;
  std::string verdict;
  // Steps: the median count over ranks, where they came from ("mixed" when ranks differ),
  // and the median over ranks of each rank's median step.
  uint64_t steps_count = 0;
  std::string steps_source = "none";
  double steps_median_s = 0;
  // The medians over ranks of the host's and device's periods (0: not measured), and the side
  // that paces most ranks ("host" on a tie).
  double steps_host_period_s = 0, steps_device_period_s = 0;
  std::string steps_paced_by;
};

JobResult MergeRanks(const RankList& ranks);

}  // namespace gpuwatch::collector
