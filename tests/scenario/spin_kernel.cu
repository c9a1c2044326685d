// See spin_kernel.h.
//
// The device name must contain "spin": the simulated GPU (tests/sim) recognises such
// kernels and takes their first argument (unsigned long long ns) as their duration, so the
// same launch means the same time on the simulator and on a real GPU.
#include "spin_kernel.h"

#include <cuda.h>
#include <dlfcn.h>

namespace gpuwatch::scenario {

// %globaltimer is the GPU's nanosecond clock; spinning on it gives a duration independent
// of the clock rate and the architecture. One thread per block is enough: the kernel only
// occupies time (and, by its grid, SMs), which is what the scenarios describe.
__global__ void gpuwatch_spin_kernel(unsigned long long ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long now = start;
  while (now - start < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

void launch_spin(unsigned long long ns, unsigned blocks, cudaStream_t stream) {
  gpuwatch_spin_kernel<<<blocks, 1, 0, stream>>>(ns);
}

namespace {
using CuLaunchKernel = CUresult(CUDAAPI*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                          unsigned, CUstream, void**, void**);
CuLaunchKernel g_cu_launch = nullptr;
CUfunction g_spin_function = nullptr;
decltype(&cuLaunchKernelEx) g_cu_launch_ex = nullptr;

cudaError_t spin_function() {
  if (g_spin_function) return cudaSuccess;
  cudaFunction_t f = nullptr;
  const cudaError_t e = cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(gpuwatch_spin_kernel));
  if (e == cudaSuccess) g_spin_function = reinterpret_cast<CUfunction>(f);
  return e;
}
}  // namespace

cudaError_t init_library_launch() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  // ByVersion: the unversioned cudaGetDriverEntryPoint is deprecated in CUDA 13. 12000 asks
  // for the cuLaunchKernel ABI every CUDA 12/13 driver has.
  cudaError_t e = cudaGetDriverEntryPointByVersion("cuLaunchKernel", &fn, 12000, cudaEnableDefault, &found);
  if (e != cudaSuccess) return e;
  if (found != cudaDriverEntryPointSuccess || !fn) return cudaErrorSymbolNotFound;
  e = spin_function();
  if (e != cudaSuccess) return e;
  g_cu_launch = reinterpret_cast<CuLaunchKernel>(fn);
  return cudaSuccess;
}

int launch_spin_library(unsigned long long ns, unsigned blocks, cudaStream_t stream) {
  void* args[] = {&ns};
  return static_cast<int>(g_cu_launch(g_spin_function, blocks, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(stream), args, nullptr));
}

cudaError_t init_triton_launch() {
  // RTLD_LOCAL and an explicit handle, as Triton's driver.c does: no preloaded definition of
  // cuLaunchKernelEx can stand in for the function handed back.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return cudaErrorSharedObjectInitFailed;
  g_cu_launch_ex = reinterpret_cast<decltype(&cuLaunchKernelEx)>(dlsym(lib, "cuLaunchKernelEx"));
  if (!g_cu_launch_ex) return cudaErrorSymbolNotFound;
  return spin_function();
}

int launch_spin_triton(unsigned long long ns, unsigned blocks, cudaStream_t stream) {
  void* args[] = {&ns};
  CUlaunchConfig config{};
  config.gridDimX = blocks;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  config.hStream = reinterpret_cast<CUstream>(stream);
  return static_cast<int>(g_cu_launch_ex(&config, g_spin_function, args, nullptr));
}

}  // namespace gpuwatch::scenario
