// Which addresses are device memory, pinned host memory or plain (pageable) host memory.
//
// The simulator moves no data: device allocations are PROT_NONE address reservations (so
// a host dereference crashes, as on a real GPU, and a large allocation costs nothing), and
// copies only take time. What matters for timing is the kind of each pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace simgpu {

enum class MemKind { Pageable, Pinned, Device };

class MemoryMap {
 public:
  static MemoryMap& get();

  // nullptr when out of address space, or when the process would hold more than `limit`
  // bytes of device memory (the device's memory less what other processes hold).
  void* device_alloc(size_t bytes, int device, uint64_t limit = UINT64_MAX);
  bool device_free(void* p);                     // false when p is not a live allocation

  void add_pinned(void* p, size_t bytes, bool owned);
  // Removes the pinned range starting exactly at p if its ownership is `owned` (allocated
  // by cudaHostAlloc rather than registered); false when there is no such range.
  bool remove_pinned(void* p, bool owned);

  MemKind kind(const void* p, int* device = nullptr) const;

  // Device memory the process holds now, and the most it held at once (all devices).
  struct DeviceUse {
    uint64_t held = 0, peak = 0, allocations = 0;
  };
  DeviceUse device_use() const;

 private:
  struct Range {
    size_t bytes;
    int device;  // device ordinal, or owned flag for pinned ranges
  };
  static const Range* find(const std::map<uintptr_t, Range>& m, uintptr_t a);
  mutable std::mutex mu_;
  std::map<uintptr_t, Range> device_, pinned_;
  DeviceUse use_;
};

}  // namespace simgpu
