// A simulated communicator and the per-process progress thread that resolves its ops.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../simgpu.h"
#include "shm.h"

namespace simnccl {

// Resolution progress of one participant on one channel: `done` is published to the peers.
struct LocalChannel {
  uint64_t done = 0;
  std::set<uint64_t> ahead;  // resolved sequence numbers above `done`
};

}  // namespace simnccl

// The opaque type behind ncclComm_t (named by nccl.h in the global namespace).
struct ncclComm {
  simnccl::Segment seg;
  int nranks = 0, rank = 0, device = 0;
  // Sequence numbers, taken in call order (every rank calls in the same order).
  uint64_t coll_seq = 0, split_seq = 0;
  std::map<int, uint64_t> send_seq, recv_seq;  // by peer
  simnccl::LocalChannel coll_local;
  std::map<int, simnccl::LocalChannel> pair_local;  // by channel index src*n+dst
  int in_flight = 0;                                // ops enqueued but not resolved
  // Its members as ranks of the communicator it was split from, all the way up (an
  // initialized one: 0 .. nranks-1), and the same as "0,2": the truth's key for it.
  std::vector<int> members;
  const char* label = nullptr;
  std::string last_error;
};

namespace simnccl {

// One op of a communicator, described before it is put on a stream.
struct OpPlan {
  ncclComm* comm = nullptr;
  simgpu_external_desc desc{};
  int src = -1, dst = -1;  // send/recv: the pair; collectives: -1
  int participant = 0;     // own index on the channel (rank, or 0 sender / 1 receiver)
  uint64_t seq = 0;
  uint64_t duration_ns = 0;  // after the last arrival: latency + S * factor / busbw
};

// Spends NCCL's host time before a launch (the `nccl_launch_us` key), then puts plans that
// share `stream` on it as one group and hands them to the progress thread. Returns a
// cudaError_t from the device model.
int submit(cudaStream_t stream, const std::vector<OpPlan>& plans);

// Blocks until `comm` has no op in flight (ncclCommDestroy), or drops them (abort).
void drain(ncclComm* comm, bool abort);

// Blocking all-gather of one value per rank through the split channel (ncclCommSplit).
bool exchange(ncclComm* comm, uint64_t value, std::vector<uint64_t>& values, std::string& error);

// Joins the segment and waits until all ranks joined (ncclCommInitRank blocks likewise).
bool join(ncclComm* comm, const std::string& name, std::string& error);

// Leaves; the last rank to leave unlinks the segment.
void leave(ncclComm* comm);

}  // namespace simnccl
