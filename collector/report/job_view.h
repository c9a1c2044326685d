// What the views of a job's summary read: each rank's identity, end state, storage and
// RankResult, the job's JobResult and hangs. Built by the job table (jobs/job_end.h); the
// views never reach into the live aggregation.
#pragma once
#include <string>
#include <vector>

#include "analyze/hang.h"
#include "analyze/job_result.h"
#include "analyze/rank_result.h"
#include "gpuwatch.pb.h"
#include "ingest/rank_sink.h"

namespace gpuwatch::collector {

struct RankView {
  const wire::Hello* hello = nullptr;
  bool ended_normally = false;
  const RankStorage* storage = nullptr;
  const RankResult* result = nullptr;
};

// The job's trace as the summary reports it (jobs/job_end.cpp fills it from the JobTrace).
struct TraceView {
  std::string file;
  std::string keep;  // --trace-keep: "first", "last", "last:10"
  uint64_t bytes = 0;
  struct Span {
    double from_s = 0, to_s = 0;  // from the job's first rank's start
    std::string detail;           // "full", "summary" (the summary level only), "none"
  };
  std::vector<Span> detail_spans;
};

struct JobView {
  std::string id;
  int world_size = 0;
  std::vector<RankView> ranks;  // in (rank, host, pid) order
  const std::vector<Hang>* hangs = nullptr;
  const JobResult* result = nullptr;
  const TraceView* trace = nullptr;  // null: no trace

  int distinct_hosts() const;
  // Largest rank wall time: ranks on different hosts have unrelated monotonic clocks (or,
  // forwarded with --upstream, aligned only to within the estimate's error), so spans are
  // not combined across ranks.
  double wall_s() const;
};

}  // namespace gpuwatch::collector
