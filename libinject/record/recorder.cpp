// The recorder's slow paths: a thread's first record takes a ring (the process's first
// starts recording through the setup runtime/ gave), and the ring list the sender reads.
#include "record/recorder.h"

#include "record/python_stack.h"
#include "record/stamp_clock.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <memory>
#include <mutex>

namespace gpuwatch::inject {

std::atomic<int> g_state{static_cast<int>(State::kIdle)};
// Initial-exec, as every thread-local of the library (libinject/CMakeLists.txt).
constinit thread_local bool tl_internal = false;
constinit thread_local Ring* tl_ring = nullptr;

namespace {

// Written before any thread records (the library's constructor, which may run before this
// file's dynamic initializers: constinit); read on slow paths only.
constinit RecorderSetup g_setup;
std::atomic<Ring*> g_rings[kMaxThreads];
std::atomic<int> g_ring_count{0};
std::mutex g_ring_mu;  // taken only when a thread gets its ring
std::atomic<uint64_t> g_too_many_threads{0};
std::atomic<uint64_t> g_startup_ns{0};

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
    // A dead thread's ring, once the sender has drained it: records still in it are tagged
    // with the ring's tid when drained, which must stay the dead thread's.
    if (!r->owner_alive.load(std::memory_order_acquire) && r->drained()) ring = r;
  }
  if (!ring) {
    if (n == kMaxThreads) return nullptr;
    const uint64_t t0 = NowNs();
    ring = new Ring(g_setup.ring_records);
    AddStartupNs(NowNs() - t0);
    g_rings[n].store(ring, std::memory_order_release);
    g_ring_count.store(n + 1, std::memory_order_release);
  }
  ring->tid.store(static_cast<uint32_t>(syscall(SYS_gettid)), std::memory_order_relaxed);
  ring->py_thread_state.store(ThisThreadPyState(), std::memory_order_release);
  ring->owner_alive.store(true, std::memory_order_release);
  return ring;
}

}  // namespace

void SetUpRecorder(const RecorderSetup& setup) { g_setup = setup; }

void AddStartupNs(uint64_t ns) { g_startup_ns.fetch_add(ns, std::memory_order_relaxed); }
uint64_t StartupNs() { return g_startup_ns.load(std::memory_order_relaxed); }

void PrepareFirstRing() {
  // Mapped before the lock: an application thread making its own ring meanwhile must not
  // wait for this one's pages.
  auto* ring = new Ring(g_setup.ring_records);
  {
    std::lock_guard<std::mutex> lock(g_ring_mu);
    if (g_ring_count.load(std::memory_order_relaxed) == 0) {
      g_rings[0].store(ring, std::memory_order_release);
      g_ring_count.store(1, std::memory_order_release);
      return;
    }
  }
  delete ring;  // a thread recorded first and made its own
}

Ring* ThreadRingSlow() {
  if (g_state.load(std::memory_order_acquire) == static_cast<int>(State::kIdle)) {
    if (!g_setup.start) return nullptr;  // not set up yet: stay idle, a later call starts
    if (!g_setup.start()) {
      TurnOff();
      return nullptr;
    }
  }
  if (g_state.load(std::memory_order_acquire) != static_cast<int>(State::kRunning)) return nullptr;
  if (g_setup.first_record) g_setup.first_record();
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

void CollectRings(std::vector<Ring*>& out) {
  out.clear();
  const int n = g_ring_count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (Ring* r = g_rings[i].load(std::memory_order_acquire)) out.push_back(r);
}

std::atomic<uint64_t> g_hook_cost_max_ticks{0};
std::atomic<bool> g_itemize_launches{true};  // until the sender's first window decision
std::atomic<uint64_t> g_run_gap_ticks{0}, g_run_max_ticks{0}, g_launch_stall_ticks{0};

HookCostSums SumHookCosts(const std::vector<Ring*>& rings) {
  HookCostSums s;
  for (const Ring* r : rings) {
    s.ticks += r->hook_cost.ticks.load(std::memory_order_relaxed);
    s.samples += r->hook_cost.samples.load(std::memory_order_relaxed);
  }
  return s;
}

uint64_t DroppedTooManyThreads() { return g_too_many_threads.load(std::memory_order_relaxed); }

void TurnOff() { g_state.store(static_cast<int>(State::kOff), std::memory_order_release); }
void MarkRunning() { g_state.store(static_cast<int>(State::kRunning), std::memory_order_release); }

void OnForkChild() {
  g_state.store(static_cast<int>(State::kOff), std::memory_order_relaxed);
  tl_ring = nullptr;
}

namespace {

// The real function a hook calls, through a pointer it cannot see through.
__attribute__((noinline)) int EmptyCall(int x) { return x; }
int (*volatile g_empty_call)(int) = EmptyCall;

}  // namespace

double MeasureHookNs() {
  // The fastest of a few rounds: a round the scheduler interrupted says nothing of the hook.
  // What it times is the commonest call: a launch outside CUPTI's windows, summarized
  // (launch_summary.h); the hooks' in-place probe measures the calls as they come.
  constexpr int kRounds = 7, kCalls = 4000;
  auto ring = std::make_unique<Ring>(64);
  double best = 0;
  int sink = 0;
  Record marker;
  bool closed = false;
  const LaunchSummary::Limits limits{UINT64_MAX / 4, UINT64_MAX / 4, UINT64_MAX / 4};  // one run
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t t0 = NowNs();
    for (int i = 0; i < kCalls; ++i) {
      if (g_state.load(std::memory_order_relaxed) == static_cast<int>(State::kOff)) break;
      const uint64_t t = Stamp();
      sink += g_empty_call(i);
      const uint64_t dur = Stamp() - t;
      // a few kernels, as a step launches them: each its own tally
      ring->launches.Add(kApiLaunchKernel, reinterpret_cast<uintptr_t>(&ring) + (i & 7) * 64, t, dur, limits, &marker,
                         &closed);
    }
    const double ns = static_cast<double>(NowNs() - t0) / kCalls;
    if (round == 0 || ns < best) best = ns;
  }
  asm volatile("" : : "r"(sink));
  return best;
}

}  // namespace gpuwatch::inject
