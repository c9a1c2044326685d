// The hot path: a hook calls Emit() with a filled Record; Emit stores it in the calling
// thread's ring. A thread's first Emit allocates and registers its ring (and the process's
// first Emit starts the sender); after that Emit is a TLS load and a ring store: no lock,
// no allocation, no syscall.
#pragma once
#include <atomic>
#include <cstdint>
#include <ctime>

#include "record/record.h"
#include "record/ring.h"

namespace gpuwatch::inject {

enum class State : int { kIdle = 0, kRunning = 1, kOff = 2 };
extern std::atomic<int> g_state;
extern thread_local bool tl_internal;  // set on gpuwatch's own thread: its calls are not recorded

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Whether a hook should time its call. True before the first CUDA call too: that call is
// what starts recording.
inline bool Recording() {
  return g_state.load(std::memory_order_relaxed) != static_cast<int>(State::kOff) && !tl_internal;
}

void EmitSlow(const Record& r);
extern thread_local Ring* tl_ring;
// The calling thread's ring, taken now: the slow path of its first record (and the
// process's: it starts the sender). Null when recording is off or rings ran out.
Ring* ThreadRingSlow();

// A call that marks itself in flight (EnterCall) needs its ring before it stamps its
// start, or its thread's first call would go unmarked (the sender's settled time counts on
// the mark) and the ring's taking (tens of us) would be timed as the call.
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

// Marks the calling thread as inside `api` since `t_ns` until LeaveCall (syncs and
// collectives only: the calls that can hang). A few relaxed stores into the thread's ring.
inline void EnterCall(uint8_t api, uint64_t t_ns, uint64_t stream, uint64_t comm_id = 0, uint64_t seq = 0) {
  if (Ring* r = tl_ring) {
    r->inflight.api.store(api, std::memory_order_relaxed);
    r->inflight.stream.store(stream, std::memory_order_relaxed);
    r->inflight.comm_id.store(comm_id, std::memory_order_relaxed);
    r->inflight.seq.store(seq, std::memory_order_relaxed);
    r->inflight.since_ns.store(t_ns, std::memory_order_release);
  }
}
inline void LeaveCall() {
  if (Ring* r = tl_ring) r->inflight.since_ns.store(0, std::memory_order_relaxed);
}

// --- used by the sender thread ---
constexpr int kMaxThreads = 256;
// Calls fn(ring) for each registered ring.
template <typename Fn>
void ForEachRing(Fn&& fn);
Ring* RingAt(int i);
int RingCount();
uint64_t DroppedTooManyThreads();

// Stops recording in this process for good (fork child, failed start, exit).
void TurnOff();

template <typename Fn>
void ForEachRing(Fn&& fn) {
  const int n = RingCount();
  for (int i = 0; i < n; ++i) {
    if (Ring* r = RingAt(i)) fn(*r);
  }
}

}  // namespace gpuwatch::inject
