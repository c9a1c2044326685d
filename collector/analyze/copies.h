// copies: host-side view of host<->device copies (cudaMemcpy and cudaMemcpyAsync), per
// direction. `ns` is host time inside the copy calls, so a copy that blocked the host is
// counted here and under sync as well. D2D copies and memsets are counted apart, H2H
// copies not at all. Calls recorded into a CUDA graph moved nothing and are left out. The
// findings' view: pageable copies and large blocking copies, apart from the small blocking
// copies that are syncs (SyncKind).
#pragma once
#include <array>
#include <cstdint>

#include "common/tally.h"
#include "interpret/event_sink.h"

namespace gpuwatch::collector {

struct CopyFigures {
  struct Direction {
    Tally calls;     // every copy call
    Tally pageable;  // of them, from or to pageable memory
    uint64_t blocking_count = 0;
    void Add(const Direction& o) {
      calls.Add(o.calls);
      pageable.Add(o.pageable);
      blocking_count += o.blocking_count;
    }
  };
  std::array<Direction, kCopyDirections> dir{};  // [CopyDirection()]
  Tally pageable;  // from or to pageable memory, not a small blocking copy
  Tally blocking;  // pinned but blocking the host, not a small blocking copy
  Tally d2d;       // device-to-device copies (cudaMemcpyPeer included): host calls
  Tally memset;    // cudaMemset* calls (not recorded into a graph)

  void Merge(const CopyFigures& o);
};

class CopyCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  const CopyFigures& figures() const { return f_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  CopyFigures f_;
};

}  // namespace gpuwatch::collector
