// Findings of parallel strategies: small_collectives (a rank rule: latency-bound
// collectives) and pipeline_bubble (job level: the stage that keeps the next one waiting).
#include <algorithm>
#include <cmath>

#include "analyze/findings.h"
#include "common/format.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {
namespace {
}  // namespace

// Each small call past the ones the same bytes need at kSmallCollectiveBytes pays the
// latency (the shortest collective measured) again; only the exposed share of it is lost.
std::optional<Finding> SmallCollectives(const RankContext& c, const std::vector<Finding>&) {
  const CollectiveSizeFigures& cs = c.r.coll_sizes;
  if (!cs.small_timed) return std::nullopt;
  const double per = c.steps_div > 0 ? cs.small_calls / c.steps_div : cs.small_calls / std::max(c.r.ActiveS(), 1e-9);
  if (per < kSmallCollectivesPerStep) return std::nullopt;
  const double exposed_share = ExposedCommShare(c);
  const double lost = Seconds(cs.ExcessLatencyNs()) * exposed_share;
  Finding f = MakeFinding("small_collectives", lost, c.run_base);
  const double busbw = cs.large_busbw_gbps();
  const uint64_t needed = (cs.small_timed_bytes + cs.threshold_bytes - 1) / cs.threshold_bytes;
  f.evidence = {{"small_collectives", cs.small_calls},
                {"small_bytes", cs.small_bytes},
                {"small_gpu_s", Seconds(cs.small_ns)},
                {"mean_bytes", cs.small_calls ? cs.small_bytes / cs.small_calls : 0},
                {c.steps_div > 0 ? "per_step" : "per_second", per},
                {"threshold_bytes", cs.threshold_bytes},
                {"threshold_source", "constant"},
                {"latency_us", cs.min_call_ns * 1e-3},
                {"calls_at_threshold", needed},
                {"exposed_share", exposed_share},
                {"large_collectives", cs.large_calls},
                {"large_busbw_gbps", busbw}};
  // Where the rank has large calls, the size at which its link reaches half that bandwidth.
  f.evidence["half_bandwidth_bytes"] =
      busbw > 0 && cs.min_call_ns ? nlohmann::json(std::llround(busbw * static_cast<double>(cs.min_call_ns)))
                                  : nlohmann::json();
  f.summary = Printf("%llu collectives under %s (mean %s, %.0f %s) each pay about %s of latency; "
                     "as %llu calls of %s they would save %s",
                     static_cast<unsigned long long>(cs.small_calls), FmtBytes(cs.threshold_bytes).c_str(),
                     FmtBytes(cs.small_calls ? cs.small_bytes / cs.small_calls : 0).c_str(), per,
                     c.steps_div > 0 ? "per step" : "per second", FmtDuration(Seconds(cs.min_call_ns)).c_str(),
                     static_cast<unsigned long long>(needed), FmtBytes(cs.threshold_bytes).c_str(),
                     c.Per(lost).c_str());
  return f;
}

double ExposedCommShare(const RankContext& c) {
  const auto& run = c.r.gpu.run;
  return c.r.cupti() && run.comm
             ? std::min(1.0, static_cast<double>(run.ExposedComm()) / static_cast<double>(run.comm))
             : 1.0;
}

double ExplainedCommS(const RankContext& c, const std::vector<Finding>& found) {
  double s = Seconds(c.r.pipeline.bubble_ns);
  for (const Finding& f : found)
    if (f.id == "small_collectives" || f.id == "link_bandwidth") s += f.time_lost_s;
  return s;
}

// The slow stage: the one after which the wait on recvs grows most (the next stage waits for
// its sends; stages after that wait as long, paced by it). Time lost: the ranks' mean bubble.
std::optional<Finding> PipelineBubbleFinding(const RankList& ranks, double base) {
  const JobPipeline jp = MatchPipeline(ranks);
  const auto& st = jp.stages;
  if (st.size() < 2 || ranks.empty()) return std::nullopt;
  size_t slow = 0;
  double jump = 0;
  for (size_t i = 0; i + 1 < st.size(); ++i) {
    if (st[i + 1].stage != st[i].stage + 1) continue;
    const double d = st[i + 1].bubble_s - st[i].bubble_s;
    if (d > jump) jump = d, slow = i;
  }
  if (jump <= 0 || jump < kPipelineBubbleMinShare * base) return std::nullopt;
  double lost = 0;
  nlohmann::json by_rank = nlohmann::json::object();
  for (const RankResult& r : ranks) {
    lost += Seconds(r.pipeline.bubble_ns);
    by_rank[std::to_string(r.rank)] = Seconds(r.pipeline.bubble_ns);
  }
  lost /= static_cast<double>(ranks.size());
  Finding f = MakeFinding("pipeline_bubble", lost, base);
  f.ranks = st[slow].ranks;
  nlohmann::json stages = nlohmann::json::array(), links = nlohmann::json::array();
  for (const PipelineStage& s : st) stages.push_back({{"stage", s.stage}, {"ranks", s.ranks}, {"bubble_s", s.bubble_s}});
  for (const PipelineLink& l : jp.links)
    links.push_back({{"from", l.from}, {"to", l.to}, {"sends", l.sends}, {"recvs", l.recvs},
                     {"matched", l.matched}, {"recv_wait_s", l.recv_wait_s}});
  f.evidence = {{"slow_stage", st[slow].stage},
                {"next_stage_extra_wait_s", jump},
                {"stages", stages},
                {"bubble_s_by_rank", by_rank},
                {"links", links}};
  std::string who;
  for (int r : st[slow].ranks) who += (who.empty() ? "" : ",") + std::to_string(r);
  f.summary = Printf("pipeline stage %d (rank%s %s) is the slow stage: stage %d waits %s longer on its recvs; "
                     "GPUs idle in pipeline bubbles %s per rank on average",
                     st[slow].stage, st[slow].ranks.size() == 1 ? "" : "s", who.c_str(), st[slow + 1].stage,
                     FmtDuration(jump).c_str(), FmtDuration(lost).c_str());
  return f;
}

}  // namespace gpuwatch::collector
