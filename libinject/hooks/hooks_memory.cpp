// Device-memory wrappers: every allocation and free of the CUDA runtime, so the collector
// can follow what the rank holds on its device (PyTorch's caching allocator reserves its
// segments through cudaMalloc). One record per successful call: size and address, nothing
// else; the live set is the collector's (collector/analyze/memory.cpp).
#include <cuda_runtime_api.h>

#include "record/real.h"
#include "record/recorder.h"
#include "record/stamp_clock.h"

namespace gi = gpuwatch::inject;

namespace {

uint64_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Times `call` and emits its record when it succeeded. Frees synchronize the device (a
// cudaFree waits for all of its work), so every memory call is marked in flight.
template <typename F>
cudaError_t MemoryCall(gi::Api api, uint64_t stream, F&& call, void** out, size_t bytes, const void* freed) {
  if (!gi::Recording()) return call();
  gi::EnsureRing();
  const gi::HookCostProbe cost;  // these calls count among the hooked ones the budget charges
  gi::Record r{};
  r.t_ticks = gi::Stamp();
  gi::EnterCall(api, r.t_ticks, stream);
  const cudaError_t rc = call();
  r.dur_ticks = gi::Stamp() - r.t_ticks;
  r.api = api;
  r.stream = stream;
  if (out) {
    r.bytes = bytes;
    r.seq = *out ? Address(*out) : 0;
  } else {
    r.seq = Address(freed);
  }
  // cudaFree(nullptr) is the classic "create the context" call: nothing to follow.
  if (rc == cudaSuccess && r.seq != 0) gi::Emit(r);
  gi::LeaveCall();
  cost.Done(r.dur_ticks);
  return rc;
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** p, size_t n) {
  GW_REAL(cudaMalloc);
  return MemoryCall(gi::kApiMalloc, 0, [&] { return real(p, n); }, p, n, nullptr);
}
cudaError_t cudaFree(void* p) {
  GW_REAL(cudaFree);
  return MemoryCall(gi::kApiFree, 0, [&] { return real(p); }, nullptr, 0, p);
}
cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  GW_REAL(cudaMallocAsync);
  if (!real) return cudaErrorNotSupported;
  return MemoryCall(gi::kApiMallocAsync, Address(s), [&] { return real(p, n, s); }, p, n, nullptr);
}
cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s) {
  GW_REAL(cudaMallocFromPoolAsync);
  if (!real) return cudaErrorNotSupported;
  return MemoryCall(gi::kApiMallocAsync, Address(s), [&] { return real(p, n, pool, s); }, p, n, nullptr);
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  GW_REAL(cudaFreeAsync);
  if (!real) return cudaErrorNotSupported;
  return MemoryCall(gi::kApiFreeAsync, Address(s), [&] { return real(p, s); }, nullptr, 0, p);
}
cudaError_t cudaMallocManaged(void** p, size_t n, unsigned int flags) {
  GW_REAL(cudaMallocManaged);
  if (!real) return cudaErrorNotSupported;
  return MemoryCall(gi::kApiMallocManaged, 0, [&] { return real(p, n, flags); }, p, n, nullptr);
}

// What the application asks about the device's memory: free (other processes included) and
// total. bytes = free, seq = total (record.h).
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  GW_REAL(cudaMemGetInfo);
  if (!real) return cudaErrorNotSupported;
  if (!gi::Recording()) return real(free_bytes, total_bytes);
  gi::EnsureRing();
  gi::Record r{};
  r.t_ticks = gi::Stamp();
  const cudaError_t rc = real(free_bytes, total_bytes);
  r.dur_ticks = gi::Stamp() - r.t_ticks;
  r.api = gi::kApiMemGetInfo;
  if (rc == cudaSuccess && free_bytes && total_bytes) {
    r.bytes = *free_bytes;
    r.seq = *total_bytes;
    gi::Emit(r);
  }
  return rc;
}

}  // extern "C"
