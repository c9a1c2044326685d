// The ranks' step graphs joined at their collectives (issue 52): each rank's StepGraph of
// the same steps (step_graph.h), one graph of the job. A collective's kernels on every member
// of its communicator are one join: its transfer starts on all of them when the last member
// arrives (arrival: when the member's own inputs let its kernel start) and lasts the
// transfer (the shortest of the members' kernels: the last to arrive waited for no one); a
// send and its recv join the same way (the recv's transfer starts no earlier than the send's
// arrival, the send completes with the recv). Joins are matched by their CommKey.
//
// Replaying it gives the job's step as the ranks pace each other, not as each paces itself:
// a fix on one rank (the straggler at the median rank's pace) moves every rank that waits
// for it. The joined critical path crosses ranks: walking back from the last end, at a join
// it continues on the rank that arrived last. Each rank's own path (its time waiting for
// the last arrival as peer_wait) comes with it.
//
// Ranks' clocks: ranks on one host share CLOCK_MONOTONIC; across hosts the offsets are read
// from the joins themselves (a collective's kernels end together on every member).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyze/step_graph.h"

namespace gpuwatch::collector {

struct RankStepGraph {
  int rank = -1;     // world rank
  std::string host;  // ranks on one host share a clock
  std::shared_ptr<const StepGraph> graph;
};

// A rank's time on the joined path.
struct PathRank {
  int rank = -1;
  double ns = 0;
};

struct JobPathReplay {
  // The job's steps: the first step's done (its last rank's) → the last step's done.
  uint64_t span_ns = 0;
  uint32_t steps = 0;
  double part_ns[kPathParts] = {};  // the joined critical path by part; sums to span_ns
  std::vector<PathStreamTime> streams;  // kPathGpuCompute by stream (the ranks' ids together)
  std::vector<PathRank> path_ranks;     // the ranks the path went through, most time first
  // Per rank, in the JobGraph's order: its own steps (span_ns, steps) and, when asked for,
  // its own path (part_ns: its peer_wait the time it waited for the last arrival of its joins).
  std::vector<PathReplay> ranks;
};

class JobGraph {
 public:
  // The ranks' graphs joined; nullopt when they do not hold the same steps: fewer than two
  // ranks, step counts that differ, a rank whose named comm kernels mostly miss a member (its
  // graph is of other steps, or a member's rank is missing), ranks of several hosts that
  // never meet (no clock in common), or joins
  // in an order no replay can follow. A comm kernel whose members are not all there (its
  // call not tied to it on some rank) replays as measured, unjoined.
  static std::optional<JobGraph> Join(std::vector<RankStepGraph> ranks);

  // `fixes`: per rank (as ranks() orders them), empty for none: measured. `rank_paths`: walk
  // each rank's own path too (a walk costs about what the replay does).
  JobPathReplay Replay(const std::vector<ReplayFix>& fixes = {}, bool rank_paths = false) const;
  // The measured steps' span, as Replay counts it.
  uint64_t MeasuredSpan() const;

  const std::vector<RankStepGraph>& ranks() const { return ranks_; }
  size_t joins() const { return joins_.size(); }

 private:
  struct Member {
    uint32_t rank, node;  // index into ranks_; the comm node
  };
  // What the replay visits in turn: one node, or a join (rank == kJoinItem; node: its index).
  static constexpr uint32_t kJoinItem = UINT32_MAX;

  bool Offsets();
  bool Order();
  // The job's steps' span (its clock: the first rank's) from each rank's node ends: a step
  // is done when its last rank is; `from`: the first one's done. Each rank's own span (and
  // its `rank_from`, its clock) as ReplayGraph counts it.
  uint64_t Span(const std::vector<std::vector<uint64_t>>& end, int64_t* from, uint32_t* steps,
                std::vector<PathReplay>* per_rank, std::vector<uint64_t>* rank_from) const;

  std::vector<RankStepGraph> ranks_;
  std::vector<int64_t> offset_;                // per rank: its clock less the first rank's
  std::vector<std::vector<Member>> joins_;     // each join's members, one per rank
  std::vector<std::vector<int32_t>> join_of_;  // per rank, per node: its join, -1: none
  std::vector<Member> order_;                  // a topological order of nodes and joins
};

// A rank's sampled graphs (step_graphs.h), for JoinSampledGraphs.
struct RankGraphs {
  int rank = -1;
  std::string host;
  std::vector<std::shared_ptr<const StepGraph>> graphs;
};

// The ranks' graphs grouped by the steps they hold (graphs of different ranks that share a
// join; on one host, groups of ranks that never meet side by side where their windows
// overlap), each group that joins every given rank. Empty when none does.
std::vector<JobGraph> JoinSampledGraphs(const std::vector<RankGraphs>& ranks);

}  // namespace gpuwatch::collector
