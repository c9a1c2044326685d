// See communicators.h.
#include "analyze/communicators.h"

#include <algorithm>
#include <map>

#include "analyze/rank_result.h"
#include "common/bus_factor.h"
#include "common/thresholds.h"

namespace gpuwatch::collector {

CollectiveFigures::Op CommFigures::Total() const {
  CollectiveFigures::Op t;
  for (const auto& o : ops) t.Add(o);
  return t;
}

void CommFigures::Add(const CommFigures& o) {
  for (size_t i = 0; i < ops.size(); ++i) ops[i].Add(o.ops[i]);
  kernels += o.kernels;
  kernel_ns += o.kernel_ns;
  overlapped_ns += o.overlapped_ns;
}

void CommCounter::OnHostCall(const HostCall& c) {
  if (!IsCollective(c.api) || c.captured) return;
  auto it = index_.find(c.comm_hash);
  if (it == index_.end()) {
    if (t_.comms.size() >= kMaxCommsPerRank) {
      ++t_.calls_not_kept;
      return;
    }
    it = index_.emplace(c.comm_hash, t_.comms.size()).first;
    CommFigures f;
    f.hash = c.comm_hash;
    f.identified = c.comm_identified;
    f.nranks = c.comm_nranks;
    f.rank = c.comm_rank;
    t_.comms.push_back(f);
  }
  const auto op = std::find_if(kCollOps.begin(), kCollOps.end(), [&](const CollOp& o) { return o.api == c.api; });
  t_.comms[it->second].ops[op - kCollOps.begin()].Count(c);
}

CommTable CommCounter::Result(const RankFacts& facts) const {
  CommTable t = t_;
  for (const auto& [id, f] : facts.Comms())
    for (CommFigures& c : t.comms)
      if (c.hash == f.unique_hash && c.rank == f.rank) c.facts = f;
  return t;
}

std::string MembersLabel(const std::vector<int>& members) {
  std::string s;
  for (size_t i = 0; i < members.size(); ++i) s += (i ? "," : "") + std::to_string(members[i]);
  return s;
}

namespace {

// Megatron's layout (TP innermost, then DP, PP outermost): a TP group is a run of
// consecutive ranks, a DP group strides over TP groups inside a stage, a PP group carries
// only send/recv. A DP group as large as the job is the world.
std::string GuessKind(const JobComm& c, int world) {
  if (!c.identified) return "unknown";
  if (c.nranks > 1 && c.nranks == world) return "world";
  const auto& ops = c.figures.ops;
  bool p2p_only = true;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].count && kCollOps[i].api != wire::NCCL_SEND && kCollOps[i].api != wire::NCCL_RECV) p2p_only = false;
  if (p2p_only && c.figures.Total().count) return "pp";
  if (c.members.size() < 2 || std::count(c.members.begin(), c.members.end(), -1)) return "other";
  const int stride = c.members[1] - c.members[0];
  for (size_t i = 1; i < c.members.size(); ++i)
    if (c.members[i] - c.members[i - 1] != stride) return "other";
  return stride == 1 ? "tp" : stride > 1 ? "dp" : "other";
}

}  // namespace

std::vector<JobComm> JoinCommunicators(const RankList& ranks) {
  std::vector<JobComm> out;
  std::map<uint64_t, size_t> by_hash;  // identified ones
  size_t listed = 0;                   // member slots so far, against kMaxListedMembers
  for (const RankResult& r : ranks)
    for (const CommFigures& c : r.comms.comms) {
      size_t i;
      auto it = c.identified ? by_hash.find(c.hash) : by_hash.end();
      if (it != by_hash.end()) {
        i = it->second;
      } else {
        i = out.size();
        if (c.identified) by_hash.emplace(c.hash, i);
        JobComm j;
        j.hash = c.hash;
        j.identified = c.identified;
        j.nranks = c.nranks;
        const size_t n = static_cast<size_t>(std::max(c.nranks, 1));
        if (listed + n <= kMaxListedMembers) {
          j.members.assign(n, -1);
          listed += n;
        }
        j.figures.facts = c.facts;
        out.push_back(std::move(j));
      }
      JobComm& j = out[i];
      if (c.rank >= 0 && static_cast<size_t>(c.rank) < j.members.size()) j.members[c.rank] = r.rank;
      j.figures.Add(c);
      j.figures.facts.ended = std::max(j.figures.facts.ended, c.facts.ended);
      ++j.ranks_reporting;
    }
  const int world = static_cast<int>(ranks.size());
  for (JobComm& j : out) j.kind = GuessKind(j, world);
  return out;
}

}  // namespace gpuwatch::collector
