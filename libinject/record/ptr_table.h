// Fixed-capacity map from a pointer to a small value, read lock-free on the hot path.
// Inserts are rare (kernel registration, communicator creation) and take a mutex; readers
// never do.
#pragma once
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
      const uintptr_t cur = slots_[i].key.load(std::memory_order_acquire);
      if (cur == k) return slots_[i].value.load(std::memory_order_relaxed);
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
      const uintptr_t cur = slots_[i].key.load(std::memory_order_relaxed);
      if (cur == k || cur == 0) {
        slots_[i].value.store(value, std::memory_order_relaxed);
        slots_[i].key.store(k, std::memory_order_release);  // publishes the value too
        return true;
      }
    }
    return false;
  }

 private:
  static size_t Hash(uintptr_t k) { return (k * 0x9E3779B97F4A7C15ull >> 20) & (kCapacityPow2 - 1); }
  struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<uint64_t> value{0};
  };
  Slot slots_[kCapacityPow2];
  std::mutex mu_;
};

}  // namespace gpuwatch::inject
