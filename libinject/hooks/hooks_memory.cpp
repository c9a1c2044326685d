// Device-memory wrappers: every allocation and free of the CUDA runtime, so the collector
// can follow what the rank holds on its device (PyTorch's caching allocator reserves its
// segments through cudaMalloc). The record: memory_call.h; the driver's allocations:
// hooks_driver_memory.cpp.
#include <cuda_runtime_api.h>

#include "hooks/memory_call.h"
#include "hooks/missing.h"

namespace gi = gpuwatch::inject;

namespace {

uint64_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// An allocation: `out` holds its address after the call.
template <typename F>
cudaError_t Alloc(gi::Api api, uint64_t stream, void** out, size_t bytes, F&& call) {
  return gi::hooks::MemoryCall(api, stream, cudaSuccess, bytes, call, [&] { return out && *out ? Address(*out) : 0; });
}
template <typename F>
cudaError_t Free(gi::Api api, uint64_t stream, const void* freed, F&& call) {
  return gi::hooks::MemoryCall(api, stream, cudaSuccess, 0, call, [&] { return Address(freed); });
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** p, size_t n) {
  GW_REAL(cudaMalloc);
  return Alloc(gi::kApiMalloc, 0, p, n, [&] { return real(p, n); });
}
cudaError_t cudaFree(void* p) {
  GW_REAL(cudaFree);
  return Free(gi::kApiFree, 0, p, [&] { return real(p); });
}
cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  GW_REAL(cudaMallocAsync);
  return Alloc(gi::kApiMallocAsync, Address(s), p, n, [&] { return real(p, n, s); });
}
cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s) {
  GW_REAL(cudaMallocFromPoolAsync);
  return Alloc(gi::kApiMallocAsync, Address(s), p, n, [&] { return real(p, n, pool, s); });
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  GW_REAL(cudaFreeAsync);
  return Free(gi::kApiFreeAsync, Address(s), p, [&] { return real(p, s); });
}
cudaError_t cudaMallocManaged(void** p, size_t n, unsigned int flags) {
  GW_REAL(cudaMallocManaged);
  return Alloc(gi::kApiMallocManaged, 0, p, n, [&] { return real(p, n, flags); });
}

// What the application asks about the device's memory: free (other processes included) and
// total. bytes = free, seq = total (record.h).
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  GW_REAL(cudaMemGetInfo);
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
