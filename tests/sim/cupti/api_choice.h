// Which calls' API records the simulated CUPTI writes, and what it calls them. A whole kind
// (cuptiActivityEnable of RUNTIME or DRIVER: every call of that domain) or calls one by one
// (cuptiActivityEnableRuntimeApi / cuptiActivityEnableDriverApi, CUPTI 12 and later); as in
// CUPTI, switching the kind after choosing calls overrides the choice. Read without a lock on
// the calling thread (a call is recorded or not, and costs accordingly); written under the
// simulated CUPTI's lock.
#pragma once
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "../simgpu.h"

namespace simcupti {

class ApiChoice {
 public:
  // `domain`: SIMGPU_API_RUNTIME or SIMGPU_API_DRIVER.
  bool Records(uint32_t domain, uint32_t cbid) const {
    const int d = Index(domain);
    if (d < 0) return false;
    if (whole_[d].load(std::memory_order_relaxed)) return true;
    return cbid < kIds && (bits_[d][cbid / 64].load(std::memory_order_relaxed) >> (cbid % 64)) & 1u;
  }
  void SetWhole(uint32_t domain, bool on) {
    const int d = Index(domain);
    whole_[d].store(on, std::memory_order_relaxed);
    for (auto& w : bits_[d]) w.store(0, std::memory_order_relaxed);
    calls_on_[d] = 0;
  }
  // False for an id past the domain's (CUPTI_ERROR_INVALID_PARAMETER).
  bool SetCall(uint32_t domain, uint32_t cbid, bool on) {
    const int d = Index(domain);
    if (d < 0) return false;
    const uint32_t ids = d == 0 ? uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE} : uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE};
    if (cbid == 0 || cbid >= ids) return false;
    const uint64_t bit = 1ull << (cbid % 64);
    const uint64_t was = bits_[d][cbid / 64].load(std::memory_order_relaxed);
    if (((was & bit) != 0) == on) return true;
    bits_[d][cbid / 64].store(on ? was | bit : was & ~bit, std::memory_order_relaxed);
    calls_on_[d] += on ? 1 : -1;
    return true;
  }
  // Any call of either domain recorded.
  bool Any() const {
    for (int d = 0; d < 2; ++d)
      if (whole_[d].load(std::memory_order_relaxed) || calls_on_[d] > 0) return true;
    return false;
  }
  void Clear() {
    SetWhole(SIMGPU_API_RUNTIME, false);
    SetWhole(SIMGPU_API_DRIVER, false);
  }

 private:
  static int Index(uint32_t domain) {
    return domain == SIMGPU_API_RUNTIME ? 0 : domain == SIMGPU_API_DRIVER ? 1 : -1;
  }
  static constexpr uint32_t kIds = std::max<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_DRIVER_TRACE_CBID_SIZE);
  std::atomic<bool> whole_[2] = {false, false};
  std::atomic<uint64_t> bits_[2][(kIds + 63) / 64] = {};
  int calls_on_[2] = {0, 0};
};

// CUPTI's name of a call the simulator reports (cuptiGetCallbackName); null for the others.
const char* CallbackName(CUpti_CallbackDomain domain, uint32_t cbid);

}  // namespace simcupti
