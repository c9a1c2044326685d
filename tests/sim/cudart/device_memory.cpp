// Stream-ordered and managed allocations, and what the device says about its memory. The
// device's memory is `memory_gib`; other processes (`other_processes`) hold part of it, and
// an allocation beyond the rest fails with cudaErrorMemoryAllocation, as on a full GPU.
#include "../model/config.h"
#include "../model/memory.h"
#include "../simgpu.h"
#include "runtime.h"

#include <cuda.h>

using namespace simgpu;

namespace simgpu {

uint64_t device_memory_limit() {
  const Config& c = config();
  const uint64_t total = c.memory_bytes(), others = c.other_processes_bytes();
  return total > others ? total - others : 0;
}

}  // namespace simgpu

namespace {

cudaError_t allocate(void** p, size_t size) {
  M();
  if (!p) return fail(cudaErrorInvalidValue);
  if (size == 0) {
    *p = nullptr;
    return cudaSuccess;
  }
  *p = MemoryMap::get().device_alloc(size, Model::current_device(), device_memory_limit());
  return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

}  // namespace

// A pool allocation: memory at once (the pool grows), the stream only orders its use.
SIMGPU_EXPORT cudaError_t cudaMallocAsync(void** p, size_t size, cudaStream_t stream) {
  if (!M().stream(stream, false)) return fail(cudaErrorInvalidResourceHandle);
  return allocate(p, size);
}

// Released at once: nothing of the device model reads the memory, so waiting for the
// stream to reach the free would change no time.
SIMGPU_EXPORT cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  if (!M().stream(stream, false)) return fail(cudaErrorInvalidResourceHandle);
  if (!p) return cudaSuccess;
  return MemoryMap::get().device_free(p) ? cudaSuccess : fail(cudaErrorInvalidValue);
}

// Counted as device memory (the simulator has no host side for it).
SIMGPU_EXPORT cudaError_t cudaMallocManaged(void** p, size_t size, unsigned int flags) {
  (void)flags;
  return allocate(p, size);
}

SIMGPU_EXPORT cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  M();
  if (!free_bytes || !total_bytes) return fail(cudaErrorInvalidValue);
  const uint64_t limit = device_memory_limit(), held = MemoryMap::get().device_use().held;
  *free_bytes = limit > held ? limit - held : 0;
  *total_bytes = config().memory_bytes();
  return cudaSuccess;
}

SIMGPU_EXPORT void simgpu_get_device_state(simgpu_device_state* out) {
  const Config& c = config();
  *out = simgpu_device_state{};
  out->memory_total = c.memory_bytes();
  out->memory_held = MemoryMap::get().device_use().held;
  out->now_ns = simgpu_now_ns();
  out->busy_ns = M().busy_ns_until(out->now_ns);
  M().link_bytes_until(out->now_ns, &out->link_tx_bytes, &out->link_rx_bytes);
  out->sm_count = static_cast<int>(c.sm_count);
  out->pcie_gen = static_cast<int>(c.pcie_gen);
  out->pcie_width = static_cast<int>(c.pcie_width);
  out->throttle = c.throttle;
  for (const Config::OtherProcess& p : c.other_processes) {
    if (out->other_processes == SIMGPU_MAX_OTHER_PROCESSES) break;
    out->other_memory[out->other_processes] = static_cast<uint64_t>(p.memory_gib * (1ull << 30));
    out->other_busy[out->other_processes++] = p.busy;
  }
}

// ---- the driver's allocations, as cudaGetDriverEntryPoint hands them out (kernels.cpp) -----
// The same device memory as the runtime's; cuMemCreate's handle is the allocation's address
// (physical memory that is never mapped: nothing here reads it).
namespace simgpu {

CUresult CUDAAPI sim_cuMemAlloc(CUdeviceptr* p, size_t size) {
  void* out = nullptr;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (allocate(&out, size) != cudaSuccess) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(out);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI sim_cuMemFree(CUdeviceptr p) {
  if (!p) return CUDA_SUCCESS;
  cudaDeviceSynchronize();  // as cudaFree
  return MemoryMap::get().device_free(reinterpret_cast<void*>(p)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI sim_cuMemAllocAsync(CUdeviceptr* p, size_t size, CUstream stream) {
  if (!M().stream(reinterpret_cast<cudaStream_t>(stream), false)) return CUDA_ERROR_INVALID_HANDLE;
  return sim_cuMemAlloc(p, size);
}

CUresult CUDAAPI sim_cuMemFreeAsync(CUdeviceptr p, CUstream stream) {
  if (!M().stream(reinterpret_cast<cudaStream_t>(stream), false)) return CUDA_ERROR_INVALID_HANDLE;
  if (!p) return CUDA_SUCCESS;
  return MemoryMap::get().device_free(reinterpret_cast<void*>(p)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI sim_cuMemCreate(CUmemGenericAllocationHandle* h, size_t size, const CUmemAllocationProp* prop,
                                 unsigned long long flags) {
  (void)prop, (void)flags;
  if (!h || size == 0) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr p = 0;
  const CUresult r = sim_cuMemAlloc(&p, size);
  if (r == CUDA_SUCCESS) *h = static_cast<CUmemGenericAllocationHandle>(p);
  return r;
}

CUresult CUDAAPI sim_cuMemRelease(CUmemGenericAllocationHandle h) {
  return MemoryMap::get().device_free(reinterpret_cast<void*>(h)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace simgpu
