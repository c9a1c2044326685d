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

namespace gpuwatch::inject {

enum class State : int { kIdle = 0, kRunning = 1, kOff = 2 };
extern std::atomic<int> g_state;
extern thread_local bool tl_internal;  // set on gpuwatch's own thread: its calls are not recorded

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

void EmitSlow(const Record& r);
extern thread_local Ring* tl_ring;
// The calling thread's ring, taken now: the slow path of its first record (and the
// process's: it starts recording). Null when recording is off or rings ran out.
Ring* ThreadRingSlow();

// A call that marks itself in flight (EnterCall) needs its ring before it stamps its
// start, or its thread's first call would go unmarked (the assembler's settled time counts
// on the mark) and the ring's taking (tens of us) would be timed as the call.
inline void EnsureRing() {
  if (tl_ring == nullptr) ThreadRingSlow();
}

inline void Emit(const Record& r) {
  if (tl_ring != nullptr) {
    tl_ring->Push(r);
    return;
  }
  EmitSlow(r);
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

// What recording adds to a hooked call, in ns, timed now on the calling thread (the sender,
// at start): the hook's steps around the real call (the recording check, two stamps, a
// kernel-name lookup, the in-flight marks, the record's store, an indirect call), repeated
// into a private ring. The overhead budget charges each hooked call this much.
double MeasureHookNs();

// --- read by the sender thread ---
constexpr int kMaxThreads = 256;
// Every thread's ring so far, in the order they were taken (`out` is reused: no allocation
// once it has grown).
void CollectRings(std::vector<Ring*>& out);
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
