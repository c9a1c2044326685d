// The recording API the hooks use: Emit() stores a filled Record in the calling thread's
// ring; EnterCall/LeaveCall mark a call that may hang. After a thread's first record: a TLS
// load and a ring store, no lock, no allocation, no syscall.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "record/record.h"
#include "record/ring.h"
#include "record/stamp_clock.h"

namespace gpuwatch::inject {

enum class State : int { kIdle = 0, kRunning = 1, kOff = 2 };
extern std::atomic<int> g_state;
// constinit: no dynamic initialization, so a hook reads them straight from the thread's block
// (without it every access went through a TLS wrapper check and __tls_get_addr).
extern constinit thread_local bool tl_internal;  // set on gpuwatch's own thread: its calls are not recorded

// How recording starts, given by runtime/ when the library loads: the recorder knows nothing
// of the sender it starts.
struct RecorderSetup {
  size_t ring_records = 16384;  // per-thread ring capacity, a power of two
  // The process's first record: starts what reads the rings and sets State::kRunning.
  // False: recording stays off for good.
  bool (*start)() = nullptr;
  // A thread's first record, before its ring is taken (called once per thread).
  void (*first_record)() = nullptr;
};
// Before any thread records (a constructor), or from a test. Until it is called, records are
// not kept (the process stays kIdle).
void SetUpRecorder(const RecorderSetup& setup);
// A ring for the process's first recording thread, taken now (at load) so that its first
// call does not pay for the allocation.
void PrepareFirstRing();

// Whether a hook should time its call. True before the first CUDA call too: that call is
// what starts recording.
inline bool Recording() {
  return g_state.load(std::memory_order_relaxed) != static_cast<int>(State::kOff) && !tl_internal;
}

// Whether a CUDA or NCCL call has started recording. NVTX ranges alone start nothing: a
// process that uses NVTX and never CUDA gets no sender thread, collector or outputs.
inline bool RecordingStarted() {
  return g_state.load(std::memory_order_relaxed) == static_cast<int>(State::kRunning) && !tl_internal;
}

void EmitSlow(const Record& r);
extern constinit thread_local Ring* tl_ring;
// The calling thread's ring, taken now: the slow path of its first record (and the
// process's: it starts recording). Null when recording is off or rings ran out.
Ring* ThreadRingSlow();

// A call that marks itself in flight (EnterCall) needs its ring before it stamps its
// start, or its thread's first call would go unmarked (the assembler's settled time counts
// on the mark) and the ring's taking (tens of us) would be timed as the call.
inline void EnsureRing() {
  if (tl_ring == nullptr) ThreadRingSlow();
}

// Stores `r` after the marker closing the thread's run of summarized launches, if one is
// open: the collector gets those launches before `r`, where they were made.
inline void Emit(const Record& r) {
  if (Ring* ring = tl_ring) {
    Record marker;
    if (ring->launches.CloseOpenRun(&marker)) ring->Push(marker);
    ring->Push(r);
    return;
  }
  EmitSlow(r);
}

// A kernel launch made outside CUPTI's windows, summarized instead of recorded
// (launch_summary.h). False when it must be recorded: a window is open, the thread has no
// ring yet, or its kernel finds no tally slot.
inline bool SummarizeLaunch(uint8_t api, uintptr_t kernel, uint64_t t_ticks, uint64_t dur_ticks) {
  Ring* ring = tl_ring;
  if (ring == nullptr || g_itemize_launches.load(std::memory_order_relaxed)) return false;
  Record marker;
  bool closed = false;
  if (!ring->launches.Add(api, kernel, t_ticks, dur_ticks, LaunchSummary::CurrentLimits(), &marker, &closed))
    return false;
  if (closed) ring->Push(marker);
  return true;
}

// Marks the calling thread as inside `api` since the stamp `since_ticks` until LeaveCall
// (syncs, copies and collectives: the calls that can block long). A few relaxed stores
// into the thread's ring.
inline void EnterCall(uint8_t api, uint64_t since_ticks, uint64_t stream, uint64_t comm_id = 0, uint64_t seq = 0) {
  if (Ring* r = tl_ring) {
    r->inflight.api.store(api, std::memory_order_relaxed);
    r->inflight.stream.store(stream, std::memory_order_relaxed);
    r->inflight.comm_id.store(comm_id, std::memory_order_relaxed);
    r->inflight.seq.store(seq, std::memory_order_relaxed);
    r->inflight.since_ticks.store(since_ticks, std::memory_order_release);
  }
}
inline void LeaveCall() {
  if (Ring* r = tl_ring) r->inflight.since_ticks.store(0, std::memory_order_relaxed);
}

// The hook's own time, timed where it runs: every kHookCostEvery-th hooked call on a thread
// takes one more stamp at the hook's entry and one after its record is stored, and adds
// (exit - entry - the real call's time) to its ring's sums. In place it pays what a start-up
// timing cannot see: the ring's cache line taken back from the sender thread, a cold
// kernel-name table, a busy core. The other calls pay a decrement and two branches.
// The timed call's stamps are ordered (lfence, then rdtsc) where the hook's own are not: an
// rdtsc may run before the instructions ahead of it are done, so the stamp after the real
// call read the end of the call early, and the call's last instructions were charged to the
// hook. On the development VM the probe read 31 ns a launch where the hooks' A/B in one run
// (record/hook_ab.h) measured 12-19 ns and the start-up timing 18; ordered, it reads 18.
constexpr uint32_t kHookCostEvery = 1024;
// Samples over this many ticks (an interrupt or a preemption inside the hook, not its work)
// are left out; 0 until the sender has calibrated the clock (no sample is kept before). A
// hook that captured its call site (a backtrace and the Python stack, tens of us at most)
// may take kSiteCostFactor times as long.
extern std::atomic<uint64_t> g_hook_cost_max_ticks;
constexpr uint64_t kSiteCostFactor = 40;

class HookCostProbe {
 public:
  HookCostProbe() {
    Ring* r = tl_ring;
    if (r == nullptr || r->hook_cost.countdown-- != 0) return;
    r->hook_cost.countdown = kHookCostEvery - 1;
    _mm_lfence();  // the job's work before the hook is done: not the hook's
    entry_ = Stamp();
  }
  // The stamp that ends the real call's time (Record::dur_ticks): on a timed call, once the
  // call's instructions are all done.
  uint64_t StampCallEnd() const {
    if (entry_ != 0) _mm_lfence();
    return Stamp();
  }
  // After the hook's Emit of `r` (its dur_ticks: the real call's time).
  void Done(const Record& r) const {
    if (entry_ == 0) return;
    const uint64_t own = Stamp() - entry_ - r.dur_ticks;
    const uint64_t max = g_hook_cost_max_ticks.load(std::memory_order_relaxed);
    if (own > (r.site_id != 0 ? max * kSiteCostFactor : max)) return;
    Ring::HookCost& c = tl_ring->hook_cost;  // this thread's ring: it had one at entry
    c.ticks.store(c.ticks.load(std::memory_order_relaxed) + own, std::memory_order_relaxed);
    c.samples.store(c.samples.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

 private:
  uint64_t entry_ = 0;
};

// The sums of every ring's in-place samples (sender thread).
struct HookCostSums {
  uint64_t ticks = 0, samples = 0;
};
HookCostSums SumHookCosts(const std::vector<Ring*>& rings);

// What recording adds to a hooked call, in ns, timed now on the calling thread (the sender,
// at start): the hook's steps around the real call (the recording check, two stamps, the
// in-flight marks, the record's store, an indirect call), repeated
// into a private ring. The overhead budget charges each hooked call this much.
double MeasureHookNs();

// --- read by the sender thread ---
constexpr int kMaxThreads = 256;
// Every thread's ring so far, in the order they were taken (`out` is reused: no allocation
// once it has grown).
void CollectRings(std::vector<Ring*>& out);

// The library's one-off work on the application's threads (its load, and the ring each new
// recording thread zeroes): part of what it adds to the job (the overhead budget's spend).
void AddStartupNs(uint64_t ns);
uint64_t StartupNs();
// Records lost because all kMaxThreads rings were taken.
uint64_t DroppedTooManyThreads();

// Stops recording in this process for good (failed start, exit).
void TurnOff();
// pthread_atfork child handler: a forked child (DataLoader workers fork) must not write
// into the parent's stream and has no sender thread: it stays silent.
void OnForkChild();
// Sets State::kRunning: what the setup's `start` does once its reader runs.
void MarkRunning();

}  // namespace gpuwatch::inject
