// Driver-API launches that libraries obtain through the runtime (cuBLAS, and code that
// calls cudaGetDriverEntryPoint) or from libcuda.so.1 with dlsym (Triton: hooks_dlsym.cpp):
// the function handed back for cuLaunchKernel(_ptsz), cuLaunchKernelEx(_ptsz) or
// cuGraphLaunch(_ptsz) (and the allocations, copies and syncs of the files named below) is replaced by a wrapper that times the call like any launch. The
// real function goes into a slot; each slot has its own wrapper (a template instance), so
// the hot path is one load of the slot. cudaGetFuncBySymbol gives the CUfunction its
// kernel's name.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>

#include "hooks/cuda_call.h"
#include "hooks/driver_slot.h"

namespace gi = gpuwatch::inject;

namespace gpuwatch::inject::hooks {
// hooks_driver_memory.cpp, hooks_driver_copies.cpp: the driver's allocations, copies and
// syncs (true when `symbol` is one of theirs).
__attribute__((visibility("hidden"))) bool WrapMemoryEntryPoint(const char* symbol, void** fn);
__attribute__((visibility("hidden"))) bool WrapCopyEntryPoint(const char* symbol, void** fn);
// Replaces `*fn`, the driver's `symbol`, by its wrapper when gpuwatch wraps that symbol.
__attribute__((visibility("hidden"))) void WrapDriverSymbol(const char* symbol, void** fn);
}  // namespace gpuwatch::inject::hooks

namespace {

using LaunchFn = CUresult(CUDAAPI*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**);
using LaunchExFn = CUresult(CUDAAPI*)(const CUlaunchConfig*, CUfunction, void**, void**);
using GraphLaunchFn = CUresult(CUDAAPI*)(CUgraphExec, CUstream);

constexpr int kSlots = 4;  // distinct real functions per kind (legacy, per-thread, ...)
std::atomic<LaunchFn> g_launch[kSlots];
std::atomic<LaunchExFn> g_launch_ex[kSlots];
std::atomic<GraphLaunchFn> g_graph_launch[kSlots];

// A driver call timed as its runtime counterpart is: CUresult has no "not ready", so the
// wrapper only needs the stream and the kernel's name.
template <typename F>
CUresult TimedDriver(gi::Api api, CUstream s, gi::hooks::NameId name, F&& call) {
  CUresult rc = CUDA_SUCCESS;
  gi::hooks::Timed(api, reinterpret_cast<cudaStream_t>(s), name, [&] {
    rc = call();
    return rc == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
  });
  return rc;
}

template <int Slot>
CUresult CUDAAPI WrapLaunch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned smem, CUstream s, void** params, void** extra) {
  const LaunchFn real = g_launch[Slot].load(std::memory_order_relaxed);
  return TimedDriver(gi::kApiDriverLaunchKernel, s, gi::hooks::KernelId(f),
                     [&] { return real(f, gx, gy, gz, bx, by, bz, smem, s, params, extra); });
}
template <int Slot>
CUresult CUDAAPI WrapLaunchEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  const LaunchExFn real = g_launch_ex[Slot].load(std::memory_order_relaxed);
  return TimedDriver(gi::kApiDriverLaunchKernel, config ? config->hStream : nullptr, gi::hooks::KernelId(f),
                     [&] { return real(config, f, params, extra); });
}
template <int Slot>
CUresult CUDAAPI WrapGraphLaunch(CUgraphExec e, CUstream s) {
  const GraphLaunchFn real = g_graph_launch[Slot].load(std::memory_order_relaxed);
  return TimedDriver(gi::kApiGraphLaunch, s, 0, [&] { return real(e, s); });
}

constexpr LaunchFn kLaunchWrappers[kSlots] = {WrapLaunch<0>, WrapLaunch<1>, WrapLaunch<2>, WrapLaunch<3>};
constexpr LaunchExFn kLaunchExWrappers[kSlots] = {WrapLaunchEx<0>, WrapLaunchEx<1>, WrapLaunchEx<2>, WrapLaunchEx<3>};
constexpr GraphLaunchFn kGraphWrappers[kSlots] = {WrapGraphLaunch<0>, WrapGraphLaunch<1>, WrapGraphLaunch<2>,
                                                  WrapGraphLaunch<3>};

// The wrapper for `real` (the same one each time it is asked for), or `real` itself when
// every slot holds another function.
template <typename Fn>
Fn Wrap(std::atomic<Fn> (&slots)[kSlots], const Fn (&wrappers)[kSlots], Fn real) {
  for (int i = 0; i < kSlots; ++i) {
    Fn cur = slots[i].load();
    if (cur == real) return wrappers[i];
    if (!cur && slots[i].compare_exchange_strong(cur, real)) return wrappers[i];
    if (cur == real) return wrappers[i];  // another thread put it there first
  }
  return real;
}

}  // namespace

void gpuwatch::inject::hooks::WrapDriverSymbol(const char* symbol, void** fn) {
  if (!symbol || !fn || !*fn) return;
  if (WrapMemoryEntryPoint(symbol, fn) || WrapCopyEntryPoint(symbol, fn)) return;
  if (IsSymbol(symbol, "cuLaunchKernel", "cuLaunchKernel_ptsz"))
    *fn = reinterpret_cast<void*>(Wrap(g_launch, kLaunchWrappers, reinterpret_cast<LaunchFn>(*fn)));
  else if (IsSymbol(symbol, "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz"))
    *fn = reinterpret_cast<void*>(Wrap(g_launch_ex, kLaunchExWrappers, reinterpret_cast<LaunchExFn>(*fn)));
  else if (IsSymbol(symbol, "cuGraphLaunch", "cuGraphLaunch_ptsz"))
    *fn = reinterpret_cast<void*>(Wrap(g_graph_launch, kGraphWrappers, reinterpret_cast<GraphLaunchFn>(*fn)));
}

extern "C" {

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* status) {
  GW_REAL_T(cudaError_t (*)(const char*, void**, unsigned long long, cudaDriverEntryPointQueryResult*),
            "cudaGetDriverEntryPoint");
  const cudaError_t rc = real(symbol, fn, flags, status);
  if (rc == cudaSuccess) gi::hooks::WrapDriverSymbol(symbol, fn);
  return rc;
}
cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** fn, unsigned long long flags,
                                         cudaDriverEntryPointQueryResult* status) {
  GW_REAL_T(cudaError_t (*)(const char*, void**, unsigned long long, cudaDriverEntryPointQueryResult*),
            "cudaGetDriverEntryPoint_ptsz");
  const cudaError_t rc = real(symbol, fn, flags, status);
  if (rc == cudaSuccess) gi::hooks::WrapDriverSymbol(symbol, fn);
  return rc;
}
cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int version,
                                             unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  GW_REAL_T(cudaError_t (*)(const char*, void**, unsigned int, unsigned long long, cudaDriverEntryPointQueryResult*),
            "cudaGetDriverEntryPointByVersion");
  const cudaError_t rc = real(symbol, fn, version, flags, status);
  if (rc == cudaSuccess) gi::hooks::WrapDriverSymbol(symbol, fn);
  return rc;
}
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** fn, unsigned int version,
                                                  unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  GW_REAL_T(cudaError_t (*)(const char*, void**, unsigned int, unsigned long long, cudaDriverEntryPointQueryResult*),
            "cudaGetDriverEntryPointByVersion_ptsz");
  const cudaError_t rc = real(symbol, fn, version, flags, status);
  if (rc == cudaSuccess) gi::hooks::WrapDriverSymbol(symbol, fn);
  return rc;
}

// The CUfunction of a kernel: named like the kernel (registry.h), for the launches above.
cudaError_t cudaGetFuncBySymbol(cudaFunction_t* f, const void* symbol) {
  GW_REAL(cudaGetFuncBySymbol);
  const cudaError_t rc = real(f, symbol);
  if (rc == cudaSuccess && f) gi::Kernels().Alias(*f, symbol);
  return rc;
}

}  // extern "C"
