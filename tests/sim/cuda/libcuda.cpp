// The simulated libcuda.so.1: the driver functions the simulator has (simgpu_driver_symbol),
// exported by name, for code that takes them from the driver library itself as Triton's
// launcher does (dlopen("libcuda.so.1") + dlsym). Each forwards to the simulated runtime's
// function, found once.
#include <cuda.h>

#include "simgpu.h"

namespace {

template <typename Fn>
Fn Driver(const char* symbol) {
  return reinterpret_cast<Fn>(simgpu_driver_symbol(symbol));
}

}  // namespace

// Each exported function forwards to the simulated runtime's, found on the first call.
#define SIM_DRIVER(name, params, args)                                                   \
  extern "C" __attribute__((visibility("default"))) CUresult CUDAAPI name params {       \
    static const auto real = Driver<decltype(&name)>(#name);                            \
    return real ? real args : CUDA_ERROR_NOT_SUPPORTED;                                  \
  }

SIM_DRIVER(cuLaunchKernel,
           (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem,
            CUstream s, void** params, void** extra),
           (f, gx, gy, gz, bx, by, bz, smem, s, params, extra))
SIM_DRIVER(cuLaunchKernelEx, (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),
           (config, f, params, extra))
SIM_DRIVER(cuGraphLaunch, (CUgraphExec exec, CUstream s), (exec, s))
SIM_DRIVER(cuMemAlloc_v2, (CUdeviceptr* p, size_t n), (p, n))
SIM_DRIVER(cuMemFree_v2, (CUdeviceptr p), (p))
SIM_DRIVER(cuMemAllocAsync, (CUdeviceptr* p, size_t n, CUstream s), (p, n, s))
SIM_DRIVER(cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s))
SIM_DRIVER(cuMemCreate,
           (CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop, unsigned long long flags),
           (h, n, prop, flags))
SIM_DRIVER(cuMemRelease, (CUmemGenericAllocationHandle h), (h))
SIM_DRIVER(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
SIM_DRIVER(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s))
SIM_DRIVER(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void* src, size_t n), (dst, src, n))
SIM_DRIVER(cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void* src, size_t n, CUstream s), (dst, src, n, s))
SIM_DRIVER(cuMemcpyDtoH_v2, (void* dst, CUdeviceptr src, size_t n), (dst, src, n))
SIM_DRIVER(cuMemcpyDtoHAsync_v2, (void* dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s))
SIM_DRIVER(cuMemcpyDtoD_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n))
SIM_DRIVER(cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s))
SIM_DRIVER(cuCtxSynchronize, (), ())
SIM_DRIVER(cuStreamSynchronize, (CUstream s), (s))
SIM_DRIVER(cuEventSynchronize, (CUevent e), (e))
