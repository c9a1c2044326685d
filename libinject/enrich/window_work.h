// A budget window's device work as CUPTI hands it back, from parsed records only (sender
// thread): whether every call recorded in the window has had its work come back, and how
// long after its enqueueing call returned the device finished each piece (the completion
// lag: a launch-bound job's is microseconds, a GPU-bound job's its queue, up to hundreds of
// ms). A call's API record and its device record are joined by correlation id, in whichever
// order they are parsed. The reader detaches CUPTI after a window once its work is back, so
// that the window's last work comes back with its times (enrich/cupti_reader.cpp).
#pragma once
#include <array>
#include <cstdint>

#include "enrich/cupti_reader.h"

namespace gpuwatch::inject {

class WindowWork {
 public:
  void Observe(const ActivityRecord& a) {
    const bool work = a.device_work();
    if (a.kind != kActApi && !work) return;
    Slot& slot = slots_[a.correlation_id % kSlots];
    const bool same = slot.state != kEmpty && slot.window == window_ && slot.correlation == a.correlation_id;
    if (work && a.graph_id != 0) graph_ = true;
    if (!work && a.start_ns > latest_call_ns_) latest_call_ns_ = a.start_ns;
    if (same) {
      // A second record of a call already seen (the runtime's and the driver's API records of
      // one launch, a graph's nodes) adds nothing; the other half of a pair completes it.
      const bool completes = (slot.state == kCalled && work) || (slot.state == kWorkFirst && !work);
      if (!completes) return;
      if (work) --(slot.late ? late_ : outstanding_);
      const uint64_t call_end = work ? slot.t_ns : a.end_ns, work_end = work ? a.end_ns : slot.t_ns;
      if (work_end > call_end) {
        const uint64_t lag = work_end - call_end;
        if (lag > max_ns_) max_ns_ = lag;
      }
      slot.state = kDone;
      return;
    }
    // A pair of this window still waiting for its other half loses its slot: the count can no
    // longer be trusted for this window (more than kSlots pieces in flight at once).
    if (slot.window == window_ && (slot.state == kCalled || slot.state == kWorkFirst)) overflow_ = true;
    const bool late = !work && (a.start_ns < open_ns_ || a.end_ns >= cutoff_ns_);
    slot = {a.end_ns, a.correlation_id, window_, work ? kWorkFirst : kCalled, late};
    if (!work) ++(late ? late_ : outstanding_);
  }

  // The window closed: calls that returned from `cutoff_ns` on may have been made as the
  // kinds went off (gpuwatch turns the device kinds off before the API kinds), their API
  // record kept and their work not recorded: counted apart from then on (late()).
  void Close(uint64_t cutoff_ns) {
    cutoff_ns_ = cutoff_ns;
    for (Slot& slot : slots_)
      if (slot.window == window_ && slot.state == kCalled && !slot.late && slot.t_ns >= cutoff_ns) {
        slot.late = true;
        --outstanding_;
        ++late_;
      }
  }

  // The count below holds: no graph's work was among the records (a graph launch's one API
  // record stands for all its nodes', which come back one by one) and no pair lost its slot.
  bool exact() const { return !graph_ && !overflow_; }
  // This window's API records whose device work has not come back yet. Exact only where
  // every API record is of a call that enqueues work (the reader chooses those calls). Those
  // of calls made as the kinds went on or off are counted apart: late().
  uint64_t outstanding() const { return outstanding_; }
  uint64_t late() const { return late_; }
  // The latest start among this window's API records (0: none yet).
  uint64_t latest_call_ns() const { return latest_call_ns_; }
  // The longest lag measured in this window and the one before (0: none measured). A
  // window's deepest-queued work is its last, whose records come back last: the window before
  // has shown that depth whole, where the job's queue is steady.
  uint64_t max_lag_ns() const { return max_ns_ > previous_max_ns_ ? max_ns_ : previous_max_ns_; }

  // A window opens: its calls are counted afresh, those that started before `open_ns` apart
  // (late()): a call made as the kinds went on may have its API record without its work
  // (the device kinds went on first, and the call had enqueued it before).
  void NextWindow(uint64_t open_ns = 0) {
    open_ns_ = open_ns;
    previous_max_ns_ = max_ns_;
    max_ns_ = 0;
    ++window_;
    outstanding_ = late_ = 0;
    cutoff_ns_ = UINT64_MAX;
    latest_call_ns_ = 0;
    graph_ = overflow_ = false;
  }

 private:
  // Pieces of work in flight at once (queued, or parsed in a different order) before the
  // count gives up for the window: a GPU-bound queue holds a few thousand launches.
  static constexpr uint32_t kSlots = 16384;
  enum State : uint8_t { kEmpty = 0, kCalled, kWorkFirst, kDone };
  struct Slot {
    uint64_t t_ns = 0;  // kCalled: the call's end; kWorkFirst: the work's end
    uint32_t correlation = 0;
    uint16_t window = 0;  // a slot of another window is free (wraps after 65536 windows: at worst
                          // a stale slot reads as a lost pair, and the reader waits as without a count)
    State state = kEmpty;
    bool late = false;  // kCalled: made as the kinds went on or off (counted in late_)
  };
  std::array<Slot, kSlots> slots_{};  // 256 KiB
  uint16_t window_ = 1;
  uint64_t outstanding_ = 0, late_ = 0, latest_call_ns_ = 0;
  uint64_t open_ns_ = 0, cutoff_ns_ = UINT64_MAX;
  bool graph_ = false, overflow_ = false;
  uint64_t max_ns_ = 0, previous_max_ns_ = 0;
};

}  // namespace gpuwatch::inject
