// Where the host blocked: after a call that blocked it long (GPUWATCH_CALLSITE_US, default
// 1 ms), the hook captures the caller's return addresses and the thread's Python stack,
// read without the GIL (python_stack.h). enrich/call_site_names.h names them.
#pragma once
#include <atomic>
#include <cstdint>

#include "record/record.h"

namespace gpuwatch::inject {

// Stamp ticks (stamp_clock.h) a call must block for its site to be captured; UINT64_MAX
// until the sender has measured the stamp rate.
extern std::atomic<uint64_t> g_call_site_min_ticks;

// The one place that decides which records carry a call site (Record::site_id): syncs, and
// copies that blocked the host, once they blocked at least g_call_site_min_ticks. A short
// call captures nothing: the unwinding (a few microseconds) is paid only after the
// application already waited a millisecond or more.
inline bool WantsCallSite(const Record& r) {
  const bool sync = r.api == kApiStreamSynchronize || r.api == kApiDeviceSynchronize || r.api == kApiEventSynchronize;
  const bool blocking_copy = (r.api == kApiMemcpy || r.api == kApiMemcpyAsync) && (r.flags & kFlagBlockedHost);
  return (sync || blocking_copy) && r.dur_ticks >= g_call_site_min_ticks.load(std::memory_order_relaxed);
}

// App thread, right inside the hook (its frames are skipped). Sites are interned (same
// addresses and Python line: same id), at most kMaxCallSites. 0 when none (table full, or
// the unwinder found nothing).
uint32_t CaptureCallSite();
constexpr size_t kMaxCallSites = 1024;

// A captured site as it was taken: return addresses, innermost first, and the Python stack.
struct CapturedSite {
  static constexpr int kMaxFrames = 24;
  static constexpr int kMaxPythonFrames = 16;
  static constexpr size_t kMaxPython = 256;
  void* pcs[kMaxFrames];
  int n = 0;
  char python[kMaxPython] = {};  // innermost Python frame, "train.py:42 in step", or empty
  uint32_t python_stack = 0;     // python_stacks.h id of the whole stack (up to 16), or 0
};
// Sender thread: a copy of site `id`. False for an unknown id.
bool FindCallSite(uint32_t id, CapturedSite* out);

// Sender thread, once at start: the first backtrace() loads the unwinder (a dlopen and a
// malloc), which must not happen first inside an application's call.
void WarmUpCallSites();

}  // namespace gpuwatch::inject
