// The job's figures: every rank's RankResult merged (sums over ranks), the job's findings
// (the straggler among them) and its verdict, and what only the job sees of each rank: its
// collectives' waits for their last member and its findings as the job's analysis corrected
// them. Computed once when a summary is made; every view of the job and of its ranks reads it.
#pragma once
#include <cstdint>
#include <map>
#include <unordered_map>
#include <string>
#include <vector>

#include "analyze/collective_waits.h"
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
  CollectiveWaits waits;  // per rank index and summed
  std::vector<Finding> findings;
  // Per rank index: the rank's findings with the waits the job found moved to their cause
  // (JobFindings): what every view of a rank shows.
  std::vector<std::vector<Finding>> rank_findings;
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
  // The median rank's critical path, and the job's step with every finding's fix applied.
  CriticalPathFigures critical_path;
  // Where the ranks' graphs joined at their collectives (job_graph.h), critical_path is the
  // joined path's and these are the ranks it went through: (rank, ms a step on it), most
  // first; empty: critical_path is the median rank's.
  std::vector<std::pair<int, double>> critical_path_ranks;
  WhatIf all_fixed;

  // The rank's index in `ranks` (its result is the one `ranks` points at), or -1.
  int IndexOf(const RankResult& r) const;
  std::unordered_map<const RankResult*, size_t> index;  // IndexOf's
  // The rank's findings as the job corrected them, else its own.
  const std::vector<Finding>& FindingsOf(const RankResult& r) const;
  // The rank's collective waits, or null.
  const RankWaits* WaitsOf(const RankResult& r) const;
};

JobResult MergeRanks(const RankList& ranks);

}  // namespace gpuwatch::collector
