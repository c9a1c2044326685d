// pipeline: a rank's point-to-point traffic (ncclSend/ncclRecv, pipeline parallelism) per
// peer and communicator, with each call's GPU time kept for matching it across ranks
// (PipelineLinks, job level), and the pipeline bubble: time the compute was idle while only
// a recv kernel ran on the device (the stage waiting for its input from the previous one).
//
// A recv kernel is one whose launching API call lies inside an ncclRecv host call (CUPTI's
// launch record joined by correlation id; NCCL launches during the call outside a group).
// Grouped recvs launch in ncclGroupEnd, after the call returned: their kernels are not told
// from sends (counted in `grouped_calls`, their time stays exposed communication).
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "interpret/event_sink.h"
#include "interpret/rank_facts.h"

namespace gpuwatch::collector {

// One direction to one peer on one communicator, from this rank's side.
struct P2pLink {
  uint64_t comm_hash = 0;   // the communicator across ranks (RankFacts' unique hash)
  uint64_t comm_id = 0;     // this rank's id of it (resolved to comm_rank by Result)
  int32_t comm_rank = -1;   // this rank's index in the communicator (its pipeline stage)
  int32_t comm_size = 0;
  int32_t peer = -1;        // the peer's index in the communicator
  bool send = false;
  uint64_t count = 0, bytes = 0, gpu_ns = 0, timed = 0;
  // The GPU time of each call, in call order (the n-th send to a peer meets the peer's n-th
  // recv from this rank); 0 when not measured. The first kMaxP2pCallsKept only.
  std::vector<uint64_t> call_gpu_ns;
};

struct PipelineFigures {
  std::vector<P2pLink> links;  // at most kMaxP2pLinks
  uint64_t links_dropped = 0;  // calls on links beyond the bound (counted nowhere else here)
  uint64_t recv_kernels = 0, recv_kernel_ns = 0;
  uint64_t bubble_ns = 0;      // compute idle while only a recv kernel ran
  uint64_t grouped_calls = 0;  // send/recv inside ncclGroupStart/End
  // This rank's stage: its index in the communicator of its send/recv (-1: none), and the
  // stages there are (the communicator's size).
  int stage() const;
  int stages() const;
  bool any() const { return !links.empty(); }
  void Merge(const PipelineFigures& o);  // job sums: counts, bytes, bubble; links stay per rank
};

class PipelineCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  void OnDeviceWork(const DeviceWork& w) override;
  void OnBusy(const BusySpan& b) override;
  PipelineFigures Result(const RankFacts& facts) const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Span {
    uint64_t start, end;
  };
  P2pLink* LinkFor(const HostCall& c);
  // Adds the recv-only time of the recv kernels before `until` outside noncomm busy time.
  void SettleRecvs(uint64_t gap_from, uint64_t gap_to, uint64_t until);

  PipelineFigures f_;
  std::deque<Span> recv_calls_;    // ncclRecv host calls not yet passed by the device sweep
  std::deque<Span> recv_kernels_;  // recv kernels not yet passed by a noncomm busy span
  uint64_t noncomm_end_ = 0;       // end of the last noncomm busy span
};

// The job's pipeline: every send matched with its recv across ranks. Communicator members
// come from each rank's own index in the communicator (RankFacts), so a peer's index is a
// world rank wherever the rank at that index reported.
//
// A send and its recv end together (a rendezvous): the side that arrived first waited for the
// other inside its kernel, so the shorter of the two GPU times is the transfer and the other's
// time beyond it is its wait. A receiver's wait is its sender's stage's doing (downstream), a
// sender's wait its receiver's (upstream: a slow stage posts its recv late).
struct PipelineLink {
  int from = -1, to = -1;  // world ranks
  uint64_t sends = 0, recvs = 0, bytes_sent = 0, bytes_received = 0;
  uint64_t matched = 0;  // calls compared (the first kMaxP2pCallsKept of each side)
  // Over the matched pairs, scaled to every pair (the fewer of sends and recvs): the receiver
  // waiting on the sender, and the sender waiting on the receiver.
  double recv_wait_s = 0;
  double send_wait_s = 0;
};

// One rank's waits in its sends and recvs (PipelineLink's, its side of them).
struct PipelineRankWait {
  int rank = -1;  // world rank
  int stage = -1;
  double send_wait_s = 0, recv_wait_s = 0;
  double wait_s() const { return send_wait_s + recv_wait_s; }
};

struct PipelineStage {
  int stage = 0;
  std::vector<int> ranks;
  double bubble_s = 0;  // mean over its ranks: compute idle while only a recv ran (the rank's own)
  double wait_s = 0;    // mean over its ranks: their sends' and recvs' waits
  // Mean over its ranks: the waits it caused its neighbours (their recvs from it, their sends
  // to it). The slow stage causes waits and has none of its own.
  double caused_s = 0;
};

struct JobPipeline {
  std::vector<PipelineLink> links;
  std::vector<PipelineStage> stages;
  std::vector<PipelineRankWait> waits;  // ranks with a send or recv, in world rank order
  bool any() const { return !links.empty(); }
  const PipelineRankWait* WaitOf(int rank) const;
};

class RankList;
JobPipeline MatchPipeline(const RankList& ranks);

}  // namespace gpuwatch::collector
