// The driver's copies and syncs, as code that drives the GPU through the driver API gets them
// (XLA, Triton's utilities, hand-written driver code: cudaGetDriverEntryPoint, or dlsym on
// libcuda.so.1 — hooks_dlsym.cpp): the function handed back is replaced by a wrapper that
// records the call as its runtime counterpart (cuda_call.h's Copy and Timed), so copies,
// blocking copies and syncs count the same whichever API made them. cuMemcpyHtoD(_v2) and the
// other directions are copies of that direction (cuMemcpy(Async): UVA, from the pointers);
// the synchronous forms block the host. cuStreamSynchronize, cuCtxSynchronize and
// cuEventSynchronize are stream, device and event syncs. One real function per symbol
// (driver_slot.h).
#include <cuda.h>

#include <atomic>

#include "hooks/cuda_call.h"
#include "hooks/driver_slot.h"

namespace gi = gpuwatch::inject;

namespace {

using CopyFn = CUresult(CUDAAPI*)(CUdeviceptr, CUdeviceptr, size_t);
using CopyAsyncFn = CUresult(CUDAAPI*)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
using HtoDFn = CUresult(CUDAAPI*)(CUdeviceptr, const void*, size_t);
using HtoDAsyncFn = CUresult(CUDAAPI*)(CUdeviceptr, const void*, size_t, CUstream);
using DtoHFn = CUresult(CUDAAPI*)(void*, CUdeviceptr, size_t);
using DtoHAsyncFn = CUresult(CUDAAPI*)(void*, CUdeviceptr, size_t, CUstream);
using StreamSyncFn = CUresult(CUDAAPI*)(CUstream);
using CtxSyncFn = CUresult(CUDAAPI*)();
using EventSyncFn = CUresult(CUDAAPI*)(CUevent);

std::atomic<CopyFn> g_copy{nullptr}, g_dtod{nullptr};
std::atomic<CopyAsyncFn> g_copy_async{nullptr}, g_dtod_async{nullptr};
std::atomic<HtoDFn> g_htod{nullptr};
std::atomic<HtoDAsyncFn> g_htod_async{nullptr};
std::atomic<DtoHFn> g_dtoh{nullptr};
std::atomic<DtoHAsyncFn> g_dtoh_async{nullptr};
std::atomic<StreamSyncFn> g_stream_sync{nullptr};
std::atomic<CtxSyncFn> g_ctx_sync{nullptr};
std::atomic<EventSyncFn> g_event_sync{nullptr};

void* Ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }
cudaStream_t Stream(CUstream s) { return reinterpret_cast<cudaStream_t>(s); }

// A driver call recorded by a runtime recorder: CUresult has no "not ready" among what these
// return, so success or not is all the recorder needs.
template <typename F>
auto AsRuntime(CUresult& rc, F&& call) {
  return [&] {
    rc = call();
    return rc == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
  };
}

template <typename F>
CUresult DriverCopy(gi::Api api, void* dst, const void* src, size_t n, cudaMemcpyKind kind, CUstream s, F&& call) {
  CUresult rc = CUDA_SUCCESS;
  gi::hooks::Copy(api, dst, src, n, kind, Stream(s), AsRuntime(rc, call));
  return rc;
}

template <typename F>
CUresult DriverSync(gi::Api api, CUstream s, F&& call) {
  CUresult rc = CUDA_SUCCESS;
  gi::hooks::Timed(api, Stream(s), 0, AsRuntime(rc, call));
  return rc;
}

CUresult CUDAAPI WrapCopy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  const CopyFn real = g_copy.load(std::memory_order_relaxed);
  return DriverCopy(gi::kApiMemcpy, Ptr(dst), Ptr(src), n, cudaMemcpyDefault, nullptr, [&] { return real(dst, src, n); });
}
CUresult CUDAAPI WrapCopyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  const CopyAsyncFn real = g_copy_async.load(std::memory_order_relaxed);
  return DriverCopy(gi::kApiMemcpyAsync, Ptr(dst), Ptr(src), n, cudaMemcpyDefault, s,
                    [&] { return real(dst, src, n, s); });
}
CUresult CUDAAPI WrapHtoD(CUdeviceptr dst, const void* src, size_t n) {
  const HtoDFn real = g_htod.load(std::memory_order_relaxed);
  return DriverCopy(gi::kApiMemcpy, Ptr(dst), src, n, cudaMemcpyHostToDevice, nullptr, [&] { return real(dst, src, n); });
}
CUresult CUDAAPI WrapHtoDAsync(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  const HtoDAsyncFn real = g_htod_async.load(std::memory_order_relaxed);
  return DriverCopy(gi::kApiMemcpyAsync, Ptr(dst), src, n, cudaMemcpyHostToDevice, s,
                    [&] { return real(dst, src, n, s); });
}
CUresult CUDAAPI WrapDtoH(void* dst, CUdeviceptr src, size_t n) {
  const DtoHFn real = g_dtoh.load(std::memory_order_relaxed);
  return DriverCopy(gi::kApiMemcpy, dst, Ptr(src), n, cudaMemcpyDeviceToHost, nullptr, [&] { return real(dst, src, n); });
}
CUresult CUDAAPI WrapDtoHAsync(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  const DtoHAsyncFn real = g_dtoh_async.load(std::memory_order_relaxed);
  return DriverCopy(gi::kApiMemcpyAsync, dst, Ptr(src), n, cudaMemcpyDeviceToHost, s,
                    [&] { return real(dst, src, n, s); });
}
CUresult CUDAAPI WrapDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  const CopyFn real = g_dtod.load(std::memory_order_relaxed);
  return DriverCopy(gi::kApiMemcpy, Ptr(dst), Ptr(src), n, cudaMemcpyDeviceToDevice, nullptr,
                    [&] { return real(dst, src, n); });
}
CUresult CUDAAPI WrapDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  const CopyAsyncFn real = g_dtod_async.load(std::memory_order_relaxed);
  return DriverCopy(gi::kApiMemcpyAsync, Ptr(dst), Ptr(src), n, cudaMemcpyDeviceToDevice, s,
                    [&] { return real(dst, src, n, s); });
}
CUresult CUDAAPI WrapStreamSync(CUstream s) {
  const StreamSyncFn real = g_stream_sync.load(std::memory_order_relaxed);
  return DriverSync(gi::kApiStreamSynchronize, s, [&] { return real(s); });
}
CUresult CUDAAPI WrapCtxSync() {
  const CtxSyncFn real = g_ctx_sync.load(std::memory_order_relaxed);
  return DriverSync(gi::kApiDeviceSynchronize, nullptr, [&] { return real(); });
}
CUresult CUDAAPI WrapEventSync(CUevent e) {
  const EventSyncFn real = g_event_sync.load(std::memory_order_relaxed);
  return DriverSync(gi::kApiEventSynchronize, nullptr, [&] { return real(e); });
}

}  // namespace

namespace gpuwatch::inject::hooks {

// Called by hooks_cuda_driver.cpp for every driver function handed out (entry points, dlsym).
__attribute__((visibility("hidden"))) bool WrapCopyEntryPoint(const char* symbol, void** fn) {
  if (symbol[0] != 'c' || symbol[1] != 'u') return false;
  if (IsSymbol(symbol, "cuMemcpy", nullptr)) TakeSlot(g_copy, WrapCopy, fn);
  else if (IsSymbol(symbol, "cuMemcpyAsync", nullptr)) TakeSlot(g_copy_async, WrapCopyAsync, fn);
  else if (IsSymbol(symbol, "cuMemcpyHtoD", "cuMemcpyHtoD_v2")) TakeSlot(g_htod, WrapHtoD, fn);
  else if (IsSymbol(symbol, "cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2")) TakeSlot(g_htod_async, WrapHtoDAsync, fn);
  else if (IsSymbol(symbol, "cuMemcpyDtoH", "cuMemcpyDtoH_v2")) TakeSlot(g_dtoh, WrapDtoH, fn);
  else if (IsSymbol(symbol, "cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2")) TakeSlot(g_dtoh_async, WrapDtoHAsync, fn);
  else if (IsSymbol(symbol, "cuMemcpyDtoD", "cuMemcpyDtoD_v2")) TakeSlot(g_dtod, WrapDtoD, fn);
  else if (IsSymbol(symbol, "cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2")) TakeSlot(g_dtod_async, WrapDtoDAsync, fn);
  else if (IsSymbol(symbol, "cuStreamSynchronize", nullptr)) TakeSlot(g_stream_sync, WrapStreamSync, fn);
  else if (IsSymbol(symbol, "cuCtxSynchronize", nullptr)) TakeSlot(g_ctx_sync, WrapCtxSync, fn);
  else if (IsSymbol(symbol, "cuEventSynchronize", nullptr)) TakeSlot(g_event_sync, WrapEventSync, fn);
  else return false;
  return true;
}

}  // namespace gpuwatch::inject::hooks
