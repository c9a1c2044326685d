// Communication overlapped with compute, as Meta's HTA defines it: of each NCCL kernel's time
// on the device timeline, the part during which a non-NCCL kernel ran too is overlapped, the
// rest exposed. Per rank, per NVTX step (the step whose [start, next start) holds the NCCL
// kernel's start) and per communicator: a NCCL kernel belongs to the collective call that
// launched it (the last collective called at or before its launch, which also covers a
// group's kernels launched at ncclGroupEnd).
//
// Device work arrives in start order, so an NCCL kernel is settled once work starting at or
// after its end arrives; only the compute spans pending kernels can still meet are held.
#pragma once
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "interpret/event_sink.h"

namespace gpuwatch::collector {

struct OverlapTally {
  uint64_t kernels = 0, nccl_ns = 0, overlapped_ns = 0;
  uint64_t ExposedNs() const { return nccl_ns - overlapped_ns; }
  void Add(const OverlapTally& o) {
    kernels += o.kernels;
    nccl_ns += o.nccl_ns;
    overlapped_ns += o.overlapped_ns;
  }
};

struct OverlapFigures {
  OverlapTally total;
  std::unordered_map<uint64_t, OverlapTally> by_comm;  // by HostCall::comm_hash; 0: launch unknown
  std::vector<OverlapTally> per_step;  // the first kMaxSteps NVTX steps (StepFigures::steps)
};

class CommOverlap final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  void OnDeviceWork(const DeviceWork& w) override;
  void OnStep(const StepMark& m) override;
  void OnStepsReset() override;
  // Everything settled as if no more work came (the state is left as it is).
  OverlapFigures Result() const;

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Pending {
    uint64_t start, end, hash;
  };
  struct Call {
    uint64_t t_ns, hash;
  };
  void Settle(uint64_t before);  // the pending kernels that end by `before`
  void Charge(const Pending& k, uint64_t overlapped);
  void ChargeStep(uint64_t start, const OverlapTally& t);

  OverlapFigures f_;
  std::deque<std::pair<uint64_t, uint64_t>> compute_;  // merged non-NCCL kernel spans
  std::vector<Pending> pending_;
  std::deque<Call> calls_;  // the latest collective calls, in start order
  // NVTX steps: starts and ends of the kept ones; kernels that start after the last known
  // step's end wait (up to kMaxCommCallsHeld) for the next step to say whose they are.
  std::vector<std::pair<uint64_t, uint64_t>> steps_;
  uint64_t steps_seen_ = 0;
  std::vector<std::pair<uint64_t, OverlapTally>> held_;
};

}  // namespace gpuwatch::collector
