// Findings of parallel strategies: small_collectives (a rank rule: latency-bound
// collectives) and pipeline_bubble (job level: the stage that keeps the next one waiting).
#include <algorithm>
#include <cmath>

#include "analyze/findings.h"
#include "analyze/stragglers.h"
#include "common/format.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

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

namespace {

// The share of the rank's send/recv kernel time not overlapped with compute (its pipeline
// communicator's, comm_overlap.h); 1 without a device timeline.
double ExposedP2pShare(const RankResult& r) {
  if (!r.pipeline.any()) return 1.0;
  const uint64_t hash = r.pipeline.links.front().comm_hash;
  for (const CommFigures& c : r.comms.comms)
    if (c.hash == hash && c.kernel_ns) return static_cast<double>(c.ExposedNs()) / static_cast<double>(c.kernel_ns);
  return 1.0;
}

}  // namespace

// The slow stage: the one whose neighbours wait for it most (their recvs from it, their sends
// to it) beyond what it waits itself. Every rank's exposed send and recv waits are that
// stage's bubble; time lost is their mean over the job's ranks.
std::optional<Finding> PipelineBubbleFinding(const RankList& ranks, const JobPipeline& jp, double base,
                                             std::vector<std::vector<Finding>>& per,
                                             std::vector<std::vector<Finding>>& cause) {
  const auto& st = jp.stages;
  if (st.size() < 2 || ranks.empty()) return std::nullopt;
  size_t slow = 0;
  for (size_t i = 1; i < st.size(); ++i)
    if (st[i].caused_s - st[i].wait_s > st[slow].caused_s - st[slow].wait_s) slow = i;
  const double score = st[slow].caused_s - st[slow].wait_s;
  if (score <= 0 || score < kPipelineBubbleMinShare * base) return std::nullopt;
  const size_t R = ranks.size();
  std::vector<double> exposed(R, 0.0);
  double lost = 0, upstream = 0, downstream = 0;
  nlohmann::json by_rank = nlohmann::json::object(), sends = nlohmann::json::object(), recvs = nlohmann::json::object();
  for (size_t i = 0; i < R; ++i) {
    const RankResult& r = ranks[i];
    const PipelineRankWait* w = jp.WaitOf(r.rank);
    if (!w) continue;
    exposed[i] = w->wait_s() * ExposedP2pShare(r);
    lost += exposed[i];
    const std::string k = std::to_string(r.rank);
    by_rank[k] = exposed[i];
    sends[k] = w->send_wait_s;
    recvs[k] = w->recv_wait_s;
    if (w->stage != st[slow].stage) {
      upstream += w->send_wait_s;
      downstream += w->recv_wait_s;
    }
  }
  lost /= static_cast<double>(R);
  Finding f = MakeFinding("pipeline_bubble", lost, base);
  f.ranks = st[slow].ranks;
  nlohmann::json stages = nlohmann::json::array(), links = nlohmann::json::array();
  for (const PipelineStage& s : st)
    stages.push_back({{"stage", s.stage}, {"ranks", s.ranks}, {"bubble_s", s.bubble_s}, {"wait_s", s.wait_s},
                      {"caused_s", s.caused_s}});
  for (const PipelineLink& l : jp.links)
    links.push_back({{"from", l.from}, {"to", l.to}, {"sends", l.sends}, {"recvs", l.recvs},
                     {"matched", l.matched}, {"recv_wait_s", l.recv_wait_s}, {"send_wait_s", l.send_wait_s}});
  f.evidence = {{"slow_stage", st[slow].stage},
                {"caused_beyond_own_wait_s", score},
                {"stages", stages},
                {"bubble_s_by_rank", by_rank},
                {"send_wait_s_by_rank", sends},
                {"recv_wait_s_by_rank", recvs},
                {"time_lost", "bubble_s_by_rank over the job's ranks (mean per rank)"},
                {"links", links}};
  const std::string who = RanksText(st[slow].ranks);
  f.summary = Printf("pipeline stage %d (%s) is the slow stage: the other stages wait for it %s in their sends and "
                     "%s in their recvs (all ranks); GPUs idle in pipeline bubbles %s per rank on average",
                     st[slow].stage, who.c_str(), FmtDuration(upstream).c_str(), FmtDuration(downstream).c_str(),
                     FmtDuration(lost).c_str());
  // A rank's waits are the slow stage's bubble, not communication (the rank's own rule took
  // out the compute idle beside its recvs already); its own finding names the stage. The slow
  // stage's own short waits stay its communication: it waits for nobody in particular.
  for (size_t i = 0; i < R; ++i) {
    const PipelineRankWait* w = jp.WaitOf(ranks[i].rank);
    if (exposed[i] <= 0 || !w || w->stage == st[slow].stage) continue;
    const double more = std::max(0.0, exposed[i] - Seconds(ranks[i].pipeline.bubble_ns));
    TakeWaitOut(per[i], more, {"communication"}, "pipeline_wait_s");
    Finding g = MakeFinding("pipeline_bubble", exposed[i], BaseS(ranks[i]));
    g.ranks = st[slow].ranks;
    g.evidence = {{"slow_stage", st[slow].stage},
                  {"send_wait_s", sends[std::to_string(ranks[i].rank)]},
                  {"recv_wait_s", recvs[std::to_string(ranks[i].rank)]},
                  {"exposed_wait_s", exposed[i]}};
    g.summary = Printf("this rank's sends and recvs waited %s for pipeline stage %d (%s), the slow stage",
                       FmtDuration(exposed[i]).c_str(), st[slow].stage, who.c_str());
    cause[i].push_back(std::move(g));
  }
  return f;
}

}  // namespace gpuwatch::collector
