#include "memory.h"

#include <sys/mman.h>

#include <algorithm>

namespace simgpu {

MemoryMap& MemoryMap::get() {
  static MemoryMap* m = new MemoryMap;  // never destroyed: used from atexit handlers
  return *m;
}

void* MemoryMap::device_alloc(size_t bytes, int device, uint64_t limit) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (use_.held + bytes > limit) return nullptr;  // cudaErrorMemoryAllocation, as a full device
  }
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::lock_guard<std::mutex> lk(mu_);
  device_[reinterpret_cast<uintptr_t>(p)] = Range{bytes, device};
  use_.held += bytes;
  use_.peak = std::max(use_.peak, use_.held);
  use_.allocations++;
  return p;
}

MemoryMap::DeviceUse MemoryMap::device_use() const {
  std::lock_guard<std::mutex> lk(mu_);
  return use_;
}

bool MemoryMap::device_free(void* p) {
  size_t bytes;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = device_.find(reinterpret_cast<uintptr_t>(p));
    if (it == device_.end()) return false;
    bytes = it->second.bytes;
    use_.held -= bytes;
    device_.erase(it);
  }
  munmap(p, bytes);
  return true;
}

void MemoryMap::add_pinned(void* p, size_t bytes, bool owned) {
  std::lock_guard<std::mutex> lk(mu_);
  pinned_[reinterpret_cast<uintptr_t>(p)] = Range{bytes, owned ? 1 : 0};
}

bool MemoryMap::remove_pinned(void* p, bool owned) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = pinned_.find(reinterpret_cast<uintptr_t>(p));
  if (it == pinned_.end() || (it->second.device != 0) != owned) return false;
  pinned_.erase(it);
  return true;
}

const MemoryMap::Range* MemoryMap::find(const std::map<uintptr_t, Range>& m, uintptr_t a) {
  auto it = m.upper_bound(a);
  if (it == m.begin()) return nullptr;
  --it;
  return a < it->first + (it->second.bytes ? it->second.bytes : 1) ? &it->second : nullptr;
}

MemKind MemoryMap::kind(const void* p, int* device) const {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lk(mu_);
  if (const Range* r = find(device_, a)) {
    if (device) *device = r->device;
    return MemKind::Device;
  }
  return find(pinned_, a) ? MemKind::Pinned : MemKind::Pageable;
}

}  // namespace simgpu
