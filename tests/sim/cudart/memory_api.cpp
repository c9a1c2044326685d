// Device management, allocations, copies and memsets of the simulated runtime.
#include <cuda.h>
#include <cstdlib>
#include <cstring>

#include "../model/clock.h"
#include "../model/config.h"
#include "../model/memory.h"
#include "api_trace.h"
#include "runtime.h"

using namespace simgpu;

namespace {


// Which way a copy goes and where its host side lives, from the pointers (UVA) or, when the
// caller names a direction, from that.
struct CopyPlan {
  int kind = -1;       // SIMGPU_H2D / D2H / D2D, or -1 for host-to-host (no device work)
  bool pageable = false;
  uint64_t dur_ns = 0;
};

CopyPlan plan_copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  MemoryMap& mm = MemoryMap::get();
  MemKind dk = mm.kind(dst), sk = mm.kind(src);
  bool dst_dev = dk == MemKind::Device, src_dev = sk == MemKind::Device;
  switch (kind) {
    case cudaMemcpyHostToDevice: dst_dev = true; src_dev = false; break;
    case cudaMemcpyDeviceToHost: dst_dev = false; src_dev = true; break;
    case cudaMemcpyDeviceToDevice: dst_dev = src_dev = true; break;
    case cudaMemcpyHostToHost: dst_dev = src_dev = false; break;
    default: break;  // cudaMemcpyDefault: infer from the pointers
  }
  const Config& c = config();
  const double link = c.pcie_link_fraction();  // a link trained below gen 5 x16 is slower
  CopyPlan p;
  if (src_dev && dst_dev) {
    p.kind = SIMGPU_D2D;
    p.dur_ns = transfer_ns(n, c.d2d_gbps);
  } else if (dst_dev) {
    p.kind = SIMGPU_H2D;
    p.pageable = sk != MemKind::Pinned;
    p.dur_ns = transfer_ns(n, (p.pageable ? c.h2d_pageable_gbps : c.h2d_pinned_gbps) * link);
  } else if (src_dev) {
    p.kind = SIMGPU_D2H;
    p.pageable = dk != MemKind::Pinned;
    p.dur_ns = transfer_ns(n, (p.pageable ? c.d2h_pageable_gbps : c.d2h_gbps) * link);
  }
  return p;
}

// Every copy entry point ends here. A synchronous API, or a pageable host buffer (the
// driver stages it through a pinned bounce buffer), blocks the host until the copy is done.
cudaError_t copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream,
                 bool per_thread, bool sync_api, uint32_t cbid, uint32_t domain = SIMGPU_API_RUNTIME) {
  ApiScope scope(domain, cbid);  // covers the blocking wait too, as CUPTI's API record does
  Model& m = M();
  if (n && (!dst || !src)) return fail(cudaErrorInvalidValue);
  Stream* s = stream_of(stream, per_thread);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (n == 0) return cudaSuccess;
  CopyPlan p = plan_copy(dst, src, n, kind);
  if (p.kind < 0) {  // host to host: done by the CPU in the call, in stream order if synchronous
    if (sync_api) m.wait(m.tail(s));
    return cudaSuccess;
  }
  OpDesc d;
  d.kind = p.kind;
  d.dur_ns = p.dur_ns;
  d.bytes = n;
  d.name = p.kind == SIMGPU_H2D ? "memcpyHtoD" : p.kind == SIMGPU_D2H ? "memcpyDtoH" : "memcpyDtoD";
  if (p.kind != SIMGPU_D2D) d.flags = p.pageable ? SIMGPU_FLAG_HOST_PAGEABLE : SIMGPU_FLAG_HOST_PINNED;
  if (sync_api) d.flags |= SIMGPU_FLAG_SYNC_API;
  if (capture_into_graph(s, d)) return cudaSuccess;
  OpRef op = m.enqueue(s, d);
  if (sync_api || p.pageable) m.wait(op);
  return cudaSuccess;
}

cudaError_t memset_impl(void* p, size_t n, cudaStream_t stream, bool per_thread, bool sync_api, uint32_t cbid) {
  ApiScope scope(SIMGPU_API_RUNTIME, cbid);
  Model& m = M();
  if (n && !p) return fail(cudaErrorInvalidValue);
  Stream* s = stream_of(stream, per_thread);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (n == 0) return cudaSuccess;
  OpDesc d;
  d.kind = SIMGPU_MEMSET;
  d.dur_ns = transfer_ns(n, config().memset_gbps);
  d.bytes = n;
  d.name = "memset";
  d.flags = sync_api ? SIMGPU_FLAG_SYNC_API : 0;
  if (capture_into_graph(s, d)) return cudaSuccess;
  OpRef op = m.enqueue(s, d);
  // cudaMemset is asynchronous to the host except on pinned host memory (runtime API docs).
  if (sync_api && MemoryMap::get().kind(p) == MemKind::Pinned) m.wait(op);
  return cudaSuccess;
}

}  // namespace

// ---- devices ---------------------------------------------------------------------------

SIMGPU_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return fail(cudaErrorInvalidValue);
  *count = M().device_count();
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= M().device_count()) return fail(cudaErrorInvalidDevice);
  Model::set_current_device(device);
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaGetDevice(int* device) {
  M();
  if (!device) return fail(cudaErrorInvalidValue);
  *device = Model::current_device();
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return fail(cudaErrorInvalidValue);
  if (device < 0 || device >= M().device_count()) return fail(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::strncpy(prop->name, "gpuwatch simulated GPU", sizeof prop->name - 1);
  prop->uuid.bytes[0] = static_cast<char>(device);
  prop->totalGlobalMem = simgpu::config().memory_bytes();
  prop->sharedMemPerBlock = 48 << 10;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = static_cast<int>(simgpu::config().sm_count);
  prop->concurrentKernels = 1;
  prop->asyncEngineCount = 2;
  prop->unifiedAddressing = 1;
  prop->pciBusID = device;
  prop->canMapHostMemory = 1;
  prop->streamPrioritiesSupported = 1;
  prop->hostRegisterSupported = 1;
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaDriverGetVersion(int* v) {
  if (!v) return fail(cudaErrorInvalidValue);
  *v = static_cast<int>(simgpu::config().driver_version);
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaRuntimeGetVersion(int* v) {
  if (!v) return fail(cudaErrorInvalidValue);
  *v = static_cast<int>(simgpu::config().cuda_version);
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  Model& m = M();
  for (const OpRef& op : m.device_work(Model::current_device())) m.wait(op);
  return cudaSuccess;
}

// ---- memory ----------------------------------------------------------------------------

SIMGPU_EXPORT cudaError_t cudaMalloc(void** p, size_t size) {
  M();
  if (!p) return fail(cudaErrorInvalidValue);
  if (size == 0) {
    *p = nullptr;
    return cudaSuccess;
  }
  *p = MemoryMap::get().device_alloc(size, Model::current_device(), device_memory_limit());
  return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

SIMGPU_EXPORT cudaError_t cudaFree(void* p) {
  M();
  if (!p) return cudaSuccess;  // cudaFree(0) is the classic "initialize the context" call
  // cudaFree synchronizes the device before releasing memory the device may still use.
  cudaDeviceSynchronize();
  return MemoryMap::get().device_free(p) ? cudaSuccess : fail(cudaErrorInvalidValue);
}

SIMGPU_EXPORT cudaError_t cudaHostAlloc(void** p, size_t size, unsigned int flags) {
  (void)flags;
  M();
  if (!p) return fail(cudaErrorInvalidValue);
  void* mem = nullptr;
  // Page-aligned like the driver's allocations; untouched pages cost nothing.
  if (posix_memalign(&mem, 4096, size ? size : 1) != 0) return fail(cudaErrorMemoryAllocation);
  MemoryMap::get().add_pinned(mem, size ? size : 1, true);
  *p = mem;
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaMallocHost(void** p, size_t size) { return cudaHostAlloc(p, size, 0); }

SIMGPU_EXPORT cudaError_t cudaFreeHost(void* p) {
  M();
  if (!p) return cudaSuccess;
  if (!MemoryMap::get().remove_pinned(p, true)) return fail(cudaErrorInvalidValue);
  std::free(p);
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaHostRegister(void* p, size_t size, unsigned int flags) {
  (void)flags;
  M();
  if (!p || !size) return fail(cudaErrorInvalidValue);
  MemoryMap& mm = MemoryMap::get();
  if (mm.kind(p) == MemKind::Pinned) return fail(cudaErrorHostMemoryAlreadyRegistered);
  mm.add_pinned(p, size, false);
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaHostUnregister(void* p) {
  M();
  // Only cudaHostRegister'ed ranges can be unregistered, not cudaMallocHost memory.
  if (!MemoryMap::get().remove_pinned(p, false)) return fail(cudaErrorHostMemoryNotRegistered);
  return cudaSuccess;
}

SIMGPU_EXPORT cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* ptr) {
  M();
  if (!attr) return fail(cudaErrorInvalidValue);
  std::memset(attr, 0, sizeof *attr);
  int device = 0;
  switch (MemoryMap::get().kind(ptr, &device)) {
    case MemKind::Device:
      attr->type = cudaMemoryTypeDevice;
      attr->device = device;
      attr->devicePointer = const_cast<void*>(ptr);
      break;
    case MemKind::Pinned:
      attr->type = cudaMemoryTypeHost;
      attr->device = Model::current_device();
      attr->devicePointer = const_cast<void*>(ptr);
      attr->hostPointer = const_cast<void*>(ptr);
      break;
    case MemKind::Pageable:  // CUDA 11+: success with type "unregistered"
      attr->type = cudaMemoryTypeUnregistered;
      attr->device = -2;
      attr->hostPointer = const_cast<void*>(ptr);
      break;
  }
  return cudaSuccess;
}

// ---- copies and memsets ----------------------------------------------------------------

SIMGPU_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return copy(dst, src, n, kind, cudaStreamLegacy, false, true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return copy(dst, src, n, kind, cudaStreamPerThread, true, true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000);
}
SIMGPU_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                          cudaStream_t stream) {
  return copy(dst, src, n, kind, stream, false, false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                               cudaStream_t stream) {
  return copy(dst, src, n, kind, stream, true, false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000);
}
SIMGPU_EXPORT cudaError_t cudaMemset(void* p, int value, size_t n) {
  (void)value;
  return memset_impl(p, n, cudaStreamLegacy, false, true, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemset_ptds(void* p, int value, size_t n) {
  (void)value;
  return memset_impl(p, n, cudaStreamPerThread, true, true, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000);
}
SIMGPU_EXPORT cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t stream) {
  (void)value;
  return memset_impl(p, n, stream, false, false, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemsetAsync_ptsz(void* p, int value, size_t n, cudaStream_t stream) {
  (void)value;
  return memset_impl(p, n, stream, true, false, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000);
}

// ---- the other copy and memset shapes: same model, bytes = the area moved ----------------
// Pitched (2D/3D) copies and memsets move width x height (x depth) bytes; peer copies are
// device to device; symbols are device memory (__cudaRegisterVar keeps no address, so the
// direction comes from `kind`).

SIMGPU_EXPORT cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                       size_t height, cudaMemcpyKind kind) {
  (void)dpitch, (void)spitch;
  return copy(dst, src, width * height, kind, cudaStreamLegacy, false, true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                            size_t height, cudaMemcpyKind kind, cudaStream_t stream) {
  (void)dpitch, (void)spitch;
  return copy(dst, src, width * height, kind, stream, false, false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020);
}
namespace {
size_t extent_bytes(const cudaMemcpy3DParms* p) {
  return p->extent.width * (p->extent.height ? p->extent.height : 1) * (p->extent.depth ? p->extent.depth : 1);
}
}  // namespace
SIMGPU_EXPORT cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms* p) {
  if (!p) return fail(cudaErrorInvalidValue);
  return copy(p->dstPtr.ptr, p->srcPtr.ptr, extent_bytes(p), p->kind, cudaStreamLegacy, false, true,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms* p, cudaStream_t stream) {
  if (!p) return fail(cudaErrorInvalidValue);
  return copy(p->dstPtr.ptr, p->srcPtr.ptr, extent_bytes(p), p->kind, stream, false, false,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemcpyPeer(void* dst, int dst_dev, const void* src, int src_dev, size_t n) {
  (void)dst_dev, (void)src_dev;
  return copy(dst, src, n, cudaMemcpyDeviceToDevice, cudaStreamLegacy, false, true,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000);
}
SIMGPU_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_dev, const void* src, int src_dev, size_t n,
                                              cudaStream_t stream) {
  (void)dst_dev, (void)src_dev;
  return copy(dst, src, n, cudaMemcpyDeviceToDevice, stream, false, false,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000);
}
SIMGPU_EXPORT cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t n, size_t offset,
                                             cudaMemcpyKind kind) {
  (void)offset;
  if (kind == cudaMemcpyDefault) kind = cudaMemcpyHostToDevice;
  return copy(const_cast<void*>(symbol), src, n, kind, cudaStreamLegacy, false, true,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t n, size_t offset,
                                               cudaMemcpyKind kind) {
  (void)offset;
  if (kind == cudaMemcpyDefault) kind = cudaMemcpyDeviceToHost;
  return copy(dst, symbol, n, kind, cudaStreamLegacy, false, true, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t n, size_t offset,
                                                  cudaMemcpyKind kind, cudaStream_t stream) {
  (void)offset;
  if (kind == cudaMemcpyDefault) kind = cudaMemcpyHostToDevice;
  return copy(const_cast<void*>(symbol), src, n, kind, stream, false, false,
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t n, size_t offset,
                                                    cudaMemcpyKind kind, cudaStream_t stream) {
  (void)offset;
  if (kind == cudaMemcpyDefault) kind = cudaMemcpyDeviceToHost;
  return copy(dst, symbol, n, kind, stream, false, false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemset2D(void* p, size_t pitch, int value, size_t width, size_t height) {
  (void)pitch, (void)value;
  return memset_impl(p, width * height, cudaStreamLegacy, false, true, CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020);
}
SIMGPU_EXPORT cudaError_t cudaMemset2DAsync(void* p, size_t pitch, int value, size_t width, size_t height,
                                            cudaStream_t stream) {
  (void)pitch, (void)value;
  return memset_impl(p, width * height, stream, false, false, CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020);
}

// ---- the driver's copies and syncs, for entry points and the simulated libcuda.so.1 ------
// The same copies as the runtime's (reported to CUPTI as DRIVER calls); CUdeviceptr is the
// device pointer. cuMemcpy(Async) is a UVA copy (its direction from the pointers).
namespace simgpu {
namespace {
CUresult to_cu(cudaError_t e) { return e == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }
cudaStream_t rt(CUstream s) { return reinterpret_cast<cudaStream_t>(s); }
CUresult driver_copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, CUstream s, bool sync_api, uint32_t cbid) {
  return to_cu(copy(dst, src, n, kind, sync_api ? cudaStreamLegacy : rt(s), false, sync_api, cbid, SIMGPU_API_DRIVER));
}
}  // namespace

CUresult CUDAAPI sim_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return driver_copy(ptr(dst), ptr(src), n, cudaMemcpyDefault, nullptr, true, CUPTI_DRIVER_TRACE_CBID_cuMemcpy);
}
CUresult CUDAAPI sim_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return driver_copy(ptr(dst), ptr(src), n, cudaMemcpyDefault, s, false, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync);
}
CUresult CUDAAPI sim_cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t n) {
  return driver_copy(ptr(dst), src, n, cudaMemcpyHostToDevice, nullptr, true, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2);
}
CUresult CUDAAPI sim_cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  return driver_copy(ptr(dst), src, n, cudaMemcpyHostToDevice, s, false, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2);
}
CUresult CUDAAPI sim_cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  return driver_copy(dst, ptr(src), n, cudaMemcpyDeviceToHost, nullptr, true, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2);
}
CUresult CUDAAPI sim_cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  return driver_copy(dst, ptr(src), n, cudaMemcpyDeviceToHost, s, false, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2);
}
CUresult CUDAAPI sim_cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return driver_copy(ptr(dst), ptr(src), n, cudaMemcpyDeviceToDevice, nullptr, true, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2);
}
CUresult CUDAAPI sim_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return driver_copy(ptr(dst), ptr(src), n, cudaMemcpyDeviceToDevice, s, false,
                     CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2);
}
CUresult CUDAAPI sim_cuCtxSynchronize() { return to_cu(cudaDeviceSynchronize()); }
CUresult CUDAAPI sim_cuStreamSynchronize(CUstream s) { return to_cu(cudaStreamSynchronize(rt(s))); }
CUresult CUDAAPI sim_cuEventSynchronize(CUevent e) { return to_cu(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(e))); }

}  // namespace simgpu
