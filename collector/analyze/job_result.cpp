// See job_result.h.
#include "analyze/job_result.h"

#include <algorithm>

#include "analyze/verdict.h"
#include "analyze/what_if.h"
#include "common/format.h"
#include "common/median.h"

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
                    {"exposed_s", Seconds(c->figures.ExposedNs())},
                    {"ranks_reporting", c->ranks_reporting},
                    {"exposed_s_per_rank", Seconds(c->figures.ExposedNs()) / std::max<double>(c->ranks_reporting, 1)}});
    f.evidence["by_comm"] = std::move(by);
    f.evidence["by_comm_figures"] = "calls, gpu_s, exposed_s: sums over the ranks reporting; exposed_s_per_rank: their mean";
  }
}

// Sends and recvs wait for their peer (pipeline.h): their waits join the collectives'.
void AddPointToPointWaits(const RankList& ranks, const JobPipeline& jp, CollectiveWaits& cw) {
  for (size_t i = 0; i < ranks.size() && i < cw.ranks.size(); ++i) {
    const RankResult& r = ranks[i];
    const PipelineRankWait* w = jp.WaitOf(r.rank);
    if (!w || !r.pipeline.any()) continue;
    const uint64_t hash = r.pipeline.links.front().comm_hash;
    for (size_t k = 0; k < kCollOps.size(); ++k) {
      const bool send = kCollOps[k].api == wire::NCCL_SEND;
      if (!send && kCollOps[k].api != wire::NCCL_RECV) continue;
      const auto& op = r.collectives.ops[k];
      const uint64_t ns = std::min(static_cast<uint64_t>((send ? w->send_wait_s : w->recv_wait_s) * 1e9),
                                   op.timed.ns - op.local.ns);
      cw.ranks[i].AddOp(hash, k, ns);
      cw.job.AddOp(hash, k, ns);
    }
  }
}

}  // namespace

int JobResult::IndexOf(const RankResult& r) const {
  const auto it = index.find(&r);
  return it == index.end() ? -1 : static_cast<int>(it->second);
}

const std::vector<Finding>& JobResult::FindingsOf(const RankResult& r) const {
  const int i = IndexOf(r);
  return i >= 0 && static_cast<size_t>(i) < rank_findings.size() ? rank_findings[i] : r.findings;
}

const RankWaits* JobResult::WaitsOf(const RankResult& r) const {
  const int i = IndexOf(r);
  return i >= 0 ? waits.Of(static_cast<size_t>(i)) : nullptr;
}

JobResult MergeRanks(const RankList& ranks) {
  JobResult j;
  j.ranks = ranks;
  for (size_t i = 0; i < ranks.size(); ++i) j.index.emplace(&ranks[i], i);
  std::vector<uint64_t> counts;
  std::vector<double> medians, host_periods, device_periods;
  size_t device_paced = 0;
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
    if (r.steps_total()) {
      host_periods.push_back(Seconds(r.HostPeriodMedianNs()));
      if (r.DevicePeriodMedianNs()) device_periods.push_back(Seconds(r.DevicePeriodMedianNs()));
      device_paced += std::string(r.PacedBy()) == "device";
    }
    if (r.found.source != j.steps_source) j.steps_source = "mixed";
  }
  j.gpu.source_detail = Printf("%llu rank(s) cupti, %llu rank(s) events",
                               static_cast<unsigned long long>(j.gpu.cupti_ranks),
                               static_cast<unsigned long long>(j.gpu.events_ranks));
  j.steps_count = Percentile(counts, 0.5);
  std::sort(medians.begin(), medians.end());
  j.steps_median_s = medians.empty() ? 0.0 : medians[medians.size() / 2];
  j.steps_host_period_s = Median(host_periods);
  j.steps_device_period_s = Median(device_periods);
  if (!host_periods.empty()) j.steps_paced_by = 2 * device_paced > host_periods.size() ? "device" : "host";
  j.pipeline_links = MatchPipeline(ranks);
  j.by_comm = JoinCommunicators(ranks);
  j.waits = MeasureCollectiveWaits(ranks);
  AddPointToPointWaits(ranks, j.pipeline_links, j.waits);
  for (JobComm& c : j.by_comm)
    if (c.identified)
      for (const RankWaits& w : j.waits.ranks) AddTo(c.wait_ns, w.Comm(c.hash));
  j.findings = JobFindings(ranks, &j.rank_findings, &j.waits, &j.pipeline_links);
  SplitCommunicationByComm(j.by_comm, j.findings);
  ModelJobFixes(j);
  j.verdict = Verdict(ranks, j.findings);
  return j;
}

}  // namespace gpuwatch::collector
