// copies: host-side view of host<->device copies (cudaMemcpy and cudaMemcpyAsync), per
// direction. `ns` is host time inside the copy calls, so a copy that blocked the host is
// counted here and under sync as well. D2D and H2H copies are not reported (yet). The
// findings' view: pageable copies and large blocking copies, apart from the small blocking
// copies that are syncs (SyncKind).
#pragma once
#include <array>
#include <cstdint>

#include "interpret/event_sink.h"

namespace gpuwatch::collector {

struct CopyFigures {
  struct Direction {
    uint64_t count = 0, bytes = 0, ns = 0;
    uint64_t pageable_count = 0, pageable_bytes = 0, blocking_count = 0;
    void Add(const Direction& o);
  };
  struct Kind {
    uint64_t count = 0, bytes = 0, ns = 0;
    void Add(const Kind& o);
  };
  std::array<Direction, kCopyDirections> dir{};  // [CopyDirection()]
  Kind pageable;  // from or to pageable memory, not a small blocking copy
  Kind blocking;  // pinned but blocking the host, not a small blocking copy

  void Merge(const CopyFigures& o);
};

class CopyCounter final : public EventSink {
 public:
  void OnHostCall(const HostCall& c) override;
  const CopyFigures& figures() const { return f_; }

 private:
  CopyFigures f_;
};

}  // namespace gpuwatch::collector
