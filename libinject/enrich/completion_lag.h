// How long after its enqueueing call returns the device finishes the work: CUPTI's device
// record's end minus its runtime/driver API record's end, joined by correlation id. Parsed
// records only (sender thread). A launch-bound job's lag is microseconds; a GPU-bound job's
// is its queue, up to hundreds of ms. The reader waits that long after a window closes before
// it detaches CUPTI, so that the window's last work comes back with its times
// (enrich/cupti_reader.cpp).
#pragma once
#include <array>
#include <cstdint>

#include "enrich/cupti_reader.h"

namespace gpuwatch::inject {

class CompletionLag {
 public:
  // An API record is remembered by correlation id; a device record whose call is remembered
  // gives a lag. A record whose call was forgotten (overwritten in the table, or parsed before
  // its call) gives none.
  void Observe(const ActivityRecord& a) {
    Slot& slot = slots_[a.correlation_id % kSlots];
    if (a.kind == kActApi) {
      slot = {a.correlation_id, a.end_ns};
      return;
    }
    if (a.kind != kActKernel && a.kind != kActMemcpy && a.kind != kActMemset) return;
    if (slot.correlation != a.correlation_id || slot.call_end_ns == 0 || a.end_ns < slot.call_end_ns) return;
    const uint64_t lag = a.end_ns - slot.call_end_ns;
    if (lag > max_ns_) max_ns_ = lag;
  }
  // The longest lag measured in this window and the one before (0: none measured). A
  // window's deepest-queued work is its last, whose records come back last: the window before
  // has shown that depth whole, where the job's queue is steady.
  uint64_t max_ns() const { return max_ns_ > previous_max_ns_ ? max_ns_ : previous_max_ns_; }
  // A window opens.
  void NextWindow() {
    previous_max_ns_ = max_ns_;
    max_ns_ = 0;
  }

 private:
  // More calls than this between a call's API record and its device record (a queue deeper
  // than 4096 launches) lose their lag, not the others'.
  static constexpr uint32_t kSlots = 4096;
  struct Slot {
    uint32_t correlation = 0;
    uint64_t call_end_ns = 0;
  };
  std::array<Slot, kSlots> slots_{};
  uint64_t max_ns_ = 0, previous_max_ns_ = 0;
};

}  // namespace gpuwatch::inject
