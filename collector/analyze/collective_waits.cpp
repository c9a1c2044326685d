// See collective_waits.h.
#include "analyze/collective_waits.h"

#include <algorithm>
#include <set>

#include "analyze/rank_result.h"
#include "common/format.h"

namespace gpuwatch::collector {
namespace {

bool PointToPoint(uint8_t op) {
  return kCollOps[op].api == wire::NCCL_SEND || kCollOps[op].api == wire::NCCL_RECV;
}

using Group = std::vector<std::pair<size_t, const CollCall*>>;

// One call's waits, added to `lu` (per rank index, seconds) and to the ranks' `waits` (ns, in
// GPU time only). Across hosts only GPU times compare, and only when every member's is
// measured the same way (a call timed from its kernels, in a window, reads a few us shorter
// than one timed by its event pair, and an untimed one is 0: either would look "last").
bool LineUpCall(const Group& g, bool one_host, CommLineUp& lu, std::vector<RankWaits>& waits) {
  bool alike = true;
  for (const auto& member : g) {
    const CollCall& m = *member.second;
    alike = alike && m.gpu_ns && m.kernel_timed == g[0].second->kernel_timed;
  }
  if (!one_host && !alike) return false;
  size_t li = 0;
  uint64_t transfer = g[0].second->gpu_ns;
  for (size_t j = 1; j < g.size(); ++j) {
    const bool later = one_host ? g[j].second->t_ns > g[li].second->t_ns : g[j].second->gpu_ns < g[li].second->gpu_ns;
    if (later) li = j;
    transfer = std::min(transfer, g[j].second->gpu_ns);
  }
  const CollCall& lc = *g[li].second;
  for (const auto& [idx, c] : g) {
    // Inside the collective on the GPU: its time beyond the transfer (the shortest member's);
    // without comparable GPU times, the difference of the host call times.
    uint64_t w;
    if (alike)
      w = c->gpu_ns - transfer;
    else
      w = lc.t_ns > c->t_ns ? lc.t_ns - c->t_ns : 0;
    lu.wait_s[idx] += Seconds(w);
    if (c->gpu_ns) waits[idx].AddOp(c->hash, c->op, std::min(w, c->gpu_ns));
  }
  ++lu.last[g[li].first];
  ++lu.compared;
  return true;
}

}  // namespace

uint64_t Sum(const RankWaits::PerOp& v) {
  uint64_t t = 0;
  for (uint64_t w : v) t += w;
  return t;
}

uint64_t RankWaits::TotalNs() const { return Sum(op_ns); }

const RankWaits::PerOp& RankWaits::Comm(uint64_t hash) const {
  static const PerOp kNone{};
  const auto it = comm_ns.find(hash);
  return it == comm_ns.end() ? kNone : it->second;
}

void AddTo(RankWaits::PerOp& to, const RankWaits::PerOp& w) {
  for (size_t i = 0; i < to.size(); ++i) to[i] += w[i];
}

void RankWaits::Add(const RankWaits& o) {
  AddTo(op_ns, o.op_ns);
  for (const auto& [h, w] : o.comm_ns) AddTo(comm_ns[h], w);
}

void RankWaits::AddOp(uint64_t hash, size_t op, uint64_t ns) {
  op_ns[op] += ns;
  comm_ns[hash][op] += ns;
}

CollectiveWaits MeasureCollectiveWaits(const RankList& ranks) {
  CollectiveWaits cw;
  const size_t R = ranks.size();
  cw.ranks.assign(R, RankWaits{});
  for (const auto& r : ranks) {
    cw.one_host = cw.one_host && r.host == ranks[0].host;
    cw.stride = std::max(cw.stride, r.collectives.stride);  // the calls every rank kept
  }
  std::map<uint64_t, std::map<uint64_t, Group>> by_comm;  // hash -> seq -> calls
  std::map<uint64_t, std::set<size_t>> users;
  for (size_t i = 0; i < R; ++i)
    for (const auto& c : ranks[i].collectives.sample) {
      if (c.pointer_keyed || PointToPoint(c.op)) continue;  // means nothing on another rank
      if (c.seq % cw.stride != 0) continue;                 // not kept by every rank
      by_comm[c.hash][c.seq].emplace_back(i, &c);
      users[c.hash].insert(i);
    }
  std::vector<RankWaits> sampled(R);
  for (const auto& [hash, calls] : by_comm) {
    CommLineUp lu;
    lu.hash = hash;
    lu.members.assign(users[hash].begin(), users[hash].end());
    if (lu.members.size() < 2) continue;
    lu.wait_s.assign(R, 0.0);
    lu.last.assign(R, 0);
    for (const auto& [seq, g] : calls)
      if (g.size() == lu.members.size()) LineUpCall(g, cw.one_host, lu, sampled);  // every member's call kept
    if (!lu.compared) continue;
    for (double& w : lu.wait_s) w *= static_cast<double>(cw.stride);
    cw.comms.push_back(std::move(lu));
  }
  // The sampled calls' waits, over every call; never more than the op's GPU time.
  for (size_t i = 0; i < R; ++i) {
    RankWaits& w = cw.ranks[i];
    for (size_t k = 0; k < w.op_ns.size(); ++k) {
      const auto& op = ranks[i].collectives.ops[k];
      w.op_ns[k] = std::min(sampled[i].op_ns[k] * cw.stride, op.timed.ns - op.local.ns);
    }
    for (const auto& [h, ns] : sampled[i].comm_ns)
      for (size_t k = 0; k < ns.size(); ++k) w.comm_ns[h][k] = ns[k] * cw.stride;
    cw.job.Add(w);
  }
  return cw;
}

}  // namespace gpuwatch::collector
