// collectives: NCCL operations per op, with bandwidths as nccl-tests define them
// (field-facts.md, "Collectives"): S = bytes for AllReduce/Broadcast/Reduce/Send/Recv,
// S = nranks x bytes for AllGather/ReduceScatter (HostCall::coll_bytes); algbw = S / t;
// busbw = algbw x factor (common/bus_factor.h). t is the GPU time the library measured, less
// the wait for the last member when the job's analysis gives it (the transfer).
//
// One rank may use communicators of different sizes (tensor- and data-parallel groups), so
// the factor is applied per call: we sum S x factor ("bus bytes") and divide by the summed
// time, which for a single n is exactly algbw x factor. Calls without GPU time count in
// `count` and `bytes` but not in the bandwidths, which would otherwise be inflated.
//
// Also a sample of the calls for matching them across ranks (the straggler): those whose
// sequence number is a multiple of `stride`. The stride doubles whenever kMaxCollCalls are
// kept, so the sample covers the whole run and every rank keeps the same calls.
//
// A call on a one-member communicator moves nothing between GPUs (NCCL copies locally, or
// nothing in place): it counts in `count`, `bytes` and its GPU time, but not in the
// bandwidths (`local`), which would read as the device's memory speed, not a link's.
// The time a call waited for its communicator's last member to arrive is known only across
// ranks (analyze/collective_waits.h): the bandwidths take it out when it is given.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "common/tally.h"
#include "interpret/event_sink.h"

namespace gpuwatch::collector {

// Collectives' GPU time: calls, those timed (CUPTI's NCCL kernels inside a window, the CUDA
// event pair outside), and their sum. What a sampled timeline's communication is
// (analyze/sampled_estimate.h).
struct CallsTime {
  uint64_t calls = 0, timed = 0, ns = 0;
  void Add(uint64_t gpu_ns, bool has_time) { ++calls, timed += has_time, ns += has_time ? gpu_ns : 0; }
  void Add(const HostCall& c) { Add(c.gpu_ns, c.timed); }
  CallsTime Minus(const CallsTime& o) const { return {calls - o.calls, timed - o.timed, ns - o.ns}; }
  double MeanNs() const { return timed ? static_cast<double>(ns) / static_cast<double>(timed) : 0.0; }
  // Every call's time: the untimed ones (a pair the pool could not give, a kernel CUPTI returned
  // without times) at the timed ones' mean, or at `mean_ns` when none was timed.
  uint64_t AllNs(double mean_ns) const {
    const uint64_t untimed = calls > timed ? calls - timed : 0;
    return ns + static_cast<uint64_t>(static_cast<double>(untimed) * (timed ? MeanNs() : mean_ns) + 0.5);
  }
  uint64_t AllNs() const { return AllNs(0.0); }
};

struct CollOp {
  const char* name;
  wire::Api api;
};
inline constexpr std::array<CollOp, 7> kCollOps = {{{"allreduce", wire::NCCL_ALL_REDUCE},
                                                    {"allgather", wire::NCCL_ALL_GATHER},
                                                    {"reducescatter", wire::NCCL_REDUCE_SCATTER},
                                                    {"broadcast", wire::NCCL_BROADCAST},
                                                    {"reduce", wire::NCCL_REDUCE},
                                                    {"send", wire::NCCL_SEND},
                                                    {"recv", wire::NCCL_RECV}}};

// One call of the sample: its communicator (unique hash), sequence number, host start and
// measured GPU time (0 when not measured); `pointer_keyed`: the communicator was not seen
// created, so its hash is a pointer that means nothing on another rank. `kernel_timed`: the
// GPU time is CUPTI's kernels' (in a window), not the event pair's, which also holds the
// gap before the kernel starts: a rank in a window and one outside are not compared by it.
// `op`: the index of its op in kCollOps.
struct CollCall {
  uint64_t hash, seq, t_ns, gpu_ns;
  bool pointer_keyed = false;
  bool kernel_timed = false;
  uint8_t op = 0;
};

struct CollectiveFigures {
  struct Op {
    uint64_t count = 0, bytes = 0;  // all calls; bytes are S
    Tally timed;                    // the calls with GPU time: S, GPU ns
    double bus_bytes = 0;           // S x factor, calls with GPU time
    Tally local;                    // of `timed`, the calls on a one-member communicator
    uint64_t no_gpu_time() const { return count - timed.count; }
    CallsTime Calls() const { return {count, timed.count, timed.ns}; }
    // The timed calls that crossed a link: their S, and their GPU time less `wait_ns` (the
    // part spent waiting for the last member to arrive), as nccl-tests times a call from a
    // synchronized start. 0 when none did.
    uint64_t link_bytes() const { return timed.bytes - local.bytes; }
    uint64_t TransferNs(uint64_t wait_ns = 0) const;
    double algbw(uint64_t wait_ns = 0) const;  // GB/s
    double busbw(uint64_t wait_ns = 0) const;
    bool only_local() const { return timed.count && local.count == timed.count; }
    // Counts one call (not one recorded into a graph).
    void Count(const HostCall& c);
    void Add(const Op& o);
  };
  std::array<Op, kCollOps.size()> ops{};
  std::vector<CollCall> sample;
  uint64_t stride = 1;

  Op Total() const;
  // Job totals: ops add up; the sample stays with each rank.
  void Merge(const CollectiveFigures& o);
};

class CollectiveCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  const CollectiveFigures& figures() const { return f_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  void ThinSample();
  CollectiveFigures f_;
};

}  // namespace gpuwatch::collector
