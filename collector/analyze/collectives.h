// collectives: NCCL operations per op, with bandwidths as nccl-tests define them
// (field-facts.md, "Collectives"): S = bytes for AllReduce/Broadcast/Reduce/Send/Recv,
// S = nranks x bytes for AllGather/ReduceScatter (HostCall::coll_bytes); algbw = S / t;
// busbw = algbw x factor (common/bus_factor.h). t is the GPU time the library measured.
//
// One rank may use communicators of different sizes (tensor- and data-parallel groups), so
// the factor is applied per call: we sum S x factor ("bus bytes") and divide by the summed
// time, which for a single n is exactly algbw x factor. Calls without GPU time count in
// `count` and `bytes` but not in the bandwidths, which would otherwise be inflated.
//
// Also a sample of the calls for matching them across ranks (the straggler): those whose
// sequence number is a multiple of `stride`. The stride doubles whenever kMaxCollCalls are
// kept, so the sample covers the whole run and every rank keeps the same calls.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "common/tally.h"
#include "interpret/event_sink.h"

namespace gpuwatch::collector {

// GPU time of `calls` collectives of which `timed` were timed, `timed_ns` together: the
// others at the timed ones' mean (a pair the pool could not give, a kernel CUPTI returned
// without times). What a sampled timeline's communication is (analyze/sampled_comm.h).
inline uint64_t AllCallsNs(uint64_t calls, uint64_t timed, uint64_t timed_ns) {
  if (timed == 0) return 0;
  return static_cast<uint64_t>(static_cast<double>(timed_ns) * static_cast<double>(std::max(calls, timed)) /
                                   static_cast<double>(timed) + 0.5);
}

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
struct CollCall {
  uint64_t hash, seq, t_ns, gpu_ns;
  bool pointer_keyed = false;
  bool kernel_timed = false;
};

struct CollectiveFigures {
  struct Op {
    uint64_t count = 0, bytes = 0;  // all calls; bytes are S
    Tally timed;                    // the calls with GPU time: S, GPU ns
    double bus_bytes = 0;           // S x factor, calls with GPU time
    uint64_t no_gpu_time() const { return count - timed.count; }
    uint64_t AllCallsNs() const { return collector::AllCallsNs(count, timed.count, timed.ns); }
    double algbw() const;           // GB/s
    double busbw() const;
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
  void ThinSample();
  CollectiveFigures f_;
};

}  // namespace gpuwatch::collector
