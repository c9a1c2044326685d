// See job_result.h.
#include "analyze/job_result.h"

#include <algorithm>

#include "analyze/verdict.h"
#include "common/format.h"

namespace gpuwatch::collector {

namespace {

// The job's `communication` finding says which communicators the time went to: each one's
// exposed NCCL kernel time (and its whole GPU time), largest first.
void SplitCommunicationByComm(const std::vector<JobComm>& comms, std::vector<Finding>& findings) {
  for (Finding& f : findings) {
    if (f.id != "communication") continue;
    std::vector<const JobComm*> order;
    for (const JobComm& c : comms) order.push_back(&c);
    std::sort(order.begin(), order.end(), [](const JobComm* a, const JobComm* b) {
      return a->figures.ExposedNs() > b->figures.ExposedNs();
    });
    nlohmann::json by = nlohmann::json::array();
    for (const JobComm* c : order)
      by.push_back({{"members", c->members},
                    {"kind", c->kind},
                    {"identified", c->identified},
                    {"calls", c->figures.Total().count},
                    {"gpu_s", Seconds(c->figures.Total().timed.ns)},
                    {"exposed_s", Seconds(c->figures.ExposedNs())}});
    f.evidence["by_comm"] = std::move(by);
  }
}

}  // namespace

JobResult MergeRanks(const RankList& ranks) {
  JobResult j;
  j.ranks = ranks;
  std::vector<uint64_t> counts;
  std::vector<double> medians;
  j.steps_source = ranks.empty() ? "none" : ranks[0].found.source;
  for (const RankResult& r : ranks) {
    j.sync.Merge(r.sync);
    j.copies.Merge(r.copies);
    j.collectives.Merge(r.collectives);
    j.coll_sizes.Merge(r.coll_sizes);
    j.pipeline.Merge(r.pipeline);
    j.overlap.Add(r.overlap.total);
    j.launches.Merge(r.launches);
    j.graphs.Merge(r.graphs);
    j.api_calls.Merge(r.api_calls);
    j.gpu.Merge(r.gpu);
    for (const auto& [reason, n] : r.dropped)
      if (j.dropped.size() < RankFacts::kMaxReasons || j.dropped.count(reason)) j.dropped[reason] += n;
    j.dropped_total += r.dropped_total;
    counts.push_back(r.steps_total());
    medians.push_back(r.StepMedianS());
    if (r.found.source != j.steps_source) j.steps_source = "mixed";
  }
  j.gpu.source_detail = Printf("%llu rank(s) cupti, %llu rank(s) events",
                               static_cast<unsigned long long>(j.gpu.cupti_ranks),
                               static_cast<unsigned long long>(j.gpu.events_ranks));
  j.steps_count = Percentile(counts, 0.5);
  std::sort(medians.begin(), medians.end());
  j.steps_median_s = medians.empty() ? 0.0 : medians[medians.size() / 2];
  j.pipeline_links = MatchPipeline(ranks);
  j.by_comm = JoinCommunicators(ranks);
  j.findings = JobFindings(ranks);
  SplitCommunicationByComm(j.by_comm, j.findings);
  j.verdict = Verdict(ranks, j.findings);
  return j;
}

}  // namespace gpuwatch::collector
