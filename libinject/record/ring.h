// Single-producer single-consumer ring of Records: the application thread that owns it is
// the only writer, the sender thread the only reader. A full ring drops the new record and
// counts it; the producer never waits.
#pragma once
#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "record/launch_summary.h"
#include "record/record.h"

namespace gpuwatch::inject {

class Ring {
 public:
  // The slots are mapped populated here, every page faulted in now: left to the producer,
  // every 64th Push would take a page fault on the application's thread, and a fault is a
  // point where the kernel may preempt it (measured: 70-200 us stalls inside hooks on a busy
  // host). One mmap with MAP_POPULATE rather than zeroing from user space: on the 2-core VM
  // the latter took 6 ms for 1 MiB (a fault per page), the former 0.25 ms. Rings are made
  // at load (the first thread's) or on a thread's first record.
  explicit Ring(size_t capacity_pow2) : mask_(capacity_pow2 - 1), slots_(MapSlots(capacity_pow2)) {}

  // Producer side. Returns false (and counts) when full.
  bool Push(const Record& r) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - cached_tail_ > mask_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head - cached_tail_ > mask_) {
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return false;
      }
    }
    slots_.get()[head & mask_] = r;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer side: calls fn(record) for everything published so far, then frees the slots.
  template <typename Fn>
  size_t Drain(Fn&& fn, size_t max = SIZE_MAX) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    uint64_t n = head - tail;
    if (n > max) n = max;
    for (uint64_t i = 0; i < n; ++i) fn(slots_.get()[(tail + i) & mask_]);
    tail_.store(tail + n, std::memory_order_release);
    return n;
  }

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Everything published has been drained (a dead thread's ring may then change hands).
  bool drained() const { return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_acquire); }
  size_t capacity() const { return mask_ + 1; }

  // The owning thread: its id, and whether it has exited (its ring may then be reused).
  std::atomic<uint32_t> tid{0};
  // The owner thread's PyThreadState (record/python_stack.h), taken with its ring; 0 without
  // Python. The host sampler reads its stack through it.
  std::atomic<uintptr_t> py_thread_state{0};
  std::atomic<bool> owner_alive{false};

  // The call the owning thread is inside now (a sync, a copy or a collective), for the
  // heartbeat (the collector reports a rank stuck in one) and the settled time. since_ticks
  // == 0: none.
  struct InFlight {
    std::atomic<uint64_t> since_ticks{0};  // Stamp() at the call's entry
    std::atomic<uint64_t> stream{0};
    std::atomic<uint64_t> comm_id{0};
    std::atomic<uint64_t> seq{0};
    std::atomic<uint8_t> api{0};
  };
  alignas(64) InFlight inflight;

  // The hooks' own time, timed in place on every kHookCostEvery-th hooked call of the thread
  // (HookCostProbe, record/recorder.h): the owning thread writes, the sender reads the sums.
  struct HookCost {
    uint32_t countdown = 0;             // the owning thread's only: calls to the next sample
    std::atomic<uint64_t> ticks{0};     // sum of the sampled hooks' own time
    std::atomic<uint64_t> samples{0};
  };
  alignas(64) HookCost hook_cost;

  // The owning thread's launches outside CUPTI's windows (record/launch_summary.h). Kept
  // with the ring: a ring that changes hands keeps counting where it was, as its records do.
  LaunchSummary launches;

 private:
  const uint64_t mask_;
  struct Unmap {
    size_t bytes;
    void operator()(Record* p) const { munmap(p, bytes); }
  };
  static std::unique_ptr<Record, Unmap> MapSlots(size_t n) {
    void* p = mmap(nullptr, n * sizeof(Record), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) std::abort();  // as new[] would throw: a ring is a few pages
    return std::unique_ptr<Record, Unmap>(static_cast<Record*>(p), Unmap{n * sizeof(Record)});
  }
  std::unique_ptr<Record, Unmap> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;  // producer's last view of tail_, saves a shared load per push
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> dropped_{0};
};

}  // namespace gpuwatch::inject
