// Where the host blocked (issue 6: sync_stall names the call site). After a sync or a
// blocking copy that took long (GPUWATCH_CALLSITE_MS, default 1 ms), the hook captures the
// caller's return addresses and, when the thread holds CPython's GIL, the Python frame that
// made the call. A short sync captures nothing: the cost (a few microseconds of unwinding)
// is paid only after the application already waited a millisecond or more.
//
// Sites are interned (same addresses and Python line: same id), at most kMaxSites; the
// sender symbolizes a site (dladdr) the first time a record uses it.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace gpuwatch::inject {

// Stamp ticks (stamp_clock.h) a call must block for its site to be captured; UINT64_MAX
// until the sender has measured the stamp rate.
extern std::atomic<uint64_t> g_call_site_min_ticks;

// App thread, after a call that blocked at least g_call_site_min_ticks. 0 when none (table
// full, or the unwinder found nothing).
uint32_t CaptureCallSite();

struct CallSiteText {
  std::vector<std::string> frames;  // "symbol+0x1c (libfoo.so)", innermost first
  std::string python;               // "train.py:42 in step", or empty
};
// Sender thread: the site's frames symbolized. False for an unknown id.
bool DescribeCallSite(uint32_t id, CallSiteText* out);

// Sender thread, once at start: the first backtrace() loads the unwinder (a dlopen and a
// malloc), which must not happen first inside an application's call.
void WarmUpCallSites();

}  // namespace gpuwatch::inject
