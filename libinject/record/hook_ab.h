// A bench-only build of the library (libgpuwatch_hook_ab.so, never installed) that measures
// what recording adds to a hooked call *in place*, A/B within one run: a thread pauses
// recording for alternate halves of GPUWATCH_HOOK_AB_MS (default 7 ms) and counts the Timed
// calls (launches, syncs, events) made in each half. Time per call recorded minus time per
// call paused is the hooks' cost where they run, effects on the job's own code (caches, the
// record's store) included, which the in-place probe (HookCostProbe) cannot see. Separate
// runs cannot resolve it on a noisy host (their A/A spread is a few %, the hooks' share
// ~1%); halves of one run can. scripts/bench_overhead.sh prints it. The shipped library
// compiles HookAbPass to nothing.
// GPUWATCH_HOOK_AB=windows: nothing paused; time and calls split by whether the overhead
// budget's CUPTI window is open: what a window adds per call in place, set against what
// the budget measures (the launch call's own time in and out of windows).
// GPUWATCH_HOOK_AB=paused: recording paused the whole run, the library's threads running:
// against plain runs, what the library costs a process whether or not it records.
#pragma once
#include <cstdint>

namespace gpuwatch::inject {

#ifdef GPUWATCH_HOOK_AB
// Counts the call in the current half (state); true while recording is paused.
bool HookAbPass();
// The recorded call's own time (its stamps' ticks), summed by state.
void HookAbCallTicks(uint64_t ticks);
// Starts the alternation (load time, processes that record); prints the figures at exit.
void StartHookAb();
#else
constexpr bool HookAbPass() { return false; }
inline void HookAbCallTicks(uint64_t) {}
inline void StartHookAb() {}
#endif

}  // namespace gpuwatch::inject
