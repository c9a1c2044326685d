// collective_waits: how long each rank's collectives waited for the last member of their
// communicator to arrive. The sampled calls of one communicator (identity, sequence number:
// CollectiveFigures::sample) are lined up across the ranks that use it; within one call,
// every member's kernel ends together, so the member with the shortest GPU time arrived last
// and its time is the transfer (what nccl-tests times from a synchronized start); the others'
// time beyond it is their wait. Send/recv pair two ranks, not a communicator (pipeline.h).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "analyze/collectives.h"

namespace gpuwatch::collector {

class RankList;

// One communicator's calls lined up (the sampled ones every member kept).
struct CommLineUp {
  uint64_t hash = 0;
  std::vector<size_t> members;  // rank indices that use it, in rank order
  uint64_t compared = 0;        // sampled calls compared
  std::vector<uint64_t> last;   // per rank index: how many of them it reached last
  std::vector<double> wait_s;   // per rank index (0 for non-members), over every call (x stride)
};

// One rank's waits over every call (the sample's, scaled by its stride), inside GPU time:
// per op (kCollOps), and per op of each communicator (by its hash).
struct RankWaits {
  using PerOp = std::array<uint64_t, kCollOps.size()>;
  PerOp op_ns{};
  std::map<uint64_t, PerOp> comm_ns;
  uint64_t TotalNs() const;
  // A communicator's (zeros for one without waits).
  const PerOp& Comm(uint64_t hash) const;
  void Add(const RankWaits& o);
  // `ns` more of op `op` (index in kCollOps) on the communicator `hash`.
  void AddOp(uint64_t hash, size_t op, uint64_t ns);
};
uint64_t Sum(const RankWaits::PerOp& v);
void AddTo(RankWaits::PerOp& to, const RankWaits::PerOp& w);

struct CollectiveWaits {
  bool one_host = true;  // every rank on one host: the host clock says who called last
  uint64_t stride = 1;   // the sample holds every stride-th call
  std::vector<CommLineUp> comms;
  std::vector<RankWaits> ranks;  // per rank index
  RankWaits job;                 // the ranks' sums
  // Rank index i's waits (null past the ranks).
  const RankWaits* Of(size_t i) const { return i < ranks.size() ? &ranks[i] : nullptr; }
};

CollectiveWaits MeasureCollectiveWaits(const RankList& ranks);

}  // namespace gpuwatch::collector
