// See stragglers.h. HTA's straggler analysis looks at which ranks start the collectives
// last (field-facts.md); here that is done per communicator, over the calls every rank
// that uses the communicator made (the sampled ones: CollectiveFigures::sample).
#include "analyze/stragglers.h"

#include <algorithm>

#include "analyze/communicators.h"
#include "analyze/findings.h"
#include "common/format.h"
#include "common/median.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {
namespace {

// One communicator's straggler: the rank index that reached its calls last most often.
struct Straggle {
  const CommLineUp* lu = nullptr;
  int rank = -1;  // rank index
  double last_share = 0;
  double peers_wait_s = 0;  // the other members' median wait, over all calls
  double mean_wait_s = 0;   // ... per call
};

Straggle Judge(const CommLineUp& lu, uint64_t stride) {
  Straggle st;
  st.lu = &lu;
  const size_t top = std::max_element(lu.last.begin(), lu.last.end()) - lu.last.begin();
  st.rank = static_cast<int>(top);
  st.last_share = static_cast<double>(lu.last[top]) / lu.compared;
  std::vector<double> others;
  for (size_t i : lu.members)
    if (i != top) others.push_back(lu.wait_s[i]);
  st.peers_wait_s = Median(others);
  st.mean_wait_s = st.peers_wait_s / static_cast<double>(lu.compared * stride);
  return st;
}

// The communicator as summary.json's collectives.by_comm names it.
nlohmann::json CommJson(const std::vector<JobComm>& comms, uint64_t hash) {
  for (const JobComm& c : comms)
    if (c.identified && c.hash == hash) return {{"members", c.members}, {"kind", c.kind}};
  return {{"members", nlohmann::json::array()}, {"kind", "unknown"}};
}

// A waiting rank's own straggler finding: its wait, the straggler it waited for most.
Finding RankStraggler(const RankList& ranks, size_t i, double wait_s, const std::vector<Straggle>& found,
                      const RankResult& r) {
  Finding f = MakeFinding("straggler", wait_s, BaseS(r));
  const Straggle* most = nullptr;
  nlohmann::json by = nlohmann::json::object();
  for (const Straggle& st : found) {
    const double w = st.lu->wait_s[i];
    if (w <= 0) continue;
    by[std::to_string(ranks[st.rank].rank)] = by.value(std::to_string(ranks[st.rank].rank), 0.0) + w;
    if (!most || w > most->lu->wait_s[i]) most = &st;
  }
  const int srank = ranks[most->rank].rank;
  f.ranks = {srank};
  f.evidence = {{"rank", srank}, {"waiting_rank", r.rank}, {"wait_s", wait_s}, {"wait_s_by_straggler", by}};
  f.summary = Printf("this rank's collectives waited %s for rank %d, which reaches %.0f%% of them last", FmtDuration(wait_s).c_str(),
                     srank, 100 * most->last_share);
  return f;
}

}  // namespace

double TakeWaitOut(std::vector<Finding>& findings, double wait_s, std::initializer_list<const char*> ids,
                   const char* key) {
  double left = wait_s;
  for (const char* id : ids)
    for (auto& g : findings)
      if (g.id == id) {
        const double taken = std::min(left, g.time_lost_s);
        g.time_lost_s -= taken;
        g.share = g.time_lost_s > 0 && g.share > 0 ? g.share * g.time_lost_s / (g.time_lost_s + taken) : 0.0;
        g.severity = SeverityOf(g.share);
        left -= taken;
        g.evidence[key] = wait_s;
      }
  return wait_s - left;
}

std::optional<Finding> StragglerFinding(const RankList& ranks, const CollectiveWaits& waits, double base,
                                        std::vector<std::vector<Finding>>& per,
                                        std::vector<std::vector<Finding>>& cause) {
  const size_t R = ranks.size();
  size_t with = 0;
  for (const auto& r : ranks) with += !r.collectives.sample.empty();
  if (with < 2) return std::nullopt;
  std::vector<double> meds;
  for (const auto& r : ranks) meds.push_back(r.StepMedianS());
  const double step = Median(meds);

  std::vector<Straggle> found;
  for (const CommLineUp& lu : waits.comms) {
    Straggle st = Judge(lu, waits.stride);
    if (st.last_share < kStragglerLastShare) continue;
    const double ref = step > 0 ? step : base / static_cast<double>(lu.compared * waits.stride);
    if (st.mean_wait_s < kStragglerMinWaitShare * ref) continue;
    found.push_back(st);
  }
  if (found.empty()) return std::nullopt;
  // The one that cost its peers most leads; every one is listed.
  std::sort(found.begin(), found.end(), [](const Straggle& a, const Straggle& b) { return a.peers_wait_s > b.peers_wait_s; });
  std::vector<double> wait(R, 0.0);
  for (const Straggle& st : found)
    for (size_t i = 0; i < R; ++i) wait[i] += st.lu->wait_s[i];
  double sum = 0;
  for (double w : wait) sum += w;
  const std::vector<JobComm> comms = JoinCommunicators(ranks);
  const Straggle& top = found[0];
  Finding f = MakeFinding("straggler", sum / static_cast<double>(R), base);
  const int srank = ranks[top.rank].rank;
  f.ranks = {srank};
  nlohmann::json by_comm = nlohmann::json::array();
  for (const Straggle& st : found) {
    nlohmann::json w = nlohmann::json::object();
    for (size_t i : st.lu->members) w[std::to_string(ranks[i].rank)] = st.lu->wait_s[i];
    nlohmann::json c = CommJson(comms, st.lu->hash);
    c["straggler"] = ranks[st.rank].rank;
    c["last_share"] = st.last_share;
    c["collectives_compared"] = st.lu->compared;
    c["peers_wait_s"] = st.peers_wait_s;
    c["mean_wait_per_collective_ms"] = Millis(st.mean_wait_s);
    c["wait_s_by_rank"] = w;
    by_comm.push_back(std::move(c));
  }
  nlohmann::json all = nlohmann::json::object();
  for (size_t i = 0; i < R; ++i)
    if (wait[i] > 0) all[std::to_string(ranks[i].rank)] = wait[i];
  const nlohmann::json& lead = by_comm[0];
  const std::string kind = lead["kind"].get<std::string>();
  const std::string group = kind == "world" || kind == "unknown" ? std::string("the collectives")
                                                                   : "the " + kind + " group " + lead["members"].dump() + "'s collectives";
  f.evidence = {{"rank", srank},
                {"last_share", top.last_share},
                {"collectives_compared", top.lu->compared},
                {"compared_every", waits.stride},
                {"method", waits.one_host ? "last to call (host clock), wait from collective GPU time"
                                          : "shortest collective GPU time"},
                {"comm", CommJson(comms, top.lu->hash)},
                {"peers_wait_s", top.peers_wait_s},
                {"wait_s_by_rank", lead["wait_s_by_rank"]},
                {"mean_wait_per_collective_ms", Millis(top.mean_wait_s)},
                {"waits_sum_s", sum},
                {"all_waits_s_by_rank", all},
                {"time_lost", "waits_sum_s over the job's ranks (mean per rank)"},
                {"by_comm", by_comm}};
  f.summary = Printf("rank %d reaches %.0f%% of %s last; its peers wait %s for it each time (%s in all)", srank,
                     100 * top.last_share, group.c_str(), FmtDuration(top.mean_wait_s).c_str(),
                     FmtDuration(top.peers_wait_s).c_str());
  // Their waiting is not a communication cost, nor a slow link's (the collectives' time holds
  // it): it comes out of link_bandwidth first, what that did not hold out of communication;
  // the rank's own finding names the straggler instead.
  for (size_t i = 0; i < R; ++i) {
    if (wait[i] <= 0) continue;
    TakeWaitOut(per[i], wait[i], {"link_bandwidth", "communication"}, "straggler_wait_s");
    cause[i].push_back(RankStraggler(ranks, i, wait[i], found, ranks[i]));
  }
  return f;
}

}  // namespace gpuwatch::collector
