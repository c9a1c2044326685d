// Collectives per communicator: each communicator a rank used, with its calls, bytes and
// bandwidth per op, its NCCL kernel time split into overlapped and exposed (comm_overlap.h),
// and at job end the same joined across ranks by identity: its members as world ranks and
// the parallel dimension it most likely is (world, tp, dp, pp by size and member pattern).
// A communicator the library did not see created is keyed by its pointer, which means
// nothing in another process: it stays one rank's, reported as not identified.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyze/collectives.h"
#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

class RankList;

// One communicator as one rank saw it.
struct CommFigures {
  uint64_t hash = 0;        // HostCall::comm_hash
  bool identified = false;  // seen created: `hash` names it on every rank
  int32_t nranks = 0, rank = 0;
  std::array<CollectiveFigures::Op, kCollOps.size()> ops{};
  // Its NCCL kernels on the device timeline (CUPTI) and the part of their time during which
  // a non-NCCL kernel ran too; the rest is exposed.
  uint64_t kernels = 0, kernel_ns = 0, overlapped_ns = 0;
  CommFacts facts;  // how it was made and ended, as announced

  CollectiveFigures::Op Total() const;
  uint64_t ExposedNs() const { return kernel_ns - overlapped_ns; }
  void Add(const CommFigures& o);  // figures only
};

struct CommTable {
  std::vector<CommFigures> comms;  // in order of first use
  uint64_t calls_not_kept = 0;     // calls on communicators beyond kMaxCommsPerRank
};

class CommCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  // The table with what the facts say about each communicator.
  CommTable Result(const RankFacts& facts) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  CommTable t_;
  std::unordered_map<uint64_t, size_t> index_;  // by hash
};

// One communicator of the job: every rank's view of it joined.
struct JobComm {
  uint64_t hash = 0;
  bool identified = false;
  int32_t nranks = 0;
  std::vector<int> members;  // world rank of each comm rank (-1: no rank reported it);
                             // empty past kMaxListedMembers
  std::string kind;          // "world", "tp", "dp", "pp", "other", or "unknown" (not identified)
  CommFigures figures;       // sums over the ranks that reported it
  size_t ranks_reporting = 0;
  // Per op, the members' waits for the last one to arrive, summed (MergeRanks fills it:
  // collective_waits.h).
  std::array<uint64_t, kCollOps.size()> wait_ns{};
};

// A communicator's member list is as long as its size, which is the stream's word: one
// claiming 2^31 ranks once made the summary ask for 4 GB. The job's lists together hold at
// most this many slots (a 100k-rank world and its groups fit); past it a list stays empty.
inline constexpr size_t kMaxListedMembers = size_t{1} << 20;

// Joins the ranks' tables: identified communicators by hash, the others one per rank.
std::vector<JobComm> JoinCommunicators(const RankList& ranks);

// "0,2,4": members as world ranks, the key the simulator's truth uses.
std::string MembersLabel(const std::vector<int>& members);

}  // namespace gpuwatch::collector
