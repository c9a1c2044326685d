// See stragglers.h. HTA's straggler analysis looks at which ranks start the collectives
// last (field-facts.md); here that is done per communicator, over the calls every rank
// that uses the communicator made (the sampled ones: CollectiveFigures::sample).
#include "analyze/stragglers.h"

#include <algorithm>
#include <map>
#include <set>

#include "analyze/communicators.h"
#include "analyze/findings.h"
#include "common/format.h"
#include "common/median.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {
namespace {


// One communicator's straggler: the rank index that reached its calls last most often.
struct Straggle {
  uint64_t hash = 0;
  std::vector<size_t> members;  // rank indices that use it, in rank order
  int rank = -1;                // rank index
  double last_share = 0;
  uint64_t compared = 0;
  std::vector<double> wait_s;   // per rank index (0 for non-members), over the compared calls
  double peers_wait_s = 0;      // the other members' median wait, over all calls (x stride)
  double mean_wait_s = 0;       // ... per compared call
};

std::vector<Straggle> FindStragglers(const RankList& ranks, bool one_host, uint64_t stride) {
  const size_t R = ranks.size();
  using Group = std::vector<std::pair<size_t, const CollCall*>>;
  std::map<uint64_t, std::map<uint64_t, Group>> by_comm;  // hash -> seq -> calls
  std::map<uint64_t, std::set<size_t>> users;
  for (size_t i = 0; i < R; ++i)
    for (const auto& c : ranks[i].collectives.sample) {
      if (c.pointer_keyed) continue;  // means nothing on another rank
      by_comm[c.hash][c.seq].emplace_back(i, &c);
      users[c.hash].insert(i);
    }
  std::vector<Straggle> out;
  for (const auto& [hash, calls] : by_comm) {
    Straggle st;
    st.hash = hash;
    st.members.assign(users[hash].begin(), users[hash].end());
    if (st.members.size() < 2) continue;
    st.wait_s.assign(R, 0.0);
    std::vector<uint64_t> last(R, 0);
    for (const auto& [seq, g] : calls) {
      if (g.size() != st.members.size()) continue;  // not every member's call was kept
      // Across hosts only the GPU times compare, and only when every member's is measured
      // the same way (a call timed from its kernels, in a window, reads a few us shorter than
      // one timed by its event pair, and an untimed one is 0: either would look "last").
      bool alike = true;
      for (const auto& member : g) {
        const CollCall& m = *member.second;
        alike = alike && m.gpu_ns && m.kernel_timed == g[0].second->kernel_timed;
      }
      if (!one_host && !alike) continue;
      size_t li = 0;
      for (size_t j = 1; j < g.size(); ++j) {
        const bool later = one_host ? g[j].second->t_ns > g[li].second->t_ns
                                    : g[j].second->gpu_ns < g[li].second->gpu_ns;
        if (later) li = j;
      }
      const CollCall& lc = *g[li].second;
      // How long each rank waited: inside the collective on the GPU (its GPU time beyond the
      // last arriver's) when both are timed the same way, else the difference of the host
      // call times.
      for (const auto& [idx, c] : g) {
        uint64_t w;
        if (c->gpu_ns && lc.gpu_ns && c->kernel_timed == lc.kernel_timed)
          w = c->gpu_ns > lc.gpu_ns ? c->gpu_ns - lc.gpu_ns : 0;
        else
          w = lc.t_ns > c->t_ns ? lc.t_ns - c->t_ns : 0;
        st.wait_s[idx] += Seconds(w);
      }
      ++last[g[li].first];
      ++st.compared;
    }
    if (!st.compared) continue;
    const size_t top = std::max_element(last.begin(), last.end()) - last.begin();
    st.rank = static_cast<int>(top);
    st.last_share = static_cast<double>(last[top]) / st.compared;
    std::vector<double> others;
    for (size_t i : st.members)
      if (i != top) others.push_back(st.wait_s[i]);
    st.mean_wait_s = Median(others) / st.compared;
    // The compared calls are every stride-th: the waits over all of them.
    for (double& w : st.wait_s) w *= static_cast<double>(stride);
    st.peers_wait_s = Median(others) * static_cast<double>(stride);
    out.push_back(std::move(st));
  }
  return out;
}

// The communicator as summary.json's collectives.by_comm names it.
nlohmann::json CommJson(const std::vector<JobComm>& comms, uint64_t hash) {
  for (const JobComm& c : comms)
    if (c.identified && c.hash == hash) return {{"members", c.members}, {"kind", c.kind}};
  return {{"members", nlohmann::json::array()}, {"kind", "unknown"}};
}

}  // namespace

std::optional<Finding> StragglerFinding(const RankList& ranks, double base, std::vector<std::vector<Finding>>& per) {
  const size_t R = ranks.size();
  bool one_host = true;
  uint64_t stride = 1;
  size_t with = 0;
  for (const auto& r : ranks) {
    with += !r.collectives.sample.empty();
    one_host = one_host && r.host == ranks[0].host;
    stride = std::max(stride, r.collectives.stride);  // the calls every rank kept
  }
  if (with < 2) return std::nullopt;
  std::vector<double> meds;
  for (const auto& r : ranks) meds.push_back(r.StepMedianS());
  const double step = Median(meds);

  std::vector<Straggle> found;
  for (Straggle& st : FindStragglers(ranks, one_host, stride)) {
    if (st.last_share < kStragglerLastShare) continue;
    const double ref = step > 0 ? step : base / static_cast<double>(st.compared * stride);
    if (st.mean_wait_s < kStragglerMinWaitShare * ref) continue;
    found.push_back(std::move(st));
  }
  if (found.empty()) return std::nullopt;
  // The one that cost its peers most leads; every one is listed.
  std::sort(found.begin(), found.end(), [](const Straggle& a, const Straggle& b) { return a.peers_wait_s > b.peers_wait_s; });
  const std::vector<JobComm> comms = JoinCommunicators(ranks);
  const Straggle& top = found[0];
  std::vector<double> member_waits;
  for (size_t i : top.members) member_waits.push_back(top.wait_s[i]);
  Finding f = MakeFinding("straggler", Median(member_waits), base);
  const int srank = ranks[top.rank].rank;
  f.ranks = {srank};
  nlohmann::json by_comm = nlohmann::json::array();
  for (const Straggle& st : found) {
    nlohmann::json waits = nlohmann::json::object();
    for (size_t i : st.members) waits[std::to_string(ranks[i].rank)] = st.wait_s[i];
    nlohmann::json c = CommJson(comms, st.hash);
    c["straggler"] = ranks[st.rank].rank;
    c["last_share"] = st.last_share;
    c["collectives_compared"] = st.compared;
    c["peers_wait_s"] = st.peers_wait_s;
    c["mean_wait_per_collective_ms"] = Millis(st.mean_wait_s);
    c["wait_s_by_rank"] = waits;
    by_comm.push_back(std::move(c));
  }
  const nlohmann::json& lead = by_comm[0];
  const std::string kind = lead["kind"].get<std::string>();
  const std::string group = kind == "world" || kind == "unknown" ? std::string("the collectives")
                                                                   : "the " + kind + " group " + lead["members"].dump() + "'s collectives";
  f.evidence = {{"rank", srank},
                {"last_share", top.last_share},
                {"collectives_compared", top.compared},
                {"compared_every", stride},
                {"method", one_host ? "last to call (host clock), wait from collective GPU time"
                                    : "shortest collective GPU time"},
                {"comm", CommJson(comms, top.hash)},
                {"peers_wait_s", top.peers_wait_s},
                {"wait_s_by_rank", lead["wait_s_by_rank"]},
                {"mean_wait_per_collective_ms", Millis(top.mean_wait_s)},
                {"by_comm", by_comm}};
  f.summary = Printf("rank %d reaches %.0f%% of %s last; its peers wait %s for it each time (%s in all)", srank,
                     100 * top.last_share, group.c_str(), FmtDuration(top.mean_wait_s).c_str(),
                     FmtDuration(top.peers_wait_s).c_str());
  // Their waiting is not a communication cost, nor a slow link's (the collectives' time holds
  // it): it comes out of link_bandwidth first, what that did not hold out of communication.
  std::vector<double> wait(R, 0.0);
  for (const Straggle& st : found)
    for (size_t i = 0; i < R; ++i) wait[i] += st.wait_s[i];
  for (size_t i = 0; i < R; ++i) {
    double left = wait[i];
    for (const char* id : {"link_bandwidth", "communication"})
      for (auto& g : per[i])
        if (g.id == id) {
          const double taken = std::min(left, g.time_lost_s);
          g.time_lost_s -= taken;
          left -= taken;
          g.evidence["straggler_wait_s"] = wait[i];
        }
  }
  return f;
}

}  // namespace gpuwatch::collector
