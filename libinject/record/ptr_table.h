// Fixed-capacity map from a pointer to a small value, read lock-free on the hot path.
// Inserts are rare (kernel registration, communicator creation) and take a mutex; readers
// never do.
#pragma once
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace gpuwatch::inject {

// Open addressing with linear probing; keys are never moved, so a reader sees a key either
// absent or with its value already published.
template <size_t kCapacityPow2>
class PtrTable {
  static_assert((kCapacityPow2 & (kCapacityPow2 - 1)) == 0, "capacity must be a power of two");

 public:
  // Returns 0 when absent.
  uint64_t Find(const void* key) const {
    const auto k = reinterpret_cast<uintptr_t>(key);
    if (k == 0) return 0;
    for (size_t i = Hash(k), n = 0; n < kCapacityPow2; i = (i + 1) & (kCapacityPow2 - 1), ++n) {
      const uintptr_t cur = Key(i).load(std::memory_order_acquire);
      if (cur == k) return Value(i).load(std::memory_order_relaxed);
      if (cur == 0) return 0;
    }
    return 0;
  }

  // Inserts or overwrites. Returns false when the table is full.
  bool Put(const void* key, uint64_t value) {
    const auto k = reinterpret_cast<uintptr_t>(key);
    if (k == 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = Hash(k), n = 0; n < kCapacityPow2; i = (i + 1) & (kCapacityPow2 - 1), ++n) {
      const uintptr_t cur = Key(i).load(std::memory_order_relaxed);
      if (cur == k || cur == 0) {
        Value(i).store(value, std::memory_order_relaxed);
        Key(i).store(k, std::memory_order_release);  // publishes the value too
        return true;
      }
    }
    return false;
  }

 private:
  static size_t Hash(uintptr_t k) { return (k * 0x9E3779B97F4A7C15ull >> 20) & (kCapacityPow2 - 1); }
  struct Slot {
    uintptr_t key;
    uint64_t value;
  };
  std::atomic_ref<uintptr_t> Key(size_t i) const { return std::atomic_ref<uintptr_t>(slots_[i].key); }
  std::atomic_ref<uint64_t> Value(size_t i) const { return std::atomic_ref<uint64_t>(slots_[i].value); }
  // Zero pages from the kernel, touched only where a key lands: the kernel-name table is
  // 2 MiB, and zeroing it made every CUDA program's start 10 ms slower on the 2-core VM
  // (a page fault per 4 KiB on the loading thread). Never unmapped: hooks may run during exit.
  static Slot* Allocate() {
    void* p = mmap(nullptr, sizeof(Slot) * kCapacityPow2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? new Slot[kCapacityPow2]() : static_cast<Slot*>(p);
  }
  Slot* const slots_ = Allocate();
  std::mutex mu_;
};

}  // namespace gpuwatch::inject
