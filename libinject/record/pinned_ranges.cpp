// The seqlock'd range array: sorted inserts and removals under a mutex, lock-free lookups.
#include "record/pinned_ranges.h"

namespace gpuwatch::inject {

PinnedRanges& Pinned() {
  static PinnedRanges* p = new PinnedRanges;  // never destroyed: hooks may run during exit
  return *p;
}

void PinnedRanges::Add(const void* base, size_t bytes) {
  const auto b = reinterpret_cast<uintptr_t>(base);
  if (b == 0 || bytes == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = count_.load(std::memory_order_relaxed);
  if (n == kMaxRanges) {
    overflow_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  seq_.fetch_add(1, std::memory_order_acq_rel);  // odd: readers retry
  size_t i = n;
  for (; i > 0 && ranges_[i - 1].begin.load(std::memory_order_relaxed) > b; --i) {
    ranges_[i].begin.store(ranges_[i - 1].begin.load(std::memory_order_relaxed), std::memory_order_relaxed);
    ranges_[i].end.store(ranges_[i - 1].end.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  ranges_[i].begin.store(b, std::memory_order_relaxed);
  ranges_[i].end.store(b + bytes, std::memory_order_relaxed);
  count_.store(n + 1, std::memory_order_relaxed);
  seq_.fetch_add(1, std::memory_order_release);
}

void PinnedRanges::Remove(const void* base) {
  const auto b = reinterpret_cast<uintptr_t>(base);
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = count_.load(std::memory_order_relaxed);
  size_t i = 0;
  while (i < n && ranges_[i].begin.load(std::memory_order_relaxed) != b) ++i;
  if (i == n) return;
  seq_.fetch_add(1, std::memory_order_acq_rel);
  for (; i + 1 < n; ++i) {
    ranges_[i].begin.store(ranges_[i + 1].begin.load(std::memory_order_relaxed), std::memory_order_relaxed);
    ranges_[i].end.store(ranges_[i + 1].end.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  count_.store(n - 1, std::memory_order_relaxed);
  seq_.fetch_add(1, std::memory_order_release);
}

bool PinnedRanges::Contains(const void* p) const {
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (;;) {
    const uint64_t s0 = seq_.load(std::memory_order_acquire);
    if (s0 & 1) continue;
    // Binary search for the last range with begin <= a.
    size_t lo = 0, hi = count_.load(std::memory_order_relaxed);
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (ranges_[mid].begin.load(std::memory_order_relaxed) <= a) lo = mid + 1; else hi = mid;
    }
    const bool hit = lo > 0 && a < ranges_[lo - 1].end.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) == s0) return hit;
  }
}

}  // namespace gpuwatch::inject
