// CUDA runtime wrappers: find the real function and, when recording, time the call and
// emit one Record. Classification that needs no CUDA call (copy direction, pinned or
// pageable, kernel name id) is a few loads here; everything else is the sender thread's.
#include <cuda_runtime_api.h>

#include "hooks/cuda_call.h"
#include "record/pinned_ranges.h"
#include "hooks/missing.h"
#include "record/registry.h"

namespace gi = gpuwatch::inject;
using gi::hooks::Copy;
using gi::hooks::KernelId;
using gi::hooks::Timed;

extern "C" {

// ---- copies ----
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  GW_REAL(cudaMemcpy);
  return Copy(gi::kApiMemcpy, dst, src, n, kind, nullptr, [&] { return real(dst, src, n, kind); });
}
cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  GW_REAL_T(decltype(&cudaMemcpy), "cudaMemcpy_ptds");
  return Copy(gi::kApiMemcpy, dst, src, n, kind, cudaStreamPerThread, [&] { return real(dst, src, n, kind); });
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  GW_REAL(cudaMemcpyAsync);
  return Copy(gi::kApiMemcpyAsync, dst, src, n, kind, s, [&] { return real(dst, src, n, kind, s); });
}
cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  GW_REAL_T(decltype(&cudaMemcpyAsync), "cudaMemcpyAsync_ptsz");
  return Copy(gi::kApiMemcpyAsync, dst, src, n, kind, s, [&] { return real(dst, src, n, kind, s); });
}

// ---- synchronization ----
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  GW_REAL(cudaStreamSynchronize);
  return Timed(gi::kApiStreamSynchronize, s, 0, [&] { return real(s); });
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) {
  GW_REAL_T(decltype(&cudaStreamSynchronize), "cudaStreamSynchronize_ptsz");
  return Timed(gi::kApiStreamSynchronize, s, 0, [&] { return real(s); });
}
cudaError_t cudaDeviceSynchronize(void) {
  GW_REAL(cudaDeviceSynchronize);
  return Timed(gi::kApiDeviceSynchronize, nullptr, 0, [&] { return real(); });
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  GW_REAL(cudaEventSynchronize);
  return Timed(gi::kApiEventSynchronize, nullptr, 0, [&] { return real(e); });
}

// ---- kernel launches ----
cudaError_t cudaLaunchKernel(const void* f, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  GW_REAL(cudaLaunchKernel);
  return Timed(gi::kApiLaunchKernel, s, KernelId(f), [&] { return real(f, g, b, args, smem, s); });
}
cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  GW_REAL_T(decltype(&cudaLaunchKernel), "cudaLaunchKernel_ptsz");
  return Timed(gi::kApiLaunchKernel, s, KernelId(f), [&] { return real(f, g, b, args, smem, s); });
}
cudaError_t cudaLaunchCooperativeKernel(const void* f, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  GW_REAL(cudaLaunchCooperativeKernel);
  return Timed(gi::kApiLaunchKernel, s, KernelId(f), [&] { return real(f, g, b, args, smem, s); });
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* cfg, const void* f, void** args) {
  GW_REAL(cudaLaunchKernelExC);
  return Timed(gi::kApiLaunchKernel, cfg ? cfg->stream : nullptr, KernelId(f), [&] { return real(cfg, f, args); });
}
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* cfg, const void* f, void** args) {
  GW_REAL_T(decltype(&cudaLaunchKernelExC), "cudaLaunchKernelExC_ptsz");
  return Timed(gi::kApiLaunchKernel, cfg ? cfg->stream : nullptr, KernelId(f), [&] { return real(cfg, f, args); });
}

// What CUDA 13's nvcc compiles `kernel<<<...>>>(...)` into (crt/device_functions.h).
using CudaLaunchByHandle = cudaError_t (*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t);
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  GW_REAL_T(CudaLaunchByHandle, "__cudaLaunchKernel");
  return Timed(gi::kApiLaunchKernel, s, KernelId(k), [&] { return real(k, g, b, args, smem, s); });
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  GW_REAL_T(CudaLaunchByHandle, "__cudaLaunchKernel_ptsz");
  return Timed(gi::kApiLaunchKernel, s, KernelId(k), [&] { return real(k, g, b, args, smem, s); });
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
