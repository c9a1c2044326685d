// Host calls put in time order. The library sends a collective only once its GPU time is
// known, after the syncs that followed it; NVTX ranges and syncs are sent when they end.
// Each call waits here until nothing that goes before it can still arrive: the library
// says so (Batch.settled_ns), or else it is assumed of everything kHostHorizonNs older than
// the newest call (libraries that do not say). Nearly everything arrives in order, so it
// waits in a FIFO (O(1)); only what arrives late goes to a heap. At most kMaxHeld wait.
#pragma once
#include <cstdint>
#include <queue>
#include <vector>

#include "common/fifo.h"
#include "common/thresholds.h"
#include "interpret/events.h"

namespace gpuwatch::collector {

class HostOrder {
 public:
  // The order key: a sync or an NVTX range counts when it ends, anything else when it starts.
  static uint64_t Key(const HostCall& c) {
    return c.sync_kind != kNotSync || c.api == wire::NVTX_RANGE ? c.end_ns() : c.t_ns;
  }

  void Hold(const HostCall& c);
  // Batch.settled_ns: every call whose key is before it has been sent.
  void Settle(uint64_t settled_ns) { settled_ = std::max(settled_, settled_ns); }
  // Passes to `take`, in key order, every call that may go now (all of them when `all`).
  template <class Take>
  void Release(bool all, Take&& take);
  size_t held() const { return in_order_.size() + late_.size(); }
  // Every call with a key before this has been released (0: none yet); calls that arrive
  // later with an earlier key (a reconnect) go out at the next release.
  uint64_t released_until() const { return released_until_; }

 private:
  friend struct CheckpointAccess;  // rank checkpoints (analyze/checkpoint_access.h)
  struct Held {
    uint64_t key;
    HostCall call;
    bool operator>(const Held& o) const { return key > o.key; }
  };

  Fifo<Held> in_order_;  // keys never decrease
  std::priority_queue<Held, std::vector<Held>, std::greater<Held>> late_;
  uint64_t newest_ = 0, settled_ = 0, released_until_ = 0;
};

template <class Take>
void HostOrder::Release(bool all, Take&& take) {
  const uint64_t mark = std::max(settled_, newest_ > kHostHorizonNs ? newest_ - kHostHorizonNs : 0);
  for (;;) {
    const bool from_late = !late_.empty() && (in_order_.empty() || late_.top().key < in_order_.front().key);
    if (!from_late && in_order_.empty()) break;
    const Held& next = from_late ? late_.top() : in_order_.front();
    if (!all && held() <= kMaxHeld && next.key >= mark) break;
    const HostCall c = next.call;
    const uint64_t key = next.key;
    if (from_late)
      late_.pop();
    else
      in_order_.pop_front();
    released_until_ = std::max(released_until_, key + 1);
    take(c);
  }
  if (!all) released_until_ = std::max(released_until_, mark);
}

}  // namespace gpuwatch::collector
