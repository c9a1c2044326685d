// CUDA runtime wrappers: find the real function and, when recording, time the call and
// emit one Record. Classification that needs no CUDA call (copy direction, pinned or
// pageable, kernel name id) is a few loads here; everything else is the sender thread's.
#include <cuda_runtime_api.h>

#include "record/call_sites.h"
#include "record/pinned_ranges.h"
#include "record/real.h"
#include "record/recorder.h"
#include "record/registry.h"
#include "record/stamp_clock.h"

namespace gi = gpuwatch::inject;

namespace {

uint64_t StreamId(cudaStream_t s) { return reinterpret_cast<uintptr_t>(s); }

bool IsHostSideOf(const void* p) {
  static const auto attrs = gi::Real<decltype(&cudaPointerGetAttributes)>("cudaPointerGetAttributes");
  cudaPointerAttributes a{};
  if (!attrs || attrs(&a, p) != cudaSuccess) return true;
  return a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeUnregistered;
}

// Direction and pinned/pageable of a copy. cudaMemcpyDefault (UVA) needs the pointers'
// attributes: a CUDA call, but only for copies that do not say their direction.
void ClassifyCopy(gi::Record& r, void* dst, const void* src, cudaMemcpyKind kind) {
  const void* host = nullptr;
  if (kind == cudaMemcpyDefault) {
    const bool src_host = IsHostSideOf(src), dst_host = IsHostSideOf(dst);
    kind = src_host ? (dst_host ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
                    : (dst_host ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
  }
  switch (kind) {
    case cudaMemcpyHostToDevice: r.copy_kind = gi::kCopyH2D; host = src; break;
    case cudaMemcpyDeviceToHost: r.copy_kind = gi::kCopyD2H; host = dst; break;
    case cudaMemcpyDeviceToDevice: r.copy_kind = gi::kCopyD2D; break;
    default: r.copy_kind = gi::kCopyH2H; break;
  }
  if (host && !gi::Pinned().Contains(host)) r.flags |= gi::kFlagPageable;
}

template <typename F>
cudaError_t Copy(gi::Api api, void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s, F&& call) {
  if (!gi::Recording()) return call();
  gi::EnsureRing();
  const gi::HookCostProbe cost;
  gi::Record r{};
  r.t_ticks = gi::Stamp();
  r.stream = StreamId(s);
  gi::EnterCall(api, r.t_ticks, r.stream);  // a blocking copy can take seconds
  const cudaError_t rc = call();
  r.dur_ticks = gi::Stamp() - r.t_ticks;
  r.api = api;
  r.bytes = n;
  ClassifyCopy(r, dst, src, kind);
  const bool host_side = r.copy_kind == gi::kCopyH2D || r.copy_kind == gi::kCopyD2H;
  // cudaMemcpy returns when the copy is done; an async copy from/to pageable memory is
  // staged through a pinned buffer and blocks the host as well.
  if (host_side && (api == gi::kApiMemcpy || (r.flags & gi::kFlagPageable))) r.flags |= gi::kFlagBlockedHost;
  if (gi::WantsCallSite(r)) r.site_id = gi::CaptureCallSite();  // a blocking copy that waited long: where from
  gi::Emit(r);
  gi::LeaveCall();  // after Emit: the settled time counts on it (assemble/assembler.h)
  cost.Done(r.dur_ticks);
  return rc;
}

template <typename F>
cudaError_t Timed(gi::Api api, uint64_t stream, uint32_t name_id, F&& call) {
  if (!gi::Recording()) return call();
  const bool may_hang = api != gi::kApiLaunchKernel;  // a sync waits on the GPU
  if (may_hang) gi::EnsureRing();
  const gi::HookCostProbe cost;
  gi::Record r{};
  r.t_ticks = gi::Stamp();
  if (may_hang) gi::EnterCall(api, r.t_ticks, stream);
  const cudaError_t rc = call();
  r.dur_ticks = gi::Stamp() - r.t_ticks;
  r.api = api;
  r.stream = stream;
  r.name_id = name_id;
  if (gi::WantsCallSite(r)) r.site_id = gi::CaptureCallSite();  // a sync that waited long: where from
  gi::Emit(r);
  if (may_hang) gi::LeaveCall();  // after Emit: the settled time counts on it
  cost.Done(r.dur_ticks);
  return rc;
}

uint32_t KernelId(const void* f) { return gi::Kernels().Find(f); }

}  // namespace

extern "C" {

// ---- copies ----
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  GW_REAL(cudaMemcpy);
  return Copy(gi::kApiMemcpy, dst, src, n, kind, nullptr, [&] { return real(dst, src, n, kind); });
}
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  GW_REAL_T(decltype(&cudaMemcpy), "cudaMemcpy_ptds");
  if (!real) return cudaErrorNotSupported;
  return Copy(gi::kApiMemcpy, dst, src, n, kind, cudaStreamPerThread, [&] { return real(dst, src, n, kind); });
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  GW_REAL(cudaMemcpyAsync);
  return Copy(gi::kApiMemcpyAsync, dst, src, n, kind, s, [&] { return real(dst, src, n, kind, s); });
}
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  GW_REAL_T(decltype(&cudaMemcpyAsync), "cudaMemcpyAsync_ptsz");
  if (!real) return cudaErrorNotSupported;
  return Copy(gi::kApiMemcpyAsync, dst, src, n, kind, s, [&] { return real(dst, src, n, kind, s); });
}

// ---- synchronization ----
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  GW_REAL(cudaStreamSynchronize);
  return Timed(gi::kApiStreamSynchronize, StreamId(s), 0, [&] { return real(s); });
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) {
  GW_REAL_T(decltype(&cudaStreamSynchronize), "cudaStreamSynchronize_ptsz");
  if (!real) return cudaErrorNotSupported;
  return Timed(gi::kApiStreamSynchronize, StreamId(s), 0, [&] { return real(s); });
}
cudaError_t cudaDeviceSynchronize(void) {
  GW_REAL(cudaDeviceSynchronize);
  return Timed(gi::kApiDeviceSynchronize, 0, 0, [&] { return real(); });
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  GW_REAL(cudaEventSynchronize);
  return Timed(gi::kApiEventSynchronize, 0, 0, [&] { return real(e); });
}

// ---- kernel launches ----
cudaError_t cudaLaunchKernel(const void* f, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  GW_REAL(cudaLaunchKernel);
  return Timed(gi::kApiLaunchKernel, StreamId(s), KernelId(f), [&] { return real(f, g, b, args, smem, s); });
}
cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  GW_REAL_T(decltype(&cudaLaunchKernel), "cudaLaunchKernel_ptsz");
  if (!real) return cudaErrorNotSupported;
  return Timed(gi::kApiLaunchKernel, StreamId(s), KernelId(f), [&] { return real(f, g, b, args, smem, s); });
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* cfg, const void* f, void** args) {
  GW_REAL(cudaLaunchKernelExC);
  return Timed(gi::kApiLaunchKernel, cfg ? StreamId(cfg->stream) : 0, KernelId(f), [&] { return real(cfg, f, args); });
}
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* cfg, const void* f, void** args) {
  GW_REAL_T(decltype(&cudaLaunchKernelExC), "cudaLaunchKernelExC_ptsz");
  if (!real) return cudaErrorNotSupported;
  return Timed(gi::kApiLaunchKernel, cfg ? StreamId(cfg->stream) : 0, KernelId(f), [&] { return real(cfg, f, args); });
}

// What CUDA 13's nvcc compiles `kernel<<<...>>>(...)` into (crt/device_functions.h).
using CudaLaunchByHandle = cudaError_t (*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  GW_REAL_T(CudaLaunchByHandle, "__cudaLaunchKernel");
  if (!real) return cudaErrorNotSupported;
  return Timed(gi::kApiLaunchKernel, StreamId(s), KernelId(k), [&] { return real(k, g, b, args, smem, s); });
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  GW_REAL_T(CudaLaunchByHandle, "__cudaLaunchKernel_ptsz");
  if (!real) return cudaErrorNotSupported;
  return Timed(gi::kApiLaunchKernel, StreamId(s), KernelId(k), [&] { return real(k, g, b, args, smem, s); });
}

// ---- kernel names: registration at module load, handle lookup at first launch ----
using RegisterFunction = void (*)(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
void __cudaRegisterFunction(void** module, const char* host_fun, char* device_fun, const char* device_name,
                            int thread_limit, uint3* tid, uint3* bid, dim3* bdim, dim3* gdim, int* wsize) {
  GW_REAL_T(RegisterFunction, "__cudaRegisterFunction");
  gi::Kernels().Register(host_fun, device_name);
  if (real) real(module, host_fun, device_fun, device_name, thread_limit, tid, bid, bdim, gdim, wsize);
}
using GetKernel = cudaError_t (*)(cudaKernel_t*, const void*);
cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* host_fun) {
  GW_REAL_T(GetKernel, "__cudaGetKernel");
  if (!real) return cudaErrorNotSupported;
  const cudaError_t rc = real(k, host_fun);
  if (rc == cudaSuccess && k) gi::Kernels().Alias(*k, host_fun);
  return rc;
}

// ---- pinned host memory: the range map that classifies copies ----
cudaError_t cudaMallocHost(void** p, size_t n) {
  GW_REAL(cudaMallocHost);
  const cudaError_t rc = real(p, n);
  if (rc == cudaSuccess && p) gi::Pinned().Add(*p, n);
  return rc;
}
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int flags) {
  GW_REAL(cudaHostAlloc);
  const cudaError_t rc = real(p, n, flags);
  if (rc == cudaSuccess && p) gi::Pinned().Add(*p, n);
  return rc;
}
cudaError_t cudaHostRegister(void* p, size_t n, unsigned int flags) {
  GW_REAL(cudaHostRegister);
  const cudaError_t rc = real(p, n, flags);
  if (rc == cudaSuccess) gi::Pinned().Add(p, n);
  return rc;
}
cudaError_t cudaFreeHost(void* p) {
  GW_REAL(cudaFreeHost);
  gi::Pinned().Remove(p);
  return real(p);
}
cudaError_t cudaHostUnregister(void* p) {
  GW_REAL(cudaHostUnregister);
  gi::Pinned().Remove(p);
  return real(p);
}

}  // extern "C"
