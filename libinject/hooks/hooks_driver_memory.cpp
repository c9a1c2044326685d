// The driver's allocations, as libraries obtain them through the runtime's entry points
// (cudaGetDriverEntryPoint: PyTorch's expandable segments reserve through cuMemCreate,
// other allocators through cuMemAlloc): the function handed back is replaced by a wrapper
// that records the allocation or free like the runtime's (memory_call.h), so the rank's
// memory (summary.json `memory`) counts them. cuMemAlloc(_v2) and cuMemCreate count as
// allocations (CUDA_MALLOC on the wire), cuMemFree(_v2) and cuMemRelease as frees
// (CUDA_FREE), cuMemAllocAsync / cuMemFreeAsync as the stream-ordered ones. cuMemCreate's
// handle stands for the physical memory it holds (its cuMemMap'ed addresses are not
// followed). The same functions taken from libcuda.so.1 with dlsym come here too
// (hooks_dlsym.cpp).
#include <cuda.h>

#include <atomic>
#include <cstring>

#include "hooks/driver_slot.h"
#include "hooks/memory_call.h"

namespace gi = gpuwatch::inject;

namespace {

using AllocFn = CUresult(CUDAAPI*)(CUdeviceptr*, size_t);
using FreeFn = CUresult(CUDAAPI*)(CUdeviceptr);
using AllocAsyncFn = CUresult(CUDAAPI*)(CUdeviceptr*, size_t, CUstream);
using FreeAsyncFn = CUresult(CUDAAPI*)(CUdeviceptr, CUstream);
using CreateFn = CUresult(CUDAAPI*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                                    unsigned long long);
using ReleaseFn = CUresult(CUDAAPI*)(CUmemGenericAllocationHandle);

// One real function per symbol (the driver hands out one); another one is passed through.
std::atomic<AllocFn> g_alloc{nullptr};
std::atomic<FreeFn> g_free{nullptr};
std::atomic<AllocAsyncFn> g_alloc_async{nullptr};
std::atomic<FreeAsyncFn> g_free_async{nullptr};
std::atomic<CreateFn> g_create{nullptr};
std::atomic<ReleaseFn> g_release{nullptr};

uint64_t StreamId(CUstream s) { return reinterpret_cast<uintptr_t>(s); }

CUresult CUDAAPI WrapAlloc(CUdeviceptr* p, size_t n) {
  const AllocFn real = g_alloc.load(std::memory_order_relaxed);
  return gi::hooks::MemoryCall(gi::kApiMalloc, 0, CUDA_SUCCESS, n, [&] { return real(p, n); },
                               [&] { return p ? static_cast<uint64_t>(*p) : 0; });
}
CUresult CUDAAPI WrapFree(CUdeviceptr p) {
  const FreeFn real = g_free.load(std::memory_order_relaxed);
  return gi::hooks::MemoryCall(gi::kApiFree, 0, CUDA_SUCCESS, 0, [&] { return real(p); },
                               [&] { return static_cast<uint64_t>(p); });
}
CUresult CUDAAPI WrapAllocAsync(CUdeviceptr* p, size_t n, CUstream s) {
  const AllocAsyncFn real = g_alloc_async.load(std::memory_order_relaxed);
  return gi::hooks::MemoryCall(gi::kApiMallocAsync, StreamId(s), CUDA_SUCCESS, n, [&] { return real(p, n, s); },
                               [&] { return p ? static_cast<uint64_t>(*p) : 0; });
}
CUresult CUDAAPI WrapFreeAsync(CUdeviceptr p, CUstream s) {
  const FreeAsyncFn real = g_free_async.load(std::memory_order_relaxed);
  return gi::hooks::MemoryCall(gi::kApiFreeAsync, StreamId(s), CUDA_SUCCESS, 0, [&] { return real(p, s); },
                               [&] { return static_cast<uint64_t>(p); });
}
CUresult CUDAAPI WrapCreate(CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop,
                            unsigned long long flags) {
  const CreateFn real = g_create.load(std::memory_order_relaxed);
  return gi::hooks::MemoryCall(gi::kApiMalloc, 0, CUDA_SUCCESS, n, [&] { return real(h, n, prop, flags); },
                               [&] { return h ? static_cast<uint64_t>(*h) : 0; });
}
CUresult CUDAAPI WrapRelease(CUmemGenericAllocationHandle h) {
  const ReleaseFn real = g_release.load(std::memory_order_relaxed);
  return gi::hooks::MemoryCall(gi::kApiFree, 0, CUDA_SUCCESS, 0, [&] { return real(h); },
                               [&] { return static_cast<uint64_t>(h); });
}

}  // namespace

namespace gpuwatch::inject::hooks {

// Called by hooks_cuda_driver.cpp for every entry point the runtime handed out.
__attribute__((visibility("hidden"))) bool WrapMemoryEntryPoint(const char* symbol, void** fn) {
  if (IsSymbol(symbol, "cuMemAlloc", "cuMemAlloc_v2")) TakeSlot(g_alloc, WrapAlloc, fn);
  else if (IsSymbol(symbol, "cuMemFree", "cuMemFree_v2")) TakeSlot(g_free, WrapFree, fn);
  else if (IsSymbol(symbol, "cuMemAllocAsync", "cuMemAllocAsync_ptsz")) TakeSlot(g_alloc_async, WrapAllocAsync, fn);
  else if (IsSymbol(symbol, "cuMemFreeAsync", "cuMemFreeAsync_ptsz")) TakeSlot(g_free_async, WrapFreeAsync, fn);
  else if (IsSymbol(symbol, "cuMemCreate", nullptr)) TakeSlot(g_create, WrapCreate, fn);
  else if (IsSymbol(symbol, "cuMemRelease", nullptr)) TakeSlot(g_release, WrapRelease, fn);
  else return false;
  return true;
}

}  // namespace gpuwatch::inject::hooks
