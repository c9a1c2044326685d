#include "record/recorder.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

#include "runtime/config.h"
#include "enrich/cupti_reader.h"
#include "runtime/sender.h"

namespace gpuwatch::inject {

std::atomic<int> g_state{static_cast<int>(State::kIdle)};
// initial-exec: the library is preloaded, so static TLS is available and a TLS access is a
// single %fs-relative load instead of a __tls_get_addr call.
__attribute__((tls_model("initial-exec"))) thread_local bool tl_internal = false;
__attribute__((tls_model("initial-exec"))) thread_local Ring* tl_ring = nullptr;

namespace {

std::atomic<Ring*> g_rings[kMaxThreads];
std::atomic<int> g_ring_count{0};
std::mutex g_ring_mu;  // taken only when a thread gets its ring
std::atomic<uint64_t> g_too_many_threads{0};

// Marks the ring free for reuse when its thread exits, so thread churn cannot grow memory.
struct RingReleaser {
  Ring* ring = nullptr;
  ~RingReleaser() {
    if (ring) ring->owner_alive.store(false, std::memory_order_release);
    tl_ring = nullptr;
  }
};
thread_local RingReleaser tl_releaser;

Ring* AcquireRing() {
  std::lock_guard<std::mutex> lock(g_ring_mu);
  const int n = g_ring_count.load(std::memory_order_relaxed);
  Ring* ring = nullptr;
  for (int i = 0; i < n && !ring; ++i) {
    Ring* r = g_rings[i].load(std::memory_order_relaxed);
    if (!r->owner_alive.load(std::memory_order_acquire)) ring = r;  // a dead thread's ring
  }
  if (!ring) {
    if (n == kMaxThreads) return nullptr;
    ring = new Ring(GetConfig().ring_records);
    g_rings[n].store(ring, std::memory_order_release);
    g_ring_count.store(n + 1, std::memory_order_release);
  }
  ring->tid.store(static_cast<uint32_t>(syscall(SYS_gettid)), std::memory_order_relaxed);
  ring->owner_alive.store(true, std::memory_order_release);
  return ring;
}

void OnForkChild() {
  // A forked child (DataLoader workers fork) must not write into the parent's stream and
  // has no sender thread: it stays silent.
  g_state.store(static_cast<int>(State::kOff), std::memory_order_relaxed);
  tl_ring = nullptr;
}

// A program linked against the CUDA runtime will call it: start the sender thread now
// rather than inside its first CUDA call. Programs that are not (shells, compilers, Python
// before it imports torch) get no thread; nothing connects anywhere before a first record.
__attribute__((constructor)) void AtLoad() {
  pthread_atfork(nullptr, nullptr, OnForkChild);
  if (GetConfig().disabled) return;
  for (const char* lib : {"libcudart.so.13", "libcudart.so.12", "libnccl.so.2"}) {
    if (dlopen(lib, RTLD_NOLOAD | RTLD_LAZY)) {
      if (!StartSender()) {
        TurnOff();
        return;
      }
      // CUPTI now, so the timeline has the program's first GPU work too.
      Cupti().Start();
      // A spare ring for the first thread that records (the ring allocation is a syscall).
      std::lock_guard<std::mutex> lock(g_ring_mu);
      g_rings[0].store(new Ring(GetConfig().ring_records), std::memory_order_release);
      g_ring_count.store(1, std::memory_order_release);
      return;
    }
  }
}

}  // namespace

Ring* ThreadRingSlow() {
  if (g_state.load(std::memory_order_acquire) == static_cast<int>(State::kIdle)) {
    if (GetConfig().disabled || !StartSender()) {
      TurnOff();
      return nullptr;
    }
  }
  if (g_state.load(std::memory_order_acquire) != static_cast<int>(State::kRunning)) return nullptr;
  OnFirstRecord();
  Ring* ring = AcquireRing();
  if (!ring) return nullptr;
  tl_ring = ring;
  tl_releaser.ring = ring;
  return ring;
}

void EmitSlow(const Record& r) {
  if (Ring* ring = ThreadRingSlow()) {
    ring->Push(r);
  } else if (g_state.load(std::memory_order_relaxed) == static_cast<int>(State::kRunning)) {
    g_too_many_threads.fetch_add(1, std::memory_order_relaxed);
  }
}

Ring* RingAt(int i) { return g_rings[i].load(std::memory_order_acquire); }
int RingCount() { return g_ring_count.load(std::memory_order_acquire); }
uint64_t DroppedTooManyThreads() { return g_too_many_threads.load(std::memory_order_relaxed); }

void TurnOff() { g_state.store(static_cast<int>(State::kOff), std::memory_order_release); }

}  // namespace gpuwatch::inject
